"""Offline validation of a Kueue manager Configuration (controller_manager_config.yaml).

Kueue reads its Configuration once at startup, decodes it strictly and validates it; any error makes the
manager exit, so the Deployment crash-loops and every queue change in the cluster is blocked. The checks
here mirror that startup path for the supported Kueue versions (see `kueuegates.supported_versions`):

- apiVersion/kind (`kueue-config-version`);
- strict decoding: unknown fields and values of the wrong JSON type (`kueue-config-unknown-field`, and the
  section's rule for type errors), against the field tables of `gputenancy.check.configfields`;
- `resources.deviceClassMappings` (`kueue-config-device-class-mappings`; the per-mapping checks are in
  `gputenancy.check.dra`);
- feature gates (`kueue-feature-gate-unknown`, `-locked`, `-dependency`, `-conflict`);
- `waitForPodsReady` (`kueue-config-wait-for-pods-ready`);
- integrations, resource transformations, quotaCheckStrategy, managedJobsNamespaceSelector and the smaller
  value checks of the other sections (`kueue-config-invalid`).

Every finding is placed with `origin_of(field_path)`, where `field_path` is the path of the offending field
inside the Configuration (it may name a field that is absent, e.g. a required one).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from gputenancy.check import dra
from gputenancy.check.configfields import (
    API_V1BETA2,
    API_VERSIONS,
    FieldPath,
    as_list,
    as_mapping,
    decode_errors,
    duration_of,
    is_number,
    kind_of,
    suggest,
)
from gputenancy.check.configfields import KNOWN_FRAMEWORKS as KNOWN_FRAMEWORKS
from gputenancy.check.names import (
    Requirement,
    dns1035_label_errors,
    dns1123_subdomain_errors,
    label_value_errors,
    qualified_name_errors,
    selector_matches,
    selector_operator_error,
)
from gputenancy.findings import Finding, Origin, Severity
from gputenancy.versions import gates as kueuegates
from gputenancy.versions import kueue as kueue_versions

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

KIND = "Configuration"

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
_NEGATIVE = "must be greater than or equal to 0"


# --- helpers ---------------------------------------------------------------------------------------------


def _dotted(path: Sequence[str | int]) -> str:
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + part
    return out or "<root>"


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


def _check_negative_durations(
    ctx: _Context,
    section: Mapping[str, Any],
    path: FieldPath,
    fields: Sequence[str],
    rule: str = RULE_INVALID,
) -> None:
    for field in fields:
        value = duration_of(section.get(field))
        if value is not None and value < 0:
            ctx.emit(rule, (*path, field), f"Invalid value {section[field]!r}: {_NEGATIVE}")


def _check_format(
    ctx: _Context,
    section: Mapping[str, Any],
    path: FieldPath,
    field: str,
    errors: Callable[[str], list[str]],
) -> None:
    value = section.get(field)
    if isinstance(value, str) and (errs := errors(value)):
        ctx.emit(RULE_INVALID, (*path, field), f"Invalid value {value!r}: {','.join(errs)}")


# --- feature gates ---------------------------------------------------------------------------------------


def _gate_hint(name: str, ctx: _Context) -> str:
    renamed = kueuegates.RENAMED_GATES.get(name)
    if renamed is not None and renamed in ctx.gates:
        return f"; it was renamed to {renamed}"
    elsewhere = [v for v in kueuegates.supported_versions() if name in kueuegates.gates_for(v)]
    if elsewhere:
        return f"; it exists only in Kueue {', '.join(elsewhere)}"
    suggestion = suggest(name, sorted(ctx.gates))
    return f' (did you mean "{suggestion}"?)' if suggestion else ""


def _valid_gate_overrides(config: Mapping[str, Any], gates: Mapping[str, kueuegates.Gate]) -> dict[str, bool]:
    """featureGates entries Kueue would accept: known names, bool values, locked gates at their default."""
    overrides: dict[str, bool] = {}
    for name, value in (as_mapping(config.get("featureGates")) or {}).items():
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
    declared = as_mapping(config.get("featureGates")) or {}
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


def _gate_state(ctx: _Context, gate: str) -> str:
    spec = ctx.gates.get(gate)
    if spec is None:
        return f" (Kueue {ctx.minor} has no such gate, so it does not support this source type)"
    if ctx.effective.get(gate) is False and spec.default is False:
        return f" ({spec.stage} and off by default in Kueue {ctx.minor}; set featureGates.{gate}: true)"
    return f" (disabled in featureGates for Kueue {ctx.minor})"


def _check_device_class_mappings(ctx: _Context, config: Mapping[str, Any]) -> None:
    resources = as_mapping(config.get("resources"))
    mappings = as_list(resources.get("deviceClassMappings")) if resources is not None else []
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
    disabled_sources = {
        kind: f"{kind} sources require {gate} to be enabled{_gate_state(ctx, gate)}"
        for kind, gate in (("counter", PARTITIONABLE_GATE), ("capacity", CONSUMABLE_GATE))
        if not ctx.gate_on(gate)
    }
    for problem in dra.device_class_mapping_problems(mappings, base, disabled_sources):
        ctx.emit(RULE_DEVICE_CLASS_MAPPINGS, problem.path, problem.message, problem.severity)
    reserved = kueue_versions.for_version(ctx.minor).reserved_resource_names
    for index, mapping in enumerate(mappings):
        name = mapping.get("name") if isinstance(mapping, Mapping) else None
        if isinstance(name, str) and name in reserved:
            ctx.emit(
                RULE_DEVICE_CLASS_MAPPINGS,
                (*base, index, "name"),
                f"Invalid value: {name!r}: a resource name Kueue {ctx.minor} reserves; the manager would not start",
            )


# --- waitForPodsReady ------------------------------------------------------------------------------------


def _check_wait_for_pods_ready(ctx: _Context, config: Mapping[str, Any]) -> None:
    base: FieldPath = ("waitForPodsReady",)
    section = as_mapping(config.get("waitForPodsReady"))
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
    timeout = duration_of(section.get("timeout"))
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
    _check_negative_durations(ctx, section, base, ("recoveryTimeout",), RULE_WAIT_FOR_PODS_READY)
    strategy = as_mapping(section.get("requeuingStrategy"))
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
    integrations = as_mapping(config.get("integrations"))
    if integrations is None:
        return
    base: FieldPath = ("integrations",)
    seen: set[str] = set()
    frameworks = kueue_versions.for_version(ctx.minor).frameworks
    known = sorted(frameworks)
    for index, framework in enumerate(as_list(integrations.get("frameworks"))):
        if not isinstance(framework, str):
            continue
        path = (*base, "frameworks", index)
        if framework not in frameworks:
            suggestion = suggest(framework, known)
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
    for index, framework in enumerate(as_list(integrations.get("externalFrameworks"))):
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
    resources = as_mapping(config.get("resources"))
    if resources is None:
        return
    base: FieldPath = ("resources",)
    seen: set[str] = set()
    for index, raw in enumerate(as_list(resources.get("transformations"))):
        transformation = as_mapping(raw)
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
    elif strategy == "IgnoreUndeclared" and as_list(resources.get("excludeResourcePrefixes")):
        ctx.emit(
            RULE_INVALID,
            path,
            f"Invalid value {strategy!r}: excludeResourcePrefixes is not allowed when quotaCheckStrategy is "
            "IgnoreUndeclared",
        )


def _selector_requirements(
    ctx: _Context, selector: Mapping[str, Any], path: FieldPath
) -> list[Requirement] | None:
    """The selector as (key, operator, values) requirements, or None (after reporting) when it is invalid."""
    requirements: list[Requirement] = []
    valid = True
    for key, value in (as_mapping(selector.get("matchLabels")) or {}).items():
        if not isinstance(key, str) or not isinstance(value, str):
            return None
        key_errs = qualified_name_errors(key)
        value_errs = label_value_errors(value)
        if key_errs or value_errs:
            ctx.emit(
                RULE_INVALID,
                (*path, "matchLabels", key),
                f"Invalid value: {'; '.join(key_errs + value_errs)}",
            )
            valid = False
        requirements.append((key, "In", frozenset({value})))
    for index, raw in enumerate(as_list(selector.get("matchExpressions"))):
        expression = as_mapping(raw)
        if expression is None:
            return None
        expr_path = (*path, "matchExpressions", index)
        expr_key, operator = expression.get("key"), expression.get("operator")
        values = as_list(expression.get("values"))
        if (
            not isinstance(expr_key, str)
            or not isinstance(operator, str)
            or not all(isinstance(v, str) for v in values)
        ):
            return None
        if errs := qualified_name_errors(expr_key):
            ctx.emit(RULE_INVALID, (*expr_path, "key"), f"Invalid value {expr_key!r}: {'; '.join(errs)}")
            valid = False
        if error := selector_operator_error(operator, bool(values), quote=repr):
            field, message = error
            ctx.emit(RULE_INVALID, (*expr_path, field), message)
            valid = False
        requirements.append((expr_key, operator, frozenset(values)))
    return requirements if valid else None


def _check_namespace_selector(ctx: _Context, config: Mapping[str, Any]) -> None:
    path: FieldPath = ("managedJobsNamespaceSelector",)
    selector = as_mapping(config.get("managedJobsNamespaceSelector"))
    if selector is None:
        return
    requirements = _selector_requirements(ctx, selector, path)
    if requirements is None:
        return
    namespace = config.get("namespace")
    prohibited = ["kube-system"]
    prohibited.append(namespace if isinstance(namespace, str) and namespace else DEFAULT_NAMESPACE)
    for name in prohibited:
        if selector_matches(requirements, {_NAMESPACE_LABEL: name}):
            ctx.emit(RULE_INVALID, path, f'Invalid value: should not match the "{name}" namespace')


_FAIR_SHARING_STRATEGIES = (
    ("LessThanOrEqualToFinalShare",),
    ("LessThanInitialShare",),
    ("LessThanOrEqualToFinalShare", "LessThanInitialShare"),
)


def _check_other_sections(ctx: _Context, config: Mapping[str, Any]) -> None:
    fair_sharing = as_mapping(config.get("fairSharing"))
    if fair_sharing is not None:
        strategies = as_list(fair_sharing.get("preemptionStrategies"))
        if strategies and tuple(strategies) not in _FAIR_SHARING_STRATEGIES:
            allowed = ", ".join('"' + ",".join(s) + '"' for s in _FAIR_SHARING_STRATEGIES)
            ctx.emit(
                RULE_INVALID,
                ("fairSharing", "preemptionStrategies"),
                f"Unsupported value: {strategies!r}: supported values: {allowed}",
            )
    afs = as_mapping(config.get("admissionFairSharing"))
    if afs is not None:
        _check_negative_durations(
            ctx, afs, ("admissionFairSharing",), ("usageHalfLifeTime", "usageSamplingInterval")
        )
        for resource, weight in (as_mapping(afs.get("resourceWeights")) or {}).items():
            if is_number(weight) and weight < 0:
                ctx.emit(
                    RULE_INVALID,
                    ("admissionFairSharing", "resourceWeights", str(resource)),
                    f"Invalid value: {_NEGATIVE}",
                )
    icm = as_mapping(config.get("internalCertManagement"))
    if icm is not None and icm.get("enable") is not False:
        _check_format(ctx, icm, ("internalCertManagement",), "webhookServiceName", dns1035_label_errors)
        _check_format(ctx, icm, ("internalCertManagement",), "webhookSecretName", dns1123_subdomain_errors)
    multikueue = as_mapping(config.get("multiKueue"))
    if multikueue is not None:
        _check_negative_durations(ctx, multikueue, ("multiKueue",), ("gcInterval", "workerLostTimeout"))
        _check_format(ctx, multikueue, ("multiKueue",), "origin", label_value_errors)
    retention = as_mapping((as_mapping(config.get("objectRetentionPolicies")) or {}).get("workloads"))
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
        emit(RULE_VERSION, (), f"the Configuration must be an object, not a {kind_of(config)}")
        return findings
    api_version, kind = config.get("apiVersion"), config.get("kind")
    if kind != KIND:
        emit(RULE_VERSION, ("kind",), f'must be "{KIND}", not {kind!r}')
    accepted = kueue_versions.for_version(minor).config_api_versions
    if api_version not in API_VERSIONS or api_version not in accepted:
        emit(
            RULE_VERSION,
            ("apiVersion",),
            "must be " + " or ".join(f'"{v}"' for v in accepted) + f", not {api_version!r}",
        )
        return findings
    assert isinstance(api_version, str)

    effective = kueuegates.effective_gates(minor, _valid_gate_overrides(config, gates))
    ctx = _Context(origin_of, api_version, minor, gates, effective, findings)
    # v1beta2 has no waitForPodsReady.enable; _check_wait_for_pods_ready explains it.
    skip = frozenset({("waitForPodsReady", "enable")}) if api_version == API_V1BETA2 else frozenset()
    for error in decode_errors(config, api_version, skip):
        rule = RULE_UNKNOWN_FIELD if error.unknown_field else _section_rule(error.path)
        ctx.emit(rule, error.path, error.message)
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
    spec = as_mapping(deployment.get("spec")) or {}
    pod = as_mapping((as_mapping(spec.get("template")) or {}).get("spec")) or {}
    for raw in as_list(pod.get("containers")):
        container = as_mapping(raw)
        if container is not None and _has_flag(
            [*as_list(container.get("command")), *as_list(container.get("args"))]
        ):
            return True
    return False
