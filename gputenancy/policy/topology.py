"""Topology Aware Scheduling on the inputs: each cluster's Topology objects (`topologies[]` in
cluster.yaml) and the flavors bound to them (`capacity[].topologyName`), held to what Kueue needs for a
TAS ClusterQueue to be active (pkg/cache/scheduler/clusterqueue.go: a Topology for every TAS flavor),
its CRDs (the ResourceFlavor and Topology CEL rules) and
its feature gate per version."""

from __future__ import annotations

from collections.abc import Iterator

from gputenancy.common.findings import Finding
from gputenancy.common.hints import did_you_mean
from gputenancy.inputs.spec import Model
from gputenancy.policy.catalog import Catalog, err
from gputenancy.versions import gates

HOSTNAME = "kubernetes.io/hostname"
GATE = "TopologyAwareScheduling"


def topology(model: Model, catalog: Catalog) -> Iterator[Finding]:
    """A flavor bound to a topology on a cluster (`capacity[].topologyName`) names a Topology of that
    cluster (`topologies[]`; Kueue: "there is no Topology ... for TAS flavor", the queues stay inactive),
    has at least one nodeLabel in base/platform.yaml (ResourceFlavor CEL: "at least one nodeLabel is
    required when topology is set"), and runs where the TopologyAwareScheduling gate is on for the cluster's
    Kueue version. Each Topology has a unique name and unique levels, kubernetes.io/hostname only as
    the last one.

    Passes: topologies [{name: nvlink, levels: [{nodeLabel: nvidia.com/gpu.clique},
    {nodeLabel: kubernetes.io/hostname}]}], capacity [{flavor: h100, topologyName: nvlink}].
    Fails: topologyName: nvlinc; levels [{nodeLabel: kubernetes.io/hostname}, {nodeLabel: rack}];
    featureGates: {TopologyAwareScheduling: false} with a TAS flavor.
    """
    for cluster in model.clusters.values():
        defined: dict[str, object] = {}
        for t in cluster.topologies:
            if t.name in defined:
                yield err(
                    t.origin, "topology", f"topology {t.name!r} is defined twice on cluster {cluster.name!r}"
                )
            defined.setdefault(t.name, t)
            if len(set(t.levels)) != len(t.levels):
                yield err(t.origin, "topology", f"topology {t.name!r}: levels must be unique (Kueue's CRD)")
            if HOSTNAME in t.levels[:-1]:
                yield err(
                    t.origin,
                    "topology",
                    f"topology {t.name!r}: {HOSTNAME} can only be the last (narrowest) level (Kueue's CRD)",
                )
        try:
            enabled = gates.effective_gates(cluster.kueue_version, dict(cluster.feature_gates)).get(
                GATE, False
            )
        except ValueError:
            enabled = True  # an unknown version or gate: reported by its own rules
        for cap in cluster.capacity:
            if cap.topology is None:
                continue
            at = cap.topology_origin or cap.origin
            if cap.topology not in defined:
                yield err(
                    at,
                    "topology",
                    f"flavor {cap.flavor!r} on cluster {cluster.name!r} is bound to topology {cap.topology!r}, "
                    f"which the cluster does not define (topologies: {', '.join(defined) or 'none'})"
                    + did_you_mean(cap.topology, defined)
                    + ": Kueue keeps every ClusterQueue using the flavor inactive",
                )
            flavor = model.platform.flavors.get(cap.flavor)
            if flavor is not None and not flavor.node_labels:
                yield err(
                    at,
                    "topology",
                    f"flavor {cap.flavor!r} is bound to a topology but has no nodeLabels in base/platform.yaml "
                    "(Kueue: at least one nodeLabel is required when topology is set)",
                )
            if not enabled:
                yield err(
                    at,
                    "topology",
                    f"flavor {cap.flavor!r} is bound to a topology on cluster {cluster.name!r}, where the "
                    f"{GATE} feature gate is off (Kueue {cluster.kueue_version}): turn it on or drop topologyName",
                )
