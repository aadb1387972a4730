"""What the policy rules (and render) share: the effective device-class catalog, the budgets the model
declares and places, the device classes and quota resources a tenant uses on a cluster, and `err`."""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from collections.abc import Iterator, Mapping

from gputenancy.common.findings import Finding, Origin
from gputenancy.inputs.hami import HamiDevice
from gputenancy.inputs.spec import Amount, ClaimTemplate, DeviceClassEntry, FlavorBudget, Model, Tenant


@dataclasses.dataclass(frozen=True)
class Catalog:
    """Device classes of base/platform.yaml plus those tenants declare; first declaration wins."""

    classes: Mapping[str, DeviceClassEntry]
    declared_by: Mapping[str, tuple[DeviceClassEntry, ...]]
    # (cluster, flavor) -> the classic HAMi device kind on that flavor's nodes (cluster capacity `hami:`)
    hami: Mapping[tuple[str, str], HamiDevice] = dataclasses.field(default_factory=dict)

    def amounts(self, fb: FlavorBudget, cluster: str) -> list[tuple[str, Amount]]:
        """(quota resource, amount) of a flavor budget on `cluster`: mapped device classes, HAMi, resources."""
        out = [(self.classes[n].resource, a) for n, a in fb.devices if n in self.classes]
        device = self.hami.get((cluster, fb.flavor))
        if fb.hami is not None and device is not None:
            out.extend(fb.hami.amounts(device))
        out.extend(fb.resources)
        return out


def effective_catalog(model: Model) -> Catalog:
    classes: dict[str, DeviceClassEntry] = dict(model.platform.device_classes)
    declared: dict[str, list[DeviceClassEntry]] = defaultdict(list)
    for name, entry in model.platform.device_classes.items():
        declared[name].append(entry)
    for tenant in model.tenants:
        for entry in tenant.device_classes:
            declared[entry.name].append(entry)
            classes.setdefault(entry.name, entry)
    return Catalog(classes, {k: tuple(v) for k, v in declared.items()}, hami_by_flavor(model))


def hami_by_flavor(model: Model) -> dict[tuple[str, str], HamiDevice]:
    """The classic HAMi device kind behind each (cluster, flavor) whose capacity declares `hami:`."""
    devices = model.platform.hami
    out: dict[tuple[str, str], HamiDevice] = {}
    for cluster in model.clusters.values():
        for cap in cluster.capacity:
            if cap.hami is None:
                continue
            name = cap.hami.device
            if name is None and len(devices) == 1:
                name = next(iter(devices))
            if name is not None and name in devices:
                out[(cluster.name, cap.flavor)] = devices[name]
    return out


def classes_used(model: Model, cluster: str) -> dict[str, Origin]:
    """Device classes that tenants on `cluster` budget or claim, with the first place that uses each."""
    used: dict[str, Origin] = {}
    for tenant in model.tenants_on(cluster):
        for fb in tenant.budget_for(cluster) or ():
            for name, amount in fb.devices:
                used.setdefault(name, amount.origin)
        for ct in claims_on(tenant, cluster):
            used.setdefault(ct.device_class, ct.class_origin)
    return used


def claims_on(tenant: Tenant, cluster: str) -> list[ClaimTemplate]:
    return [ct for ct in tenant.claim_templates if ct.clusters is None or cluster in ct.clusters]


def covered_resources(tenant: Tenant, cluster: str, catalog: Catalog) -> dict[str, Origin]:
    """Quota resource names the tenant's ClusterQueue on `cluster` covers."""
    out: dict[str, Origin] = {}
    for fb in tenant.budget_for(cluster) or ():
        for resource, amount in catalog.amounts(fb, cluster):
            out.setdefault(resource, amount.origin)
    return out


def err(origin: Origin, rule_id: str, message: str) -> Finding:
    return origin.finding(rule_id, message)


def placed_budgets(model: Model) -> Iterator[tuple[Tenant, str, FlavorBudget]]:
    for tenant in model.tenants:
        for cluster in model.clusters:
            if tenant.placed_on(cluster):
                for fb in tenant.budget_for(cluster) or ():
                    yield tenant, cluster, fb


def declared_budgets(model: Model) -> Iterator[tuple[Tenant, str, FlavorBudget]]:
    """Every flavor budget every tenant file declares, default and per-cluster alike."""
    for t in model.tenants:
        for cluster, budget in t.all_budgets():
            for fb in budget:
                yield t, cluster, fb
