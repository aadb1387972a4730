"""The capacity rule (nominal budgets of all tenants fit each cluster's capacity, per flavor and
resource) and the per-flavor sums that plan's capacity table also shows."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator

from gputenancy.common.findings import Finding, Origin, Severity
from gputenancy.common.hints import did_you_mean
from gputenancy.inputs import fleet
from gputenancy.inputs.hami import human
from gputenancy.inputs.quantity import ZERO, Quantity
from gputenancy.inputs.spec import Cluster, Cohort, Model, Tenant
from gputenancy.policy import cohorts
from gputenancy.policy.catalog import Catalog


def capacity(model: Model, catalog: Catalog) -> Iterator[Finding]:
    """The nominal budgets of all tenants on a cluster fit its capacity, per flavor and resource
    (a warning instead when the overlay sets overcommit: true). On a MultiKueue manager (whose capacity
    is the sum of its workers') only budgets declared for the manager are judged: a budget summed from
    the workers' fits when each worker's does, and each worker judges its own (with its own overcommit).

    Passes: tenants budget 4 + 4 H100s on a cluster with 8.
    Fails: tenants budget 4 + 6 H100s on a cluster with 8.
    """
    for cluster in model.clusters.values():
        if cluster.multikueue is not None:
            yield from _manager_capacity(model, cluster, catalog)
        else:
            yield from _capacity(model, cluster, catalog)


def _fleet_default(model: Model, t: Tenant, worker: Cluster) -> str:
    """For a budget taken from budgets.default on a worker of a fleet the tenant is on: how to change it
    for that worker alone (the manager's quota follows, as the sum of the worker budgets)."""
    if worker.name in t.cluster_budgets or t.default_budget is None:
        return ""
    managers = [m.name for m in fleet.fleets_of(model, worker.name) if t.placed_on(m.name)]
    if not managers:
        return ""
    return (
        f" (this is budgets.default: to change it for {worker.name!r} alone, set budgets.clusters.{worker.name}; "
        f"the quota on MultiKueue manager {managers[0]!r} stays the sum of the worker budgets)"
    )


def _manager_capacity(model: Model, manager: Cluster, catalog: Catalog) -> Iterator[Finding]:
    """Over the fleet's capacity on a manager: an error (a warning with the manager's overcommit: true)
    at each budget declared under budgets.clusters.<manager> that counts toward it."""
    have = capacity_by_flavor(manager, catalog)
    sev = Severity.WARNING if manager.overcommit else Severity.ERROR
    for key, used in sorted(usage_by_flavor(model, manager, catalog).items()):
        parts = contributions(model, manager, catalog)[key]
        declared = [p for p in parts if (p[0].name, manager.name) not in model.summed_budgets]
        cap = have.get(key)
        if not declared or (cap is not None and used <= cap[0]):
            continue
        room = f"capacity {cap[0].canonical()}" if cap is not None else "no capacity"
        for t, q, o in declared:
            yield o.finding(
                "capacity",
                f"{t.name}'s budget for MultiKueue manager {manager.name!r} ({q.canonical()} {key[1]} on flavor "
                f"{key[0]!r}) brings the tenants' total there to {used.canonical()}, over the fleet's {room} "
                f"(the sum of its workers'; {_who(parts, with_place=False)}): lower it, or remove "
                f"budgets.clusters.{manager.name} so the manager holds the sum of {t.name}'s worker budgets"
                + (" (overcommit allowed)" if manager.overcommit else ""),
                sev,
            )


def usage_by_flavor(model: Model, cluster: Cluster, catalog: Catalog) -> dict[tuple[str, str], Quantity]:
    """Sum of nominal budgets per (flavor, quota resource) on a cluster: the tenants' and the quota
    cohorts hold there themselves (Kueue adds a cohort's nominal quota to its members')."""
    total: dict[tuple[str, str], Quantity] = {}
    for t in model.tenants_on(cluster.name):
        for fb in t.budget_for(cluster.name) or ():
            for resource, amount in catalog.amounts(fb, cluster.name):
                key = (fb.flavor, resource)
                total[key] = total.get(key, ZERO) + amount.nominal
    for _, fb in cohorts.held(model, cluster.name):
        for resource, amount in catalog.amounts(fb, cluster.name):
            key = (fb.flavor, resource)
            total[key] = total.get(key, ZERO) + amount.nominal
    return total


def capacity_by_flavor(cluster: Cluster, catalog: Catalog) -> dict[tuple[str, str], tuple[Quantity, Origin]]:
    out: dict[tuple[str, str], tuple[Quantity, Origin]] = {}
    for cap in cluster.capacity:
        for name, q, origin in cap.devices:
            entry = catalog.classes.get(name)
            if entry is not None:
                key = (cap.flavor, entry.resource)
                prev = out.get(key)
                out[key] = ((prev[0] + q) if prev else q, origin)
        for name, q, origin in cap.resources:
            out[(cap.flavor, name)] = (q, origin)
        device = catalog.hami.get((cluster.name, cap.flavor))
        if cap.hami is not None and device is not None:
            for resource, q in zip(device.quota_names, cap.hami.totals(), strict=True):
                out[(cap.flavor, resource)] = (q, cap.hami.origin)
    return out


Holder = Tenant | Cohort  # who holds a nominal quota: a tenant's ClusterQueue or a cohort itself


def label(holder: Holder) -> str:
    """A holder's name as findings and views show it: a tenant by name, a cohort as `cohort <name>`."""
    return f"cohort {holder.name}" if isinstance(holder, Cohort) else holder.name


def contributions(
    model: Model, cluster: Cluster, catalog: Catalog
) -> dict[tuple[str, str], list[tuple[Holder, Quantity, Origin]]]:
    """Who budgets what, per (flavor, quota resource) on a cluster: tenants, then cohorts holding quota."""
    out: dict[tuple[str, str], list[tuple[Holder, Quantity, Origin]]] = defaultdict(list)
    for t in model.tenants_on(cluster.name):
        for fb in t.budget_for(cluster.name) or ():
            for resource, amount in catalog.amounts(fb, cluster.name):
                out[(fb.flavor, resource)].append((t, amount.nominal, amount.origin))
    for co, fb in cohorts.held(model, cluster.name):
        for resource, amount in catalog.amounts(fb, cluster.name):
            out[(fb.flavor, resource)].append((co, amount.nominal, amount.origin))
    return out


def _units(cluster: Cluster, catalog: Catalog) -> dict[str, str]:
    """HAMi quota names on the cluster, read in GiB and percent."""
    out: dict[str, str] = {}
    for (name, _), device in catalog.hami.items():
        if name == cluster.name:
            out.update({device.memory_quota: "MiB", device.cores_quota: "percent"})
    return out


def _shown(q: Quantity, unit: str) -> str:
    return f"{q.canonical()} ({human(q, unit)})" if unit else q.canonical()


def _who(
    parts: list[tuple[Holder, Quantity, Origin]], most: int = 5, unit: str = "", *, with_place: bool = True
) -> str:
    ranked = sorted(parts, key=lambda p: p[1], reverse=True)
    shown = ", ".join(
        f"{label(t)} {_shown(q, unit)}" + (f" at {o.path}:{o.line}" if with_place else "")
        for t, q, o in ranked[:most]
    )
    return shown + (f" and {len(ranked) - most} more" if len(ranked) > most else "")


def _capacity(model: Model, cluster: Cluster, catalog: Catalog) -> Iterator[Finding]:
    """Over capacity: an error at every contributing tenant's amount line (where a pull request changes a
    budget) and at the cluster's capacity line; with overcommit: true one warning at the capacity line."""
    have = capacity_by_flavor(cluster, catalog)
    who = contributions(model, cluster, catalog)
    entries = {c.flavor: c.origin for c in cluster.capacity}
    sev = Severity.WARNING if cluster.overcommit else Severity.ERROR
    units = _units(cluster, catalog)
    for (flavor, resource), used in sorted(usage_by_flavor(model, cluster, catalog).items()):
        if flavor not in entries:
            continue  # not offered on this cluster: flavor-unknown reports the budget at its flavor line
        cap = have.get((flavor, resource))
        parts = who[(flavor, resource)]
        unit = units.get(resource, "")
        if cap is None:
            entry = entries[flavor]
            where = f"{entry.path}:{entry.line}"
            hint = did_you_mean(resource, [r for f, r in have if f == flavor])
            for t, q, o in parts if not cluster.overcommit else ():
                yield o.finding(
                    "capacity",
                    f"{'tenant ' + repr(t.name) if isinstance(t, Tenant) else label(t)} budgets {q.canonical()} {resource} on flavor {flavor!r}, but cluster "
                    f"{cluster.name!r} declares no capacity for {resource} there ({where}){hint}; add it to "
                    "the capacity or drop it from the budget",
                    sev,
                )
            yield entry.finding(
                "capacity",
                f"tenants budget {used.canonical()} {resource} on flavor {flavor!r}, but cluster {cluster.name!r} "
                f"declares no capacity for it ({_who(parts)})",
                sev,
            )
            continue
        if used > cap[0]:
            note = (
                " (overcommit allowed)" if cluster.overcommit else "; lower a budget or set overcommit: true"
            )
            total = f"{_shown(used, unit)} exceeds capacity {_shown(cap[0], unit)}"
            if not cluster.overcommit:
                for t, q, o in parts:
                    yield o.finding(
                        "capacity",
                        f"{label(t)}'s nominal {_shown(q, unit)} {resource} on flavor {flavor!r} counts toward "
                        f"cluster {cluster.name!r}, where the tenants' total {total} "
                        f"({cap[1].path}:{cap[1].line}; {_who(parts, unit=unit, with_place=False)}){note}"
                        + (_fleet_default(model, t, cluster) if isinstance(t, Tenant) else ""),
                    )
            yield cap[1].finding(
                "capacity",
                f"cluster {cluster.name!r} flavor {flavor!r}: tenants' nominal {resource} {total} ({_who(parts, unit=unit)}){note}",
                sev,
            )
