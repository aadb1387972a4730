"""`kueue.manifests` of cluster.yaml: the Argo CD Application that installs Kueue from its release
manifests (`install: manifests`). Defaults come from the cluster's Kueue version data."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from gputenancy.common.findings import Origin
from gputenancy.inputs.document import Document
from gputenancy.inputs.records import ManifestsInstall
from gputenancy.versions import kueue as kueue_versions


def manifests_install(
    doc: Document, kueue: Mapping[str, Any], add: Callable[[Origin, str, str], None]
) -> ManifestsInstall | None:
    """The install settings of an `install: manifests` cluster (None for helm, or when the Kueue version
    is not supported: that is reported by the kueue-version-unsupported rule)."""
    block = kueue.get("manifests", {})
    if kueue["install"] != "manifests":
        if "manifests" in kueue:
            add(
                doc.key_origin("kueue", "manifests"),
                "cluster-install",
                "kueue.manifests is only used with kueue.install: manifests",
            )
        return None
    try:
        release = kueue_versions.for_version("v" + str(kueue["version"]).lstrip("v")).release
    except kueue_versions.UnsupportedVersion:
        return None
    namespace = kueue.get("namespace", release.namespace)
    if namespace != release.namespace:
        add(
            doc.origin("kueue", "namespace"),
            "cluster-install",
            f"Kueue's release manifests install into {release.namespace!r}, not {namespace!r}: "
            "remove kueue.namespace, or install Kueue with helm",
        )
    return ManifestsInstall(
        repo_url=block.get("repoURL", release.repository),
        image=block.get("image", release.image_new_name),
        project=block.get("project"),
        argocd_namespace=block.get("argocdNamespace"),
        destination_server=block.get("destinationServer"),
    )
