"""Namespaces selected by label: a tenant's `namespaceSelector` (matchLabels) must select each of its own
namespaces (by the labels `namespaceLabels` says they carry) and no namespace of another tenant, and two
tenants' selectors must not both fit one namespace."""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from gputenancy.common.findings import Finding, Origin
from gputenancy.inputs.spec import Model, Tenant
from gputenancy.policy.catalog import Catalog

NAME_LABEL = "kubernetes.io/metadata.name"  # the API server labels every namespace with its name


def labels_of(tenant: Tenant, namespace: str) -> dict[str, str]:
    """The labels a namespace of `tenant` carries, as far as the inputs say."""
    return {**tenant.namespace_labels, NAME_LABEL: namespace}


def selects(selector: Mapping[str, str], labels: Mapping[str, str]) -> bool:
    return all(labels.get(k) == v for k, v in selector.items())


def _compatible(a: Mapping[str, str], b: Mapping[str, str]) -> bool:
    """Whether one namespace can carry both label sets (no key with two values)."""
    return all(b.get(k, v) == v for k, v in a.items())


def namespace_selector(model: Model, catalog: Catalog) -> Iterator[Finding]:
    """A tenant with `namespaceSelector.matchLabels` selects every namespace it lists (each carrying
    `namespaceLabels` and its name label), else its LocalQueues there admit nothing; its selector selects
    no namespace of another tenant on a shared cluster (that tenant's jobs could use its quota); and two
    tenants' selectors sharing a cluster cannot both fit one namespace (a key with different values).

    Passes: nlp: namespaceSelector {matchLabels: {team: nlp}}, namespaceLabels {team: nlp}; vision:
    {team: vision}.
    Fails: namespaceSelector {matchLabels: {team: nlp}} without namespaceLabels; nlp {team: nlp} and
    speech {dept: research} (a namespace labelled both is selected twice).
    """
    tenants = sorted(model.tenants, key=lambda t: t.name)
    for t in tenants:
        if t.namespace_selector is None:
            continue
        at = t.selector_origin or t.origin
        for ns, origin in t.namespaces:
            if not selects(t.namespace_selector, labels_of(t, ns)):
                yield _finding(
                    origin,
                    f"tenant {t.name!r}: namespace {ns!r} is not selected by its namespaceSelector "
                    f"{_shown(t.namespace_selector)} (its labels: {_shown(labels_of(t, ns))}): the LocalQueue "
                    "there admits nothing; set namespaceLabels to what the namespaces carry",
                )
        for other in tenants:
            if other is t or not _share_cluster(model, t, other):
                continue
            for ns, origin in other.namespaces:
                if selects(t.namespace_selector, labels_of(other, ns)):
                    yield _finding(
                        at,
                        f"tenant {t.name!r}: namespaceSelector {_shown(t.namespace_selector)} also selects "
                        f"namespace {ns!r} of tenant {other.name!r} ({origin.path}:{origin.line}): a LocalQueue "
                        f"there could use {t.name}'s quota",
                    )
            if (
                other.namespace_selector is not None
                and other.name > t.name
                and _compatible(t.namespace_selector, other.namespace_selector)
            ):
                yield _finding(
                    at,
                    f"tenants {t.name!r} and {other.name!r} select namespaces by labels one namespace can carry "
                    f"together ({_shown(t.namespace_selector)} and {_shown(other.namespace_selector)}): give "
                    "their selectors a key with different values",
                )


def _share_cluster(model: Model, a: Tenant, b: Tenant) -> bool:
    return any(a.placed_on(c) and b.placed_on(c) for c in model.clusters)


def _shown(labels: Mapping[str, str]) -> str:
    return "{" + ", ".join(f"{k}: {v}" for k, v in sorted(labels.items())) + "}"


def _finding(origin: Origin, message: str) -> Finding:
    return origin.finding("namespace-selector", message)
