"""Named policy rules over the model. Each rule is one function registered in RULES; its docstring is
its documentation (`python pipeline.py rules` prints them) with a passing and a failing example.
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping

from gputenancy.findings import Finding, Origin, Severity
from gputenancy.hints import closest, did_you_mean
from gputenancy.inputs.quantity import Quantity, parse
from gputenancy.inputs.spec import ClaimTemplate, Cluster, DeviceClassEntry, FlavorBudget, Model, Tenant

MAX_MAPPINGS = 16
MAX_CLASSES_PER_MAPPING = 8


@dataclasses.dataclass(frozen=True)
class Catalog:
    """Device classes of base/platform.yaml plus those tenants declare; first declaration wins."""

    classes: Mapping[str, DeviceClassEntry]
    declared_by: Mapping[str, tuple[DeviceClassEntry, ...]]


def effective_catalog(model: Model) -> Catalog:
    classes: dict[str, DeviceClassEntry] = dict(model.platform.device_classes)
    declared: dict[str, list[DeviceClassEntry]] = defaultdict(list)
    for name, entry in model.platform.device_classes.items():
        declared[name].append(entry)
    for tenant in model.tenants:
        for entry in tenant.device_classes:
            declared[entry.name].append(entry)
            classes.setdefault(entry.name, entry)
    return Catalog(classes, {k: tuple(v) for k, v in declared.items()})


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
        for name, amount in fb.devices:
            entry = catalog.classes.get(name)
            if entry is not None:
                out.setdefault(entry.resource, amount.origin)
        for name, amount in fb.resources:
            out.setdefault(name, amount.origin)
    return out


Rule = Callable[[Model, Catalog], Iterable[Finding]]
RULES: dict[str, Rule] = {}


def rule(rule_id: str) -> Callable[[Rule], Rule]:
    def register(fn: Rule) -> Rule:
        RULES[rule_id] = fn
        return fn

    return register


def _err(origin: Origin, rule_id: str, message: str) -> Finding:
    return origin.finding(rule_id, message)


def _budgets(model: Model) -> Iterator[tuple[Tenant, str, FlavorBudget]]:
    for tenant in model.tenants:
        for cluster in model.clusters:
            if tenant.placed_on(cluster):
                for fb in tenant.budget_for(cluster) or ():
                    yield tenant, cluster, fb


@rule("tenant-duplicate")
def tenant_duplicate(model: Model, catalog: Catalog) -> Iterator[Finding]:
    """Each tenant is declared by exactly one file.

    Passes: tenants/a.yaml (name: a), tenants/b.yaml (name: b).
    Fails: tenants/a.yaml and tenants/a.yml both declaring tenant a.
    """
    seen: dict[str, Tenant] = {}
    for t in model.tenants:
        if t.name in seen:
            first = seen[t.name]
            yield _err(
                t.origin,
                "tenant-duplicate",
                f"tenant {t.name!r} is already declared in {first.path}:{first.origin.line}",
            )
        seen.setdefault(t.name, t)


@rule("namespace-owner")
def namespace_owner(model: Model, catalog: Catalog) -> Iterator[Finding]:
    """A namespace belongs to one tenant (its LocalQueue points at exactly one ClusterQueue).

    Passes: team-a owns a-train, team-b owns b-train.
    Fails: team-a and team-b both list namespace shared.
    """
    claims: dict[str, list[tuple[Tenant, Origin]]] = defaultdict(list)
    for t in model.tenants:
        for ns, origin in t.namespaces:
            claims[ns].append((t, origin))
    for ns, owners in claims.items():
        if len({t.name for t, _ in owners}) < 2:
            continue
        for t, origin in owners:
            others = ", ".join(f"{o.name!r} ({o.path}:{oo.line})" for o, oo in owners if o.name != t.name)
            yield _err(
                origin,
                "namespace-owner",
                f"namespace {ns!r} is also claimed by tenant {others}; a namespace belongs to one tenant",
            )


@rule("cluster-unknown")
def cluster_unknown(model: Model, catalog: Catalog) -> Iterator[Finding]:
    """Clusters named by a tenant exist under overlays/. One finding per mistyped name, at the first place
    that names it (the `clusters:` entry), listing the other places and what the typo leaves without a
    budget.

    Passes: clusters: [prod] with overlays/prod/cluster.yaml.
    Fails: budgets.clusters.staging without overlays/staging.
    """
    known = sorted(model.clusters)
    for t in model.tenants:
        places: dict[str, list[tuple[Origin, str]]] = defaultdict(list)
        for i, name in enumerate(t.clusters or ()):
            origin = t.cluster_origins[i] if i < len(t.cluster_origins) else t.origin
            places[name].append((origin, "clusters"))
        for name, budget in t.cluster_budgets.items():
            if budget:
                places[name].append((budget[0].origin, f"budgets.clusters.{name}"))
        for ct in t.claim_templates:
            for name in ct.clusters or ():
                places[name].append((ct.origin, f"claim template {ct.name!r}"))
        for name, where in places.items():
            if name in model.clusters:
                continue
            (first, what), others = where[0], where[1:]
            guess = closest(name, known)
            hint = f"; did you mean {guess!r}?" if guess else ""
            if guess and t.placed_on(guess) and t.budget_for(guess) is None:
                hint += f" (tenant {t.name!r} is placed on {guess!r} and has no budget there)"
            also = ", ".join(f"{w} at line {o.line}" for o, w in others)
            yield _err(
                first,
                "cluster-unknown",
                f"{what} of tenant {t.name!r} names cluster {name!r}, which has no overlay (known: "
                f"{', '.join(known)}){hint}" + (f"; also named by {also}" if also else ""),
            )


@rule("tenant-no-budget")
def tenant_no_budget(model: Model, catalog: Catalog) -> Iterator[Finding]:
    """A tenant placed on a cluster has a budget there (budgets.clusters.<name> or budgets.default).

    Passes: clusters: [lab] with budgets.default.
    Fails: clusters: [lab, prod] with only budgets.clusters.lab.
    """
    for t in model.tenants:
        mistyped = {closest(c, model.clusters) for c in t.cluster_budgets if c not in model.clusters}
        for name in t.clusters or ():
            if name in mistyped:
                continue  # cluster-unknown reports the budget under the mistyped name
            if name in model.clusters and t.budget_for(name) is None:
                yield _err(
                    t.origin,
                    "tenant-no-budget",
                    f"tenant {t.name!r} is placed on cluster {name!r} but has no budget there (add budgets.clusters.{name} or budgets.default)",
                )


@rule("flavor-unknown")
def flavor_unknown(model: Model, catalog: Catalog) -> Iterator[Finding]:
    """A budget's flavor is defined in base/platform.yaml and offered (has capacity) on the cluster.

    Passes: flavor: h100 on prod whose capacity lists h100.
    Fails: flavor: h100 on lab, whose capacity lists only t4.
    """
    for t, cluster, fb in _budgets(model):
        if fb.flavor not in model.platform.flavors:
            yield _err(
                fb.origin,
                "flavor-unknown",
                f"flavor {fb.flavor!r} is not defined in base/platform.yaml (known: {', '.join(sorted(model.platform.flavors))})"
                + did_you_mean(fb.flavor, model.platform.flavors),
            )
        elif fb.flavor not in {c.flavor for c in model.clusters[cluster].capacity}:
            offered = ", ".join(c.flavor for c in model.clusters[cluster].capacity)
            yield _err(
                fb.origin,
                "flavor-unknown",
                f"flavor {fb.flavor!r} is not offered on cluster {cluster!r} (offered: {offered}); set budgets.clusters.{cluster}"
                + (" or take the cluster out of clusters:" if t.clusters else ""),
            )
    for c in model.clusters.values():
        for cap in c.capacity:
            if cap.flavor not in model.platform.flavors:
                yield _err(
                    cap.origin,
                    "flavor-unknown",
                    f"capacity for flavor {cap.flavor!r}, which is not defined in base/platform.yaml"
                    + did_you_mean(cap.flavor, model.platform.flavors),
                )


@rule("device-class-unknown")
def device_class_unknown(model: Model, catalog: Catalog) -> Iterator[Finding]:
    """Every device class in a budget, claim template or capacity is in the catalog (and so mapped).

    Passes: devices: {gpu.nvidia.com: 1} with gpu.nvidia.com in base/platform.yaml.
    Fails: deviceClass: gpu.example.com, which no catalog entry maps to a quota resource.
    """
    known = ", ".join(sorted(catalog.classes))
    for t in model.tenants:
        for _, budget in t.all_budgets():
            for fb in budget:
                for name, amount in fb.devices:
                    if name not in catalog.classes:
                        yield _err(
                            amount.origin,
                            "device-class-unknown",
                            f"device class {name!r} is not in the catalog (known: {known})"
                            + did_you_mean(name, catalog.classes),
                        )
        for ct in t.claim_templates:
            if ct.device_class not in catalog.classes:
                yield _err(
                    ct.class_origin,
                    "device-class-unknown",
                    f"claim template {ct.name!r}: device class {ct.device_class!r} is not in the catalog, so Kueue could not map it (known: {known})"
                    + did_you_mean(ct.device_class, catalog.classes),
                )
    for c in model.clusters.values():
        for cap in c.capacity:
            for name, _, origin in cap.devices:
                if name not in catalog.classes:
                    yield _err(
                        origin,
                        "device-class-unknown",
                        f"capacity for device class {name!r}, which is not in the catalog"
                        + did_you_mean(name, catalog.classes),
                    )


@rule("device-class-conflict")
def device_class_conflict(model: Model, catalog: Catalog) -> Iterator[Finding]:
    """A DeviceClass is declared once: every other declaration (a tenant's deviceClasses) must carry the
    same resource and selectors, so it sits under exactly one quota name in deviceClassMappings.

    Passes: a tenant re-declares gpu.nvidia.com -> nvidia.com/gpu as the catalog does.
    Fails: a tenant declares gpu.nvidia.com -> example.com/gpu while the catalog says nvidia.com/gpu.
    """
    for name, entries in catalog.declared_by.items():
        first = entries[0]
        for other in entries[1:]:
            if (other.resource, other.selectors) != (first.resource, first.selectors):
                what = "resource" if other.resource != first.resource else "selectors"
                yield _err(
                    other.origin,
                    "device-class-conflict",
                    f"device class {name!r} is declared with a different {what} here ({other.resource}) than at "
                    f"{first.origin.path}:{first.origin.line} ({first.resource})",
                )


@rule("budget-duplicate-resource")
def budget_duplicate_resource(model: Model, catalog: Catalog) -> Iterator[Finding]:
    """Within one flavor budget each quota resource is set once (two device classes mapped to the same
    resource, or a device class and a resources: key naming the same resource, would be summed silently).

    Passes: devices: {gpu.nvidia.com: 2}, resources: {cpu: 8}.
    Fails: devices: {gpu.nvidia.com: 2}, resources: {nvidia.com/gpu: 2}.
    """
    for _, _, fb in _budgets_all(model):
        seen: dict[str, str] = {}
        for name, amount in fb.devices:
            entry = catalog.classes.get(name)
            if entry is None:
                continue
            if entry.resource in seen:
                yield _err(
                    amount.origin,
                    "budget-duplicate-resource",
                    f"device class {name!r} maps to {entry.resource}, already budgeted by {seen[entry.resource]!r} in this flavor",
                )
            seen.setdefault(entry.resource, name)
        for name, amount in fb.resources:
            if name in seen:
                yield _err(
                    amount.origin,
                    "budget-duplicate-resource",
                    f"resource {name!r} is already budgeted through device class {seen[name]!r} in this flavor",
                )


def _budgets_all(model: Model) -> Iterator[tuple[Tenant, str, FlavorBudget]]:
    """Every flavor budget every tenant file declares, default and per-cluster alike."""
    for t in model.tenants:
        for cluster, budget in t.all_budgets():
            for fb in budget:
                yield t, cluster, fb


@rule("budget-duplicate-flavor")
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
                    yield _err(
                        fb.origin,
                        "budget-duplicate-flavor",
                        f"flavor {fb.flavor!r} appears twice in this budget",
                    )
                seen.add(fb.flavor)


@rule("quota-limits")
def quota_limits(model: Model, catalog: Catalog) -> Iterator[Finding]:
    """lendingLimit <= nominal (Kueue's webhook rejects the ClusterQueue otherwise).

    Passes: {nominal: 4, lendingLimit: 2}.
    Fails: {nominal: 4, lendingLimit: 6}.
    """
    for _, _, fb in _budgets_all(model):
        for name, amount in (*fb.devices, *fb.resources):
            if amount.lending is not None and amount.lending > amount.nominal:
                yield _err(
                    amount.origin_of("lendingLimit"),
                    "quota-limits",
                    f"{name}: lendingLimit {amount.lending.canonical()} exceeds nominal {amount.nominal.canonical()}",
                )


@rule("cohort-required")
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
                for name, amount in (*fb.devices, *fb.resources):
                    if amount.borrowing is not None or amount.lending is not None:
                        field = "borrowingLimit" if amount.borrowing is not None else "lendingLimit"
                        yield _err(
                            amount.origin_of(field),
                            "cohort-required",
                            f"{name}: borrowingLimit/lendingLimit need a cohort; set cohort: in {t.path}",
                        )


@rule("cohort-unknown")
def cohort_unknown(model: Model, catalog: Catalog) -> Iterator[Finding]:
    """A tenant's cohort is defined in base/platform.yaml.

    Passes: cohort: research with cohorts: [{name: research}].
    Fails: cohort: reserch.
    """
    for t in model.tenants:
        if t.cohort is not None and t.cohort not in model.platform.cohorts:
            known = ", ".join(sorted(model.platform.cohorts)) or "none"
            yield _err(
                t.cohort_origin,
                "cohort-unknown",
                f"cohort {t.cohort!r} is not defined in base/platform.yaml (known: {known})"
                + did_you_mean(t.cohort, model.platform.cohorts),
            )


@rule("claim-coverage")
def claim_coverage(model: Model, catalog: Catalog) -> Iterator[Finding]:
    """The tenant's ClusterQueue covers every resource its claim templates consume on each cluster
    (otherwise jobs stay pending: "resource <name> unavailable in ClusterQueue").

    Passes: a claim of gpu.nvidia.com and a budget with devices: {gpu.nvidia.com: 1}.
    Fails: a claim of mig-1g.10gb.nvidia.com and a budget with only gpu.nvidia.com.
    """
    for t in model.tenants:
        for cluster in model.clusters:
            if not t.placed_on(cluster):
                continue
            covered = covered_resources(t, cluster, catalog)
            for ct in claims_on(t, cluster):
                entry = catalog.classes.get(ct.device_class)
                if entry is not None and entry.resource not in covered:
                    yield _err(
                        ct.class_origin,
                        "claim-coverage",
                        f"claim template {ct.name!r} consumes {entry.resource} (device class {ct.device_class}), which tenant {t.name!r} has no budget for on cluster {cluster!r}",
                    )


@rule("claim-scope")
def claim_scope(model: Model, catalog: Catalog) -> Iterator[Finding]:
    """A claim template is scoped to the tenant's own namespaces and clusters, and its name is unique in
    each namespace.

    Passes: namespaces: [a-train] where a-train is one of the tenant's namespaces.
    Fails: namespaces: [b-train] of another tenant; two templates named single-gpu.
    """
    for t in model.tenants:
        own = {ns for ns, _ in t.namespaces}
        seen: dict[str, ClaimTemplate] = {}
        for ct in t.claim_templates:
            for ns in ct.namespaces or ():
                if ns not in own:
                    yield _err(
                        ct.origin,
                        "claim-scope",
                        f"claim template {ct.name!r} names namespace {ns!r}, which is not one of tenant {t.name!r}'s namespaces",
                    )
            if t.clusters is not None:
                for c in ct.clusters or ():
                    if c not in t.clusters and c in model.clusters:  # else cluster-unknown
                        yield _err(
                            ct.origin,
                            "claim-scope",
                            f"claim template {ct.name!r} names cluster {c!r}, where tenant {t.name!r} is not placed",
                        )
            if ct.name in seen:
                overlap_ns = set(ct.namespaces or own) & set(seen[ct.name].namespaces or own)
                if overlap_ns:
                    yield _err(
                        ct.origin,
                        "claim-scope",
                        f"claim template {ct.name!r} is defined twice for namespace(s) {', '.join(sorted(overlap_ns))}",
                    )
            seen.setdefault(ct.name, ct)


@rule("mapping-limits")
def mapping_limits(model: Model, catalog: Catalog) -> Iterator[Finding]:
    """Kueue accepts at most 16 deviceClassMappings with at most 8 device classes each.

    Passes: 3 quota resources, 2 classes each.
    Fails: 9 MIG profiles all mapped to one resource name on one cluster.
    """
    for cluster in model.clusters.values():
        by_resource: dict[str, list[tuple[str, Origin]]] = defaultdict(list)
        for name, origin in classes_used(model, cluster.name).items():
            entry = catalog.classes.get(name)
            if entry is not None:
                by_resource[entry.resource].append((name, origin))
        if len(by_resource) > MAX_MAPPINGS:
            yield _err(
                cluster.origin,
                "mapping-limits",
                f"cluster {cluster.name!r} needs {len(by_resource)} deviceClassMappings; Kueue accepts at most {MAX_MAPPINGS}",
            )
        for resource, classes in sorted(by_resource.items()):
            if len(classes) > MAX_CLASSES_PER_MAPPING:
                yield _err(
                    classes[MAX_CLASSES_PER_MAPPING][1],
                    "mapping-limits",
                    f"cluster {cluster.name!r}: {len(classes)} device classes map to {resource}; Kueue accepts at most {MAX_CLASSES_PER_MAPPING} per mapping",
                )


@rule("capacity")
def capacity(model: Model, catalog: Catalog) -> Iterator[Finding]:
    """The nominal budgets of all tenants on a cluster fit its capacity, per flavor and resource
    (a warning instead when the overlay sets overcommit: true).

    Passes: tenants budget 4 + 4 H100s on a cluster with 8.
    Fails: tenants budget 4 + 6 H100s on a cluster with 8.
    """
    for cluster in model.clusters.values():
        yield from _capacity(model, cluster, catalog)


def usage_by_flavor(model: Model, cluster: Cluster, catalog: Catalog) -> dict[tuple[str, str], Quantity]:
    """Sum of nominal budgets per (flavor, quota resource) on a cluster."""
    total: dict[tuple[str, str], Quantity] = {}
    for t in model.tenants_on(cluster.name):
        for fb in t.budget_for(cluster.name) or ():
            for name, amount in fb.devices:
                entry = catalog.classes.get(name)
                if entry is not None:
                    key = (fb.flavor, entry.resource)
                    total[key] = total.get(key, parse(0)) + amount.nominal
            for name, amount in fb.resources:
                key = (fb.flavor, name)
                total[key] = total.get(key, parse(0)) + amount.nominal
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
    return out


def contributions(
    model: Model, cluster: Cluster, catalog: Catalog
) -> dict[tuple[str, str], list[tuple[Tenant, Quantity, Origin]]]:
    """Who budgets what, per (flavor, quota resource) on a cluster."""
    out: dict[tuple[str, str], list[tuple[Tenant, Quantity, Origin]]] = defaultdict(list)
    for t in model.tenants_on(cluster.name):
        for fb in t.budget_for(cluster.name) or ():
            for name, amount in fb.devices:
                entry = catalog.classes.get(name)
                if entry is not None:
                    out[(fb.flavor, entry.resource)].append((t, amount.nominal, amount.origin))
            for name, amount in fb.resources:
                out[(fb.flavor, name)].append((t, amount.nominal, amount.origin))
    return out


def _who(parts: list[tuple[Tenant, Quantity, Origin]], most: int = 5, *, with_place: bool = True) -> str:
    ranked = sorted(parts, key=lambda p: p[1], reverse=True)
    shown = ", ".join(
        f"{t.name} {q.canonical()}" + (f" at {o.path}:{o.line}" if with_place else "")
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
    for (flavor, resource), used in sorted(usage_by_flavor(model, cluster, catalog).items()):
        if flavor not in entries or flavor not in model.platform.flavors:
            continue  # flavor-unknown reports the budget at its flavor line
        cap = have.get((flavor, resource))
        parts = who[(flavor, resource)]
        if cap is None:
            entry = entries[flavor]
            where = f"{entry.path}:{entry.line}"
            for t, q, o in parts:
                yield o.finding(
                    "capacity",
                    f"tenant {t.name!r} budgets {q.canonical()} {resource} on flavor {flavor!r}, but cluster "
                    f"{cluster.name!r} declares no capacity for {resource} there ({where}); add it to the "
                    "capacity or drop it from the budget",
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
            total = f"{used.canonical()} exceeds capacity {cap[0].canonical()}"
            if not cluster.overcommit:
                for t, q, o in parts:
                    yield o.finding(
                        "capacity",
                        f"{t.name}'s nominal {q.canonical()} {resource} on flavor {flavor!r} counts toward "
                        f"cluster {cluster.name!r}, where the tenants' total {total} "
                        f"({cap[1].path}:{cap[1].line}; {_who(parts, with_place=False)}){note}",
                    )
            yield cap[1].finding(
                "capacity",
                f"cluster {cluster.name!r} flavor {flavor!r}: tenants' nominal {resource} {total} ({_who(parts)}){note}",
                sev,
            )


def check(model: Model) -> list[Finding]:
    catalog = effective_catalog(model)
    findings: list[Finding] = []
    for fn in RULES.values():
        findings.extend(fn(model, catalog))
    return sorted(set(findings))


def documentation() -> str:
    """All rules with their docstrings, as Markdown."""
    parts = []
    for rule_id, fn in RULES.items():
        doc = (fn.__doc__ or "").strip()
        parts.append(f"### `{rule_id}`\n\n{doc}\n")
    return "\n".join(parts)
