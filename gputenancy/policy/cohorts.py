"""Budget trees: cohorts that hold quota of their own (a department's budget that its teams share), where
each cohort is rendered, the quota it holds on a cluster, and the rules over what base/platform.yaml
`cohorts[].budgets` declares. Kueue's arithmetic over the tree is `quotatree`."""

from __future__ import annotations

from collections.abc import Iterator
from decimal import Decimal

from gputenancy.common.findings import Finding
from gputenancy.common.hints import did_you_mean
from gputenancy.inputs.spec import Cohort, FlavorBudget, Model
from gputenancy.policy import quotatree
from gputenancy.policy.budgets import resources_once
from gputenancy.policy.catalog import Catalog, err


def cohorts_on(model: Model, cluster: str) -> list[str]:
    """The cohorts rendered on `cluster`, by name: those of its tenants and those holding quota there,
    with every parent above them (each defined in base/platform.yaml)."""
    cohorts = model.platform.cohorts
    starts = [t.cohort for t in model.tenants_on(cluster) if t.cohort is not None]
    starts += [name for name, co in cohorts.items() if co.budget_for(cluster)]
    found: set[str] = set()
    for start in starts:
        name: str | None = start
        while name is not None and name not in found and name in cohorts:
            found.add(name)
            name = cohorts[name].parent
    return sorted(found)


def held(model: Model, cluster: str) -> Iterator[tuple[Cohort, FlavorBudget]]:
    """Every flavor budget a cohort rendered on `cluster` holds there."""
    for name in cohorts_on(model, cluster):
        co = model.platform.cohorts[name]
        for fb in co.budget_for(cluster):
            yield co, fb


def tree(model: Model, cluster: str, catalog: Catalog) -> quotatree.Tree:
    """The quota tree of `cluster` from the inputs: the cohorts' parents and own quotas, and what each
    tenant placed there lends its cohort."""
    parents = {name: co.parent for name, co in model.platform.cohorts.items() if co.parent is not None}
    own: dict[str, dict[quotatree.Key, quotatree.Quota]] = {}
    for co, fb in held(model, cluster):
        for resource, a in catalog.amounts(fb, cluster):
            own.setdefault(co.name, {}).setdefault((fb.flavor, resource), a.values())
    lent: list[tuple[str, quotatree.Key, Decimal]] = []
    for t in model.tenants_on(cluster):
        if t.cohort is None:
            continue
        seen: set[quotatree.Key] = set()
        for fb in t.budget_for(cluster) or ():
            for resource, a in catalog.amounts(fb, cluster):
                key = (fb.flavor, resource)
                if key not in seen:
                    seen.add(key)
                    lent.append((t.cohort, key, quotatree.lendable(a.values())))
    return quotatree.Tree(parents, own, quotatree.summed(lent))


def cohort_budget(model: Model, catalog: Catalog) -> Iterator[Finding]:
    """A cohort's own quota (`cohorts[].budgets.clusters.<cluster>` in base/platform.yaml) names a cluster
    of the repository, flavors defined in base/platform.yaml and offered there (in its capacity), device
    classes of the catalog, each flavor once and each quota resource once per flavor.

    Passes: cohorts [{name: ml, budgets: {clusters: {prod: [{flavor: h100, devices: {gpu.nvidia.com: 4}}]}}}].
    Fails: budgets.clusters.staging where no overlay is named staging; flavor: h100 on a cluster without
    h100 capacity; devices: {gpu.nvidia.com: 4}, resources: {nvidia.com/gpu: 4}.
    """
    for co in model.platform.cohorts.values():
        for cluster, budget in co.cluster_budgets.items():
            if cluster not in model.clusters:
                at = budget[0].origin if budget else co.origin
                yield err(
                    at,
                    "cohort-budget",
                    f"cohort {co.name!r} holds quota on cluster {cluster!r}, which has no overlay "
                    f"(known: {', '.join(sorted(model.clusters))})" + did_you_mean(cluster, model.clusters),
                )
                continue
            offered = [c.flavor for c in model.clusters[cluster].capacity]
            flavors: set[str] = set()
            for fb in budget:
                if fb.flavor in flavors:
                    yield err(
                        fb.origin, "cohort-budget", f"flavor {fb.flavor!r} appears twice in this budget"
                    )
                flavors.add(fb.flavor)
                if fb.flavor not in model.platform.flavors:
                    yield err(
                        fb.origin,
                        "cohort-budget",
                        f"flavor {fb.flavor!r} is not defined in base/platform.yaml"
                        + did_you_mean(fb.flavor, model.platform.flavors),
                    )
                elif fb.flavor not in offered:
                    yield err(
                        fb.origin,
                        "cohort-budget",
                        f"cohort {co.name!r} holds quota of flavor {fb.flavor!r} on cluster {cluster!r}, which "
                        f"does not offer it (offered: {', '.join(offered) or 'none'})",
                    )
                yield from _resources_once(co, fb, catalog)


def _resources_once(co: Cohort, fb: FlavorBudget, catalog: Catalog) -> Iterator[Finding]:
    for name, amount in fb.devices:
        if name not in catalog.classes:
            yield err(
                amount.origin,
                "cohort-budget",
                f"cohort {co.name!r}: device class {name!r} is not in the catalog"
                + did_you_mean(name, catalog.classes),
            )
    yield from resources_once(fb, catalog, "cohort-budget")


def cohort_limits(model: Model, catalog: Catalog) -> Iterator[Finding]:
    """A cohort's borrowingLimit and lendingLimit need a parent: they bound what its subtree borrows from
    and lends to the parent (Kueue's Cohort webhook: "must be nil when parent is empty").

    Passes: {name: ml, parent: research, budgets: ... gpu.nvidia.com: {nominal: 4, lendingLimit: 2}}.
    Fails: {name: ml, budgets: ... gpu.nvidia.com: {nominal: 4, lendingLimit: 2}} without a parent.
    """
    for co in model.platform.cohorts.values():
        if co.parent is not None:
            continue
        for budget in co.cluster_budgets.values():
            for fb in budget:
                for name, amount in [*fb.devices, *fb.resources]:
                    for field, value in (
                        ("borrowingLimit", amount.borrowing),
                        ("lendingLimit", amount.lending),
                    ):
                        if value is not None:
                            yield err(
                                amount.origin_of(field),
                                "cohort-limits",
                                f"cohort {co.name!r} {name}: {field} needs a parent (Kueue: must be nil when "
                                "parent is empty); set parent: or drop the limit",
                            )
