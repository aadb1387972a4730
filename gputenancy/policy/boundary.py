"""Rules about what a cluster punishes beyond a single object: cohort cycles and tenant claims on
system namespaces. Registered in `rules.RULES`; `cohort_cycles` and `reserved_namespaces` are also
usable on their own (checks of built objects reuse them).
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterator, Mapping

from gputenancy.common.findings import Finding
from gputenancy.inputs.spec import Cluster, Cohort, Model

BUILT_IN_RESERVED = ("kube-*", "kueue-system", "default")
"""Namespaces no tenant may claim on any cluster; each cluster adds its kueue.namespace and the Argo
CD namespace(s) (base/platform.yaml argocd.namespace, default argocd; kueue.helm/manifests.argocdNamespace)."""


def cohort_cycles(cohorts: Mapping[str, Cohort]) -> list[list[str]]:
    """Every cycle of the parent relation, each as its members in parent order starting from the
    smallest name (``["a", "b"]`` for a -> b -> a; ``["a"]`` for a cohort that is its own parent)."""
    cycles: list[list[str]] = []
    done: set[str] = set()
    for start in sorted(cohorts):
        path: list[str] = []
        on_path: dict[str, int] = {}
        name: str | None = start
        while name is not None and name in cohorts and name not in done and name not in on_path:
            on_path[name] = len(path)
            path.append(name)
            name = cohorts[name].parent
        if name is not None and name in on_path:
            cycle = path[on_path[name] :]
            first = cycle.index(min(cycle))
            cycles.append(cycle[first:] + cycle[:first])
        done.update(path)
    return cycles


def cohort_cycle(model: Model, catalog: object) -> Iterator[Finding]:
    """Cohorts' parents form a tree: a cohort that is its own parent, or a longer cycle, makes Kueue
    deactivate every ClusterQueue in the cycle (and below it).

    Passes: cohorts [{name: org}, {name: research, parent: org}].
    Fails: cohorts [{name: a, parent: b}, {name: b, parent: a}]; [{name: a, parent: a}].
    """
    cohorts = model.platform.cohorts
    for cycle in cohort_cycles(cohorts):
        shown = " -> ".join([*cycle, cycle[0]])
        yield cohorts[cycle[0]].origin.finding(
            "cohort-cycle",
            f"cohorts form a cycle ({shown}); Kueue deactivates every ClusterQueue in it: give one of"
            " them no parent or a parent outside the cycle",
        )


def reserved_patterns(model: Model, cluster: Cluster) -> dict[str, str]:
    """Reserved namespace patterns on `cluster`, each with why it is reserved."""
    platform = model.platform
    why: dict[str, str] = {p: "a system namespace" for p in BUILT_IN_RESERVED}
    why[cluster.kueue_namespace] = f"Kueue's namespace on cluster {cluster.name!r}"
    why[platform.argocd.namespace if platform.argocd is not None else "argocd"] = "Argo CD's namespace"
    install = cluster.helm or cluster.manifests
    if install is not None and install.argocd_namespace:
        why[install.argocd_namespace] = "Argo CD's namespace"
    for pattern in platform.reserved_namespaces:
        why.setdefault(pattern, "reserved by base/platform.yaml tenantNamespaces.reserved")
    return why


def reserved_namespaces(
    model: Model, cluster: Cluster, namespace: str, patterns: Mapping[str, str] | None = None
) -> str | None:
    """Why `namespace` may not be a tenant namespace on `cluster`, or None when it may; `patterns`:
    `reserved_patterns(model, cluster)`, when already worked out."""
    if namespace in model.platform.allowed_namespaces:
        return None
    for pattern, why in (reserved_patterns(model, cluster) if patterns is None else patterns).items():
        if fnmatch.fnmatchcase(namespace, pattern):
            return why
    return None


def namespace_reserved(model: Model, catalog: object) -> Iterator[Finding]:
    """Tenants do not claim system namespaces: `kube-*`, `kueue-system` (and each cluster's
    kueue.namespace), the Argo CD namespace, `default`, plus base/platform.yaml
    `tenantNamespaces.reserved`; `tenantNamespaces.allowed` exempts names from the built-in set.
    A LocalQueue there would hand a team the platform's own namespace.

    Passes: namespaces: [vision-train].
    Fails: namespaces: [kube-system]; namespaces: [argocd]; namespaces: [default].
    """
    clusters = sorted(model.clusters.items())
    patterns = {name: reserved_patterns(model, cluster) for name, cluster in clusters}
    for tenant in model.tenants:
        for namespace, origin in tenant.namespaces:
            for name, cluster in clusters:
                if not tenant.placed_on(name):
                    continue
                why = reserved_namespaces(model, cluster, namespace, patterns[name])
                if why is not None:
                    yield origin.finding(
                        "namespace-reserved",
                        f"namespace {namespace!r} is {why} and cannot belong to a tenant (cluster {name!r});"
                        " the platform can exempt it in base/platform.yaml tenantNamespaces.allowed",
                    )
                    break
