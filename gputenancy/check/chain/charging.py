"""What Kueue charges a pod, shared by `claim-admissible` and `admit`: the Kueue Configuration's
`resources.transformations` (pkg/workload/workload.go `applyResourceTransformations`, with `multiplyBy`) and
`excludeResourcePrefixes`, and the devices a claim spec asks for per DeviceClass (pkg/dra/claims.go
`countDevicesPerClass`, with the claims Kueue refuses)."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from gputenancy.inputs.quantity import Quantity, QuantityError, parse

_NONE = Decimal(0)


def _q(value: Any) -> Quantity | None:
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        return None
    return _parsed(type(value).__name__, value)


@functools.lru_cache(maxsize=4096)
def _parsed(kind: str, value: str | int | float) -> Quantity | None:
    """`kind` keeps 1 and 1.0 (equal keys) apart."""
    try:
        return parse(value)
    except QuantityError:
        return None


def excluded_prefixes(config: Mapping[str, Any] | None) -> tuple[str, ...]:
    resources = (config or {}).get("resources") or {}
    prefixes = resources.get("excludeResourcePrefixes") if isinstance(resources, dict) else None
    return tuple(p for p in prefixes or [] if isinstance(p, str))


Transformation = tuple[str, bool, tuple[tuple[str, Quantity], ...], str]
"""input, retained (strategy Retain), outputs per unit, multiplyBy ("" for none)"""


def config_transformations(config: Mapping[str, Any] | None) -> tuple[Transformation, ...]:
    """`resources.transformations` of the Kueue Configuration: what Kueue charges instead of (Replace, the
    default) or besides (Retain) an input resource, per unit of the input (times the `multiplyBy`
    resource where the pod asks for it)."""
    resources = (config or {}).get("resources") or {}
    out: list[Transformation] = []
    for t in resources.get("transformations") or [] if isinstance(resources, dict) else []:
        if not isinstance(t, dict) or not isinstance(t.get("input"), str):
            continue
        outputs = t.get("outputs") or {}
        per_unit = (
            tuple((str(name), q) for name, q in ((n, _q(v)) for n, v in outputs.items()) if q is not None)
            if isinstance(outputs, dict)
            else ()
        )
        multiply_by = t.get("multiplyBy")
        out.append(
            (
                t["input"],
                t.get("strategy", "Retain") == "Retain",
                per_unit,
                multiply_by if isinstance(multiply_by, str) else "",
            )
        )
    return tuple(out)


def transformed(
    needs: Mapping[str, tuple[Quantity, str]],
    transformations: tuple[Transformation, ...],
    *,
    retain_multiplied: bool = True,
) -> dict[str, tuple[Quantity, str]]:
    """A pod's container requests as Kueue charges them after `resources.transformations`
    (pkg/workload/workload.go `applyResourceTransformations`): an input is multiplied by the amount of its
    `multiplyBy` resource when the pod asks for it, and read as 1 when it does not (measured: HAMi memory
    without nvidia.com/gpu is charged once); each output is the input times its per-unit amount; Retain
    keeps the input (multiplied up to Kueue v0.18, as requested from v0.19: `retain_multiplied`), Replace
    drops it."""
    out = dict(needs)
    for source, retained, outputs, multiply_by in transformations:
        if source not in needs:
            continue
        amount, why = needs[source]
        factor = needs[multiply_by][0].value if multiply_by and multiply_by in needs else None
        if factor is not None:
            amount = Quantity(amount.value * factor, amount.format)
            why = f"{why}, times {multiply_by} {needs[multiply_by][0].canonical()}"
        if not retained:
            out.pop(source, None)
        elif factor is not None and retain_multiplied:
            out[source] = (amount, why)
        for name, per_unit in outputs:
            value = amount.value * per_unit.value
            before = out.get(name)
            total = Quantity(value + (before[0].value if before else _NONE), per_unit.format)
            out[name] = (
                total,
                f"{source} {amount.canonical()} ({why}) transformed by the Kueue Configuration",
            )
    return out


ClaimDevices = tuple[dict[str, int], str | None, tuple[str | int, ...]]
"""devices per DeviceClass, the request Kueue refuses (None: none), and the path to it in the claim spec"""


def claim_device_classes(claim_spec: Mapping[str, Any]) -> ClaimDevices:
    """Devices per DeviceClass a claim spec asks for, as Kueue counts them (pkg/dra/claims.go
    `countDevicesPerClass`: the counts of every `exactly` request summed per class), or the reason Kueue
    gives for a claim it does not support (constraints, config, firstAvailable, adminAccess,
    allocationMode All), which keeps the workload Inadmissible."""
    counts: dict[str, int] = {}
    devices = claim_spec.get("devices") or {}
    if not isinstance(devices, dict):
        return counts, None, ()
    if devices.get("constraints"):
        return counts, "device constraints (MatchAttribute) are not supported", ("devices", "constraints")
    if devices.get("config"):
        return counts, "device config is not supported", ("devices", "config")
    for i, req in enumerate(devices.get("requests") or []):
        if not isinstance(req, dict):
            continue
        at: tuple[str | int, ...] = ("devices", "requests", i)
        if req.get("firstAvailable"):
            return counts, "FirstAvailable device selection is not supported", at
        exactly = req.get("exactly")
        if not isinstance(exactly, dict):
            continue
        if exactly.get("adminAccess") is True:
            return counts, "AdminAccess is not supported", (*at, "exactly", "adminAccess")
        if exactly.get("allocationMode", "ExactCount") == "All":
            return counts, "AllocationMode 'All' is not supported", (*at, "exactly", "allocationMode")
        count = exactly.get("count", 1)
        name = exactly.get("deviceClassName")
        if not isinstance(name, str) or isinstance(count, bool) or not isinstance(count, int):
            continue
        counts[name] = counts.get(name, 0) + count
    return counts, None, ()
