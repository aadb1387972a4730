"""What the checks of a Kueue manager Configuration share: their rule ids, the feature gates they look
at, the `Context` of one check (origin of a field path, apiVersion, effective gates, findings) and the
small value checks every section uses."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from gputenancy.check.config.configfields import FieldPath, duration_of
from gputenancy.common.findings import Finding, Origin, Severity
from gputenancy.versions import gates as kueuegates

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
PARTITIONABLE_GATE = "KueueDRAIntegrationPartitionableDevices"
CONSUMABLE_GATE = "KueueDRAIntegrationConsumableCapacity"
QUOTA_CHECK_GATE = "QuotaCheckStrategy"
DISABLE_WAIT_GATE = "DisableWaitForPodsReady"

DEFAULT_NAMESPACE = "kueue-system"
NAMESPACE_LABEL = "kubernetes.io/metadata.name"

MAX_DEVICE_CLASS_MAPPINGS = 16
NEGATIVE = "must be greater than or equal to 0"


# --- helpers ---------------------------------------------------------------------------------------------


def dotted(path: Sequence[str | int]) -> str:
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + part
    return out or "<root>"


def section_rule(path: FieldPath) -> str:
    if path[:1] == ("waitForPodsReady",):
        return RULE_WAIT_FOR_PODS_READY
    if path[:2] == ("resources", "deviceClassMappings"):
        return RULE_DEVICE_CLASS_MAPPINGS
    return RULE_INVALID


@dataclasses.dataclass
class Context:
    origin_of: OriginOf
    api_version: str
    minor: str
    gates: Mapping[str, kueuegates.Gate]
    effective: Mapping[str, bool]
    findings: list[Finding]

    def emit(self, rule: str, path: FieldPath, message: str, severity: Severity = Severity.ERROR) -> None:
        self.findings.append(self.origin_of(path).finding(rule, f"{dotted(path)}: {message}", severity))

    def gate_on(self, name: str) -> bool:
        return self.effective.get(name, False)


def check_negative_durations(
    ctx: Context,
    section: Mapping[str, Any],
    path: FieldPath,
    fields: Sequence[str],
    rule: str = RULE_INVALID,
) -> None:
    for field in fields:
        value = duration_of(section.get(field))
        if value is not None and value < 0:
            ctx.emit(rule, (*path, field), f"Invalid value {section[field]!r}: {NEGATIVE}")


def check_format(
    ctx: Context,
    section: Mapping[str, Any],
    path: FieldPath,
    field: str,
    errors: Callable[[str], list[str]],
) -> None:
    value = section.get(field)
    if isinstance(value, str) and (errs := errors(value)):
        ctx.emit(RULE_INVALID, (*path, field), f"Invalid value {value!r}: {','.join(errs)}")
