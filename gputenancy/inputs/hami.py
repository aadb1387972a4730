"""Classic HAMi (device plugin) vGPUs: records, unit conversions and builders.

HAMi slices a GPU into vGPUs. A container asks for `nvidia.com/gpu: N` vGPUs (each on a different card),
`nvidia.com/gpumem: M` MiB and `nvidia.com/gpucores: C` percent of a card's SMs *per vGPU* (the names
are the chart's `resourceName`, `resourceMem`, `resourceCores` and can be overridden). Kueue charges
per-vGPU values times the vGPU count through `resources.transformations` with `multiplyBy`, under
output names (by default `nvidia.com/total-gpumem` and `nvidia.com/total-gpucores`).

Tenants write budgets in human units: vGPUs, memory as a quantity (`48Gi`), compute in percent of a
card (`150` = one and a half cards). This module converts them exactly: memory must be a whole number
of MiB (HAMi counts MiB), percent and vGPUs whole numbers. The quota values are Quantities of the
unit Kueue charges, so `canonical()` is the form the API server stores (16000 MiB is "16k").
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from gputenancy.common.findings import Origin
from gputenancy.inputs import amounts, quantity
from gputenancy.inputs.amount import Amount
from gputenancy.inputs.quantity import Quantity

if TYPE_CHECKING:
    from gputenancy.inputs.document import Document

MIB = 1 << 20
PERCENT_PER_CARD = 100
DEFAULT_SPLIT_COUNT = 10  # HAMi's deviceSplitCount default
DRA_DRIVER = "hami-core-gpu.project-hami.io"  # driver and DeviceClass of HAMi through DRA

# HAMi chart value -> default resource name; the quota names are what Kueue charges after the transformation.
DEFAULT_NAMES: Mapping[str, str] = {
    "resourceName": "nvidia.com/gpu",
    "resourceMem": "nvidia.com/gpumem",
    "resourceCores": "nvidia.com/gpucores",
    "memoryQuota": "nvidia.com/total-gpumem",
    "coresQuota": "nvidia.com/total-gpucores",
}


@dataclasses.dataclass(frozen=True)
class HamiDevice:
    """A classic HAMi device kind of the platform catalog (`hami[]` in base/platform.yaml)."""

    name: str
    resource_name: str  # vGPU count; also the transformations' multiplyBy
    resource_mem: str  # MiB per vGPU (transformation input)
    resource_cores: str  # percent per vGPU (transformation input)
    memory_quota: str  # MiB in total (transformation output, covered by ClusterQueues)
    cores_quota: str  # percent in total (transformation output)
    origin: Origin
    field_origins: Mapping[str, Origin] = dataclasses.field(default_factory=dict)

    def origin_of(self, key: str) -> Origin:
        return self.field_origins.get(key, self.origin)

    @property
    def names(self) -> dict[str, str]:
        """Chart-style key -> resource name, every name this device puts into Kueue's accounting."""
        return {
            "resourceName": self.resource_name,
            "resourceMem": self.resource_mem,
            "resourceCores": self.resource_cores,
            "memoryQuota": self.memory_quota,
            "coresQuota": self.cores_quota,
        }

    @property
    def quota_names(self) -> tuple[str, str, str]:
        """What a ClusterQueue covers: vGPUs, total MiB, total percent."""
        return (self.resource_name, self.memory_quota, self.cores_quota)


@dataclasses.dataclass(frozen=True)
class HamiBudget:
    """`hami:` of a flavor budget, already in Kueue's units: vGPUs, MiB, percent."""

    vgpus: Amount
    memory: Amount  # MiB
    cores: Amount  # percent of one card
    origin: Origin

    def amounts(self, device: HamiDevice) -> tuple[tuple[str, Amount], ...]:
        return (
            (device.resource_name, self.vgpus),
            (device.memory_quota, self.memory),
            (device.cores_quota, self.cores),
        )


@dataclasses.dataclass(frozen=True)
class HamiCapacity:
    """`hami:` of a cluster's capacity entry: the HAMi nodes behind one flavor."""

    device: str | None  # platform device kind; None: the platform's only one
    cards: int
    memory_per_card: int  # MiB
    split_count: int  # vGPUs per card (HAMi deviceSplitCount)
    origin: Origin
    field_origins: Mapping[str, Origin] = dataclasses.field(default_factory=dict)

    def origin_of(self, key: str) -> Origin:
        return self.field_origins.get(key, self.origin)

    def totals(self) -> tuple[Quantity, Quantity, Quantity]:
        """vGPUs, MiB and percent the flavor has: cards x split, cards x memory, cards x 100."""
        return (
            quantity.parse(self.cards * self.split_count),
            quantity.parse(self.cards * self.memory_per_card),
            quantity.parse(self.cards * PERCENT_PER_CARD),
        )


@dataclasses.dataclass(frozen=True)
class VgpuTemplate:
    """A job shape the tenant submits (`vgpuTemplates[]`): vGPUs per pod, MiB and percent per vGPU."""

    name: str
    vgpus: int
    memory: int  # MiB per vGPU
    cores: int  # percent per vGPU
    clusters: tuple[str, ...] | None
    origin: Origin
    field_origins: Mapping[str, Origin] = dataclasses.field(default_factory=dict)

    def origin_of(self, key: str) -> Origin:
        return self.field_origins.get(key, self.origin)

    def charge(self) -> tuple[int, int, int]:
        """What Kueue charges for one pod of this shape: vGPUs, vGPUs x MiB, vGPUs x percent."""
        return (self.vgpus, self.vgpus * self.memory, self.vgpus * self.cores)


# ---------------------------------------------------------------- conversions


class UnitError(ValueError):
    """A value that cannot be converted exactly; the message says what to write instead."""


def mib(value: str | int | float) -> int:
    """GPU memory written as a quantity with a unit (`48Gi`, `16000Mi`, `15G`) as whole MiB.

    A bare number is refused: HAMi's own `gpumem` is in MiB but Kubernetes reads a bare number as bytes,
    so either reading would be a guess."""
    if not isinstance(value, str) or not any(ch.isalpha() for ch in value):
        raise UnitError(
            f"GPU memory {value!r} has no unit; write it with one: {value}Mi for MiB (HAMi's gpumem unit) or e.g. 16Gi"
        )
    q = quantity.parse(value)
    if q.is_negative():
        raise UnitError(f"GPU memory must not be negative, got {value!r}")
    exact = q.value / MIB
    if exact != exact.to_integral_value():
        low, high = math.floor(exact), math.ceil(exact)
        raise UnitError(
            f"GPU memory {value!r} is {_bytes(q.value)} bytes, not a whole number of MiB (HAMi counts GPU "
            f"memory in MiB); write {low}Mi or {high}Mi"
        )
    return int(exact)


def whole(value: str | int | float, what: str) -> int:
    """A vGPU count, a card count, a split count or a percent: a non-negative whole number (HAMi's
    resources are integers), written plainly like a device count (`2k`, `2e3`, `4.0` are refused
    whatever `overcommit` says)."""
    q = quantity.parse(value)
    if q.is_negative():
        raise UnitError(f"{what} must not be negative, got {value!r}")
    if not q.is_integer():
        raise UnitError(f"{what} must be a whole number, got {value!r} ({q.value.normalize():f})")
    if amounts.device_count_problem(value) is not None:
        raise UnitError(
            f"{what} must be a plain whole number (digits only: no suffix, exponent or decimal point), "
            f"got {value!r}"
        )
    return int(q.value)


def mib_quantity(n: int) -> Quantity:
    """MiB as Kueue charges and the API server stores them (a plain decimal count: 16000 -> "16k")."""
    return quantity.parse(n)


def gib_text(n_mib: Quantity | int) -> str:
    """MiB shown in GiB for people: 49152 -> "48Gi", 16000 -> "15.625Gi"."""
    value = n_mib.value if isinstance(n_mib, Quantity) else Decimal(n_mib)
    gib = value / 1024
    shown = f"{gib.normalize():f}" if gib == gib.quantize(Decimal("0.001")) else f"{gib:.3f}"
    return f"{shown}Gi"


def percent_text(q: Quantity | int) -> str:
    """Percent of a card: 150 -> "150% (1.5 GPUs)"."""
    value = q.value if isinstance(q, Quantity) else Decimal(q)
    cards = value / PERCENT_PER_CARD
    return f"{value.normalize():f}% ({cards.normalize():f} GPU{'' if cards == 1 else 's'})"


def human(q: Quantity, unit: str) -> str:
    """A quota value as people read it: MiB in GiB, percent with %; anything else canonical."""
    if unit == "MiB":
        return gib_text(q)
    if unit == "percent":
        return percent_text(q)
    return q.canonical()


def _bytes(value: Decimal) -> str:
    return f"{value.normalize():f}"


# ---------------------------------------------------------------- builders

Add = Callable[[Origin, str, str], None]
AmountOf = Callable[[tuple[str | int, ...], Any], Amount]

RULE_UNITS = "hami-units"


def _convert(
    add: Add,
    doc: Document,
    path: tuple[str | int, ...],
    amount: Amount,
    raw: Any,
    convert: Callable[[Any], int],
) -> Amount:
    fields = raw if isinstance(raw, dict) else {"nominal": raw}
    values: dict[str, Quantity | None] = {}
    for key, attr in (("nominal", "nominal"), ("borrowingLimit", "borrowing"), ("lendingLimit", "lending")):
        if key not in fields:
            values[attr] = None
            continue
        sub = (*path, key) if isinstance(raw, dict) else path
        values[attr] = quantity.parse(0)
        try:
            values[attr] = quantity.parse(convert(fields[key]))
        except UnitError as exc:
            add(doc.origin(*sub), RULE_UNITS, f"{_dotted(sub)}: {exc}")
        except quantity.QuantityError:
            pass  # not a quantity at all: reported by the amount builder
    nominal = values["nominal"]
    assert nominal is not None
    return dataclasses.replace(
        amount, nominal=nominal, borrowing=values["borrowing"], lending=values["lending"]
    )


def build_budget(
    add: Add, doc: Document, path: tuple[str | int, ...], raw: Mapping[str, Any], amount_of: AmountOf
) -> HamiBudget:
    """`hami: {vgpus, memory, cores}` of a flavor budget, converted to vGPUs, MiB and percent."""
    parts = {}
    for key, convert in (
        ("vgpus", lambda v: whole(v, "vGPUs")),
        ("memory", mib),
        ("cores", lambda v: whole(v, "GPU compute (percent of a card)")),
    ):
        p = (*path, key)
        parts[key] = _convert(add, doc, p, amount_of(p, raw[key]), raw[key], convert)
    return HamiBudget(parts["vgpus"], parts["memory"], parts["cores"], doc.key_origin(*path))


def build_device(doc: Document, index: int, raw: Mapping[str, Any]) -> HamiDevice:
    path = ("hami", index)
    names = {key: str(raw.get(key, default)) for key, default in DEFAULT_NAMES.items()}
    return HamiDevice(
        name=raw["name"],
        resource_name=names["resourceName"],
        resource_mem=names["resourceMem"],
        resource_cores=names["resourceCores"],
        memory_quota=names["memoryQuota"],
        cores_quota=names["coresQuota"],
        origin=doc.origin(*path),
        field_origins={key: doc.origin(*path, key) for key in (*DEFAULT_NAMES, "name") if key in raw},
    )


def build_capacity(
    add: Add, doc: Document, path: tuple[str | int, ...], raw: Mapping[str, Any]
) -> HamiCapacity:
    values: dict[str, int] = {}
    for key, convert in (
        ("cards", lambda v: whole(v, "cards")),
        ("memoryPerCard", mib),
        ("splitCount", lambda v: whole(v, "splitCount")),
    ):
        if key not in raw:
            continue
        try:
            values[key] = convert(raw[key])
        except (UnitError, quantity.QuantityError) as exc:
            add(doc.origin(*path, key), RULE_UNITS, f"{_dotted((*path, key))}: {exc}")
            values[key] = 0
    return HamiCapacity(
        device=raw.get("device"),
        cards=values["cards"],
        memory_per_card=values["memoryPerCard"],
        split_count=values.get("splitCount", DEFAULT_SPLIT_COUNT),
        origin=doc.key_origin(*path),
        field_origins={key: doc.origin(*path, key) for key in raw},
    )


def build_templates(add: Add, doc: Document, raw_list: list[Mapping[str, Any]]) -> tuple[VgpuTemplate, ...]:
    out = []
    for i, raw in enumerate(raw_list):
        path = ("vgpuTemplates", i)
        values: dict[str, int] = {}
        for key, convert in (
            ("vgpus", lambda v: whole(v, "vGPUs")),
            ("memory", mib),
            ("cores", lambda v: whole(v, "GPU compute (percent of a card per vGPU)")),
        ):
            try:
                values[key] = convert(raw.get(key, 1))
            except (UnitError, quantity.QuantityError) as exc:
                add(doc.origin(*path, key), RULE_UNITS, f"{_dotted((*path, key))}: {exc}")
                values[key] = 0
        out.append(
            VgpuTemplate(
                name=raw["name"],
                vgpus=values["vgpus"],
                memory=values["memory"],
                cores=values["cores"],
                clusters=tuple(raw["clusters"]) if "clusters" in raw else None,
                origin=doc.origin(*path),
                field_origins={key: doc.origin(*path, key) for key in raw},
            )
        )
    return tuple(out)


def _dotted(path: tuple[str | int, ...]) -> str:
    out = "$"
    for p in path:
        out += f"[{p}]" if isinstance(p, int) else f".{p}"
    return out
