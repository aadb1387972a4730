"""The devices a cluster publishes against the capacity its overlay declares.

Each device of each ResourceSlice is matched to the (flavor, DeviceClass) pairs of the overlay's
`capacity[].devices`: the DeviceClass's CEL selectors (the live DeviceClass, else the catalog's, else the
driver's; evaluated as the checks evaluate them, `check/chain/inventory.py`) must select it, the flavor's
`inventory` entry for the class (driver, attributes) must describe it, and, when the dump holds the Node,
the node must carry the flavor's `nodeLabels`. Fewer devices than declared is a warning at the capacity
line, naming the nodes that publish them and, when Nodes are in the dump, the flavor's nodes that publish
none; more is a note.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from gputenancy.check.chain import inventory
from gputenancy.cluster.dump import Dump, LiveObject
from gputenancy.common.findings import Finding, Origin, Severity
from gputenancy.inputs.quantity import QuantityError
from gputenancy.inputs.records import Cluster, InventoryDevice
from gputenancy.policy.catalog import Catalog

RULE = "live-devices"
_VALUE_TYPES = ("string", "int", "bool", "version")


@dataclasses.dataclass(frozen=True)
class DeviceRow:
    flavor: str
    device_class: str
    declared: int
    published: int
    nodes: tuple[tuple[str, int], ...]  # node -> devices published there for this row
    silent: tuple[str, ...]  # Nodes of the flavor (by its nodeLabels) publishing none; () when unknown
    origin: Origin  # the capacity line

    @property
    def short(self) -> int:
        return self.declared - self.published


def _device(driver: str, raw: Mapping[str, Any]) -> inventory.Device:
    attributes: dict[str, dict[str, Any]] = {}
    for name, value in (raw.get("attributes") or {}).items():
        domain, _, bare = str(name).rpartition("/")
        if isinstance(value, Mapping):
            found = next((value[t] for t in _VALUE_TYPES if t in value), None)
            attributes.setdefault(domain or driver, {})[bare] = found
    capacity: dict[str, dict[str, Any]] = {}
    for name, value in (raw.get("capacity") or {}).items():
        domain, _, bare = str(name).rpartition("/")
        if isinstance(value, Mapping) and "value" in value:
            try:
                capacity.setdefault(domain or driver, {})[bare] = inventory._quantity(value["value"])
            except ValueError:
                continue
    return inventory.Device("", "", 1, driver, attributes, capacity, Origin(""), True)


def _selectors(name: str, dump: Dump, catalog: Catalog) -> tuple[str, ...] | None:
    live = dump.get("DeviceClass", name)
    if live is not None:
        return tuple(
            str(s["cel"]["expression"])
            for s in (live.body.get("spec") or {}).get("selectors") or []
            if isinstance(s, Mapping) and isinstance(s.get("cel"), Mapping) and "expression" in s["cel"]
        )
    entry = catalog.classes.get(name)
    if entry is not None and entry.selectors:
        return entry.selectors
    return inventory.DRIVER_CLASSES.get(name)


def _selected(selectors: Sequence[str], device: inventory.Device) -> bool:
    for expression in selectors:
        try:
            ok, _ = inventory.matches(expression, device)
        except inventory.Unjudged:
            return False
        if not ok:
            return False
    return True


def _described(entries: Sequence[InventoryDevice], device: inventory.Device) -> bool:
    if not entries:
        return True
    for e in entries:
        if e.driver is not None and e.driver != device.driver:
            continue
        if all(
            device.attributes.get(name.rpartition("/")[0] or device.driver, {}).get(name.rpartition("/")[2])
            == value
            for name, value in e.attributes
        ):
            return True
    return False


def _labels(obj: LiveObject | None) -> Mapping[str, Any] | None:
    if obj is None:
        return None
    return (obj.body.get("metadata") or {}).get("labels") or {}


def rows(
    cluster: Cluster, catalog: Catalog, dump: Dump, node_labels: Mapping[str, Mapping[str, str]]
) -> tuple[list[DeviceRow], list[Finding]]:
    """`node_labels`: the nodeLabels of each flavor as Git renders its ResourceFlavor."""
    devices: list[tuple[str, inventory.Device]] = []  # (node, device)
    for s in dump.of_kind("ResourceSlice"):
        spec = s.body.get("spec") or {}
        driver, node = str(spec.get("driver", "")), str(spec.get("nodeName") or "")
        for raw in spec.get("devices") or []:
            if isinstance(raw, Mapping):
                devices.append((node, _device(driver, raw.get("basic") or raw)))
    nodes = {o.name: o for o in dump.of_kind("Node")}
    out: list[DeviceRow] = []
    findings: list[Finding] = []
    for cap in cluster.capacity:
        wanted = node_labels.get(cap.flavor, {})
        for name, amount, origin in cap.devices:
            try:
                declared = int(amount.value)
            except (QuantityError, ValueError, ArithmeticError):
                continue
            selectors = _selectors(name, dump, catalog)
            if selectors is None:
                continue
            entries = [e for e in cap.inventory or () if e.device_class == name]
            counted: Counter[str] = Counter()
            for node, device in devices:
                labels = _labels(nodes.get(node))
                if labels is not None and any(labels.get(k) != v for k, v in wanted.items()):
                    continue
                if _selected(selectors, device) and _described(entries, device):
                    counted[node] += 1
            silent: tuple[str, ...] = ()
            if nodes and wanted:
                silent = tuple(
                    sorted(
                        n
                        for n, o in nodes.items()
                        if n not in counted and all((_labels(o) or {}).get(k) == v for k, v in wanted.items())
                    )
                )
            row = DeviceRow(
                cap.flavor,
                name,
                declared,
                sum(counted.values()),
                tuple(sorted(counted.items())),
                silent,
                origin,
            )
            out.append(row)
            findings.extend(_finding(cluster.name, row))
    return out, findings


def _per_node(row: DeviceRow) -> str:
    """What the dump tells of the missing nodes without Node objects: how many, when every node that
    publishes carries the same number of devices."""
    each = {c for _, c in row.nodes}
    if len(each) == 1 and row.short % (per := each.pop()) == 0:
        return (
            f"at {per} per node as on the others, {row.short // per} node(s) of the flavor publish nothing "
            "(the dump holds no Node objects to name them)"
        )
    return "which nodes are missing cannot be told from the dump (it holds no Node objects)"


def _finding(cluster: str, row: DeviceRow) -> list[Finding]:
    where = ", ".join(f"{n or '(no node)'}: {c}" for n, c in row.nodes) or "no node"
    head = (
        f"cluster {cluster!r} flavor {row.flavor!r}: the DRA drivers publish {row.published} "
        f"{row.device_class} device(s) ({where}), {row.declared} declared"
    )
    if row.published < row.declared:
        missing = (
            f"; nodes of the flavor publishing none: {', '.join(row.silent)}"
            if row.silent
            else f"; {_per_node(row)}"
        )
        return [
            row.origin.finding(
                RULE,
                f"{head}: {row.short} missing (a node down or drained, or its driver not publishing){missing}; "
                "Kueue still admits up to the declared quota, so admitted pods may wait for devices",
                Severity.WARNING,
            )
        ]
    if row.published > row.declared:
        return [
            row.origin.finding(
                RULE,
                f"{head}: {row.published - row.declared} more than declared; raise the capacity to budget them",
                Severity.NOTE,
            )
        ]
    return []
