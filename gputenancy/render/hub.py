"""What the hub Argo CD syncs: per cluster, the Applications that deliver to it, and the app-of-apps.

One Argo CD (the hub) delivers to every cluster (the spokes). Each cluster's tree holds two parts:

    generated/<cluster>/_hub/application/<ns>/gputenancy-<cluster>.yaml   the spoke's objects
    generated/<cluster>/_hub/application/<ns>/kueue-<cluster>.yaml        Kueue + its Configuration
    generated/<cluster>/<kind>/...                                        what the cluster receives

Everything under `_hub/` is an Argo CD object: it is synced by the app-of-apps Application
(`root_application`, applied once on the hub from argocd/hub.yaml) into the hub's Argo CD namespace
(`argocd.namespace` of base/platform.yaml), and each of these Applications names the cluster as its
destination. `gputenancy-<cluster>` syncs the rest of the cluster's directory (`_hub/` excluded). A
cluster whose Argo CD runs in it (`server: https://kubernetes.default.svc`) is the same case with the
in-cluster destination.

Argo CD matches `directory.include`/`exclude` against each file's path relative to the Application's
path with a glob in which `*` also matches `/`; `_hub` can be neither a kind directory nor a namespace
(an underscore is not allowed in either), so the two globs split every tree exactly.

The Applications carry no `resources-finalizer.argocd.argoproj.io`: when a cluster directory disappears
(a cluster removed or renamed), the app-of-apps deletes its Applications and nothing on the cluster.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gputenancy.inputs.spec import ArgoCD, Cluster, Platform
from gputenancy.policy.destinations import IN_CLUSTER_SERVER, destination

HUB_DIR = "_hub"
ROOT_NAME = "gputenancy"
SPOKE_PREFIX = "gputenancy-"
CLUSTER_LABEL = "gputenancy.io/cluster"
MANAGED_BY = {"app.kubernetes.io/managed-by": "gputenancy"}
DEFAULT_NAMESPACE = "argocd"
HUB_GLOB = f"*/{HUB_DIR}/*"  # relative to argocd.path: every cluster's _hub/ files
SPOKE_EXCLUDE = f"{HUB_DIR}/*"  # relative to argocd.path/<cluster>

SYNC_OPTIONS = (
    # Server-side apply: fields Kueue's webhooks and controllers own stay theirs.
    "ServerSideApply=true",
    # Tenant namespaces belong to their teams; a LocalQueue in a missing namespace should fail the sync.
    "CreateNamespace=false",
    # Do not re-apply unchanged objects: a held queue (Suspended) would otherwise stall later waves.
    "ApplyOutOfSyncOnly=true",
    # Delete removed objects after every wave has applied (a ClusterQueue after its LocalQueues moved).
    "PruneLast=true",
)

# Kueue's webhook adds the `kueue.x-k8s.io/resource-in-use` finalizer to ClusterQueues and
# ResourceFlavors; every defaulted spec field is rendered explicitly, so nothing else drifts.
IGNORE_DIFFERENCES = (
    {"group": "kueue.x-k8s.io", "kind": "ClusterQueue", "jsonPointers": ["/metadata/finalizers"]},
    {"group": "kueue.x-k8s.io", "kind": "ResourceFlavor", "jsonPointers": ["/metadata/finalizers"]},
)

# Kueue's webhooks fail closed while kueue-controller-manager restarts after a Configuration change:
# queue writes are retried instead of failing the sync.
RETRY = {"limit": 5, "backoff": {"duration": "10s", "factor": 2, "maxDuration": "3m"}}


def application(
    name: str,
    namespace: str,
    meta: Mapping[str, Any],
    *,
    project: str,
    source: dict[str, Any],
    destination: dict[str, str],
    sync_options: list[str],
    **more: Any,
) -> dict[str, Any]:
    """An Argo CD Application of the hub: in its Argo CD `namespace`, syncing automatically with
    prune and self-heal, without the resources finalizer (deleting it deletes nothing it synced);
    `more` adds spec fields (`retry` goes into syncPolicy)."""
    sync: dict[str, Any] = {"automated": {"prune": True, "selfHeal": True}, "syncOptions": sync_options}
    if "retry" in more:
        sync["retry"] = more.pop("retry")
    return {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "Application",
        "metadata": {"name": name, "namespace": namespace, **meta},
        "spec": {
            "project": project,
            "source": source,
            "destination": destination,
            "syncPolicy": sync,
            **more,
        },
    }


def is_hub_object(body: Mapping[str, Any]) -> bool:
    """Argo CD's own objects belong to the hub, whatever cluster they deliver to."""
    return str(body.get("apiVersion", "")).startswith("argoproj.io/")


def namespace(platform: Platform, cluster: Cluster | None = None) -> str:
    """The hub's Argo CD namespace, where every Application of `cluster` is synced."""
    install = (cluster.helm or cluster.manifests) if cluster is not None else None
    if install is not None and install.argocd_namespace:
        return install.argocd_namespace
    return platform.argocd.namespace if platform.argocd is not None else DEFAULT_NAMESPACE


def project(platform: Platform, cluster: Cluster) -> str:
    """The Argo CD project of `cluster`'s install Application: its explicit `kueue.<install>.project`,
    else the platform's `argocd.project` (the project of every other Application), else `default`."""
    install = cluster.helm or cluster.manifests
    if install is not None and install.project:
        return install.project
    return platform.argocd.project if platform.argocd is not None else "default"


def spoke_application(
    settings: ArgoCD, cluster: Cluster, meta: dict[str, Any], namespace: str
) -> dict[str, Any]:
    """`gputenancy-<cluster>`: the cluster's directory (but `_hub/`), synced to the cluster; in the
    hub's Argo CD `namespace`, beside `kueue-<cluster>`."""
    return application(
        f"{SPOKE_PREFIX}{cluster.name}",
        namespace,
        meta,
        project=settings.project,
        source={
            "repoURL": settings.repo_url,
            "targetRevision": settings.target_revision,
            "path": f"{settings.path}/{cluster.name}",
            "directory": {"recurse": True, "exclude": SPOKE_EXCLUDE},
        },
        destination=destination(cluster),
        sync_options=list(SYNC_OPTIONS),
        retry=RETRY,
        ignoreDifferences=[dict(d) for d in IGNORE_DIFFERENCES],
    )


def root_application(settings: ArgoCD) -> dict[str, Any]:
    """`gputenancy`, the app-of-apps: every cluster's `_hub/` from the deploy branch, into the hub's
    Argo CD namespace. Pruning removes the Applications of a cluster directory that is gone (their
    objects stay on the cluster: the Applications have no resources finalizer)."""
    return application(
        ROOT_NAME,
        settings.namespace,
        {"labels": dict(MANAGED_BY)},
        project=settings.project,
        source={
            "repoURL": settings.repo_url,
            "targetRevision": settings.target_revision,
            "path": settings.path,
            "directory": {"recurse": True, "include": HUB_GLOB},
        },
        destination={"server": IN_CLUSTER_SERVER, "namespace": settings.namespace},
        sync_options=["ServerSideApply=true", "CreateNamespace=false"],
    )
