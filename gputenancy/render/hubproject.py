"""What the hub needs besides the Applications: the platform's AppProject and the Argo CD health checks.

argocd/hub.yaml, applied once on the hub, holds three objects (deliver/appset.py):

- the AppProject `argocd.project`, in the hub's Argo CD namespace. Its destinations are exactly the
  clusters and namespaces the Applications use (each cluster's destination with the namespaces of its
  objects, its Kueue install's, and none for the cluster-scoped objects of `gputenancy-<cluster>`,
  whose destination has no namespace; the hub's own namespace for the Applications themselves), its
  source repositories exactly the deploy repository and each Kueue install's, and its resource
  whitelists exactly the kinds the pipeline delivers: what `generated/<cluster>/` holds and what
  Kueue's install brings (`INSTALL_KINDS`, with the Helm chart's optional parts when a cluster's values
  turn them on). Argo CD refuses anything else: a tenant's pull request cannot make the hub deploy
  another kind, or to another cluster or namespace, without this file changing in the same pull
  request. The AppProject is not rendered for the project `default`, which other Applications of
  the hub may use.
- the argocd-cm health checks (argocd/argocd-cm-health.yaml, built from argocd/resource_customizations):
  Kueue's objects, and Application, so that the app-of-apps waits in each sync wave until the
  Applications of the wave are Healthy (`kueue-<cluster>` in wave -3 before `gputenancy-<cluster>` in
  wave 0: the queues wait for Kueue).
- the app-of-apps Application (render/hub.py).

Everything here is read from the rendered trees and the model: nothing outside the repository.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gputenancy.common import fastyaml
from gputenancy.inputs.spec import ArgoCD
from gputenancy.policy.destinations import IN_CLUSTER_SERVER
from gputenancy.render import hub

GroupKind = tuple[str, str]

# Kueue's release manifests (config/default, what `install: manifests` syncs and the Helm chart renders
# by default), the same in every supported minor (tests/test_hubproject.py reads them from each
# release in ../shared): cluster-scoped kinds, namespaced kinds, and the namespaces other than the
# release's own (the visibility server's RoleBinding to extension-apiserver-authentication-reader).
INSTALL_CLUSTER_KINDS: tuple[GroupKind, ...] = (
    ("", "Namespace"),
    ("admissionregistration.k8s.io", "MutatingWebhookConfiguration"),
    ("admissionregistration.k8s.io", "ValidatingWebhookConfiguration"),
    ("apiextensions.k8s.io", "CustomResourceDefinition"),
    ("apiregistration.k8s.io", "APIService"),
    ("rbac.authorization.k8s.io", "ClusterRole"),
    ("rbac.authorization.k8s.io", "ClusterRoleBinding"),
)
INSTALL_NAMESPACED_KINDS: tuple[GroupKind, ...] = (
    ("", "ConfigMap"),
    ("", "Secret"),
    ("", "Service"),
    ("", "ServiceAccount"),
    ("apps", "Deployment"),
    ("rbac.authorization.k8s.io", "Role"),
    ("rbac.authorization.k8s.io", "RoleBinding"),
)
INSTALL_OTHER_NAMESPACES = ("kube-system",)

# The Helm chart's optional parts, by the value that turns each on: (cluster-scoped, namespaced).
HELM_OPTIONAL: Mapping[str, tuple[tuple[GroupKind, ...], tuple[GroupKind, ...]]] = {
    "enablePrometheus": ((), (("monitoring.coreos.com", "ServiceMonitor"),)),
    "enableCertManager": ((), (("cert-manager.io", "Certificate"), ("cert-manager.io", "Issuer"))),
    "enableVisibilityAPF": (
        (
            ("flowcontrol.apiserver.k8s.io", "FlowSchema"),
            ("flowcontrol.apiserver.k8s.io", "PriorityLevelConfiguration"),
        ),
        (),
    ),
    "enableKueueViz": ((), (("networking.k8s.io", "Ingress"),)),
}

APPLICATION: GroupKind = ("argoproj.io", "Application")


def _group(api_version: str) -> str:
    return api_version.rsplit("/", 1)[0] if "/" in api_version else ""


Destination = tuple[str, str, str]  # ("name" | "server", value, namespace)


class _Found:
    """What the trees deliver, gathered cluster by cluster."""

    def __init__(self, settings: ArgoCD) -> None:
        self.destinations: set[Destination] = {("server", IN_CLUSTER_SERVER, settings.namespace)}
        self.cluster_kinds: set[GroupKind] = set()
        self.namespaced_kinds: set[GroupKind] = {APPLICATION}
        self.repos = {settings.repo_url}
        self.settings = settings

    def cluster(self, tree: Mapping[str, bytes]) -> None:
        """One cluster's tree, laid out `<kind>/[<namespace>/]<name>.yaml` (assemble/output.py): the
        namespaces from the paths, each kind directory's group and kind from its first file, the hub's
        Applications read whole."""
        spaces: set[str] = set()
        seen: set[tuple[str, bool]] = set()
        applications = []
        for rel, data in sorted(tree.items()):
            parts = rel.split("/")
            if not rel.endswith((".yaml", ".yml")):
                continue
            if parts[0] == hub.HUB_DIR:
                applications.append(data)
                continue
            namespace = parts[1] if len(parts) == 3 else ""
            spaces |= {namespace} if namespace else set()
            if (parts[0], bool(namespace)) in seen:
                continue
            seen.add((parts[0], bool(namespace)))
            body = fastyaml.load(data.decode("utf-8"))
            if isinstance(body, dict):
                kind = (_group(str(body.get("apiVersion", ""))), str(body.get("kind", "")))
                (self.namespaced_kinds if namespace else self.cluster_kinds).add(kind)
        for data in applications:
            body = fastyaml.load(data.decode("utf-8"))
            if isinstance(body, dict) and (body.get("apiVersion"), body.get("kind")) == (
                "argoproj.io/v1alpha1",
                "Application",
            ):
                self.application(body, spaces)

    def application(self, body: Mapping[str, Any], spaces: set[str]) -> None:
        """An Application of the hub: where it lives, where it delivers, what its source brings."""
        meta, spec = body.get("metadata") or {}, body.get("spec") or {}
        self.destinations.add(
            ("server", IN_CLUSTER_SERVER, str(meta.get("namespace") or self.settings.namespace))
        )
        target = spec.get("destination") or {}
        key = "name" if target.get("name") else "server"
        source = spec.get("source") or {}
        self.repos.add(str(source.get("repoURL") or self.settings.repo_url))
        namespaces = {str(target.get("namespace") or "")}
        if str(meta.get("name", "")).startswith(hub.SPOKE_PREFIX):
            namespaces |= spaces
        else:  # the Kueue install
            namespaces |= set(INSTALL_OTHER_NAMESPACES)
            self.cluster_kinds |= set(INSTALL_CLUSTER_KINDS)
            self.namespaced_kinds |= set(INSTALL_NAMESPACED_KINDS)
            values = (source.get("helm") or {}).get("valuesObject") or {}
            for flag, (more_cluster, more_namespaced) in HELM_OPTIONAL.items():
                if values.get(flag) is True:
                    self.cluster_kinds |= set(more_cluster)
                    self.namespaced_kinds |= set(more_namespaced)
        self.destinations |= {(key, str(target.get(key, "")), ns) for ns in namespaces}


def project_spec(settings: ArgoCD, trees: Mapping[str, Mapping[str, bytes]]) -> dict[str, Any]:
    """The AppProject's spec from every cluster's rendered tree (its `_hub/` Applications included)."""
    found = _Found(settings)
    for name in sorted(trees):
        found.cluster(trees[name])
    return {
        "description": "GPU tenancy: the clusters, namespaces and kinds the pipeline delivers "
        "(rendered from base/platform.yaml and generated/; do not edit)",
        "sourceRepos": sorted(found.repos),
        "destinations": [{key: value, "namespace": ns} for key, value, ns in sorted(found.destinations)],
        "clusterResourceWhitelist": [{"group": g, "kind": k} for g, k in sorted(found.cluster_kinds)],
        "namespaceResourceWhitelist": [{"group": g, "kind": k} for g, k in sorted(found.namespaced_kinds)],
    }


def app_project(settings: ArgoCD, trees: Mapping[str, Mapping[str, bytes]]) -> dict[str, Any] | None:
    """The AppProject `argocd.project` in the hub's Argo CD namespace; None for `default`."""
    if settings.project == "default":
        return None
    return {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "AppProject",
        "metadata": {
            "name": settings.project,
            "namespace": settings.namespace,
            "labels": dict(hub.MANAGED_BY),
        },
        "spec": project_spec(settings, trees),
    }


def health_configmap(settings: ArgoCD, data: Mapping[str, str]) -> dict[str, Any] | None:
    """argocd-cm with the health checks only (`data`: argocd/argocd-cm-health.yaml's), applied
    server-side so that the hub's other argocd-cm keys stay as they are; None without checks."""
    if not data:
        return None
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": "argocd-cm",
            "namespace": settings.namespace,
            "labels": {"app.kubernetes.io/name": "argocd-cm", "app.kubernetes.io/part-of": "argocd"},
        },
        "data": dict(sorted(data.items())),
    }
