"""Policy rules on budgets: known and offered flavors, each quota resource and flavor once, lending
within nominal, borrowing and lending only with a known cohort."""

from __future__ import annotations

from collections.abc import Iterator

from gputenancy.common.findings import Finding
from gputenancy.common.hints import did_you_mean
from gputenancy.inputs import fleet
from gputenancy.inputs.spec import Amount, FlavorBudget, Model
from gputenancy.policy.catalog import Catalog, declared_budgets, err, placed_budgets


def flavor_unknown(model: Model, catalog: Catalog) -> Iterator[Finding]:
    """A budget's flavor is defined in base/platform.yaml and offered (has capacity) on the cluster.

    Passes: flavor: h100 on prod whose capacity lists h100.
    Fails: flavor: h100 on lab, whose capacity lists only t4.
    """
    for t, cluster, fb in placed_budgets(model):
        if fb.flavor not in model.platform.flavors:
            yield err(
                fb.origin,
                "flavor-unknown",
                f"flavor {fb.flavor!r} is not defined in base/platform.yaml (known: {', '.join(sorted(model.platform.flavors))})"
                + did_you_mean(fb.flavor, model.platform.flavors),
            )
        elif fb.flavor not in {c.flavor for c in model.clusters[cluster].capacity}:
            if (t.name, cluster) in model.summed_budgets:
                continue  # a manager's sum of worker budgets: each worker reports its own
            offered = ", ".join(c.flavor for c in model.clusters[cluster].capacity)
            managers = [m.name for m in fleet.fleets_of(model, cluster) if t.placed_on(m.name)]
            yield err(
                fb.origin,
                "flavor-unknown",
                f"flavor {fb.flavor!r} is not offered on cluster {cluster!r} (offered: {offered}); set budgets.clusters.{cluster}"
                + (
                    f" (a worker of MultiKueue manager {managers[0]!r}, whose quota stays the sum of the worker budgets)"
                    if managers
                    else " or take the cluster out of clusters:"
                    if t.clusters
                    else ""
                ),
            )
    for c in model.clusters.values():
        for cap in c.capacity:
            if cap.flavor not in model.platform.flavors:
                yield err(
                    cap.origin,
                    "flavor-unknown",
                    f"capacity for flavor {cap.flavor!r}, which is not defined in base/platform.yaml"
                    + did_you_mean(cap.flavor, model.platform.flavors),
                )


def budget_duplicate_resource(model: Model, catalog: Catalog) -> Iterator[Finding]:
    """Within one flavor budget each quota resource is set once (two device classes mapped to the same
    resource, or a device class and a resources: key naming the same resource, would be summed silently).

    Passes: devices: {gpu.nvidia.com: 2}, resources: {cpu: 8}.
    Fails: devices: {gpu.nvidia.com: 2}, resources: {nvidia.com/gpu: 2}.
    """
    for _, _, fb in declared_budgets(model):
        yield from resources_once(fb, catalog, "budget-duplicate-resource")


def resources_once(fb: FlavorBudget, catalog: Catalog, rule: str) -> Iterator[Finding]:
    """Each quota resource of one flavor budget (a tenant's or a cohort's) set once: through one catalog
    device class, or as a resources: key; device classes the catalog lacks are another rule's."""
    seen: dict[str, str] = {}
    for name, amount in fb.devices:
        entry = catalog.classes.get(name)
        if entry is None:
            continue
        if entry.resource in seen:
            yield err(
                amount.origin,
                rule,
                f"device class {name!r} maps to {entry.resource}, already budgeted by {seen[entry.resource]!r} in this flavor",
            )
        seen.setdefault(entry.resource, name)
    for name, amount in fb.resources:
        if name in seen:
            yield err(
                amount.origin,
                rule,
                f"resource {name!r} is already budgeted through device class {seen[name]!r} in this flavor",
            )


def budget_duplicate_flavor(model: Model, catalog: Catalog) -> Iterator[Finding]:
    """A flavor appears once in a budget list.

    Passes: [{flavor: h100, ...}, {flavor: a100, ...}].
    Fails: [{flavor: h100, ...}, {flavor: h100, ...}].
    """
    for t in model.tenants:
        for _, budget in t.all_budgets():
            seen: set[str] = set()
            for fb in budget:
                if fb.flavor in seen:
                    yield err(
                        fb.origin,
                        "budget-duplicate-flavor",
                        f"flavor {fb.flavor!r} appears twice in this budget",
                    )
                seen.add(fb.flavor)


def _declared(fb: FlavorBudget) -> list[tuple[str, Amount]]:
    """Every amount a flavor budget writes, named as in the file (HAMi ones as hami.vgpus, ...)."""
    out = [*fb.devices, *fb.resources]
    if fb.hami is not None:
        out += [("hami.vgpus", fb.hami.vgpus), ("hami.memory", fb.hami.memory), ("hami.cores", fb.hami.cores)]
    return out


def quota_limits(model: Model, catalog: Catalog) -> Iterator[Finding]:
    """lendingLimit <= nominal (Kueue's webhook rejects the ClusterQueue otherwise).

    Passes: {nominal: 4, lendingLimit: 2}.
    Fails: {nominal: 4, lendingLimit: 6}.
    """
    for _, _, fb in declared_budgets(model):
        for name, amount in _declared(fb):
            if amount.lending is not None and amount.lending > amount.nominal:
                yield err(
                    amount.origin_of("lendingLimit"),
                    "quota-limits",
                    f"{name}: lendingLimit {amount.lending.canonical()} exceeds nominal {amount.nominal.canonical()}",
                )


def cohort_required(model: Model, catalog: Catalog) -> Iterator[Finding]:
    """borrowingLimit and lendingLimit need a cohort (Kueue: "must be nil when cohort is empty").

    Passes: cohort: research with {nominal: 4, borrowingLimit: 2}.
    Fails: no cohort with {nominal: 4, borrowingLimit: 2}.
    """
    for t in model.tenants:
        if t.cohort is not None:
            continue
        for _, budget in t.all_budgets():
            for fb in budget:
                for name, amount in _declared(fb):
                    if amount.borrowing is not None or amount.lending is not None:
                        field = "borrowingLimit" if amount.borrowing is not None else "lendingLimit"
                        yield err(
                            amount.origin_of(field),
                            "cohort-required",
                            f"{name}: borrowingLimit/lendingLimit need a cohort; set cohort: in {t.path}",
                        )


def cohort_unknown(model: Model, catalog: Catalog) -> Iterator[Finding]:
    """A tenant's cohort is defined in base/platform.yaml.

    Passes: cohort: research with cohorts: [{name: research}].
    Fails: cohort: reserch.
    """
    for t in model.tenants:
        if t.cohort is not None and t.cohort not in model.platform.cohorts:
            known = ", ".join(sorted(model.platform.cohorts)) or "none"
            yield err(
                t.cohort_origin,
                "cohort-unknown",
                f"cohort {t.cohort!r} is not defined in base/platform.yaml (known: {known})"
                + did_you_mean(t.cohort, model.platform.cohorts),
            )
