"""The Argo CD Application that owns a Kueue install from its release manifests (`install: manifests`).

Its source is Kueue's repository at the declared tag, in the kustomize directory the release
manifests.yaml is built from (config/default), with the manager image set to the release's; the merged
Configuration and the restart trigger are kustomize patches in the Application. So the install, the
manager ConfigMap and the Deployment's pod template have one owner: applying Kueue's manifests again
(an upgrade, a repair) is a sync of this Application, and the Configuration comes with it.

Nothing is fetched at render: Argo CD reads Kueue's repository; the names patched (the ConfigMap and
Deployment inside config/default, before its `kueue-` name prefix) come from the version data.
"""

from __future__ import annotations

from typing import Any

import yaml

from gputenancy.inputs.spec import Cluster
from gputenancy.policy import destinations
from gputenancy.render import hub, kueueconfig
from gputenancy.versions import kueue as kueue_versions

CONFIG_PATCH = 0  # index of the Configuration patch in spec.source.kustomize.patches
ROLLOUT_PATCH = 1


class _Dumper(yaml.SafeDumper):
    pass


def _str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _str)


def _yaml(body: dict[str, Any]) -> str:
    text: str = yaml.dump(body, Dumper=_Dumper, sort_keys=False, default_flow_style=False, width=1000)
    return text


def patches(cluster: Cluster, config: kueueconfig.KueueConfig) -> list[dict[str, Any]]:
    """The two kustomize patches: the manager Configuration, and the checksum that rolls the pods."""
    release = kueue_versions.for_version(cluster.kueue_version).release
    # `data` before `metadata`: kustomize drops the final line break of a block scalar that ends the
    # patch, and the Configuration must reach the ConfigMap byte for byte (its checksum is below).
    configmap = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "data": {release.configmap_key: config.text},
        "metadata": {"name": release.configmap_name},
    }
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": release.deployment_name},
        "spec": {
            "template": {"metadata": {"annotations": {kueueconfig.CHECKSUM_ANNOTATION: config.checksum}}}
        },
    }
    return [
        {
            "target": {"version": "v1", "kind": "ConfigMap", "name": release.configmap_name},
            "patch": _yaml(configmap),
        },
        {
            "target": {
                "group": "apps",
                "version": "v1",
                "kind": "Deployment",
                "name": release.deployment_name,
            },
            "patch": _yaml(deployment),
        },
    ]


def application(
    cluster: Cluster, config: kueueconfig.KueueConfig, meta: dict[str, Any], namespace: str, project: str
) -> dict[str, Any]:
    """The Application object (`meta`: labels and annotations), in the hub's Argo CD `namespace` and
    destined for the cluster (render/hub.py)."""
    assert cluster.manifests is not None
    install = cluster.manifests
    release = kueue_versions.for_version(cluster.kueue_version).release
    return hub.application(
        f"kueue-{cluster.name}",
        namespace,
        meta,
        project=project,
        source={
            "repoURL": install.repo_url,
            "targetRevision": cluster.kueue_version,
            "path": release.kustomize_path,
            "kustomize": {
                "images": [f"{release.image_name}={install.image}:{cluster.kueue_version}"],
                "patches": patches(cluster, config),
            },
        },
        destination={**destinations.install_destination(cluster), "namespace": release.namespace},
        # The CRDs are too large for client-side apply's last-applied annotation; the release
        # manifests create the namespace themselves.
        sync_options=["ServerSideApply=true", "CreateNamespace=false"],
    )
