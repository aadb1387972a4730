"""What a fleet means for the model: a tenant placed on a MultiKueue manager is placed on the fleet (the
manager and each of its workers), its manager budget is the sum of its workers' budgets unless it
declares one under `budgets.clusters.<manager>`, and the manager's capacity is the sum of its workers'.

`derive` turns the model as read into the model every later stage sees; the rules of a fleet
(`gputenancy.policy.fleet`) run on it. Workers unknown or themselves managers are left to those rules.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping

from gputenancy.common.findings import Origin
from gputenancy.inputs.quantity import Quantity
from gputenancy.inputs.records import Amount, Capacity, Cluster, Cohort, FlavorBudget, Model, Tenant


def managers(model: Model) -> list[Cluster]:
    """The clusters that declare `multiKueue`, by name."""
    return [c for _, c in sorted(model.clusters.items()) if c.multikueue is not None]


def workers_of(model: Model, manager: Cluster) -> list[Cluster]:
    """The manager's workers that are ordinary overlays, in preference order."""
    assert manager.multikueue is not None
    out = []
    for name in dict.fromkeys(manager.multikueue.worker_names):
        c = model.clusters.get(name)
        if c is not None and c.multikueue is None and name != manager.name:
            out.append(c)
    return out


def fleets_of(model: Model, worker: str) -> list[Cluster]:
    """The managers that list `worker`."""
    return [m for m in managers(model) if m.multikueue is not None and worker in m.multikueue.worker_names]


def derive(model: Model) -> Model:
    """The model with fleets spelled out (see the module docstring); unchanged without managers."""
    fleets = {m.name: [w.name for w in workers_of(model, m)] for m in managers(model)}
    if not fleets:
        return model
    clusters = dict(model.clusters)
    for name, workers in fleets.items():
        clusters[name] = dataclasses.replace(
            clusters[name], capacity=summed_capacity(clusters[name], [model.clusters[w] for w in workers])
        )
    tenants = tuple(_tenant(t, fleets, model) for t in model.tenants)
    platform = dataclasses.replace(
        model.platform, cohorts={name: _cohort(co, fleets) for name, co in model.platform.cohorts.items()}
    )
    summed = frozenset(
        (t.name, m)
        for t in model.tenants
        for m in fleets
        if m not in t.cluster_budgets and m in _placed(t, model)
    )
    return dataclasses.replace(
        model, platform=platform, clusters=clusters, tenants=tenants, summed_budgets=summed
    )


def _cohort(co: Cohort, fleets: Mapping[str, list[str]]) -> Cohort:
    """A cohort holding quota on workers holds their sum on the manager too (unless it states its own
    there): the manager admits against its own Cohort, as it does against each tenant's summed queue."""
    budgets = dict(co.cluster_budgets)
    for m, workers in fleets.items():
        held = [co.budget_for(w) for w in workers if co.budget_for(w)]
        if m not in budgets and held:
            budgets[m] = summed_budget(held)
    return co if budgets == co.cluster_budgets else dataclasses.replace(co, cluster_budgets=budgets)


def _placed(t: Tenant, model: Model) -> list[str]:
    return [c for c in model.clusters if t.placed_on(c)] if t.clusters is None else list(t.clusters)


def _tenant(t: Tenant, fleets: Mapping[str, list[str]], model: Model) -> Tenant:
    placed = _placed(t, model)
    origins = list(t.cluster_origins) if t.clusters is not None else [t.origin] * len(placed)
    on = [m for m in fleets if m in placed]
    if not on:
        return t
    budgets = dict(t.cluster_budgets)
    for m in on:
        for w in fleets[m]:
            if w not in placed:
                placed.append(w)
                origins.append(origins[placed.index(m)])
        if m not in t.cluster_budgets:
            worker_budgets = [t.budget_for(w) for w in fleets[m]]
            budgets[m] = summed_budget([b for b in worker_budgets if b])
    return dataclasses.replace(
        t, clusters=tuple(placed), cluster_origins=tuple(origins), cluster_budgets=budgets
    )


def summed_budget(budgets: Iterable[Iterable[FlavorBudget]]) -> tuple[FlavorBudget, ...]:
    """Flavor by flavor (first-seen order), each quota summed over the workers' budgets. A borrowing or
    lending limit is summed where every worker sets it, and left unset (no limit) otherwise."""
    flavors: dict[str, list[FlavorBudget]] = {}
    for budget in budgets:
        for fb in budget:
            flavors.setdefault(fb.flavor, []).append(fb)
    return tuple(
        FlavorBudget(
            flavor,
            _sum_amounts([fb.devices for fb in fbs]),
            _sum_amounts([fb.resources for fb in fbs]),
            fbs[0].origin,
            group=fbs[0].group,
            group_origin=fbs[0].group_origin,
        )
        for flavor, fbs in flavors.items()
    )


def _sum_amounts(lists: list[tuple[tuple[str, Amount], ...]]) -> tuple[tuple[str, Amount], ...]:
    by_name: dict[str, list[Amount]] = {}
    for amounts in lists:
        for name, a in amounts:
            by_name.setdefault(name, []).append(a)
    out = []
    for name, parts in by_name.items():
        complete = len(parts) == len(lists)
        out.append(
            (
                name,
                Amount(
                    _total([a.nominal for a in parts]),
                    _limit([a.borrowing for a in parts], complete),
                    _limit([a.lending for a in parts], complete),
                    parts[0].origin,
                    parts[0].field_origins,
                ),
            )
        )
    return tuple(out)


def _total(values: list[Quantity]) -> Quantity:
    total = values[0]
    for q in values[1:]:
        total = total + q
    return total


def _limit(values: list[Quantity | None], complete: bool) -> Quantity | None:
    if not complete or any(v is None for v in values):
        return None
    return _total([v for v in values if v is not None])


def summed_capacity(manager: Cluster, workers: list[Cluster]) -> tuple[Capacity, ...]:
    """The manager's capacity: per flavor, the workers' devices and resources summed (HAMi vGPUs are not
    dispatched across a fleet: `fleet-budget`)."""
    flavors: dict[str, list[Capacity]] = {}
    for w in workers:
        for cap in w.capacity:
            flavors.setdefault(cap.flavor, []).append(cap)
    out = []
    for flavor, caps in flavors.items():
        out.append(
            Capacity(
                flavor,
                _sum_capacity([c.devices for c in caps]),
                _sum_capacity([c.resources for c in caps]),
                caps[0].origin,
            )
        )
    return tuple(out) or manager.capacity


def _sum_capacity(
    lists: list[tuple[tuple[str, Quantity, Origin], ...]],
) -> tuple[tuple[str, Quantity, Origin], ...]:
    by_name: dict[str, list[tuple[Quantity, Origin]]] = {}
    for entries in lists:
        for name, q, origin in entries:
            by_name.setdefault(name, []).append((q, origin))
    return tuple((n, _total([q for q, _ in v]), v[0][1]) for n, v in by_name.items())
