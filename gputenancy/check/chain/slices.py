"""The checks on a cluster's built objects, tenant by tenant: a one-tenant change checks that tenant again,
not the cluster.

`postbuild.check` looks at a whole cluster at once. Most of what it finds is about one tenant's objects
(its ClusterQueue, LocalQueue and claim templates) read against a little of the rest: the platform
objects, the lendable quota of the ClusterQueue's cohort tree, the owner of each namespace. So the
cluster is checked in parts: the platform objects alone (every rule), then each tenant's objects with the
platform objects (a view of part of the cluster, `builtview.part_view`, which reads the cohort pool, the
Kueue Configuration, the device inventory and the namespace owners worked out once for the whole
cluster). A tenant's part is kept in the cache under its tenant entry key and what it read from the rest
(`context`): when neither changed, its findings are those found before. Two results come from the parts
together: the note on claim templates with CEL selectors where the cluster declares no device
inventory, and `built-capacity`, which adds up every queue's quota but reports only quotas kustomize
changed (a part says whether it has one).

The parts give exactly the findings of `postbuild.check` when every tenant's objects refer only to
themselves and the platform objects (`separable`): ClusterQueues, LocalQueues and claim templates
labelled with their own tenant and traced to its file, each LocalQueue pointing at its own tenant's
ClusterQueue (or at none in the build), each namespace's LocalQueues and claim templates in one
tenant's objects, and no such objects among the platform's. When that does not hold, or a quota was
changed by kustomize, the whole cluster is checked at once, as before.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from gputenancy.caching import cachekey, memo
from gputenancy.check.chain import admissible, builtlimits, inventory, postbuild
from gputenancy.check.chain.builtview import (
    DRA,
    KUEUE,
    TENANT_LABEL,
    Around,
    View,
    build_view,
    is_fallback,
    kueue_configuration,
    kustomizations,
    owners,
    part_view,
)
from gputenancy.common.findings import Finding
from gputenancy.common.objects import RenderedObject
from gputenancy.inputs.spec import Cluster, Model, Tenant
from gputenancy.policy.catalog import Catalog

WHOLE = ("built-kueue-config", "built-kueue-install", "device-inventory")
"""Rules that read only the platform objects: the view of those alone reports them."""
ADDED_UP = ("built-capacity",)
"""Rules over every queue together (below)."""
_PART_KINDS = frozenset({(KUEUE, "ClusterQueue"), (KUEUE, "LocalQueue"), (DRA, "ResourceClaimTemplate")})

Part = tuple[Tenant, str, Sequence[RenderedObject]]  # tenant, its entry key ("" without a cache), objects


def check(
    model: Model,
    cluster: Cluster,
    catalog: Catalog,
    platform: Sequence[RenderedObject],
    parts: Sequence[Part],
    found: memo.Memo[memo.BuiltPart],
    *,
    kustomized: bool,
) -> list[Finding]:
    """The findings of `postbuild.check` on `platform` and the parts' objects (in that order), each
    tenant's part from `found` when it was checked before against the same context."""
    if not separable(platform, parts):
        return _whole(model, cluster, catalog, platform, parts, kustomized=kustomized)
    base = build_view(model, cluster, catalog, platform, kustomized=kustomized)
    around = _around(base, parts)
    shared = postbuild.run(base)
    described = memo.platform_digest(platform)
    results: list[memo.BuiltPart] = []
    for _, key, objects in parts:
        part_key = memo.built_key(key, context(around, described, objects)) if key else None
        part = found.lookup(part_key) if part_key else None
        if part is None:
            part = _part(part_view(base, around, objects), shared)
            if part_key:
                found.store(part_key, part)
        results.append(part)
    found.save()
    if any(r.capacity_changed for r in results):
        return _whole(model, cluster, catalog, platform, parts, kustomized=kustomized)
    total = shared.union(*(r.findings for r in results))
    total.update(inventory.devices_note(base, [n for r in results for n in r.selector_claims]))
    return sorted(total)


def _whole(
    model: Model,
    cluster: Cluster,
    catalog: Catalog,
    platform: Sequence[RenderedObject],
    parts: Sequence[Part],
    *,
    kustomized: bool,
) -> list[Finding]:
    objects = [*platform, *(o for _, _, objects in parts for o in objects)]
    return postbuild.check(model, cluster, catalog, objects, kustomized=kustomized)


def _around(base: View, parts: Sequence[Part]) -> Around:
    queues = [
        (_name(o), _spec(o))
        for _, _, objects in parts
        for o in objects
        if _kind(o) == (KUEUE, "ClusterQueue")
    ]
    pool = admissible.Pool(base.of(KUEUE, "Cohort"), queues)
    found = inventory.inventory(base)
    return Around(
        {t.name: t for t in base.model.tenants_on(base.cluster.name)},
        owners(base.model, base.cluster),
        kustomizations(base.model, base.cluster, kustomized=base.kustomized),
        kueue_configuration(base),
        pool,
        found,
    )


def _part(view: View, shared: set[Finding]) -> memo.BuiltPart:
    findings = postbuild.run(view, skip=(*WHOLE, *ADDED_UP)) - shared
    return memo.BuiltPart(
        tuple(sorted(findings)),
        tuple(inventory.selector_claims(view))
        if view.around is not None and view.around.inventory is None
        else (),
        builtlimits.capacity_changed(view),
    )


def context(around: Around, platform: str, objects: Sequence[RenderedObject]) -> str:
    """What a tenant's part reads from the rest of the cluster: the platform objects (`platform`, their
    digest), what its ClusterQueues may borrow in their cohort trees and the owner of each namespace
    of its LocalQueues."""
    pool: admissible.Pool = around.pool
    trees: set[str] = set()
    namespaces: set[str] = set()
    for o in objects:
        kind = o.body.get("kind")
        if kind == "ClusterQueue":
            tree = pool.tree_of(_spec(o))
            if tree is not None:
                trees.add(tree)
        elif kind == "LocalQueue":
            namespaces.add(_namespace(o))
    owned = [(ns, t.name if (t := around.owners.get(ns)) is not None else "") for ns in sorted(namespaces)]
    return cachekey.digest(platform, *(pool.described(t) for t in sorted(trees)), repr(owned))


def separable(platform: Sequence[RenderedObject], parts: Sequence[Part]) -> bool:
    """Whether each tenant's objects refer only to themselves and the platform objects (module docstring)."""
    if any(_kind(o) in _PART_KINDS for o in platform):
        return False
    queue_part: dict[str, int] = {}  # ClusterQueue name -> part
    namespace_part: dict[str, int] = {}  # namespace of a LocalQueue -> part
    asks: list[tuple[int, str | None, str | None]] = []  # (part, LocalQueue target, claim namespace)
    for i, (tenant, _, objects) in enumerate(parts):
        for o in objects:
            kind = _kind(o)
            labels = (o.body.get("metadata") or {}).get("labels")
            if (
                kind not in _PART_KINDS
                or not isinstance(labels, dict)
                or labels.get(TENANT_LABEL) != tenant.name
                or (o.origin.path != tenant.path and not is_fallback(o.origin))
            ):
                return False
            if kind[1] == "ClusterQueue":
                queue_part[_name(o)] = i
            elif kind[1] == "LocalQueue":
                ns = _namespace(o)
                if namespace_part.setdefault(ns, i) != i:
                    return False
                target = _spec(o).get("clusterQueue")
                asks.append((i, target if isinstance(target, str) else None, None))
            else:
                asks.append((i, None, _namespace(o)))
    for i, target, claim_ns in asks:
        if target is not None and queue_part.get(target, i) != i:
            return False
        if claim_ns is not None and namespace_part.get(claim_ns, i) != i:
            return False
    return True


def _kind(o: RenderedObject) -> tuple[str, str]:
    api_version = str(o.body.get("apiVersion", ""))
    return (api_version.rpartition("/")[0] if "/" in api_version else "", str(o.body.get("kind", "")))


def _name(o: RenderedObject) -> str:
    return str((o.body.get("metadata") or {}).get("name", ""))


def _namespace(o: RenderedObject) -> str:
    return str((o.body.get("metadata") or {}).get("namespace", "") or "")


def _spec(o: RenderedObject) -> dict[str, Any]:
    spec = o.body.get("spec")
    return spec if isinstance(spec, dict) else {}
