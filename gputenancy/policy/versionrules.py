"""Rules over the versions a cluster declares, from the per-minor data (gputenancy.versions.kueue).

Listed in gputenancy.policy.rules with the other model rules (`python pipeline.py rules`); an unsupported
version stops the run before anything version-specific is looked up, in every output format.
"""

from __future__ import annotations

from collections.abc import Iterator

from gputenancy.common.findings import Finding
from gputenancy.inputs.spec import Model
from gputenancy.policy.catalog import Catalog
from gputenancy.versions import kueue


def kueue_version_unsupported(model: Model, catalog: Catalog) -> Iterator[Finding]:
    """`kueue.version` names a Kueue release the pipeline has data for (feature gates, Configuration
    fields, release layout): the supported minors are listed in the message, and
    docs/adding-a-kueue-version.md is how another one is added.

    Passes: `kueue: {version: v0.19.2}`.
    Fails: `kueue: {version: v0.21.0}` (no data for v0.21).
    """
    for cluster in model.clusters.values():
        try:
            kueue.minor_of(cluster.kueue_version)
        except kueue.UnsupportedVersion as exc:
            yield cluster.document.origin("kueue", "version").finding("kueue-version-unsupported", str(exc))


def k8s_version_unsupported(model: Model, catalog: Catalog) -> Iterator[Finding]:
    """`kubernetesVersion` is within the range the cluster's Kueue version is supported on here: from
    1.34 (the first release serving resource.k8s.io/v1, which Kueue reads for DRA) to the newest
    release whose resource.k8s.io/v1 schema the validator ships (1.37).

    Passes: `kubernetesVersion: "1.36"` with Kueue v0.19.2.
    Fails: `kubernetesVersion: "1.38"` (no schema to validate DRA objects against).
    """
    for cluster in model.clusters.values():
        try:
            data = kueue.for_version(cluster.kueue_version)
        except kueue.UnsupportedVersion:
            continue
        if not data.supports_kubernetes(cluster.kubernetes_version):
            yield cluster.document.origin("kubernetesVersion").finding(
                "k8s-version-unsupported",
                f"Kubernetes {cluster.kubernetes_version} is not supported with Kueue {data.minor} "
                f"(supported: {data.kubernetes_range})",
            )
