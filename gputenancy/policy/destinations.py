"""Each cluster's Argo CD destination, and the rules over them: one hub Argo CD delivers to every cluster.

A cluster is reached through `argocd:` in its cluster.yaml: `server:` (an API server URL) or `name:`
(the name the cluster is registered under in the hub); without it, the cluster registered under the
cluster's own name. The hub's own cluster is `server: https://kubernetes.default.svc` (Argo CD also
names it `in-cluster`). gputenancy.render.hub renders the Applications from `destination`.

Listed in gputenancy.policy.rules with the other model rules (`python pipeline.py rules`).
"""

from __future__ import annotations

from collections.abc import Iterator

from gputenancy.common.findings import Finding, Origin
from gputenancy.common.hints import closest
from gputenancy.inputs.spec import Cluster, Model
from gputenancy.policy.catalog import Catalog

IN_CLUSTER_SERVER = "https://kubernetes.default.svc"
IN_CLUSTER_NAME = "in-cluster"  # the name Argo CD gives the cluster it runs in


def destination(cluster: Cluster) -> dict[str, str]:
    """The cluster's Argo CD destination: `{"server": url}` or `{"name": registered name}`; without
    `argocd:` in its cluster.yaml, the Argo CD cluster named like it."""
    dest = cluster.destination
    if dest is not None and dest.server:
        return {"server": dest.server}
    return {"name": dest.name if dest is not None and dest.name else cluster.name}


def install_destination(cluster: Cluster) -> dict[str, str]:
    """Where the Application installing Kueue goes: the cluster's destination, unless the install
    block names a server itself (`destinationServer`, held to it by argocd-destination-split)."""
    install = cluster.helm or cluster.manifests
    server = install.destination_server if install is not None else None
    return {"server": server} if server else destination(cluster)


def target(dest: dict[str, str]) -> tuple[str, str]:
    """A destination compared as Argo CD resolves it, as far as the inputs tell: `in-cluster` is the
    in-cluster server; a trailing slash does not make another server."""
    if dest.get("name") == IN_CLUSTER_NAME:
        return ("server", IN_CLUSTER_SERVER)
    if "server" in dest:
        return ("server", dest["server"].rstrip("/"))
    return ("name", dest.get("name", ""))


def shown(dest: dict[str, str]) -> str:
    """`server https://…` or `name prod`, as messages and the plan print a destination."""
    kind, value = next(iter(dest.items()))
    return f"{kind} {value}"


def _where(cluster: Cluster) -> Origin:
    """The `argocd:` block of the cluster's file, or its name when it has none."""
    if cluster.destination is not None:
        return cluster.document.key_origin("argocd")
    return cluster.origin


def argocd_destination_duplicate(model: Model, catalog: Catalog) -> Iterator[Finding]:
    """No two clusters share an Argo CD destination: two Applications would own the same Kueue
    install, ResourceFlavors and WorkloadPriorityClasses on one cluster and undo each other's syncs
    (and each prune what the other added). A copied overlay keeps its `argocd:` block: give the new
    cluster its own. `name: in-cluster` and `server: https://kubernetes.default.svc` are the same.

    Passes: lab `argocd: {server: https://kubernetes.default.svc}`, prod `argocd: {name: prod}`.
    Fails: staging copied from lab with `argocd: {server: https://kubernetes.default.svc}` unchanged.
    """
    seen: dict[tuple[str, str], str] = {}
    for name, cluster in sorted(model.clusters.items()):
        dest = destination(cluster)
        first = seen.setdefault(target(dest), name)
        if first != name:
            yield _where(cluster).finding(
                "argocd-destination-duplicate",
                f"cluster {name!r} has the same Argo CD destination as cluster {first!r} ({shown(dest)}): "
                "two Applications would own one cluster's Kueue install and objects; set `argocd:` in "
                f"overlays/{name}/cluster.yaml to the cluster as registered in Argo CD",
            )


def argocd_destination_unknown(model: Model, catalog: Catalog) -> Iterator[Finding]:
    """A destination names an API server URL (`server:`) or a cluster registered in the hub Argo CD
    (`name:`). A URL in `name:` names no registered cluster; with `argocd.clusters` in
    base/platform.yaml (the names `argocd cluster list` shows), every name, the default one (the
    cluster's own name) included, must be one of them or `in-cluster`.

    Passes: `argocd: {name: prod}` with `clusters: [prod]`; `argocd: {server: https://10.0.0.1:6443}`.
    Fails: `argocd: {name: https://10.0.0.1:6443}`; cluster edge without `argocd:` and `clusters: [prod]`.
    """
    settings = model.platform.argocd
    registered = settings.clusters if settings is not None else None
    for name, cluster in sorted(model.clusters.items()):
        dest = destination(cluster)
        value = dest.get("name")
        if value is None:
            continue
        if "://" in value:
            yield _where(cluster).finding(
                "argocd-destination-unknown",
                f"cluster {name!r}: `argocd.name` {value!r} is a URL, not a cluster name registered in Argo CD; "
                f"write `argocd: {{server: {value}}}`",
            )
        elif registered is not None and value != IN_CLUSTER_NAME and value not in registered:
            # a typo of a registered name no other cluster is delivered to; a new cluster's own name
            # (the default) is no typo, nor one that only resembles a registered name
            taken = {destination(c).get("name") for n, c in model.clusters.items() if n != name}
            close = closest(value, [r for r in registered if r not in taken]) if cluster.destination else None
            default = (
                "" if cluster.destination is not None else " (the default: no `argocd:` in its cluster.yaml)"
            )
            fix = (
                f"; did you mean {close!r}?"
                if close
                else f"; a new cluster: register it in the hub (`argocd cluster add <context> --name {value}`) "
                f"and add {value!r} to argocd.clusters"
            )
            yield _where(cluster).finding(
                "argocd-destination-unknown",
                f"cluster {name!r}: Argo CD destination name {value!r}{default} is not among the clusters "
                f"registered in the hub (`argocd.clusters` in base/platform.yaml: "
                f"{', '.join(registered) or 'none'}){fix}",
            )


def argocd_destination_split(model: Model, catalog: Catalog) -> Iterator[Finding]:
    """The Application installing Kueue goes where the cluster's objects go: a `destinationServer` in
    `kueue.manifests` or `kueue.helm` (kept for older files) must be the cluster's destination,
    otherwise Kueue and its Configuration would be installed on another cluster than its queues.

    Passes: no `destinationServer` (the cluster's destination is used).
    Fails: `kueue.manifests.destinationServer: https://kubernetes.default.svc` with `argocd: {name: prod}`.
    """
    for name, cluster in sorted(model.clusters.items()):
        install, dest = install_destination(cluster), destination(cluster)
        if target(install) != target(dest):
            key = "helm" if cluster.helm is not None else "manifests"
            yield cluster.document.origin("kueue", key, "destinationServer").finding(
                "argocd-destination-split",
                f"cluster {name!r}: Kueue would be installed at {shown(install)} but the cluster's objects "
                f"go to {shown(dest)}; remove kueue.{key}.destinationServer (or set `argocd:` to it)",
            )
