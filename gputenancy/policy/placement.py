"""Policy rules on tenants and where they are placed: one file per tenant, one tenant per namespace,
known clusters, a budget on every cluster a tenant is placed on."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator

from gputenancy.common.findings import Finding, Origin
from gputenancy.common.hints import closest
from gputenancy.inputs.spec import Model, Tenant
from gputenancy.policy.catalog import Catalog, err


def tenant_duplicate(model: Model, catalog: Catalog) -> Iterator[Finding]:
    """Each tenant is declared by exactly one file.

    Passes: tenants/a.yaml (name: a), tenants/b.yaml (name: b).
    Fails: tenants/a.yaml and tenants/a.yml both declaring tenant a.
    """
    seen: dict[str, Tenant] = {}
    for t in model.tenants:
        if t.name in seen:
            first = seen[t.name]
            yield err(
                t.origin,
                "tenant-duplicate",
                f"tenant {t.name!r} is already declared in {first.path}:{first.origin.line}",
            )
        seen.setdefault(t.name, t)


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
            yield err(
                origin,
                "namespace-owner",
                f"namespace {ns!r} is also claimed by tenant {others}; a namespace belongs to one tenant",
            )


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
            yield err(
                first,
                "cluster-unknown",
                f"{what} of tenant {t.name!r} names cluster {name!r}, which has no overlay (known: "
                f"{', '.join(known)}){hint}" + (f"; also named by {also}" if also else ""),
            )


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
                yield err(
                    t.origin,
                    "tenant-no-budget",
                    f"tenant {t.name!r} is placed on cluster {name!r} but has no budget there (add budgets.clusters.{name} or budgets.default)",
                )
