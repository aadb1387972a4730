"""The manager's side of a MultiKueue fleet: the AdmissionCheck (`kueue.x-k8s.io/multikueue`), the
MultiKueueConfig listing the workers in preference order, one MultiKueueCluster per worker naming its
kubeconfig Secret (never a kubeconfig), and the `multiKueue` section of the manager's Configuration.

Sync wave: with the flavors, before the ClusterQueues that name the check (a Job created while its
queue lacks the check is never managed by MultiKueue), which come before the LocalQueues.
"""

from __future__ import annotations

from typing import Any

import jinja2

from gputenancy.common import fastyaml
from gputenancy.common.findings import Origin
from gputenancy.common.objects import FieldPath, RenderedObject
from gputenancy.inputs.multikueue import CHECK_NAME, CONTROLLER, DISPATCHERS, secret_name
from gputenancy.inputs.spec import Cluster
from gputenancy.versions.multikueue import support

# On a manager ClusterQueue whose quotas Kueue keeps (quotaManagement: Automated): Argo CD ignores its
# spec.resourceGroups there (`gputenancy.deliver.appset`), or self-heal would fight Kueue.
QUOTA_LABEL = "gputenancy.io/quota-management"
AUTOMATED = "Automated"


def quota_labels(cluster: Cluster) -> dict[str, str]:
    """The labels of a tenant's ClusterQueue that say who keeps its quotas (none: the pipeline)."""
    mk = cluster.multikueue
    return {QUOTA_LABEL: AUTOMATED} if mk is not None and mk.quota_management == AUTOMATED else {}


# What Argo CD then needs (`with_automated_quota`): Kueue owns the whole spec.resourceGroups of those
# queues and takes it back within a second of a forced apply; Argo CD leaves it alone, at sync too.
AUTOMATED_QUOTA = {
    "group": "kueue.x-k8s.io",
    "kind": "ClusterQueue",
    "jqPathExpressions": [
        f'select(.metadata.labels["{QUOTA_LABEL}"] == "{AUTOMATED}") | .spec.resourceGroups'
    ],
}
RESPECT_IGNORE = "RespectIgnoreDifferences=true"


def with_automated_quota(cluster: Cluster, app: dict[str, Any]) -> dict[str, Any]:
    """The Application syncing `cluster`'s objects, ignoring the quotas Kueue keeps on a manager with
    quotaManagement: Automated (unchanged for every other cluster)."""
    if not quota_labels(cluster):
        return app
    spec = app["spec"]
    spec["ignoreDifferences"] = [*spec.get("ignoreDifferences", []), dict(AUTOMATED_QUOTA)]
    spec["syncPolicy"]["syncOptions"] = [*spec["syncPolicy"]["syncOptions"], RESPECT_IGNORE]
    return app


def admission_checks(cluster: Cluster) -> list[dict[str, Any]]:
    """`admissionChecksStrategy.admissionChecks` of a tenant's ClusterQueue: the one MultiKueue check on
    every flavor on a manager, none elsewhere."""
    return [{"name": CHECK_NAME}] if cluster.multikueue is not None else []


def manager_objects(
    cluster: Cluster, meta: dict[str, Any], templates: jinja2.Environment
) -> list[RenderedObject]:
    """AdmissionCheck, MultiKueueConfig and MultiKueueClusters of a manager (none for other clusters),
    from the renderer's `templates` (`render.manifests.environment`)."""
    mk = cluster.multikueue
    if mk is None:
        return []
    text = templates.get_template("multikueue.yaml.j2").render(
        check=CHECK_NAME,
        controller=CONTROLLER,
        config=mk.config_name,
        workers=list(mk.worker_names),
        secrets=[secret_name(w) for w in mk.worker_names],
        quota_management=mk.quota_management,
        **meta,
    )
    out = []
    for doc in text.split("\n---\n"):
        body = fastyaml.load(doc)
        kind = body["kind"]
        origins: dict[FieldPath, Origin] = {}
        if kind == "MultiKueueCluster":
            where = dict(mk.workers)[body["metadata"]["name"]]
        elif kind == "MultiKueueConfig":
            where = mk.at("workers")
            origins[("spec", "quotaManagement")] = mk.at("quotaManagement")
        else:
            where = mk.origin
        out.append(RenderedObject(cluster.name, body, where, origins))
    return out


JOB_VERBS = ["create", "delete", "get", "list", "watch"]
KUEUE_RULES = [
    {
        "apiGroups": ["kueue.x-k8s.io"],
        "resources": ["workloads"],
        "verbs": ["create", "delete", "get", "list", "watch", "update", "patch"],
    },
    {"apiGroups": ["kueue.x-k8s.io"], "resources": ["workloads/status"], "verbs": ["get", "patch", "update"]},
    {
        "apiGroups": ["kueue.x-k8s.io"],
        "resources": ["clusterqueues", "localqueues"],
        "verbs": ["get", "list", "watch"],
    },
]


def credential_name(manager: str) -> str:
    """The ServiceAccount (and ClusterRole, ClusterRoleBinding) on a worker whose token `manager` uses."""
    return f"multikueue-{manager}"


def worker_rules(frameworks: list[str]) -> list[dict[str, Any]]:
    """What a manager's credential may do on a worker: the job kinds it dispatches (the manager's
    `integrations.frameworks` that name an API group: `group/kind`), their status, and Workloads,
    ClusterQueues and LocalQueues (upstream `create-multikueue-kubeconfig.sh`)."""
    out: list[dict[str, Any]] = []
    for framework in frameworks:
        group, _, kind = framework.partition("/")
        if not kind or "/" in kind:
            continue  # pod, deployment, ...: no dispatch adapter
        plural = f"{kind.lower()}s"
        verbs = [*JOB_VERBS, "update", "patch"] if plural == "rayclusters" else list(JOB_VERBS)  # v0.19
        out.append({"apiGroups": [group], "resources": [plural], "verbs": verbs})
        out.append({"apiGroups": [group], "resources": [f"{plural}/status"], "verbs": ["get"]})
    return out + [dict(r) for r in KUEUE_RULES]


def worker_objects(
    worker: Cluster,
    manager: Cluster,
    frameworks: list[str],
    meta: dict[str, Any],
    templates: jinja2.Environment,
) -> list[RenderedObject]:
    """On a worker of `manager` (whose Configuration lists `frameworks`): the ServiceAccount whose token
    goes into the manager's kubeconfig Secret, and its RBAC. The token itself never goes to Git."""
    assert manager.multikueue is not None
    text = templates.get_template("multikueue-worker.yaml.j2").render(
        name=credential_name(manager.name),
        namespace=worker.kueue_namespace,
        rules=worker_rules(frameworks),
        **meta,
    )
    where = dict(manager.multikueue.workers)[worker.name]
    return [RenderedObject(worker.name, fastyaml.load(doc), where) for doc in text.split("\n---\n")]


def config_section(cluster: Cluster) -> dict[str, Any] | None:
    """The `multiKueue` section of a manager's Configuration (None for other clusters). The incremental
    dispatcher's step size exists from Kueue v0.19 (`fleet-version-fields` refuses it before)."""
    mk = cluster.multikueue
    if mk is None:
        return None
    section: dict[str, Any] = {
        "gcInterval": mk.gc_interval,
        "origin": mk.origin_label,
        "workerLostTimeout": mk.worker_lost_timeout,
        "dispatcherName": DISPATCHERS[mk.dispatcher],
    }
    if mk.step_size is not None and support(cluster.kueue_version).incremental_step_size:
        section["incrementalDispatcherConfig"] = {"stepSize": mk.step_size}
    return section
