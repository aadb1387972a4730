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
from decimal import Decimal
from typing import Any

from gputenancy.caching import memo
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

WHOLE = ("built-kueue-config", "built-kueue-install", "device-inventory", "built-topology-reference")
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
    found: tuple[memo.Memo[memo.BuiltPart], memo.Memo[memo.BuiltFacts]],
    *,
    kustomized: bool,
) -> list[Finding]:
    """The findings of `postbuild.check` on `platform` and the parts' objects (in that order), each
    tenant's part from `found` when it was checked before against the same context."""
    results, known = found
    facts = [_facts(tenant, key, objects, known) for tenant, key, objects in parts]
    if not separable(platform, facts):
        known.save()
        return _whole(model, cluster, catalog, platform, parts, kustomized=kustomized)
    base = build_view(model, cluster, catalog, platform, kustomized=kustomized)
    around = _around(base, facts)
    shared = postbuild.run(base, skip=ADDED_UP)  # no ClusterQueue among the platform objects
    described = memo.platform_digest(platform)
    done: list[memo.BuiltPart] = []
    for (_, key, objects), f in zip(parts, facts, strict=True):
        part_key = memo.built_part_key(key, context(around, described, f)) if key else None
        part = results.lookup(part_key) if part_key else None
        if part is None:
            part = _part(part_view(base, around, objects), shared)
            if part_key:
                results.store(part_key, part)
        done.append(part)
    results.save()
    if any(r.capacity_changed for r in done):
        return _whole(model, cluster, catalog, platform, parts, kustomized=kustomized)
    total = shared.union(*(r.findings for r in done))
    if around.inventory is None:
        total.update(inventory.devices_note(base, [n for f in facts for n in f.selector_claims]))
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


def _facts(
    tenant: Tenant, key: str, objects: Sequence[RenderedObject], known: memo.Memo[memo.BuiltFacts]
) -> memo.BuiltFacts:
    found = known.lookup(key) if key else None  # under the tenant's entry key: it fixes the objects
    if found is None:
        found = facts_of(tenant, objects)
        if key:
            known.store(key, found)
    return found


def facts_of(tenant: Tenant, objects: Sequence[RenderedObject]) -> memo.BuiltFacts:
    """What `separable`, the cohort pool and `context` need of a tenant's built objects."""
    separate = True
    queues: list[tuple[str, memo.Lent]] = []
    local_queues: list[tuple[str, str | None]] = []
    claim_namespaces: list[str] = []
    selector_claims: list[str] = []
    for o in objects:
        kind = _kind(o)
        labels = (o.body.get("metadata") or {}).get("labels")
        if (
            kind not in _PART_KINDS
            or not isinstance(labels, dict)
            or labels.get(TENANT_LABEL) != tenant.name
            or (o.origin.path != tenant.path and not is_fallback(o.origin))
        ):
            separate = False
        if kind == (KUEUE, "ClusterQueue"):
            cohort, amounts = admissible.lent(_spec(o))
            queues.append((_name(o), (cohort, tuple((f, r, str(a)) for f, r, a in amounts))))
        elif kind == (KUEUE, "LocalQueue"):
            target = _spec(o).get("clusterQueue")
            local_queues.append((_namespace(o), target if isinstance(target, str) else None))
        elif kind == (DRA, "ResourceClaimTemplate"):
            claim_namespaces.append(_namespace(o))
            if any(inventory.requests_of(o.body)):
                selector_claims.append(_name(o))
    return memo.BuiltFacts(
        separate, tuple(queues), tuple(local_queues), tuple(claim_namespaces), tuple(selector_claims)
    )


def _around(base: View, facts: Sequence[memo.BuiltFacts]) -> Around:
    lent = (
        (cohort, [(f, r, Decimal(a)) for f, r, a in amounts])
        for tenant in facts
        for _, (cohort, amounts) in tenant.queues
    )
    return Around(
        {t.name: t for t in base.model.tenants_on(base.cluster.name)},
        owners(base.model, base.cluster),
        kustomizations(base.model, base.cluster, kustomized=base.kustomized),
        kueue_configuration(base),
        admissible.Pool(base.of(KUEUE, "Cohort"), lent),
        inventory.inventory(base),
    )


def _part(view: View, shared: set[Finding]) -> memo.BuiltPart:
    findings = postbuild.run(view, skip=(*WHOLE, *ADDED_UP)) - shared
    return memo.BuiltPart(tuple(sorted(findings)), builtlimits.capacity_changed(view))


def context(around: Around, platform: str, facts: memo.BuiltFacts) -> str:
    """What a tenant's part reads from the rest of the cluster: the platform objects (`platform`, their
    digest), what its ClusterQueues may borrow in their cohort trees and the owner of each namespace
    of its LocalQueues."""
    pool: admissible.Pool = around.pool
    trees = sorted({pool.root(cohort) for _, (cohort, _) in facts.queues if cohort})
    owned = [
        (ns, t.name if (t := around.owners.get(ns)) is not None else "")
        for ns in sorted({ns for ns, _ in facts.local_queues})
    ]
    return "\n".join([platform, *(pool.described(t) for t in trees), repr(owned)])


def separable(platform: Sequence[RenderedObject], facts: Sequence[memo.BuiltFacts]) -> bool:
    """Whether each tenant's objects refer only to themselves and the platform objects (module docstring)."""
    if any(_kind(o) in _PART_KINDS for o in platform) or not all(f.separate for f in facts):
        return False
    queue_part = {name: i for i, f in enumerate(facts) for name, _ in f.queues}
    namespace_part: dict[str, int] = {}  # namespace of a LocalQueue -> part
    for i, f in enumerate(facts):
        for ns, _ in f.local_queues:
            if namespace_part.setdefault(ns, i) != i:
                return False
    for i, f in enumerate(facts):
        if any(target is not None and queue_part.get(target, i) != i for _, target in f.local_queues):
            return False
        if any(namespace_part.get(ns, i) != i for ns in f.claim_namespaces):
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
