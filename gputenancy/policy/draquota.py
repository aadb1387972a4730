"""Capacity-based DRA quota: a catalog device class with `capacity: {name, driver}` is charged by its
claims' capacity requests (a `deviceClassMappings` capacity source) instead of by device count, e.g.
the memory of HAMi through DRA. Kueue supports it only behind a gate, and only what the claims request
is charged."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator

from gputenancy.common.findings import Finding, Origin, Severity
from gputenancy.inputs.spec import Model
from gputenancy.policy.catalog import Catalog, claims_on, classes_used
from gputenancy.versions import gates as kueuegates

GATE = "KueueDRAIntegrationConsumableCapacity"
K8S_MINOR = 36  # DRAConsumableCapacity Beta and on by default from Kubernetes 1.36


def dra_capacity_quota(model: Model, catalog: Catalog) -> Iterator[Finding]:
    """A device class charged by a capacity (`deviceClasses[].capacity`) is used only where Kueue can
    charge it: Kueue v0.19+ with the KueueDRAIntegrationConsumableCapacity gate on (Alpha, off by
    default; v0.18 has no such gate), Kubernetes 1.36+ (a warning below: DRAConsumableCapacity is alpha
    there); every claim template of the class requests that capacity (Kueue charges
    exactly.capacity.requests); and classes sharing a quota name agree on it (sources are per mapping).

    Passes: hami-core-gpu.project-hami.io with capacity {name: memory, ...} on a v0.19 cluster whose
    kueue.featureGates sets KueueDRAIntegrationConsumableCapacity: true, claims with capacity: {memory: 4Gi}.
    Fails: the same class on a v0.18 cluster, or a claim template of it without capacity.memory.
    """
    for cluster in model.clusters.values():
        used = classes_used(model, cluster.name)
        for cap in cluster.capacity:
            for name, _, origin in cap.devices:
                used.setdefault(name, origin)
        charged = {n: o for n, o in sorted(used.items()) if (e := catalog.classes.get(n)) and e.capacity}
        if not charged:
            continue
        first, where = next(iter(charged.items()))
        version = cluster.kueue_version
        spec = kueuegates.gates_for(version).get(GATE)
        minor = kueuegates.minor_of(version)
        if spec is None:
            yield where.finding(
                "dra-capacity-quota",
                f"device class {first!r} is charged by capacity, which Kueue {version} cannot do: it has no "
                f"{GATE} gate (Kueue v0.19 or later with the gate on); charge it by device count instead "
                "(drop capacity: from its catalog entry)",
            )
        else:
            try:
                on = kueuegates.effective_gates(version, cluster.feature_gates).get(GATE, False)
            except ValueError:
                on = True  # an invalid gate map is the kueue-feature-gate-* rules' finding
            if not on:
                yield where.finding(
                    "dra-capacity-quota",
                    f"device class {first!r} is charged by capacity on cluster {cluster.name!r}, but {GATE} is "
                    f"{spec.stage} and off in Kueue {minor}; set kueue.featureGates.{GATE}: true in "
                    f"{cluster.path}, or charge the class by device count",
                )
        if int(cluster.kubernetes_version.split(".")[1]) < K8S_MINOR:
            yield where.finding(
                "dra-capacity-quota",
                f"device class {first!r} is charged by capacity on cluster {cluster.name!r}, whose Kubernetes "
                f"{cluster.kubernetes_version} has DRAConsumableCapacity only as an alpha feature (on by "
                f"default from 1.{K8S_MINOR}); enable it there or the claims cannot be allocated",
                Severity.WARNING,
            )
        for tenant in model.tenants_on(cluster.name):
            for ct in claims_on(tenant, cluster.name):
                entry = catalog.classes.get(ct.device_class)
                if entry is None or entry.capacity is None:
                    continue
                if entry.capacity[0] not in dict(ct.capacity):
                    yield ct.origin.finding(
                        "dra-capacity-quota",
                        f"claim template {ct.name!r} of {ct.device_class!r} requests no {entry.capacity[0]}; Kueue "
                        f"charges the class by exactly.capacity.requests.{entry.capacity[0]}, and without it the "
                        f"claim takes the device's default; set capacity: {{{entry.capacity[0]}: ...}}",
                    )
    by_resource: dict[str, list[tuple[str, tuple[str, str] | None, Origin]]] = defaultdict(list)
    for name, entry in sorted(catalog.classes.items()):
        by_resource[entry.resource].append((name, entry.capacity, entry.origin))
    for resource, entries in sorted(by_resource.items()):
        if len({c for _, c, _ in entries}) > 1:
            name, _, origin = entries[-1]
            yield origin.finding(
                "dra-capacity-quota",
                f"device classes {', '.join(n for n, _, _ in entries)} share quota name {resource!r} but not "
                "their capacity: (a mapping's sources apply to all its classes); give them one capacity or "
                "different quota names",
            )
