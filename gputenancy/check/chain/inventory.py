"""Claims against the devices a cluster declares: the CEL selectors of claim templates and DeviceClasses
evaluated on the device inventory of the cluster's capacity.

Kueue (v0.18+, pkg/dra/claims.go `validateCELSelectorsAgainstDevices`) lists the ResourceSlices of the
cluster for every claim request that carries CEL selectors, keeps the devices its DeviceClass's selectors
select, evaluates the request's selectors on them (a device counted for one request of a claim is not
counted again) and keeps the workload Inadmissible when fewer devices match than the request's count:
"insufficient matching devices for CEL selector in DeviceClass <class>: N device(s) match in the cluster
but M requested"; a selector that fails to evaluate on a device is "CEL evaluation failed". The pipeline
cannot list ResourceSlices, so `capacity[].inventory[]` in the cluster file says which devices a flavor's
nodes carry: the DeviceClass they belong to, how many (default: the flavor's count for the class), the
driver and the attributes and capacities the driver publishes (productName, memory, a MIG profile). What
the catalog DeviceClass's selectors imply (`device.driver == 'gpu.nvidia.com'`, `type == 'mig'`, the
profile) is added to every device of the class, and a class counted on a flavor without an inventory
entry has just those. A cluster with no inventory on any flavor is not judged: a note says so once.

Selectors are evaluated with the `cel` package the project already uses (`gputenancy.check.kubernetes.celext`),
with the Kubernetes quantity functions (quantity(), isGreaterThan, isLessThan, compareTo, asInteger,
asApproximateFloat, isInteger, sign, add, sub); a selector using anything else (semver, cel.bind, regex
library) is not judged.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from gputenancy.check.chain.builtview import DRA, Built, View, spec_of
from gputenancy.check.kubernetes.celext import cel
from gputenancy.common.findings import Finding, Origin, Severity
from gputenancy.inputs.quantity import Quantity, QuantityError, parse
from gputenancy.inputs.records import InventoryDevice

RULES: dict[str, Callable[[View], Iterator[Finding]]] = {}

# DeviceClasses the DRA drivers install (not rendered by the pipeline): their selectors, from the drivers'
# charts (NVIDIA dra-driver-nvidia-gpu v0.4.1 templates/deviceclass-*.yaml; HAMi k8s-dra-driver v0.1.0)
DRIVER_CLASSES: Mapping[str, tuple[str, ...]] = {
    "gpu.nvidia.com": (
        "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'gpu'",
    ),
    "mig.nvidia.com": (
        "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'mig'",
    ),
    "vfio.gpu.nvidia.com": (
        "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'vfio'",
    ),
    "hami-core-gpu.project-hami.io": (
        "device.driver == 'hami-core-gpu.project-hami.io' && "
        "device.attributes['hami-core-gpu.project-hami.io'].type == 'hami-gpu'",
    ),
}

_DRIVER = re.compile(r"""device\.driver\s*==\s*(['"])([^'"]+)\1""")
_ATTRIBUTE = re.compile(
    r"""device\.attributes\[\s*(['"])([^'"]+)\1\s*\]\.([A-Za-z_][A-Za-z0-9_]*)\s*==\s*(['"])([^'"]*)\4"""
)
_QUANTITY = "\x00quantity"


@dataclass(frozen=True)
class Device:
    """Devices of one kind on one flavor, as CEL sees them."""

    flavor: str
    device_class: str
    count: int
    driver: str
    attributes: Mapping[str, Mapping[str, Any]]
    capacity: Mapping[str, Mapping[str, Any]]
    origin: Origin
    declared: (
        bool  # False: a class counted on the flavor without an inventory entry (implied attributes only)
    )

    def cel(self) -> dict[str, Any]:
        return {
            "driver": self.driver,
            "allowMultipleAllocations": False,
            "attributes": {d: dict(v) for d, v in self.attributes.items()},
            "capacity": {d: dict(v) for d, v in self.capacity.items()},
        }

    def describe(self) -> str:
        shown = [f"{n} {v}" for d in self.attributes.values() for n, v in sorted(d.items()) if n != "type"]
        shown += [f"{n} {_shown(v)}" for d in self.capacity.values() for n, v in sorted(d.items())]
        return f"{self.count} {self.device_class} on {self.flavor}" + (
            f" ({', '.join(shown)})" if shown else ""
        )


# ------------------------------------------------------------------------ the quantity library of CEL


def _quantity(text: Any) -> dict[str, str]:
    try:
        q = parse(str(text))
    except QuantityError as exc:
        raise ValueError(f"quantity({text!r}): {exc}") from exc
    return {_QUANTITY: str(q.value.normalize())}


def _value(q: Any) -> Decimal:
    if isinstance(q, dict) and _QUANTITY in q:
        return Decimal(q[_QUANTITY])
    raise TypeError(f"not a quantity: {q!r}")


def _shown(q: Any) -> str:
    return Quantity(_value(q), parse("1Gi").format).canonical() if isinstance(q, dict) else str(q)


def _compare(a: Any, b: Any) -> int:
    x, y = _value(a), _value(b)
    return (x > y) - (x < y)


def _context() -> Any:
    ctx = cel.Context()
    functions: dict[str, Callable[..., Any]] = {
        "quantity": _quantity,
        "isQuantity": lambda s: _is_quantity(s),
        "isGreaterThan": lambda a, b: _compare(a, b) > 0,
        "isLessThan": lambda a, b: _compare(a, b) < 0,
        "compareTo": _compare,
        "asInteger": lambda a: int(_value(a)),
        "asApproximateFloat": lambda a: float(_value(a)),
        "isInteger": lambda a: _value(a) == _value(a).to_integral_value(),
        "sign": lambda a: (_value(a) > 0) - (_value(a) < 0),
        "add": lambda a, b: {_QUANTITY: str(_value(a) + (_value(b) if isinstance(b, dict) else Decimal(b)))},
        "sub": lambda a, b: {_QUANTITY: str(_value(a) - (_value(b) if isinstance(b, dict) else Decimal(b)))},
    }
    for name, fn in functions.items():
        ctx.add_function(name, fn)
    return ctx


def _is_quantity(text: Any) -> bool:
    try:
        parse(str(text))
    except QuantityError:
        return False
    return True


@functools.lru_cache(maxsize=1024)
def _program(expression: str) -> Any:
    return cel.compile(expression)


class Unjudged(Exception):
    """A selector this evaluator cannot run (a function or macro it lacks)."""


def matches(expression: str, device: Device) -> tuple[bool, str | None]:
    """Whether the selector selects the device, and why not when it fails to evaluate on it (a missing
    attribute: the API server's CEL says "no such key", and Kueue "CEL evaluation failed")."""
    ctx = _context()
    ctx.add_variable("device", device.cel())
    try:
        return bool(_program(expression).execute(ctx)), None
    except KeyError as exc:
        return False, f"no such key: {exc.args[0] if exc.args else exc}"
    except (RuntimeError, ValueError, TypeError) as exc:
        raise Unjudged(str(exc)) from exc


# ------------------------------------------------------------------------ the inventory of a cluster


def _implied(selectors: tuple[str, ...]) -> tuple[str | None, dict[str, dict[str, Any]]]:
    """The driver and attributes a DeviceClass's selectors pin with `==`."""
    driver = None
    attributes: dict[str, dict[str, Any]] = {}
    for expression in selectors:
        found = _DRIVER.search(expression)
        driver = driver or (found.group(2) if found else None)
        for m in _ATTRIBUTE.finditer(expression):
            attributes.setdefault(m.group(2), {})[m.group(3)] = m.group(5)
    return driver, attributes


def class_selectors(view: View, name: str) -> tuple[str, ...] | None:
    """The selectors of DeviceClass `name` on the cluster: as built, else the catalog's, else the driver's
    (None: a class nobody here knows the selectors of)."""
    built = view.named(DRA, "DeviceClass").get(name)
    if built is not None:
        return tuple(
            str(s["cel"]["expression"])
            for s in spec_of(built).get("selectors") or []
            if isinstance(s, dict) and isinstance(s.get("cel"), dict) and "expression" in s["cel"]
        )
    entry = view.catalog.classes.get(name)
    if entry is not None and entry.selectors:
        return entry.selectors
    return DRIVER_CLASSES.get(name)


def _split(name: str, driver: str) -> tuple[str, str]:
    domain, _, bare = name.rpartition("/")
    return (domain or driver), bare


def inventory(view: View) -> tuple[list[Device], list[Finding]] | None:
    """The devices the cluster declares, or None when no flavor declares an inventory."""
    caps = view.cluster.capacity
    if all(c.inventory is None for c in caps):
        return None
    devices: list[Device] = []
    problems: list[Finding] = []
    for cap in caps:
        counted = {name: (int(q.value), origin) for name, q, origin in cap.devices}
        listed: dict[str, int] = {}
        entries: list[InventoryDevice] = list(cap.inventory or ())
        declared = {e.device_class for e in entries}
        entries += [
            InventoryDevice(n, None, None, (), (), o) for n, (_, o) in counted.items() if n not in declared
        ]
        for e in entries:
            selectors = class_selectors(view, e.device_class) or ()
            implied_driver, attributes = _implied(selectors)
            driver = e.driver or implied_driver or e.device_class
            count = e.count if e.count is not None else counted.get(e.device_class, (None, None))[0]
            if count is None:
                problems.append(
                    e.origin.finding(
                        "device-inventory",
                        f"cluster {view.cluster.name!r} flavor {cap.flavor!r}: inventory of DeviceClass "
                        f"{e.device_class!r} needs a count (the flavor's devices do not count this class)",
                    )
                )
                continue
            listed[e.device_class] = listed.get(e.device_class, 0) + count
            attrs = {d: dict(v) for d, v in attributes.items()}
            for name, value in e.attributes:
                domain, bare = _split(name, driver)
                attrs.setdefault(domain, {})[bare] = value
            capacity: dict[str, dict[str, Any]] = {}
            for name, q in e.capacity:
                domain, bare = _split(name, driver)
                capacity.setdefault(domain, {})[bare] = {_QUANTITY: str(q.value.normalize())}
            devices.append(
                Device(
                    cap.flavor,
                    e.device_class,
                    count,
                    driver,
                    attrs,
                    capacity,
                    e.origin,
                    e.device_class in declared,
                )
            )
        for name, total in listed.items():
            if name in counted and total > counted[name][0]:
                problems.append(
                    counted[name][1].finding(
                        "device-inventory",
                        f"cluster {view.cluster.name!r} flavor {cap.flavor!r}: the inventory lists {total} "
                        f"devices of DeviceClass {name!r}, more than the {counted[name][0]} counted here",
                    )
                )
    return devices, problems


def device_inventory(view: View) -> Iterator[Finding]:
    """A cluster's device inventory (`capacity[].inventory[]`) agrees with its device counts: an entry for a
    class the flavor does not count states its `count`, and the counts listed for a class add up to at
    most the flavor's count for it.

    Passes: devices {gpu.nvidia.com: 16} with inventory [{deviceClass: gpu.nvidia.com, attributes:
    {productName: NVIDIA H100 80GB HBM3}}].
    Fails: devices {gpu.nvidia.com: 4} with an inventory entry of count 8 for gpu.nvidia.com.
    """
    found = inventory(view)
    if found is not None:
        yield from found[1]


# ------------------------------------------------------------------------ claims against the inventory


def _requests(rct: Built) -> Iterator[tuple[str, str, int, tuple[str, ...]]]:
    return requests_of(rct.body)


def requests_of(body: Mapping[str, Any]) -> Iterator[tuple[str, str, int, tuple[str, ...]]]:
    """(request name, DeviceClass, count, selectors) of each ExactCount request of a claim template
    (its body) that carries selectors."""
    spec = body.get("spec")
    devices = ((spec if isinstance(spec, dict) else {}).get("spec") or {}).get("devices") or {}
    for req in devices.get("requests") or [] if isinstance(devices, dict) else []:
        exactly = req.get("exactly") if isinstance(req, dict) else None
        if not isinstance(exactly, dict) or exactly.get("allocationMode", "ExactCount") != "ExactCount":
            continue
        selectors = tuple(
            str(s["cel"]["expression"])
            for s in exactly.get("selectors") or []
            if isinstance(s, dict) and isinstance(s.get("cel"), dict) and "expression" in s["cel"]
        )
        count = exactly.get("count", 1)
        if selectors and isinstance(count, int) and not isinstance(count, bool):
            yield str(req.get("name")), str(exactly.get("deviceClassName")), count, selectors


def _short(text: str, limit: int = 90) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _judge(view: View, devices: list[Device], rct: Built) -> Iterator[str]:
    """Why the requests of `rct` that carry selectors can never be satisfied by the declared devices."""
    used: dict[int, int] = {}  # devices of each kind counted for an earlier request of the claim
    for name, device_class, count, selectors in _requests(rct):
        known = class_selectors(view, device_class)
        matched = 0
        failures: list[str] = []
        candidates: list[Device] = []
        try:
            for i, dev in enumerate(devices):
                in_class = (
                    all(matches(s, dev)[0] for s in known)
                    if known is not None
                    else dev.device_class == device_class
                )
                if not in_class:
                    continue
                candidates.append(dev)
                verdicts = [matches(s, dev) for s in selectors]
                if dev.declared:  # a device with implied attributes only may have more: not a failure
                    failures += [f"{dev.device_class} on {dev.flavor}: {why}" for _, why in verdicts if why]
                if all(ok for ok, _ in verdicts):
                    take = dev.count - used.get(i, 0)
                    used[i] = used.get(i, 0) + min(take, count - matched)
                    matched += max(take, 0)
        except Unjudged:
            continue
        if matched >= count:
            continue
        selector = " && ".join(selectors)
        kueue = (
            f"CEL evaluation failed for DeviceClass {device_class}: {failures[0]}"
            if failures and not matched
            else f"insufficient matching devices for CEL selector in DeviceClass {device_class}: {matched} "
            f"device(s) match in the cluster but {count} requested"
        )
        shown = "; ".join(d.describe() for d in candidates[:3]) + ("; …" if len(candidates) > 3 else "")
        yield (
            f"request {name!r} ({count} where {_short(selector, 80)}) can never be satisfied: Kueue keeps it "
            f'Inadmissible ("{kueue}"); the cluster declares '
            + (shown if candidates else f"no device of class {device_class}")
        )


def claim_devices(view: View) -> Iterator[Finding]:
    """Every claim template request that carries CEL selectors can be satisfied by the devices the cluster
    declares in its inventory (`capacity[].inventory[]`), judged as Kueue judges it against the cluster's
    ResourceSlices: the DeviceClass's selectors and the request's, at least `count` devices. Without an
    inventory on the cluster, a note says the selectors were not checked.

    Passes: a template selecting productName == 'NVIDIA H100 80GB HBM3' on a cluster whose h100 flavor
    declares 16 such devices.
    Fails: the same template placed on a cluster whose flavors declare only NVIDIA A10G and L4 GPUs.
    """
    found = view.around.inventory if view.around is not None else inventory(view)
    rcts = [rct for rct in view.of(DRA, "ResourceClaimTemplate") if any(_requests(rct))]
    if not rcts:
        return
    if found is None:  # a note, once per cluster
        if view.around is None:  # a view of part of the cluster: the note is made for the whole
            yield from devices_note(view, [r.name for r in rcts])
        return
    devices = found[0]
    where = f"overlays/{view.cluster.name}/cluster.yaml"
    seen: set[tuple[Origin, str, str]] = set()
    for rct in rcts:
        for problem in _judge(view, devices, rct):
            key = (rct.origin, rct.name, problem)
            if key in seen:
                continue  # one finding per template line, whatever the namespaces
            seen.add(key)
            yield rct.origin.finding(
                "claim-devices",
                f"ResourceClaimTemplate {rct.name} on cluster {view.cluster.name!r}: {problem} ({where}); "
                "place it on other clusters or change its selectors",
            )


def devices_note(view: View, names: Sequence[str]) -> Iterator[Finding]:
    """The note of a cluster without inventory whose claim templates `names` carry CEL selectors."""
    if not names:
        return
    shown = ", ".join(sorted(set(names)))
    where = f"overlays/{view.cluster.name}/cluster.yaml"
    yield view.cluster.origin.finding(
        "claim-devices",
        f"cluster {view.cluster.name!r} declares no device inventory: the CEL selectors of claim templates "
        f"{_short(shown, 200)} are not checked against its devices; declare the devices each flavor "
        f"carries under capacity[].inventory in {where}",
        Severity.NOTE,
    )


RULES["device-inventory"] = device_inventory
RULES["claim-devices"] = claim_devices
