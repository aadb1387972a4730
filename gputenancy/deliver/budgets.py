"""Who holds what: each tenant's effective budget per cluster, flavor and quota resource, with the
cluster's capacity and headroom. Read from the model (the inputs), not from rendered objects.

What a ClusterQueue can use of one resource on one flavor, in Kueue's terms:
- `nominal`: its own quota (nominalQuota);
- `borrowing`: how much more it may borrow from its cohort (borrowingLimit). In a cohort without a
  borrowingLimit, borrowing is *unlimited*: the queue may take everything the rest of the cohort tree
  does not use. Without a cohort it borrows nothing;
- `lending`: how much of its nominal quota others in the cohort may borrow (lendingLimit; unset: all);
- `reach`: the most it can hold at once: nominal + what it may borrow, where what it may borrow is
  bounded by what the rest of its cohort tree on that cluster can lend (their lendingLimit, or their
  nominal quota when unset).
"""

from __future__ import annotations

import dataclasses
import json
from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping, Sequence, Set
from typing import Any

from gputenancy.common import mdsafe
from gputenancy.inputs.hami import human
from gputenancy.inputs.quantity import ZERO, Quantity
from gputenancy.inputs.spec import Amount, Model, Tenant
from gputenancy.policy import capacity as policy_capacity
from gputenancy.policy import cohorts as policy_cohorts
from gputenancy.policy.catalog import Catalog, effective_catalog

FORMATS = ("text", "markdown", "json")

Used = Mapping[tuple[str, str, str, str], tuple[Quantity, Quantity, Quantity]]
"""`budgets --from`: (cluster, tenant, flavor, resource) -> (in use, reserved, borrowed), from the
ClusterQueues' status on the cluster (gputenancy.live.teams.used)."""


@dataclasses.dataclass(frozen=True)
class Grant:
    """One tenant's budget for one quota resource on one flavor of one cluster."""

    cluster: str
    tenant: str
    flavor: str
    resource: str
    nominal: Quantity
    borrowing: Quantity | None  # borrowingLimit; None: none without a cohort, unlimited in one
    lending: Quantity | None  # lendingLimit; None: all of nominal may be lent
    cohort: str | None
    reach: Quantity  # nominal + what it can borrow from the rest of its cohort tree
    unit: str = ""  # "MiB" or "percent" for HAMi memory and compute quotas (shown in GiB and percent)
    draining: bool = False  # `state: draining`: its ClusterQueue is held (HoldAndDrain) and admits nothing

    def show(self, q: Quantity) -> str:
        """A quantity of this grant as people read it: HAMi memory in GiB, compute in percent."""
        return human(q, self.unit)

    def reach_text(self) -> str:
        return "nothing (draining: stopPolicy HoldAndDrain)" if self.draining else self.show(self.reach)

    @property
    def unlimited(self) -> bool:
        """In a cohort without a borrowingLimit: Kueue lets the queue borrow without limit."""
        return self.cohort is not None and self.borrowing is None

    def borrowing_text(self) -> str:
        if self.cohort is None:
            return "none (no cohort)"
        if self.borrowing is None:
            return f"unlimited (cohort {self.cohort})"
        return self.show(self.borrowing)

    def lending_text(self) -> str:
        if self.cohort is None:
            return "-"
        return self.show(self.lending) if self.lending is not None else f"all ({self.show(self.nominal)})"


@dataclasses.dataclass(frozen=True)
class Pool:
    """One quota resource on one flavor of one cluster: capacity, the sum of nominal budgets, headroom."""

    cluster: str
    flavor: str
    resource: str
    capacity: Quantity | None
    nominal: Quantity
    grants: tuple[Grant, ...]
    unit: str = ""  # "MiB" or "percent" for HAMi memory and compute quotas
    cohorts: tuple[CohortGrant, ...] = ()  # the budget tree: what each cohort holds and can reach

    @property
    def headroom(self) -> Quantity | None:
        return self.capacity - self.nominal if self.capacity is not None else None


def _root(model: Model, cohort: str) -> str:
    seen = {cohort}
    while (c := model.platform.cohorts.get(cohort)) is not None and c.parent and c.parent not in seen:
        cohort = c.parent
        seen.add(cohort)
    return cohort


def _amounts(model: Model, tenant: Tenant, cluster: str, catalog: Catalog) -> dict[tuple[str, str], Amount]:
    out: dict[tuple[str, str], Amount] = {}
    for fb in tenant.budget_for(cluster) or ():
        for resource, amount in catalog.amounts(fb, cluster):  # mapped device classes, HAMi, resources
            out.setdefault((fb.flavor, resource), amount)
    return out


def _units(cluster: str, catalog: Catalog) -> dict[tuple[str, str], str]:
    """(flavor, quota resource) -> the unit people read a HAMi quota in (MiB shown in GiB, percent)."""
    out: dict[tuple[str, str], str] = {}
    for (name, flavor), device in catalog.hami.items():
        if name == cluster:
            out[(flavor, device.memory_quota)] = "MiB"
            out[(flavor, device.cores_quota)] = "percent"
    return out


def pools(model: Model, clusters: Iterable[str] | None = None) -> list[Pool]:
    """Every (cluster, flavor, resource) with capacity or budgets, its grants sorted by tenant."""
    catalog = effective_catalog(model)
    out: list[Pool] = []
    for name in sorted(model.clusters if clusters is None else clusters):
        cluster = model.clusters[name]
        capacity = {k: q for k, (q, _) in policy_capacity.capacity_by_flavor(cluster, catalog).items()}
        units = _units(name, catalog)
        grants: dict[tuple[str, str], list[Grant]] = defaultdict(list)
        for g in _grants(model, name, catalog):
            grants[(g.flavor, g.resource)].append(g)
        trees: dict[tuple[str, str], list[CohortGrant]] = defaultdict(list)
        for c in cohort_grants(model, name, catalog):
            trees[(c.flavor, c.resource)].append(c)
        for key in sorted(set(capacity) | set(grants) | set(trees)):
            held = tuple(grants.get(key, ()))
            tree = tuple(trees.get(key, ()))
            total = sum((g.nominal for g in held), ZERO) + sum((c.nominal for c in tree), ZERO)
            out.append(Pool(name, key[0], key[1], capacity.get(key), total, held, units.get(key, ""), tree))
    return out


def _grants(model: Model, name: str, catalog: Catalog, only: Set[str] | None = None) -> Iterator[Grant]:
    """The grants on cluster `name`, by tenant name (of the tenants in `only`, when given: what each
    can reach still depends on every tenant of its cohort tree), what each reaches as Kueue computes it
    through its cohorts (`quotatree`: the quota cohorts hold themselves included)."""
    amounts = {t.name: _amounts(model, t, name, catalog) for t in model.tenants_on(name)}
    tenants = {t.name: t for t in model.tenants_on(name)}
    units = _units(name, catalog)
    tree = policy_cohorts.tree(model, name, catalog)
    for tname, per_key in sorted(amounts.items()):
        if only is not None and tname not in only:
            continue
        cohort = tenants[tname].cohort
        for key, a in per_key.items():
            reach = tree.reach(cohort, a.values(), key)
            draining = tenants[tname].state == "draining"
            yield Grant(
                name,
                tname,
                *key,
                a.nominal,
                a.borrowing,
                a.lending,
                cohort,
                Quantity(max(reach, a.nominal.value), a.nominal.format) if reach is not None else a.nominal,
                units.get(key, ""),
                draining,
            )


@dataclasses.dataclass(frozen=True)
class CohortGrant:
    """What one cohort of a budget tree holds of one quota resource on one flavor of one cluster: its
    own quota (a department's budget), what it holds with its members, what it can reach."""

    cluster: str
    cohort: str
    parent: str | None
    members: tuple[str, ...]  # its tenants and child cohorts (`cohort <name>`), by name
    flavor: str
    resource: str
    nominal: Quantity  # its own nominalQuota (0: it holds none itself)
    borrowing: Quantity | None
    lending: Quantity | None
    holds: Quantity  # its own quota plus what its members lend it (Kueue's subtree quota)
    reach: Quantity | None  # the most its subtree can use at once; None: in a cycle of parents
    unit: str = ""

    def show(self, q: Quantity) -> str:
        return human(q, self.unit)

    def line(self) -> str:
        """`cohort perception (in research; vision, speech): nominal 4, lending 2; holds 10 with its
        members; reaches 12`"""
        where = f"in {self.parent}; " if self.parent else ""
        limits = "".join(
            f", {word} {self.show(q)}"
            for word, q in (("borrowing", self.borrowing), ("lending", self.lending))
            if q is not None
        )
        reach = self.show(self.reach) if self.reach is not None else "nothing (a cycle of parents)"
        return (
            f"cohort {self.cohort} ({where}{', '.join(self.members) or 'no members here'}): nominal "
            f"{self.show(self.nominal)}{limits}; holds {self.show(self.holds)} with its members; reaches {reach}"
        )


def cohort_grants(model: Model, name: str, catalog: Catalog) -> Iterator[CohortGrant]:
    """Every cohort rendered on cluster `name` that holds anything (itself or through its members) of a
    (flavor, resource), parents first within each tree."""
    tree = policy_cohorts.tree(model, name, catalog)
    units = _units(name, catalog)
    rendered = policy_cohorts.cohorts_on(model, name)
    members: dict[str, list[str]] = defaultdict(list)
    for t in model.tenants_on(name):
        if t.cohort is not None:
            members[t.cohort].append(t.name)
    for co in rendered:
        parent = model.platform.cohorts[co].parent
        if parent is not None:
            members[parent].append(f"cohort {co}")
    formats = {
        key: a.nominal.format
        for t in model.tenants_on(name)
        for key, a in reversed(_amounts(model, t, name, catalog).items())
    }
    roots = sorted({tree.root(co) for co in rendered})
    order = [co for root in roots for co in tree.members(root) if co in rendered]
    for co in order:
        for key in sorted(tree.keys(co)):
            holds = tree.subtree(co, key)
            if holds == 0 and tree.own(co, key)[0] == 0:
                continue
            reach = tree.potential(co, key)
            own = _own_amount(model, co, name, key, catalog)
            fmt = own.nominal.format if own is not None else formats.get(key, ZERO.format)
            yield CohortGrant(
                name,
                co,
                model.platform.cohorts[co].parent,
                tuple(sorted(members.get(co, ()))),
                *key,
                own.nominal if own is not None else ZERO,
                own.borrowing if own is not None else None,
                own.lending if own is not None else None,
                Quantity(holds, fmt),
                Quantity(reach, fmt) if reach is not None else None,
                units.get(key, ""),
            )


def _own_amount(
    model: Model, cohort: str, cluster: str, key: tuple[str, str], catalog: Catalog
) -> Amount | None:
    for fb in model.platform.cohorts[cohort].budget_for(cluster):
        if fb.flavor == key[0]:
            for resource, a in catalog.amounts(fb, cluster):
                if resource == key[1]:
                    return a
    return None


def grants_for(
    model: Model, tenants_by_cluster: Mapping[str, Sequence[str]], found: Sequence[Pool] | None = None
) -> tuple[Grant, ...]:
    """The grants of the given tenants ({cluster: tenants}) that the model still places there (taken
    from `found`, the model's `pools` of at least those clusters, when given)."""
    wanted = {c: set(ts) for c, ts in tenants_by_cluster.items() if ts and c in model.clusters}
    if not wanted:
        return ()
    if found is not None:
        held = [g for p in found if p.cluster in wanted for g in p.grants if g.tenant in wanted[p.cluster]]
    else:
        catalog = effective_catalog(model)
        held = [g for name in sorted(wanted) for g in _grants(model, name, catalog, wanted[name])]
    return tuple(sorted(held, key=lambda g: (g.cluster, g.tenant, g.flavor, g.resource)))


# ------------------------------------------------------------------------------------------ views


def _q(q: Quantity | None) -> str:
    return q.canonical() if q is not None else "-"


def _h(q: Quantity | None, unit: str) -> str:
    """A quantity as stored, and for HAMi quotas also in GiB or percent: `16k (15.625Gi)`."""
    return f"{q.canonical()} ({human(q, unit)})" if q is not None and unit else _q(q)


def terms(g: Grant) -> str:
    """`nominal 4, borrowing 2, lending all (4); reaches 6` (HAMi memory in GiB, compute in percent;
    a draining tenant reaches nothing)"""
    return (
        f"nominal {g.show(g.nominal)}, borrowing {g.borrowing_text()}, lending {g.lending_text()}; "
        f"{'admits' if g.draining else 'reaches'} {g.reach_text()}"
    )


def grant_line(g: Grant) -> str:
    """`speech h100 nvidia.com/gpu: nominal 4, borrowing 2, lending all (4); reaches 6`"""
    return f"{g.tenant} {g.flavor} {g.resource}: {terms(g)}"


def _uses(g: Grant, used: Used | None) -> str:
    """`; uses 8 (reserves 8, borrows 2)` with usage read from the cluster, else ""."""
    if used is None or g.cluster not in {k[0] for k in used}:
        return ""
    use, reserved, borrowed = used.get((g.cluster, g.tenant, g.flavor, g.resource), (ZERO, ZERO, ZERO))
    return f"; uses {g.show(use)} (reserves {g.show(reserved)}, borrows {g.show(borrowed)})"


def format_text(found: Sequence[Pool], used: Used | None = None) -> str:
    lines: list[str] = []
    cluster = None
    for p in found:
        if p.cluster != cluster:
            cluster = p.cluster
            lines.append(f"{cluster}:")
        lines.append(
            f"  {p.flavor} {p.resource}: nominal {_h(p.nominal, p.unit)} of capacity {_h(p.capacity, p.unit)}, "
            f"headroom {_h(p.headroom, p.unit)}"
        )
        lines += [f"    {g.tenant}: {terms(g)}{_uses(g, used)}" for g in p.grants]
        lines += [f"    {c.line()}" for c in p.cohorts]
    return "\n".join(lines) + ("\n" if lines else "")


_md = mdsafe.text  # strings from input files land inert in markdown (the PR comment)


GRANT_HEADER = (
    "| tenant | flavor | resource | nominal | borrowing limit | lending limit | most it can reach |",
    "| --- | --- | --- | ---: | --- | --- | ---: |",
)


def grant_row(g: Grant) -> str:
    return (
        f"| {_md(g.tenant)} | {_md(g.flavor)} | {_md(g.resource)} | {_md(g.show(g.nominal))} | "
        f"{_md(g.borrowing_text())} | {_md(g.lending_text())} | {_md(g.reach_text())} |"
    )


USAGE_HEADER = (" in use | reserved | borrowed |", " ---: | ---: | ---: |")


def _usage_cells(g: Grant, used: Used) -> str:
    cells = used.get((g.cluster, g.tenant, g.flavor, g.resource), (ZERO, ZERO, ZERO))
    return "".join(f" {_md(g.show(q))} |" for q in cells)


def format_markdown(found: Sequence[Pool], used: Used | None = None) -> str:
    parts: list[str] = ["## GPU budgets", ""]
    for cluster in dict.fromkeys(p.cluster for p in found):
        here = [p for p in found if p.cluster == cluster]
        parts += [f"### {cluster}", "", "| flavor | resource | nominal | capacity | headroom |"]
        parts += ["| --- | --- | ---: | ---: | ---: |"]
        parts += [
            f"| {_md(p.flavor)} | {_md(p.resource)} | {_h(p.nominal, p.unit)} | {_h(p.capacity, p.unit)} | "
            f"{_h(p.headroom, p.unit)} |"
            for p in here
        ]
        if used is None:
            parts += ["", *GRANT_HEADER, *(grant_row(g) for p in here for g in p.grants), ""]
        else:  # `budgets --from`: what each tenant uses, reserves and borrows on the cluster
            header = [h + u for h, u in zip(GRANT_HEADER, USAGE_HEADER, strict=True)]
            parts += [
                "",
                *header,
                *(grant_row(g) + _usage_cells(g, used) for p in here for g in p.grants),
                "",
            ]
        tree = [c for p in here for c in p.cohorts]
        if tree:
            parts += [*COHORT_HEADER, *(cohort_row(c) for c in tree), ""]
    return "\n".join(parts)


COHORT_HEADER = (
    "| cohort | parent | members | flavor | resource | its own quota | borrowing limit | lending limit "
    "| holds with its members | most it can reach |",
    "| --- | --- | --- | --- | --- | ---: | --- | --- | ---: | ---: |",
)


def cohort_row(c: CohortGrant) -> str:
    def shown(q: Quantity | None) -> str:
        return c.show(q) if q is not None else "-"

    return (
        f"| {_md(c.cohort)} | {_md(c.parent or '-')} | {_md(', '.join(c.members) or '-')} | {_md(c.flavor)} | "
        f"{_md(c.resource)} | {_md(c.show(c.nominal))} | {_md(shown(c.borrowing))} | {_md(shown(c.lending))} | "
        f"{_md(c.show(c.holds))} | {_md(shown(c.reach))} |"
    )


def grant_json(g: Grant) -> dict[str, Any]:
    return {
        "cluster": g.cluster,
        "tenant": g.tenant,
        "flavor": g.flavor,
        "resource": g.resource,
        "nominal": g.nominal.canonical(),
        "borrowingLimit": _json_q(g.borrowing),
        "lendingLimit": _json_q(g.lending),
        "cohort": g.cohort,
        "unlimitedBorrowing": g.unlimited,
        "reach": g.reach.canonical(),
        **({"unit": g.unit} if g.unit else {}),
        **({"draining": True} if g.draining else {}),
    }


def cohort_json(c: CohortGrant) -> dict[str, Any]:
    return {
        "cohort": c.cohort,
        "parent": c.parent,
        "members": list(c.members),
        "nominal": c.nominal.canonical(),
        "borrowingLimit": _json_q(c.borrowing),
        "lendingLimit": _json_q(c.lending),
        "holds": c.holds.canonical(),
        "reach": _json_q(c.reach),
    }


def _json_q(q: Quantity | None) -> str | None:
    return q.canonical() if q is not None else None


def _usage_json(g: Grant, used: Used | None) -> dict[str, Any]:
    if used is None:
        return {}
    cells = used.get((g.cluster, g.tenant, g.flavor, g.resource), (ZERO, ZERO, ZERO))
    return {
        "usage": dict(zip(("inUse", "reserved", "borrowed"), (q.canonical() for q in cells), strict=True))
    }


def to_json(found: Sequence[Pool], used: Used | None = None) -> dict[str, Any]:
    return {
        "schema": "gputenancy.budgets/v1",
        "pools": [
            {
                "cluster": p.cluster,
                "flavor": p.flavor,
                "resource": p.resource,
                "capacity": _json_q(p.capacity),
                "nominal": p.nominal.canonical(),
                "headroom": _json_q(p.headroom),
                **({"unit": p.unit} if p.unit else {}),
                "grants": [grant_json(g) | _usage_json(g, used) for g in p.grants],
                **({"cohorts": [cohort_json(c) for c in p.cohorts]} if p.cohorts else {}),
            }
            for p in found
        ],
    }


def render(found: Sequence[Pool], fmt: str, used: Used | None = None) -> str:
    """`used`: usage read from a cluster (`budgets --from`), added as columns."""
    if fmt == "json":
        return json.dumps(to_json(found, used), indent=2) + "\n"
    return format_markdown(found, used) if fmt == "markdown" else format_text(found, used)
