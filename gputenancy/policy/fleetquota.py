"""A fleet's quotas side by side: per MultiKueue manager, tenant and quota resource, the manager's quota
(summed over flavors) and each worker's, and where the manager's comes from: the sum of the workers'
(`Manual`, the default), a budget the tenant states for the manager, or Kueue (`Automated`). The plan's
notes and `budgets` show it."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

from gputenancy.inputs import fleet
from gputenancy.inputs.quantity import ZERO, Quantity
from gputenancy.inputs.spec import Model, Tenant
from gputenancy.policy.catalog import Catalog

SUM, DECLARED, AUTOMATED = "sum", "declared", "automated"
DESCRIPTIONS = {
    SUM: "the sum of its workers' quotas",
    DECLARED: "declared in budgets.clusters.<manager>",
    AUTOMATED: "kept by Kueue (quotaManagement: Automated; first rendered as the sum)",
}


@dataclasses.dataclass(frozen=True)
class FleetQuota:
    manager: str
    tenant: str
    resource: str
    manager_quota: Quantity
    workers: tuple[tuple[str, Quantity], ...]
    source: str  # SUM | DECLARED | AUTOMATED

    @property
    def described(self) -> str:
        return DESCRIPTIONS[self.source]

    def text(self) -> str:
        parts = " + ".join(f"{w} {q.canonical()}" for w, q in self.workers)
        return f"{self.tenant} {self.resource}: manager {self.manager_quota.canonical()} = {parts}"


def quotas(model: Model, catalog: Catalog, clusters: Iterable[str] | None = None) -> list[FleetQuota]:
    """Every (manager, tenant, resource) of the fleets among `clusters` (all without)."""
    wanted = set(clusters) if clusters is not None else None
    out: list[FleetQuota] = []
    for manager in fleet.managers(model):
        workers = [w.name for w in fleet.workers_of(model, manager)]
        if wanted is not None and not wanted & {manager.name, *workers}:
            continue
        mk = manager.multikueue
        assert mk is not None
        for t in sorted(model.tenants_on(manager.name), key=lambda t: t.name):
            summed = (t.name, manager.name) in model.summed_budgets
            source = DECLARED if not summed else AUTOMATED if mk.quota_management == "Automated" else SUM
            mine = _totals(t, manager.name, catalog)
            theirs = {w: _totals(t, w, catalog) for w in workers}
            for resource in sorted(set(mine).union(*theirs.values())):
                out.append(
                    FleetQuota(
                        manager.name,
                        t.name,
                        resource,
                        mine.get(resource, ZERO),
                        tuple((w, theirs[w].get(resource, ZERO)) for w in workers),
                        source,
                    )
                )
    return out


def notes(model: Model, catalog: Catalog, clusters: Iterable[str] | None = None) -> list[str]:
    """One line per fleet and tenant, for the plan."""
    out: list[str] = []
    rows = quotas(model, catalog, clusters)
    for key in dict.fromkeys((q.manager, q.tenant, q.source) for q in rows):
        mine = [q for q in rows if (q.manager, q.tenant, q.source) == key]
        workers = ", ".join(w for w, _ in mine[0].workers)
        body = "; ".join(q.text().removeprefix(f"{q.tenant} ") for q in mine)
        out.append(
            f"{key[0]}: MultiKueue manager of {workers}; {key[1]}'s quota there is {mine[0].described}: {body}"
        )
    return out


def _totals(t: Tenant, cluster: str, catalog: Catalog) -> dict[str, Quantity]:
    out: dict[str, Quantity] = {}
    for fb in t.budget_for(cluster) or ():
        for resource, amount in catalog.amounts(fb, cluster):
            out[resource] = out.get(resource, ZERO) + amount.nominal
    return out
