"""Resource groups at the tenant line: what Kueue's ClusterQueue and Cohort webhooks and CRDs refuse about
`spec.resourceGroups` (pkg/webhooks/common.go, the CRD's MaxItems), checked on the budget lists that
render them (`render.groups`), before anything is rendered."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from gputenancy.common.findings import Finding, Origin
from gputenancy.inputs.spec import FlavorBudget, Model
from gputenancy.policy import cohorts
from gputenancy.policy.catalog import Catalog, err, placed_budgets

MAX_GROUPS = 16  # spec.resourceGroups MaxItems
MAX_PER_GROUP = 64  # coveredResources, flavors and each flavor's resources: MaxItems
MAX_TOTAL = 256  # flavors, and covered resources, across all groups (ClusterQueue webhook)
MAX_COMBINATIONS = 512  # flavor x resource entries in one group (ClusterQueue webhook)


def _lists(model: Model, catalog: Catalog) -> Iterator[tuple[str, str, Sequence[FlavorBudget], bool]]:
    """(who, cluster, budget list, is a ClusterQueue) for every list rendered as resource groups."""
    placed: dict[tuple[str, str], list[FlavorBudget]] = {}
    for t, cluster, fb in placed_budgets(model):
        placed.setdefault((t.name, cluster), []).append(fb)
    for (tenant, cluster), budget in sorted(placed.items()):
        yield f"tenant {tenant}", cluster, budget, True
    for name in sorted(model.clusters):
        held: dict[str, list[FlavorBudget]] = {}
        for co, fb in cohorts.held(model, name):
            held.setdefault(co.name, []).append(fb)
        for co_name, budget in sorted(held.items()):
            yield f"cohort {co_name}", name, budget, False


def _at(fb: FlavorBudget) -> Origin:
    return fb.group_origin or fb.origin


def budget_resource_groups(model: Model, catalog: Catalog) -> Iterator[Finding]:
    """A budget list's resource groups are ones Kueue accepts: `resourceGroup` named on every flavor
    budget of the list or on none; each quota resource in one group only (Kueue: "a resource may appear
    in only one resource group"; a flavor appears once in a list: `budget-duplicate-flavor`); at most 16
    groups, 64 flavors and 64 covered resources per group, 512 flavor x resource quotas per group, and
    (for a ClusterQueue) 256 flavors and 256 covered resources across its groups.

    Passes: [{flavor: h100, resourceGroup: gpu, devices: {gpu.nvidia.com: 8}},
    {flavor: cpu-pool, resourceGroup: cpu, resources: {cpu: 64, memory: 256Gi}}].
    Fails: the same with `resources: {cpu: 8}` on h100 too (cpu in groups gpu and cpu); a resourceGroup
    on one flavor budget of the list only.
    """
    for who, cluster, budget, queue in _lists(model, catalog):
        named = [fb for fb in budget if fb.group is not None]
        if named and len(named) != len(budget):
            for fb in budget:
                if fb.group is None:
                    yield err(
                        fb.origin,
                        "budget-resource-groups",
                        f"{who} on cluster {cluster!r}: flavor {fb.flavor!r} names no resourceGroup while "
                        f"{named[0].flavor!r} names {named[0].group!r}: name the group of every flavor budget "
                        "of this list, or of none",
                    )
            continue
        groups: dict[str | None, list[FlavorBudget]] = {}
        for fb in budget:
            groups.setdefault(fb.group, []).append(fb)
        where_is: dict[str, list[tuple[str | None, FlavorBudget, Origin]]] = {}
        covered_total = 0
        for group, members in groups.items():
            covered: dict[str, None] = {}
            for fb in members:
                for resource, amount in catalog.amounts(fb, cluster):
                    covered.setdefault(resource)
                    where_is.setdefault(resource, []).append((group, fb, amount.origin))
            combinations = len(covered) * len(members)  # the pipeline writes every covered resource
            covered_total += len(covered)
            where = _at(members[0])
            name = f"resource group {group!r}" if group is not None else "its resource group"
            if len(members) > MAX_PER_GROUP:
                yield err(
                    _at(members[MAX_PER_GROUP]),
                    "budget-resource-groups",
                    f"{who} on cluster {cluster!r}: {len(members)} flavors in {name}, Kueue allows at most "
                    f"{MAX_PER_GROUP}",
                )
            if len(covered) > MAX_PER_GROUP:
                yield err(
                    where,
                    "budget-resource-groups",
                    f"{who} on cluster {cluster!r}: {name} covers {len(covered)} quota resources, Kueue allows "
                    f"at most {MAX_PER_GROUP}",
                )
            if queue and combinations > MAX_COMBINATIONS:
                yield err(
                    where,
                    "budget-resource-groups",
                    f"{who} on cluster {cluster!r}: {name} has {combinations} flavor x resource quotas "
                    f"({len(members)} flavors x {len(covered)} resources), Kueue allows at most {MAX_COMBINATIONS}",
                )
        for resource, places in where_is.items():
            if len({g for g, _, _ in places}) < 2:
                continue
            for group, fb, origin in places:
                others = ", ".join(
                    f"{g!r} (flavor {o.flavor!r}, line {o.origin.line})" for g, o, _ in places if g != group
                )
                yield err(
                    origin,
                    "budget-resource-groups",
                    f"{who} on cluster {cluster!r}: {resource} is budgeted in resource group {group!r} (flavor "
                    f"{fb.flavor!r}) and in {others}: Kueue allows a resource in only one resource group",
                )
        if len(groups) > MAX_GROUPS:
            yield err(
                _at(next(iter(list(groups.values())[MAX_GROUPS]))),
                "budget-resource-groups",
                f"{who} on cluster {cluster!r}: {len(groups)} resource groups, Kueue allows at most {MAX_GROUPS}",
            )
        if queue and len(budget) > MAX_TOTAL:
            yield err(
                budget[MAX_TOTAL].origin,
                "budget-resource-groups",
                f"{who} on cluster {cluster!r}: {len(budget)} flavors across its resource groups, Kueue allows "
                f"at most {MAX_TOTAL}",
            )
        if queue and covered_total > MAX_TOTAL:
            yield err(
                budget[0].origin,
                "budget-resource-groups",
                f"{who} on cluster {cluster!r}: {covered_total} covered resources across its resource groups, "
                f"Kueue allows at most {MAX_TOTAL}",
            )
