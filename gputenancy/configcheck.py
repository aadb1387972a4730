"""Offline validation of a Kueue manager Configuration (controller_manager_config.yaml).

Kueue reads its Configuration once at startup, decodes it strictly and validates it; any error makes the
manager exit, so the Deployment crash-loops and every queue change in the cluster is blocked. The checks
here mirror that startup path for the supported Kueue versions (see `kueuegates.supported_versions`):

- apiVersion/kind (`kueue-config-version`);
- strict decoding: unknown fields and values of the wrong JSON type (`kueue-config-unknown-field`, and the
  section's rule for type errors);
- `resources.deviceClassMappings` (`kueue-config-device-class-mappings`);
- feature gates (`kueue-feature-gate-unknown`, `-locked`, `-dependency`, `-conflict`);
- `waitForPodsReady` (`kueue-config-wait-for-pods-ready`);
- integrations, resource transformations, quotaCheckStrategy, managedJobsNamespaceSelector and the smaller
  value checks of the other sections (`kueue-config-invalid`).

Every finding is placed with `origin_of(field_path)`, where `field_path` is the path of the offending field
inside the Configuration (it may name a field that is absent, e.g. a required one).
"""

from __future__ import annotations

import dataclasses
import difflib
import re
import types
from collections.abc import Callable, Mapping, Sequence
from fractions import Fraction
from typing import Any

from gputenancy import kueuegates
from gputenancy.findings import Finding, Origin, Severity
from gputenancy.webhooks import cel_selector_error

FieldPath = tuple[str | int, ...]
OriginOf = Callable[[FieldPath], Origin]

RULE_VERSION = "kueue-config-version"
RULE_UNKNOWN_FIELD = "kueue-config-unknown-field"
RULE_DEVICE_CLASS_MAPPINGS = "kueue-config-device-class-mappings"
RULE_GATE_UNKNOWN = "kueue-feature-gate-unknown"
RULE_GATE_LOCKED = "kueue-feature-gate-locked"
RULE_GATE_DEPENDENCY = "kueue-feature-gate-dependency"
RULE_GATE_CONFLICT = "kueue-feature-gate-conflict"
RULE_WAIT_FOR_PODS_READY = "kueue-config-wait-for-pods-ready"
RULE_INVALID = "kueue-config-invalid"

API_V1BETA2 = "config.kueue.x-k8s.io/v1beta2"
API_V1BETA1 = "config.kueue.x-k8s.io/v1beta1"
KIND = "Configuration"

# Framework names Kueue registers with its jobframework (pkg/controller/jobs); same set in v0.18 and v0.19.
KNOWN_FRAMEWORKS: frozenset[str] = frozenset(
    {
        "batch/job",
        "kubeflow.org/mpijob",
        "ray.io/rayjob",
        "ray.io/rayservice",
        "ray.io/raycluster",
        "jobset.x-k8s.io/jobset",
        "kubeflow.org/paddlejob",
        "kubeflow.org/pytorchjob",
        "kubeflow.org/tfjob",
        "kubeflow.org/xgboostjob",
        "kubeflow.org/jaxjob",
        "trainer.kubeflow.org/trainjob",
        "workload.codeflare.dev/appwrapper",
        "sparkoperator.k8s.io/sparkapplication",
        "pod",
        "deployment",
        "statefulset",
        "leaderworkerset.x-k8s.io/leaderworkerset",
    }
)

DRA_GATE = "KueueDRAIntegration"
DRA_SUBGATES = (
    "KueueDRAIntegrationExtendedResource",
    "KueueDRAIntegrationPartitionableDevices",
    "KueueDRAIntegrationConsumableCapacity",
)
PARTITIONABLE_GATE = "KueueDRAIntegrationPartitionableDevices"
CONSUMABLE_GATE = "KueueDRAIntegrationConsumableCapacity"
QUOTA_CHECK_GATE = "QuotaCheckStrategy"
DISABLE_WAIT_GATE = "DisableWaitForPodsReady"

DEFAULT_NAMESPACE = "kueue-system"
_NAMESPACE_LABEL = "kubernetes.io/metadata.name"

MAX_DEVICE_CLASS_MAPPINGS = 16
MAX_DEVICE_CLASSES_PER_MAPPING = 8
_MAX_NAME_LENGTH = 253
_DRIVER_NAME_MAX_LENGTH = 63
_DEVICE_MAX_DOMAIN_LENGTH = 63
_DEVICE_MAX_ID_LENGTH = 32
_NEGATIVE = "must be greater than or equal to 0"

_INT32 = (-(2**31), 2**31 - 1)
_INT64 = (-(2**63), 2**63 - 1)


# --- Kubernetes name formats (k8s.io/apimachinery/pkg/util/validation) --------------------------------

_DNS1123_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
_DNS1123_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_DNS1035_LABEL = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?")
_QUALIFIED_NAME_PART = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
_LABEL_VALUE = re.compile(r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?")
_C_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _dns1123_label_errors(value: str) -> list[str]:
    errs = []
    if len(value) > 63:
        errs.append("must be no more than 63 characters")
    if not _DNS1123_LABEL.fullmatch(value):
        errs.append(
            "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
            "and must start and end with an alphanumeric character"
        )
    return errs


def _dns1123_subdomain_errors(value: str) -> list[str]:
    errs = []
    if len(value) > _MAX_NAME_LENGTH:
        errs.append(f"must be no more than {_MAX_NAME_LENGTH} characters")
    if not _DNS1123_SUBDOMAIN.fullmatch(value):
        errs.append(
            "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
            "and must start and end with an alphanumeric character"
        )
    return errs


def _dns1035_label_errors(value: str) -> list[str]:
    errs = []
    if len(value) > 63:
        errs.append("must be no more than 63 characters")
    if not _DNS1035_LABEL.fullmatch(value):
        errs.append(
            "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "
            "alphabetic character, and end with an alphanumeric character"
        )
    return errs


def _qualified_name_errors(value: str) -> list[str]:
    """content.IsLabelKey / IsQualifiedName: optional DNS-subdomain prefix and '/', then a name part."""
    parts = value.split("/")
    errs: list[str] = []
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            errs.append("prefix part must be non-empty")
        else:
            errs.extend(f"prefix part {msg}" for msg in _dns1123_subdomain_errors(prefix))
    else:
        return [
            "a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must start and "
            "end with an alphanumeric character, with an optional DNS subdomain prefix and '/'"
        ]
    if not name:
        errs.append("name part must be non-empty")
    elif len(name) > 63:
        errs.append("name part must be no more than 63 characters")
    if name and not _QUALIFIED_NAME_PART.fullmatch(name):
        errs.append(
            "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end "
            "with an alphanumeric character"
        )
    return errs


def _label_value_errors(value: str) -> list[str]:
    errs = []
    if len(value) > 63:
        errs.append("must be no more than 63 characters")
    if not _LABEL_VALUE.fullmatch(value):
        errs.append(
            "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', "
            "and must start and end with an alphanumeric character"
        )
    return errs


def _dra_qualified_name_errors(value: str) -> list[str]:
    """resource.k8s.io QualifiedName: a C identifier, or a DNS-subdomain domain, '/', and a C identifier."""

    def c_identifier(part: str) -> list[str]:
        errs = []
        if len(part) > _DEVICE_MAX_ID_LENGTH:
            errs.append(f"must be no more than {_DEVICE_MAX_ID_LENGTH} characters")
        if not _C_IDENTIFIER.fullmatch(part):
            errs.append(
                "a valid C identifier must start with alphabetic character or '_', followed by a string of "
                "alphanumeric characters or '_'"
            )
        return errs

    parts = value.split("/")
    if len(parts) == 1:
        return c_identifier(parts[0])
    if len(parts) == 2:
        domain, name = parts
        errs = []
        if not domain:
            errs.append("the domain must not be empty")
        else:
            if len(domain) > _DEVICE_MAX_DOMAIN_LENGTH:
                errs.append(f"the domain must be no more than {_DEVICE_MAX_DOMAIN_LENGTH} characters")
            errs.extend(_dns1123_subdomain_errors(domain.lower()))
        errs.extend(["the name must not be empty"] if not name else c_identifier(name))
        return errs
    # Kubernetes' own validation does not reject names with more than one '/', and neither does Kueue.
    return []


# --- Go values -------------------------------------------------------------------------------------------

_DURATION_UNITS_NS: Mapping[str, int] = types.MappingProxyType(
    {
        "ns": 1,
        "us": 1_000,
        "\u00b5s": 1_000,
        "\u03bcs": 1_000,
        "ms": 1_000_000,
        "s": 1_000_000_000,
        "m": 60 * 1_000_000_000,
        "h": 3600 * 1_000_000_000,
    }
)
_DURATION_PART = re.compile(r"([0-9]*)(?:\.([0-9]*))?([^0-9.]+)")
_QUANTITY = re.compile(r"[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+|[KMGTPE]i|[numkMGTPE])?")


def parse_go_duration(text: str) -> int:
    """Nanoseconds of a Go duration string ("5m", "1h30m", "300s", "-1.5h", "0"), as time.ParseDuration.

    Raises ValueError with Go's message shape for anything time.ParseDuration rejects.
    """
    original = text
    sign = 1
    if text.startswith(("+", "-")):
        sign = -1 if text[0] == "-" else 1
        text = text[1:]
    if text == "0":
        return 0
    if not text:
        raise ValueError(f'time: invalid duration "{original}"')
    total = Fraction(0)
    pos = 0
    while pos < len(text):
        match = _DURATION_PART.match(text, pos)
        if match is None:
            raise ValueError(f'time: invalid duration "{original}"')
        whole, frac, unit = match.group(1), match.group(2), match.group(3)
        if not whole and not frac:
            raise ValueError(f'time: invalid duration "{original}"')
        scale = _DURATION_UNITS_NS.get(unit)
        if scale is None:
            raise ValueError(f'time: unknown unit "{unit}" in duration "{original}"')
        number = Fraction(int(whole or "0"))
        if frac:
            number += Fraction(int(frac), 10 ** len(frac))
        total += number * scale
        pos = match.end()
    nanos = int(total)  # Go truncates sub-nanosecond fractions
    if nanos > _INT64[1] + (1 if sign < 0 else 0):
        raise ValueError(f'time: invalid duration "{original}"')
    return sign * nanos


# --- strict-decoding schema ------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class _Scalar:
    kind: str  # string | bool | int32 | int64 | float | duration | quantity | any


@dataclasses.dataclass(frozen=True)
class _Struct:
    fields: Mapping[str, _Node]


@dataclasses.dataclass(frozen=True)
class _List:
    item: _Node


@dataclasses.dataclass(frozen=True)
class _Map:
    value: _Node


_Node = _Scalar | _Struct | _List | _Map


def _struct(**fields: _Node) -> _Struct:
    return _Struct(types.MappingProxyType(fields))


_S = _Scalar("string")
_B = _Scalar("bool")
_I32 = _Scalar("int32")
_I64 = _Scalar("int64")
_F = _Scalar("float")
_DUR = _Scalar("duration")
_QTY = _Scalar("quantity")
_ANY = _Scalar("any")

_LABEL_SELECTOR = _struct(
    matchLabels=_Map(_S), matchExpressions=_List(_struct(key=_S, operator=_S, values=_List(_S)))
)
# k8s.io/component-base/config/v1alpha1 LeaderElectionConfiguration
_LEADER_ELECTION = _struct(
    leaderElect=_B,
    leaseDuration=_DUR,
    renewDeadline=_DUR,
    retryPeriod=_DUR,
    resourceLock=_S,
    resourceName=_S,
    resourceNamespace=_S,
)
_WEBHOOK = _struct(port=_I64, host=_S, certDir=_S)
_HEALTH = _struct(healthProbeBindAddress=_S, readinessEndpointName=_S, livenessEndpointName=_S)
# cacheSyncTimeout is a plain time.Duration: an integer number of nanoseconds, not a duration string.
_CONTROLLER = _struct(groupKindConcurrency=_Map(_I64), cacheSyncTimeout=_I64)
_CLIENT_CONNECTION = _struct(qps=_F, burst=_I32)
_INTERNAL_CERT_MANAGEMENT = _struct(enable=_B, webhookServiceName=_S, webhookSecretName=_S)
_REQUEUING_STRATEGY = _struct(
    timestamp=_S, backoffLimitCount=_I32, backoffBaseSeconds=_I32, backoffMaxSeconds=_I32
)
_ADMISSION_FAIR_SHARING = _struct(
    usageHalfLifeTime=_DUR, usageSamplingInterval=_DUR, resourceWeights=_Map(_F)
)
_OBJECT_RETENTION = _struct(workloads=_struct(afterFinished=_DUR, afterDeactivatedByKueue=_DUR))
_DEVICE_SELECTOR = _struct(cel=_struct(expression=_S))
_DEVICE_CLASS_SOURCE = _struct(name=_S, driver=_S, deviceSelector=_DEVICE_SELECTOR)

_V1BETA2 = _struct(
    apiVersion=_S,
    kind=_S,
    namespace=_S,
    webhook=_WEBHOOK,
    leaderElection=_LEADER_ELECTION,
    metrics=_struct(
        bindAddress=_S,
        enableClusterQueueResources=_B,
        customLabels=_List(
            _struct(
                name=_S, sourceLabelKey=_S, sourceAnnotationKey=_S, sourceKind=_S, trackedValues=_List(_S)
            )
        ),
    ),
    health=_HEALTH,
    pprofBindAddress=_S,
    controller=_CONTROLLER,
    tls=_struct(minVersion=_S, cipherSuites=_List(_S)),
    manageJobsWithoutQueueName=_B,
    managedJobsNamespaceSelector=_LABEL_SELECTOR,
    internalCertManagement=_INTERNAL_CERT_MANAGEMENT,
    waitForPodsReady=_struct(
        timeout=_DUR, blockAdmission=_B, requeuingStrategy=_REQUEUING_STRATEGY, recoveryTimeout=_DUR
    ),
    clientConnection=_CLIENT_CONNECTION,
    integrations=_struct(frameworks=_List(_S), externalFrameworks=_List(_S), labelKeysToCopy=_List(_S)),
    multiKueue=_struct(
        gcInterval=_DUR,
        origin=_S,
        workerLostTimeout=_DUR,
        dispatcherName=_S,
        externalFrameworks=_List(_struct(name=_S)),
        clusterProfile=_struct(credentialsProviders=_List(_ANY), accessProviders=_List(_ANY)),
        incrementalDispatcherConfig=_struct(stepSize=_I32),
    ),
    fairSharing=_struct(preemptionStrategies=_List(_S)),
    admissionFairSharing=_ADMISSION_FAIR_SHARING,
    resources=_struct(
        excludeResourcePrefixes=_List(_S),
        transformations=_List(_struct(input=_S, strategy=_S, multiplyBy=_S, outputs=_Map(_QTY))),
        deviceClassMappings=_List(
            _struct(
                name=_S,
                deviceClassNames=_List(_S),
                sources=_List(_struct(counter=_DEVICE_CLASS_SOURCE, capacity=_DEVICE_CLASS_SOURCE)),
            )
        ),
        quotaCheckStrategy=_S,
    ),
    featureGates=_Map(_B),
    objectRetentionPolicies=_OBJECT_RETENTION,
    visibilityServer=_struct(bindAddress=_S, bindPort=_I32),
)

_V1BETA1 = _struct(
    apiVersion=_S,
    kind=_S,
    namespace=_S,
    webhook=_WEBHOOK,
    leaderElection=_LEADER_ELECTION,
    metrics=_struct(bindAddress=_S, enableClusterQueueResources=_B),
    health=_HEALTH,
    pprofBindAddress=_S,
    controller=_CONTROLLER,
    manageJobsWithoutQueueName=_B,
    managedJobsNamespaceSelector=_LABEL_SELECTOR,
    internalCertManagement=_INTERNAL_CERT_MANAGEMENT,
    waitForPodsReady=_struct(
        enable=_B,
        timeout=_DUR,
        blockAdmission=_B,
        requeuingStrategy=_REQUEUING_STRATEGY,
        recoveryTimeout=_DUR,
    ),
    clientConnection=_CLIENT_CONNECTION,
    integrations=_struct(
        frameworks=_List(_S),
        externalFrameworks=_List(_S),
        podOptions=_struct(namespaceSelector=_LABEL_SELECTOR, podSelector=_LABEL_SELECTOR),
        labelKeysToCopy=_List(_S),
    ),
    queueVisibility=_struct(clusterQueues=_struct(maxCount=_I32), updateIntervalSeconds=_I32),
    multiKueue=_struct(gcInterval=_DUR, origin=_S, workerLostTimeout=_DUR, dispatcherName=_S),
    fairSharing=_struct(enable=_B, preemptionStrategies=_List(_S)),
    admissionFairSharing=_ADMISSION_FAIR_SHARING,
    resources=_struct(
        excludeResourcePrefixes=_List(_S),
        transformations=_List(_struct(input=_S, strategy=_S, outputs=_Map(_QTY))),
        deviceClassMappings=_List(_struct(name=_S, deviceClassNames=_List(_S))),
    ),
    featureGates=_Map(_B),
    objectRetentionPolicies=_OBJECT_RETENTION,
)

_SCHEMAS: Mapping[str, _Struct] = types.MappingProxyType({API_V1BETA2: _V1BETA2, API_V1BETA1: _V1BETA1})


# --- helpers ---------------------------------------------------------------------------------------------


def _dotted(path: Sequence[str | int]) -> str:
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + part
    return out or "<root>"


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _kind_of(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, Mapping):
        return "object"
    if isinstance(value, list | tuple):
        return "list"
    return type(value).__name__


def _suggest(word: str, candidates: Sequence[str]) -> str | None:
    folded = {c.lower(): c for c in candidates}
    if word.lower() in folded:
        return folded[word.lower()]
    close = difflib.get_close_matches(word, list(candidates), n=1, cutoff=0.75)
    return close[0] if close else None


def _duration_of(value: object) -> int | None:
    """Nanoseconds of a duration field value, or None when absent or not decodable (reported elsewhere)."""
    if not isinstance(value, str):
        return None
    try:
        return parse_go_duration(value)
    except ValueError:
        return None


def _section_rule(path: FieldPath) -> str:
    if path[:1] == ("waitForPodsReady",):
        return RULE_WAIT_FOR_PODS_READY
    if path[:2] == ("resources", "deviceClassMappings"):
        return RULE_DEVICE_CLASS_MAPPINGS
    return RULE_INVALID


@dataclasses.dataclass
class _Context:
    origin_of: OriginOf
    api_version: str
    minor: str
    gates: Mapping[str, kueuegates.Gate]
    effective: Mapping[str, bool]
    findings: list[Finding]

    def emit(self, rule: str, path: FieldPath, message: str, severity: Severity = Severity.ERROR) -> None:
        self.findings.append(self.origin_of(path).finding(rule, f"{_dotted(path)}: {message}", severity))

    def gate_on(self, name: str) -> bool:
        return self.effective.get(name, False)


def _mapping(value: object) -> Mapping[str, Any] | None:
    return value if isinstance(value, Mapping) else None


def _seq(value: object) -> list[Any]:
    return list(value) if isinstance(value, list | tuple) else []


# --- strict decoding -------------------------------------------------------------------------------------


def _check_scalar(ctx: _Context, value: object, node: _Scalar, path: FieldPath) -> None:
    kind = node.kind
    problem: str | None = None
    if kind == "string" and not isinstance(value, str):
        problem = "must be a string"
    elif kind == "bool" and not isinstance(value, bool):
        problem = "must be a bool (true or false)"
    elif kind in ("int32", "int64"):
        low, high = _INT32 if kind == "int32" else _INT64
        if not isinstance(value, int) or isinstance(value, bool):
            problem = "must be an integer"
        elif not low <= value <= high:
            problem = f"must fit in a {kind} ({low}..{high})"
    elif kind == "float" and not _is_number(value):
        problem = "must be a number"
    elif kind == "duration":
        if not isinstance(value, str):
            problem = 'must be a duration string such as "5m" or "1h30m"'
        else:
            try:
                parse_go_duration(value)
            except ValueError as exc:
                problem = str(exc)
    elif kind == "quantity" and not (
        _is_number(value) or (isinstance(value, str) and _QUANTITY.fullmatch(value))
    ):
        problem = "must be a quantity such as 5Gi, 500m or 4"
    if problem is not None:
        scalar = not isinstance(value, Mapping | list | tuple)
        shown = f" (got {_kind_of(value)} {value!r})" if scalar and not problem.startswith("time:") else ""
        ctx.emit(_section_rule(path), path, f"{problem}{shown}; Kueue cannot decode the Configuration")


def _unknown_field(ctx: _Context, path: FieldPath, key: str, node: _Struct, other: _Node | None) -> None:
    message = (
        f'unknown field "{key}" in {ctx.api_version}; Kueue decodes the Configuration strictly and exits'
    )
    other_api = API_V1BETA1 if ctx.api_version == API_V1BETA2 else API_V1BETA2
    suggestion = _suggest(key, sorted(node.fields))
    if suggestion is not None:
        message += f' (did you mean "{suggestion}"?)'
    elif isinstance(other, _Struct) and key in other.fields:
        message += f" (the field exists only in {other_api})"
    ctx.emit(RULE_UNKNOWN_FIELD, path, message)


def _walk(
    ctx: _Context,
    value: object,
    node: _Node,
    other: _Node | None,
    path: FieldPath,
    skip: frozenset[FieldPath],
) -> None:
    if value is None:
        return
    if isinstance(node, _Scalar):
        if node.kind != "any":
            _check_scalar(ctx, value, node, path)
        return
    if isinstance(node, _Struct):
        if not isinstance(value, Mapping):
            ctx.emit(_section_rule(path), path, f"must be an object, not a {_kind_of(value)}")
            return
        for raw_key, item in value.items():
            key = raw_key if isinstance(raw_key, str) else str(raw_key)
            child = (*path, key)
            if child in skip:
                continue
            if key not in node.fields:
                _unknown_field(ctx, child, key, node, other)
                continue
            other_child = other.fields.get(key) if isinstance(other, _Struct) else None
            _walk(ctx, item, node.fields[key], other_child, child, skip)
        return
    if isinstance(node, _List):
        if not isinstance(value, list | tuple):
            ctx.emit(_section_rule(path), path, f"must be a list, not a {_kind_of(value)}")
            return
        other_item = other.item if isinstance(other, _List) else None
        for index, item in enumerate(value):
            _walk(ctx, item, node.item, other_item, (*path, index), skip)
        return
    if not isinstance(value, Mapping):
        ctx.emit(_section_rule(path), path, f"must be a map, not a {_kind_of(value)}")
        return
    other_value = other.value if isinstance(other, _Map) else None
    for raw_key, item in value.items():
        if not isinstance(raw_key, str):
            ctx.emit(_section_rule(path), (*path, str(raw_key)), "map keys must be strings")
            continue
        _walk(ctx, item, node.value, other_value, (*path, raw_key), skip)


# --- feature gates ---------------------------------------------------------------------------------------


def _gate_hint(name: str, ctx: _Context) -> str:
    renamed = kueuegates.RENAMED_GATES.get(name)
    if renamed is not None and renamed in ctx.gates:
        return f"; it was renamed to {renamed}"
    elsewhere = [v for v in kueuegates.supported_versions() if name in kueuegates.gates_for(v)]
    if elsewhere:
        return f"; it exists only in Kueue {', '.join(elsewhere)}"
    suggestion = _suggest(name, sorted(ctx.gates))
    return f' (did you mean "{suggestion}"?)' if suggestion else ""


def _valid_gate_overrides(config: Mapping[str, Any], gates: Mapping[str, kueuegates.Gate]) -> dict[str, bool]:
    """featureGates entries Kueue would accept: known names, bool values, locked gates at their default."""
    overrides: dict[str, bool] = {}
    for name, value in (_mapping(config.get("featureGates")) or {}).items():
        gate = gates.get(name) if isinstance(name, str) else None
        if gate is None or not isinstance(value, bool) or (gate.locked and value != gate.default):
            continue
        overrides[name] = value
    return overrides


def _check_feature_gates(ctx: _Context, config: Mapping[str, Any], feature_gates_flag: bool) -> None:
    path: FieldPath = ("featureGates",)
    if feature_gates_flag and "featureGates" in config and config["featureGates"] is not None:
        ctx.emit(
            RULE_GATE_CONFLICT,
            path,
            "feature gates for CLI and configuration cannot both specified: the manager Deployment passes "
            "--feature-gates, so the Configuration must not contain featureGates (not even an empty map)",
        )
    declared = _mapping(config.get("featureGates")) or {}
    for name, value in declared.items():
        if not isinstance(name, str):
            continue
        gate = ctx.gates.get(name)
        if gate is None:
            ctx.emit(
                RULE_GATE_UNKNOWN,
                (*path, name),
                f"unrecognized feature gate: {name} (Kueue {ctx.minor}){_gate_hint(name, ctx)}",
            )
        elif isinstance(value, bool) and gate.locked and value != gate.default:
            renamed = kueuegates.RENAMED_GATES.get(name)
            hint = f"; use {renamed} instead" if renamed in ctx.gates else ""
            ctx.emit(
                RULE_GATE_LOCKED,
                (*path, name),
                f"cannot set feature gate {name} to {str(value).lower()}, feature is locked to "
                f"{str(gate.default).lower()} ({gate.stage} in Kueue {ctx.minor}){hint}",
            )
    if DRA_GATE not in ctx.gates or ctx.gate_on(DRA_GATE):
        return
    for sub in DRA_SUBGATES:
        if sub in ctx.gates and ctx.gate_on(sub):
            explicit = sub in declared
            where = (*path, sub) if explicit else (*path, DRA_GATE)
            note = "" if explicit else f" ({sub} is on by default in Kueue {ctx.minor}; set it to false too)"
            ctx.emit(RULE_GATE_DEPENDENCY, where, f"{sub} requires {DRA_GATE} to be enabled{note}")


# --- deviceClassMappings ---------------------------------------------------------------------------------


def _check_source_common(ctx: _Context, source: Mapping[str, Any], path: FieldPath) -> None:
    driver = source.get("driver")
    if driver is None or driver == "":
        ctx.emit(RULE_DEVICE_CLASS_MAPPINGS, (*path, "driver"), "Required value")
    elif isinstance(driver, str):
        if len(driver) > _DRIVER_NAME_MAX_LENGTH:
            ctx.emit(
                RULE_DEVICE_CLASS_MAPPINGS,
                (*path, "driver"),
                f"Invalid value {driver!r}: must not exceed {_DRIVER_NAME_MAX_LENGTH} characters",
            )
        elif errs := _dns1123_subdomain_errors(driver):
            ctx.emit(
                RULE_DEVICE_CLASS_MAPPINGS, (*path, "driver"), f"Invalid value {driver!r}: {','.join(errs)}"
            )
    selector_path = (*path, "deviceSelector", "cel", "expression")
    cel = _mapping((_mapping(source.get("deviceSelector")) or {}).get("cel"))
    expression = cel.get("expression") if cel is not None else None
    if expression is None or expression == "":
        ctx.emit(RULE_DEVICE_CLASS_MAPPINGS, selector_path, "Required value")
    elif isinstance(expression, str) and (error := cel_selector_error(expression)) is not None:
        ctx.emit(RULE_DEVICE_CLASS_MAPPINGS, selector_path, f"CEL {error}" if error.startswith("compilation failed") else f"CEL expression {error}")


def _check_sources(ctx: _Context, mapping: Mapping[str, Any], mapping_path: FieldPath) -> None:
    sources = _seq(mapping.get("sources"))
    if not sources:
        return
    sources_path = (*mapping_path, "sources")
    counters = 0
    has_capacity = False
    for index, raw in enumerate(sources):
        source = _mapping(raw)
        if source is None:
            continue
        path = (*sources_path, index)
        counter, capacity = source.get("counter"), source.get("capacity")
        if counter is None and capacity is None:
            ctx.emit(
                RULE_DEVICE_CLASS_MAPPINGS,
                path,
                "Required value: exactly one source type must be set per entry",
            )
            continue
        if counter is not None and capacity is not None:
            ctx.emit(
                RULE_DEVICE_CLASS_MAPPINGS,
                path,
                'Invalid value "counter+capacity": exactly one source type must be set per entry',
            )
            continue
        if counter is not None:
            counters += 1
            if not ctx.gate_on(PARTITIONABLE_GATE):
                ctx.emit(
                    RULE_DEVICE_CLASS_MAPPINGS,
                    (*path, "counter"),
                    f"counter sources require {PARTITIONABLE_GATE} to be enabled"
                    + _gate_state(ctx, PARTITIONABLE_GATE),
                )
                continue
            counter_map = _mapping(counter)
            if counter_map is None:
                continue
            counter_path = (*path, "counter")
            name = counter_map.get("name")
            if name is None or name == "":
                ctx.emit(RULE_DEVICE_CLASS_MAPPINGS, (*counter_path, "name"), "Required value")
            elif isinstance(name, str) and (errs := _dns1123_label_errors(name)):
                ctx.emit(
                    RULE_DEVICE_CLASS_MAPPINGS,
                    (*counter_path, "name"),
                    f"Invalid value {name!r}: {','.join(errs)}",
                )
            _check_source_common(ctx, counter_map, counter_path)
        else:
            has_capacity = True
            if not ctx.gate_on(CONSUMABLE_GATE):
                ctx.emit(
                    RULE_DEVICE_CLASS_MAPPINGS,
                    (*path, "capacity"),
                    f"capacity sources require {CONSUMABLE_GATE} to be enabled"
                    + _gate_state(ctx, CONSUMABLE_GATE),
                )
                continue
            capacity_map = _mapping(capacity)
            if capacity_map is None:
                continue
            capacity_path = (*path, "capacity")
            name = capacity_map.get("name")
            if (isinstance(name, str) or name is None) and (errs := _dra_qualified_name_errors(name or "")):
                ctx.emit(
                    RULE_DEVICE_CLASS_MAPPINGS,
                    (*capacity_path, "name"),
                    f"Invalid value {name!r}: {'; '.join(errs)}",
                )
            _check_source_common(ctx, capacity_map, capacity_path)
    if counters and has_capacity:
        ctx.emit(
            RULE_DEVICE_CLASS_MAPPINGS,
            sources_path,
            "cannot mix counter and capacity sources in the same mapping",
        )


def _gate_state(ctx: _Context, gate: str) -> str:
    spec = ctx.gates.get(gate)
    if spec is None:
        return f" (Kueue {ctx.minor} has no such gate, so it does not support this source type)"
    if ctx.effective.get(gate) is False and spec.default is False:
        return f" ({spec.stage} and off by default in Kueue {ctx.minor}; set featureGates.{gate}: true)"
    return f" (disabled in featureGates for Kueue {ctx.minor})"


def _counter_name(mapping: Mapping[str, Any]) -> str:
    sources = _seq(mapping.get("sources"))
    first = _mapping(sources[0]) if sources else None
    counter = _mapping(first.get("counter")) if first is not None else None
    name = counter.get("name") if counter is not None else None
    return name if isinstance(name, str) else ""


def _check_device_class_mappings(ctx: _Context, config: Mapping[str, Any]) -> None:
    resources = _mapping(config.get("resources"))
    mappings = _seq(resources.get("deviceClassMappings")) if resources is not None else []
    if not mappings:
        return
    base: FieldPath = ("resources", "deviceClassMappings")
    if len(mappings) > MAX_DEVICE_CLASS_MAPPINGS:
        ctx.emit(
            RULE_DEVICE_CLASS_MAPPINGS,
            base,
            f"Too many: {len(mappings)}: must have at most {MAX_DEVICE_CLASS_MAPPINGS} items",
        )
    if DRA_GATE in ctx.gates and not ctx.gate_on(DRA_GATE):
        ctx.emit(
            RULE_DEVICE_CLASS_MAPPINGS,
            base,
            f"{DRA_GATE} is disabled, so Kueue ignores deviceClassMappings",
            Severity.WARNING,
        )
    seen_names: set[str] = set()
    class_to_resource: dict[str, str] = {}
    class_counters: dict[str, set[str]] = {}
    for index, raw in enumerate(mappings):
        mapping = _mapping(raw)
        if mapping is None:
            continue
        path = (*base, index)
        name = mapping.get("name")
        if name is None:
            name = ""
        if isinstance(name, str):
            if errs := _qualified_name_errors(name):
                ctx.emit(
                    RULE_DEVICE_CLASS_MAPPINGS, (*path, "name"), f"Invalid value {name!r}: {'; '.join(errs)}"
                )
            if len(name) > _MAX_NAME_LENGTH:
                ctx.emit(
                    RULE_DEVICE_CLASS_MAPPINGS,
                    (*path, "name"),
                    f"Invalid value {name!r}: must not exceed {_MAX_NAME_LENGTH} characters",
                )
            if name in seen_names:
                ctx.emit(RULE_DEVICE_CLASS_MAPPINGS, (*path, "name"), f"Duplicate value: {name!r}")
            seen_names.add(name)
        classes = _seq(mapping.get("deviceClassNames"))
        classes_path = (*path, "deviceClassNames")
        if not classes:
            ctx.emit(
                RULE_DEVICE_CLASS_MAPPINGS,
                classes_path,
                "Required value: at least one device class name is required",
            )
        if len(classes) > MAX_DEVICE_CLASSES_PER_MAPPING:
            ctx.emit(
                RULE_DEVICE_CLASS_MAPPINGS,
                classes_path,
                f"Too many: {len(classes)}: must have at most {MAX_DEVICE_CLASSES_PER_MAPPING} items",
            )
        counter_name = _counter_name(mapping)
        seen_classes: set[str] = set()
        for class_index, device_class in enumerate(classes):
            if not isinstance(device_class, str):
                continue
            class_path = (*classes_path, class_index)
            if errs := _qualified_name_errors(device_class):
                ctx.emit(
                    RULE_DEVICE_CLASS_MAPPINGS,
                    class_path,
                    f"Invalid value {device_class!r}: {'; '.join(errs)}",
                )
            if len(device_class) > _MAX_NAME_LENGTH:
                ctx.emit(
                    RULE_DEVICE_CLASS_MAPPINGS,
                    class_path,
                    f"Invalid value {device_class!r}: must not exceed {_MAX_NAME_LENGTH} characters",
                )
            if device_class in seen_classes:
                ctx.emit(RULE_DEVICE_CLASS_MAPPINGS, class_path, f"Duplicate value: {device_class!r}")
            seen_classes.add(device_class)
            existing = class_to_resource.get(device_class)
            if existing is None:
                class_to_resource[device_class] = name if isinstance(name, str) else ""
                class_counters[device_class] = {counter_name} if counter_name else set()
            elif existing != name:
                counters = class_counters[device_class]
                if not counter_name or not counters:
                    ctx.emit(
                        RULE_DEVICE_CLASS_MAPPINGS,
                        class_path,
                        f"Invalid value {device_class!r}: device class already mapped to resource {existing}",
                    )
                elif counter_name in counters:
                    ctx.emit(
                        RULE_DEVICE_CLASS_MAPPINGS,
                        class_path,
                        f"Invalid value {device_class!r}: device class already has a counter source "
                        f'for counter "{counter_name}"',
                    )
                else:
                    counters.add(counter_name)
        _check_sources(ctx, mapping, path)


# --- waitForPodsReady ------------------------------------------------------------------------------------


def _check_wait_for_pods_ready(ctx: _Context, config: Mapping[str, Any]) -> None:
    base: FieldPath = ("waitForPodsReady",)
    section = _mapping(config.get("waitForPodsReady"))
    if section is None:
        return
    v1beta2 = ctx.api_version == API_V1BETA2
    if v1beta2:
        if "enable" in section:
            hint = "configure it with the other fields of the section"
            if DISABLE_WAIT_GATE in ctx.gates:
                hint = (
                    f"WaitForPodsReady is on by default in Kueue {ctx.minor}; to turn it off set the "
                    f"{DISABLE_WAIT_GATE} feature gate"
                )
            ctx.emit(
                RULE_WAIT_FOR_PODS_READY,
                (*base, "enable"),
                f'unknown field "enable": {API_V1BETA2} has no waitForPodsReady.enable and Kueue decodes the '
                f"Configuration strictly; {hint}",
            )
        enabled = not ctx.gate_on(DISABLE_WAIT_GATE)
    else:
        enabled = section.get("enable") is True
    if not enabled:
        return

    timeout_path = (*base, "timeout")
    timeout = _duration_of(section.get("timeout"))
    if timeout is not None and timeout < 0:
        ctx.emit(RULE_WAIT_FOR_PODS_READY, timeout_path, f"Invalid value {section['timeout']!r}: {_NEGATIVE}")
    elif timeout == 0:
        if v1beta2:
            ctx.emit(
                RULE_WAIT_FOR_PODS_READY,
                timeout_path,
                "a zero timeout is replaced by the default; set the intended timeout explicitly",
                Severity.WARNING,
            )
        else:
            ctx.emit(
                RULE_WAIT_FOR_PODS_READY, timeout_path, "Required value: must be specified (greater than 0)"
            )
    recovery = _duration_of(section.get("recoveryTimeout"))
    if recovery is not None and recovery < 0:
        ctx.emit(
            RULE_WAIT_FOR_PODS_READY,
            (*base, "recoveryTimeout"),
            f"Invalid value {section['recoveryTimeout']!r}: {_NEGATIVE}",
        )
    strategy = _mapping(section.get("requeuingStrategy"))
    if strategy is None:
        return
    strategy_path = (*base, "requeuingStrategy")
    timestamp = strategy.get("timestamp")
    if isinstance(timestamp, str) and timestamp not in ("Creation", "Eviction"):
        ctx.emit(
            RULE_WAIT_FOR_PODS_READY,
            (*strategy_path, "timestamp"),
            f'Unsupported value: {timestamp!r}: supported values: "Creation", "Eviction"',
        )
    for field in ("backoffLimitCount", "backoffBaseSeconds", "backoffMaxSeconds"):
        value = strategy.get(field)
        if isinstance(value, int) and not isinstance(value, bool) and value < 0:
            ctx.emit(RULE_WAIT_FOR_PODS_READY, (*strategy_path, field), f"Invalid value {value}: {_NEGATIVE}")


# --- other sections (kueue-config-invalid) ---------------------------------------------------------------


def _check_integrations(ctx: _Context, config: Mapping[str, Any]) -> None:
    integrations = _mapping(config.get("integrations"))
    if integrations is None:
        return
    base: FieldPath = ("integrations",)
    seen: set[str] = set()
    known = sorted(KNOWN_FRAMEWORKS)
    for index, framework in enumerate(_seq(integrations.get("frameworks"))):
        if not isinstance(framework, str):
            continue
        path = (*base, "frameworks", index)
        if framework not in KNOWN_FRAMEWORKS:
            suggestion = _suggest(framework, known)
            hint = f' (did you mean "{suggestion}"?)' if suggestion else ""
            ctx.emit(
                RULE_INVALID,
                path,
                f"Unsupported value: {framework!r}{hint}; supported values: {', '.join(known)}",
            )
        elif framework in seen:
            ctx.emit(RULE_INVALID, path, f"Duplicate value: {framework!r}")
        seen.add(framework)
    seen_external: set[str] = set()
    for index, framework in enumerate(_seq(integrations.get("externalFrameworks"))):
        if not isinstance(framework, str):
            continue
        path = (*base, "externalFrameworks", index)
        if framework.count(".") < 2:
            ctx.emit(
                RULE_INVALID, path, f"Invalid value {framework!r}: must be format, 'Kind.version.group.com'"
            )
        elif framework in seen_external:
            ctx.emit(RULE_INVALID, path, f"Duplicate value: {framework!r}")
        seen_external.add(framework)


def _check_resources(ctx: _Context, config: Mapping[str, Any]) -> None:
    resources = _mapping(config.get("resources"))
    if resources is None:
        return
    base: FieldPath = ("resources",)
    seen: set[str] = set()
    for index, raw in enumerate(_seq(resources.get("transformations"))):
        transformation = _mapping(raw)
        if transformation is None:
            continue
        path = (*base, "transformations", index)
        strategy = transformation.get("strategy", "Retain")
        if strategy is not None and strategy not in ("Retain", "Replace"):
            ctx.emit(
                RULE_INVALID,
                (*path, "strategy"),
                f'Unsupported value: {strategy!r}: supported values: "Retain", "Replace"',
            )
        source = transformation.get("input")
        if isinstance(source, str):
            if source in seen:
                ctx.emit(RULE_INVALID, (*path, "input"), f"Duplicate value: {source!r}")
            seen.add(source)
    strategy = resources.get("quotaCheckStrategy")
    if not isinstance(strategy, str) or ctx.api_version != API_V1BETA2:
        return
    path = (*base, "quotaCheckStrategy")
    if QUOTA_CHECK_GATE in ctx.gates and not ctx.gate_on(QUOTA_CHECK_GATE):
        ctx.emit(
            RULE_INVALID,
            path,
            f"ignored: the {QUOTA_CHECK_GATE} feature gate is off in Kueue {ctx.minor}, so Kueue behaves as "
            "BlockUndeclared",
            Severity.WARNING,
        )
        return
    if strategy not in ("BlockUndeclared", "IgnoreUndeclared"):
        ctx.emit(
            RULE_INVALID,
            path,
            f'Unsupported value: {strategy!r}: supported values: "IgnoreUndeclared", "BlockUndeclared"',
        )
    elif strategy == "IgnoreUndeclared" and _seq(resources.get("excludeResourcePrefixes")):
        ctx.emit(
            RULE_INVALID,
            path,
            f"Invalid value {strategy!r}: excludeResourcePrefixes is not allowed when quotaCheckStrategy is "
            "IgnoreUndeclared",
        )


def _selector_requirements(
    ctx: _Context, selector: Mapping[str, Any], path: FieldPath
) -> list[tuple[str, str, frozenset[str]]] | None:
    """The selector as (key, operator, values) requirements, or None (after reporting) when it is invalid."""
    requirements: list[tuple[str, str, frozenset[str]]] = []
    valid = True
    for key, value in (_mapping(selector.get("matchLabels")) or {}).items():
        if not isinstance(key, str) or not isinstance(value, str):
            return None
        key_errs = _qualified_name_errors(key)
        value_errs = _label_value_errors(value)
        if key_errs or value_errs:
            ctx.emit(
                RULE_INVALID,
                (*path, "matchLabels", key),
                f"Invalid value: {'; '.join(key_errs + value_errs)}",
            )
            valid = False
        requirements.append((key, "In", frozenset({value})))
    for index, raw in enumerate(_seq(selector.get("matchExpressions"))):
        expression = _mapping(raw)
        if expression is None:
            return None
        expr_path = (*path, "matchExpressions", index)
        expr_key, operator = expression.get("key"), expression.get("operator")
        values = _seq(expression.get("values"))
        if (
            not isinstance(expr_key, str)
            or not isinstance(operator, str)
            or not all(isinstance(v, str) for v in values)
        ):
            return None
        if errs := _qualified_name_errors(expr_key):
            ctx.emit(RULE_INVALID, (*expr_path, "key"), f"Invalid value {expr_key!r}: {'; '.join(errs)}")
            valid = False
        if operator in ("In", "NotIn"):
            if not values:
                ctx.emit(
                    RULE_INVALID,
                    (*expr_path, "values"),
                    "Required value: must be specified when `operator` is 'In' or 'NotIn'",
                )
                valid = False
        elif operator in ("Exists", "DoesNotExist"):
            if values:
                ctx.emit(
                    RULE_INVALID,
                    (*expr_path, "values"),
                    "Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
                )
                valid = False
        else:
            ctx.emit(
                RULE_INVALID,
                (*expr_path, "operator"),
                f'Unsupported value: {operator!r}: supported values: "In", "NotIn", "Exists", "DoesNotExist"',
            )
            valid = False
        requirements.append((expr_key, operator, frozenset(values)))
    return requirements if valid else None


def _selector_matches(requirements: list[tuple[str, str, frozenset[str]]], labels: Mapping[str, str]) -> bool:
    for key, operator, values in requirements:
        present = key in labels
        if operator == "In" and not (present and labels[key] in values):
            return False
        if operator == "NotIn" and present and labels[key] in values:
            return False
        if operator == "Exists" and not present:
            return False
        if operator == "DoesNotExist" and present:
            return False
    return True


def _check_namespace_selector(ctx: _Context, config: Mapping[str, Any]) -> None:
    path: FieldPath = ("managedJobsNamespaceSelector",)
    selector = _mapping(config.get("managedJobsNamespaceSelector"))
    if selector is None:
        return
    requirements = _selector_requirements(ctx, selector, path)
    if requirements is None:
        return
    namespace = config.get("namespace")
    prohibited = ["kube-system"]
    prohibited.append(namespace if isinstance(namespace, str) and namespace else DEFAULT_NAMESPACE)
    for name in prohibited:
        if _selector_matches(requirements, {_NAMESPACE_LABEL: name}):
            ctx.emit(RULE_INVALID, path, f'Invalid value: should not match the "{name}" namespace')


_FAIR_SHARING_STRATEGIES = (
    ("LessThanOrEqualToFinalShare",),
    ("LessThanInitialShare",),
    ("LessThanOrEqualToFinalShare", "LessThanInitialShare"),
)


def _check_negative_durations(
    ctx: _Context, section: Mapping[str, Any], path: FieldPath, fields: Sequence[str]
) -> None:
    for field in fields:
        value = _duration_of(section.get(field))
        if value is not None and value < 0:
            ctx.emit(RULE_INVALID, (*path, field), f"Invalid value {section[field]!r}: {_NEGATIVE}")


def _check_other_sections(ctx: _Context, config: Mapping[str, Any]) -> None:
    fair_sharing = _mapping(config.get("fairSharing"))
    if fair_sharing is not None:
        strategies = _seq(fair_sharing.get("preemptionStrategies"))
        if strategies and tuple(strategies) not in _FAIR_SHARING_STRATEGIES:
            allowed = ", ".join('"' + ",".join(s) + '"' for s in _FAIR_SHARING_STRATEGIES)
            ctx.emit(
                RULE_INVALID,
                ("fairSharing", "preemptionStrategies"),
                f"Unsupported value: {strategies!r}: supported values: {allowed}",
            )
    afs = _mapping(config.get("admissionFairSharing"))
    if afs is not None:
        _check_negative_durations(
            ctx, afs, ("admissionFairSharing",), ("usageHalfLifeTime", "usageSamplingInterval")
        )
        for resource, weight in (_mapping(afs.get("resourceWeights")) or {}).items():
            if _is_number(weight) and weight < 0:
                ctx.emit(
                    RULE_INVALID,
                    ("admissionFairSharing", "resourceWeights", str(resource)),
                    f"Invalid value: {_NEGATIVE}",
                )
    icm = _mapping(config.get("internalCertManagement"))
    if icm is not None and icm.get("enable") is not False:
        service, secret = icm.get("webhookServiceName"), icm.get("webhookSecretName")
        if isinstance(service, str) and (errs := _dns1035_label_errors(service)):
            ctx.emit(
                RULE_INVALID,
                ("internalCertManagement", "webhookServiceName"),
                f"Invalid value {service!r}: {','.join(errs)}",
            )
        if isinstance(secret, str) and (errs := _dns1123_subdomain_errors(secret)):
            ctx.emit(
                RULE_INVALID,
                ("internalCertManagement", "webhookSecretName"),
                f"Invalid value {secret!r}: {','.join(errs)}",
            )
    multikueue = _mapping(config.get("multiKueue"))
    if multikueue is not None:
        _check_negative_durations(ctx, multikueue, ("multiKueue",), ("gcInterval", "workerLostTimeout"))
        origin = multikueue.get("origin")
        if isinstance(origin, str) and (errs := _label_value_errors(origin)):
            ctx.emit(RULE_INVALID, ("multiKueue", "origin"), f"Invalid value {origin!r}: {','.join(errs)}")
    retention = _mapping((_mapping(config.get("objectRetentionPolicies")) or {}).get("workloads"))
    if retention is not None:
        _check_negative_durations(
            ctx,
            retention,
            ("objectRetentionPolicies", "workloads"),
            ("afterFinished", "afterDeactivatedByKueue"),
        )


# --- entry points ----------------------------------------------------------------------------------------


def check_configuration(
    config: Mapping[str, Any],
    kueue_version: str,
    *,
    origin_of: Callable[[tuple[str | int, ...]], Origin],
    feature_gates_flag: bool = False,
) -> list[Finding]:
    """Findings that would make Kueue `kueue_version` refuse to start with this manager Configuration.

    `config` is the parsed controller_manager_config.yaml. `feature_gates_flag` says whether the manager
    container is started with --feature-gates (see `deployment_has_feature_gates_flag`). Warnings mark
    settings Kueue accepts but ignores or replaces. Raises ValueError for an unsupported `kueue_version`.
    """
    minor = kueuegates.minor_of(kueue_version)
    gates = kueuegates.gates_for(minor)
    findings: list[Finding] = []

    def emit(rule: str, path: FieldPath, message: str) -> None:
        findings.append(origin_of(path).finding(rule, f"{_dotted(path)}: {message}"))

    if not isinstance(config, Mapping):
        emit(RULE_VERSION, (), f"the Configuration must be an object, not a {_kind_of(config)}")
        return findings
    api_version, kind = config.get("apiVersion"), config.get("kind")
    if kind != KIND:
        emit(RULE_VERSION, ("kind",), f'must be "{KIND}", not {kind!r}')
    if api_version not in _SCHEMAS:
        emit(
            RULE_VERSION, ("apiVersion",), f'must be "{API_V1BETA2}" or "{API_V1BETA1}", not {api_version!r}'
        )
        return findings
    assert isinstance(api_version, str)

    effective = kueuegates.effective_gates(minor, _valid_gate_overrides(config, gates))
    ctx = _Context(origin_of, api_version, minor, gates, effective, findings)
    skip: frozenset[FieldPath] = frozenset()
    if api_version == API_V1BETA2:
        skip = frozenset({("waitForPodsReady", "enable")})
    other = _SCHEMAS[API_V1BETA1 if api_version == API_V1BETA2 else API_V1BETA2]
    _walk(ctx, config, _SCHEMAS[api_version], other, (), skip)
    _check_feature_gates(ctx, config, feature_gates_flag)
    _check_device_class_mappings(ctx, config)
    _check_wait_for_pods_ready(ctx, config)
    _check_integrations(ctx, config)
    _check_resources(ctx, config)
    _check_namespace_selector(ctx, config)
    _check_other_sections(ctx, config)
    return findings


_FLAG_NAMES = ("--feature-gates", "-feature-gates")


def _has_flag(args: Sequence[object]) -> bool:
    for index, arg in enumerate(args):
        if not isinstance(arg, str):
            continue
        name, equals, value = arg.partition("=")
        if name not in _FLAG_NAMES:
            continue
        if equals:
            if value:
                return True
            continue
        following = args[index + 1] if index + 1 < len(args) else None
        if isinstance(following, str) and following and not following.startswith("-"):
            return True
    return False


def deployment_has_feature_gates_flag(deployment: Mapping[str, Any]) -> bool:
    """Whether any container of the Deployment passes a non-empty --feature-gates flag to its command.

    Accepts "--feature-gates=A=true" and "--feature-gates A=true" (and the single-dash spellings Go's flag
    package also accepts) in `command` or `args`. An empty value sets nothing, so it does not count.
    """
    spec = _mapping(deployment.get("spec")) or {}
    pod = _mapping((_mapping(spec.get("template")) or {}).get("spec")) or {}
    for raw in _seq(pod.get("containers")):
        container = _mapping(raw)
        if container is not None and _has_flag(
            [*_seq(container.get("command")), *_seq(container.get("args"))]
        ):
            return True
    return False
