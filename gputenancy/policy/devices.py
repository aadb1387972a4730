"""Policy rules on devices: device classes in the catalog and declared alike, claim templates covered
by a budget and scoped to the tenant, and Kueue's limits on deviceClassMappings."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator

from gputenancy.common.findings import Finding, Origin
from gputenancy.common.hints import closest, did_you_mean
from gputenancy.inputs.spec import ClaimTemplate, Model
from gputenancy.policy.catalog import Catalog, claims_on, classes_used, covered_resources, err

MAX_MAPPINGS = 16
MAX_CLASSES_PER_MAPPING = 8


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
                        meant = closest(name, catalog.classes)
                        needing = sorted(
                            {ct.name for ct in t.claim_templates if meant and ct.device_class == meant}
                        )
                        folded = (
                            f" (claim template(s) {', '.join(needing)} use {meant}, so their budget is missing too)"
                            if needing
                            else ""
                        )
                        yield err(
                            amount.origin,
                            "device-class-unknown",
                            f"device class {name!r} is not in the catalog (known: {known})"
                            + did_you_mean(name, catalog.classes)
                            + folded,
                        )
        for ct in t.claim_templates:
            if ct.device_class not in catalog.classes:
                yield err(
                    ct.class_origin,
                    "device-class-unknown",
                    f"claim template {ct.name!r}: device class {ct.device_class!r} is not in the catalog, so Kueue could not map it (known: {known})"
                    + did_you_mean(ct.device_class, catalog.classes),
                )
    for c in model.clusters.values():
        for cap in c.capacity:
            for name, _, origin in cap.devices:
                if name not in catalog.classes:
                    yield err(
                        origin,
                        "device-class-unknown",
                        f"capacity for device class {name!r}, which is not in the catalog"
                        + did_you_mean(name, catalog.classes),
                    )


def device_class_conflict(model: Model, catalog: Catalog) -> Iterator[Finding]:
    """A DeviceClass is declared once: every other declaration (a tenant's deviceClasses) must carry the
    same resource and selectors, so it sits under exactly one quota name in deviceClassMappings.

    Passes: a tenant re-declares gpu.nvidia.com -> nvidia.com/gpu as the catalog does.
    Fails: a tenant declares gpu.nvidia.com -> example.com/gpu while the catalog says nvidia.com/gpu.
    """
    for name, entries in catalog.declared_by.items():
        first = entries[0]
        for other in entries[1:]:
            if (other.resource, other.selectors, other.capacity) != (
                first.resource,
                first.selectors,
                first.capacity,
            ):
                what = (
                    "resource"
                    if other.resource != first.resource
                    else "selectors"
                    if other.selectors != first.selectors
                    else "capacity"
                )
                yield err(
                    other.origin,
                    "device-class-conflict",
                    f"device class {name!r} is declared with a different {what} here ({other.resource}) than at "
                    f"{first.origin.path}:{first.origin.line} ({first.resource})",
                )


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
            mistyped = {
                closest(name, catalog.classes)
                for fb in t.budget_for(cluster) or ()
                for name, _ in fb.devices
                if name not in catalog.classes
            }
            for ct in claims_on(t, cluster):
                entry = catalog.classes.get(ct.device_class)
                if ct.device_class in mistyped:
                    continue  # device-class-unknown reports the mistyped budget, naming this template
                if entry is not None and entry.resource not in covered:
                    yield err(
                        ct.class_origin,
                        "claim-coverage",
                        f"claim template {ct.name!r} consumes {entry.resource} (device class {ct.device_class}), "
                        f"which tenant {t.name!r} has no budget for on cluster {cluster!r}: add "
                        f"`devices: {{{ct.device_class}: N}}` to a flavor of its budgets (budgets.clusters."
                        f"{cluster} or budgets.default), or take {cluster!r} out of the template's `clusters`",
                    )


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
                    yield err(
                        ct.origin,
                        "claim-scope",
                        f"claim template {ct.name!r} names namespace {ns!r}, which is not one of tenant {t.name!r}'s namespaces",
                    )
            if t.clusters is not None:
                for c in ct.clusters or ():
                    if c not in t.clusters and c in model.clusters:  # else cluster-unknown
                        yield err(
                            ct.origin,
                            "claim-scope",
                            f"claim template {ct.name!r} names cluster {c!r}, where tenant {t.name!r} is not placed",
                        )
            if ct.name in seen:
                overlap_ns = set(ct.namespaces or own) & set(seen[ct.name].namespaces or own)
                if overlap_ns:
                    yield err(
                        ct.origin,
                        "claim-scope",
                        f"claim template {ct.name!r} is defined twice for namespace(s) {', '.join(sorted(overlap_ns))}",
                    )
            seen.setdefault(ct.name, ct)


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
            yield err(
                cluster.origin,
                "mapping-limits",
                f"cluster {cluster.name!r} needs {len(by_resource)} deviceClassMappings; Kueue accepts at most {MAX_MAPPINGS}",
            )
        for resource, classes in sorted(by_resource.items()):
            if len(classes) > MAX_CLASSES_PER_MAPPING:
                yield err(
                    classes[MAX_CLASSES_PER_MAPPING][1],
                    "mapping-limits",
                    f"cluster {cluster.name!r}: {len(classes)} device classes map to {resource}; Kueue accepts at most {MAX_CLASSES_PER_MAPPING} per mapping",
                )
