"""Kueue's start-up rules per minor version, from the package's own table (data/kueue_startup_rules.json).

Kueue's manager exits at start-up when a feature gate is on while a gate it depends on is off
(`LoadAndValidateFeatureGates` in pkg/config/validation.go); and with `KueueDRAIntegration` off, every
workload that uses DRA is made Inadmissible (pkg/controller/core/workload_controller.go), so
`deviceClassMappings` are dead. The facts are read from Kueue's sources at each tag (the `source`
of each entry names the file); the check that applies them is `gputenancy.check.config.startuprules`.
"""

from __future__ import annotations

import functools
import json
import types
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources

from gputenancy.versions.gates import minor_of

_DATA_FILE = "kueue_startup_rules.json"


@dataclass(frozen=True)
class GateDependency:
    """`gate` on needs `requires` on; `message` is Kueue's own text when it is not the usual one."""

    gate: str
    requires: str
    message: str = ""

    def text(self) -> str:
        return self.message or f"{self.gate} requires {self.requires} to be enabled"


@dataclass(frozen=True)
class StartupRules:
    """What one Kueue minor version checks at start-up (and what it does with DRA workloads)."""

    minor: str
    source: str
    dependencies: tuple[GateDependency, ...]
    mappings_gate: str
    reject_gate: str
    custom_labels: CustomLabelLimits | None = None  # None: the version checks names only


@dataclass(frozen=True)
class CustomLabelLimits:
    """metrics.customLabels limits of a Kueue version (v0.19 added them)."""

    most: int
    most_tracked: int
    most_tracked_workload: int
    default_source_kind: str
    per_source_kind: Mapping[str, int]


@functools.cache
def _table() -> Mapping[str, StartupRules]:
    raw = json.loads(
        resources.files("gputenancy.versions").joinpath("data", _DATA_FILE).read_text(encoding="utf-8")
    )
    table = {}
    for minor, spec in raw.items():
        table[minor] = StartupRules(
            minor,
            str(spec["source"]),
            tuple(
                GateDependency(str(d["gate"]), str(d["requires"]), str(d.get("message", "")))
                for d in spec["gateDependencies"]
            ),
            str(spec["deviceClassMappings"]["gate"]),
            str(spec["deviceClassMappings"]["rejectGate"]),
            _limits(spec.get("customLabels", {}).get("limits")),
        )
    return types.MappingProxyType(table)


def _limits(raw: Mapping[str, object] | None) -> CustomLabelLimits | None:
    if not raw:
        return None
    per = raw["perSourceKind"]
    assert isinstance(per, dict)
    return CustomLabelLimits(
        int(str(raw["max"])),
        int(str(raw["maxTrackedValues"])),
        int(str(raw["maxTrackedWorkloadValues"])),
        str(raw["defaultSourceKind"]),
        types.MappingProxyType({str(k): int(v) for k, v in per.items()}),
    )


def rules_for(version: str) -> StartupRules | None:
    """The start-up rules of Kueue `version` (any patch of a supported minor), or None without a table."""
    return _table().get(minor_of(version))


def versions() -> list[str]:
    return sorted(_table())
