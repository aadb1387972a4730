"""The fields of a Kueue manager Configuration, and how Kueue decodes them.

The field tables of config.kueue.x-k8s.io/v1beta1 and v1beta2 (every field Kueue knows, with its Go
type) and the framework names integrations.frameworks accepts, the parsing of Go values
(time.ParseDuration, resource quantities), and the strict decoder: `decode_errors` yields what Kueue's
strict decoding refuses (unknown fields, values of the wrong type) before any validation runs. The
readers (`as_mapping`, `as_list`, `duration_of`) take a field's value as it is, malformed or not.
"""

from __future__ import annotations

import dataclasses
import difflib
import re
import types
from collections.abc import Iterator, Mapping, Sequence
from fractions import Fraction
from typing import Any, NamedTuple

from gputenancy.versions import kueue as kueue_versions

FieldPath = tuple[str | int, ...]

API_V1BETA2 = "config.kueue.x-k8s.io/v1beta2"
API_V1BETA1 = "config.kueue.x-k8s.io/v1beta1"
API_VERSIONS = frozenset({API_V1BETA2, API_V1BETA1})

# integrations.frameworks: the names Kueue registers with its jobframework (pkg/controller/jobs), of any
# supported version (each version's own list is in gputenancy/versions/data/kueue/<minor>.json).
KNOWN_FRAMEWORKS: frozenset[str] = frozenset().union(
    *(kueue_versions.for_version(m).frameworks for m in kueue_versions.supported_minors())
)

_INT32 = (-(2**31), 2**31 - 1)
_INT64 = (-(2**63), 2**63 - 1)


# --- readers ---------------------------------------------------------------------------------------------


def as_mapping(value: object) -> Mapping[str, Any] | None:
    return value if isinstance(value, Mapping) else None


def as_list(value: object) -> list[Any]:
    return list(value) if isinstance(value, list | tuple) else []


def duration_of(value: object) -> int | None:
    """Nanoseconds of a duration field value, or None when absent or not decodable (decode_errors says why)."""
    if not isinstance(value, str):
        return None
    try:
        return parse_go_duration(value)
    except ValueError:
        return None


def is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def kind_of(value: object) -> str:
    """The JSON type name of a decoded value, for messages."""
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


def suggest(word: str, candidates: Sequence[str]) -> str | None:
    """The candidate `word` most likely misspells (case-insensitive match first), or None."""
    folded = {c.lower(): c for c in candidates}
    if word.lower() in folded:
        return folded[word.lower()]
    close = difflib.get_close_matches(word, list(candidates), n=1, cutoff=0.75)
    return close[0] if close else None


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
_PORT = _Scalar("port")  # an int32 the manager listens on: 1..65535
_ADDR = _Scalar("address")  # a bind address "[host]:port" ("" or "0": not served)
_BIND = re.compile(r"(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]*):([0-9]{1,5})")

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
_WEBHOOK = _struct(port=_PORT, host=_S, certDir=_S)
_HEALTH = _struct(healthProbeBindAddress=_ADDR, readinessEndpointName=_S, livenessEndpointName=_S)
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
        bindAddress=_ADDR,
        enableClusterQueueResources=_B,
        customLabels=_List(
            _struct(
                name=_S, sourceLabelKey=_S, sourceAnnotationKey=_S, sourceKind=_S, trackedValues=_List(_S)
            )
        ),
    ),
    health=_HEALTH,
    pprofBindAddress=_ADDR,
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
    visibilityServer=_struct(bindAddress=_S, bindPort=_PORT),
)

_V1BETA1 = _struct(
    apiVersion=_S,
    kind=_S,
    namespace=_S,
    webhook=_WEBHOOK,
    leaderElection=_LEADER_ELECTION,
    metrics=_struct(bindAddress=_ADDR, enableClusterQueueResources=_B),
    health=_HEALTH,
    pprofBindAddress=_ADDR,
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


# --- strict decoding -------------------------------------------------------------------------------------


class DecodeError(NamedTuple):
    """A value Kueue cannot decode: an unknown field, or a value of the wrong type at `path`."""

    path: FieldPath
    message: str
    unknown_field: bool = False


def decode_errors(
    config: Mapping[str, Any], api_version: str, skip: frozenset[FieldPath]
) -> Iterator[DecodeError]:
    """What strict decoding of `config` as `api_version` (one of API_VERSIONS) refuses, in document order.

    Fields at a path in `skip` are not looked at.
    """
    other = _SCHEMAS[API_V1BETA1 if api_version == API_V1BETA2 else API_V1BETA2]
    yield from _walk(api_version, config, _SCHEMAS[api_version], other, (), skip)


def _scalar_error(value: object, node: _Scalar, path: FieldPath) -> DecodeError | None:
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
    elif kind == "port":
        problem = _port_problem(value)
    elif kind == "address":
        problem = _address_problem(value)
    elif kind == "float" and not is_number(value):
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
        is_number(value) or (isinstance(value, str) and _QUANTITY.fullmatch(value))
    ):
        problem = "must be a quantity such as 5Gi, 500m or 4"
    if problem is None:
        return None
    scalar = not isinstance(value, Mapping | list | tuple)
    shown = f" (got {kind_of(value)} {value!r})" if scalar and not problem.startswith("time:") else ""
    if kind in ("port", "address") and isinstance(value, int | str) and not isinstance(value, bool):
        return DecodeError(path, f"{problem}{shown}; the manager cannot listen there and exits at start-up")
    return DecodeError(path, f"{problem}{shown}; Kueue cannot decode the Configuration")


def _port_problem(value: object) -> str | None:
    if not isinstance(value, int) or isinstance(value, bool):
        return "must be an integer"
    return None if 1 <= value <= 65535 else "must be a port number (1..65535)"


def _address_problem(value: object) -> str | None:
    """A bind address as controller-runtime takes it: "host:port" (host may be empty), or "" / "0"
    (not served)."""
    if not isinstance(value, str):
        return "must be a string"
    if value in ("", "0"):
        return None
    match = _BIND.fullmatch(value)
    if match is None:
        return 'must be a bind address "host:port" (such as ":8443"), or "0" to turn it off'
    return None if int(match.group(2)) <= 65535 else "must have a port of 0..65535"


def _unknown_field(
    api_version: str, path: FieldPath, key: str, node: _Struct, other: _Node | None
) -> DecodeError:
    message = f'unknown field "{key}" in {api_version}; Kueue decodes the Configuration strictly and exits'
    other_api = API_V1BETA1 if api_version == API_V1BETA2 else API_V1BETA2
    suggestion = suggest(key, sorted(node.fields))
    if suggestion is not None:
        message += f' (did you mean "{suggestion}"?)'
    elif isinstance(other, _Struct) and key in other.fields:
        message += f" (the field exists only in {other_api})"
    return DecodeError(path, message, unknown_field=True)


def _walk(
    api_version: str,
    value: object,
    node: _Node,
    other: _Node | None,
    path: FieldPath,
    skip: frozenset[FieldPath],
) -> Iterator[DecodeError]:
    if value is None:
        return
    if isinstance(node, _Scalar):
        if node.kind != "any" and (error := _scalar_error(value, node, path)) is not None:
            yield error
        return
    if isinstance(node, _Struct):
        if not isinstance(value, Mapping):
            yield DecodeError(path, f"must be an object, not a {kind_of(value)}")
            return
        for raw_key, item in value.items():
            key = raw_key if isinstance(raw_key, str) else str(raw_key)
            child = (*path, key)
            if child in skip:
                continue
            if key not in node.fields:
                yield _unknown_field(api_version, child, key, node, other)
                continue
            other_child = other.fields.get(key) if isinstance(other, _Struct) else None
            yield from _walk(api_version, item, node.fields[key], other_child, child, skip)
        return
    if isinstance(node, _List):
        if not isinstance(value, list | tuple):
            yield DecodeError(path, f"must be a list, not a {kind_of(value)}")
            return
        other_item = other.item if isinstance(other, _List) else None
        for index, item in enumerate(value):
            yield from _walk(api_version, item, node.item, other_item, (*path, index), skip)
        return
    if not isinstance(value, Mapping):
        yield DecodeError(path, f"must be a map, not a {kind_of(value)}")
        return
    other_value = other.value if isinstance(other, _Map) else None
    for raw_key, item in value.items():
        if not isinstance(raw_key, str):
            yield DecodeError((*path, str(raw_key)), "map keys must be strings")
            continue
        yield from _walk(api_version, item, node.value, other_value, (*path, raw_key), skip)
