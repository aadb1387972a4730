"""Topology Aware Scheduling on the inputs: each cluster's Topology objects (`topologies[]` in
cluster.yaml) and the flavors bound to them (`capacity[].topologyName`), held to what Kueue needs for a
TAS ClusterQueue to be active (pkg/cache/scheduler/clusterqueue.go: a Topology for every TAS flavor),
its CRDs (the ResourceFlavor and Topology CEL rules) and
its feature gate per version."""

from __future__ import annotations

from collections.abc import Iterator

from gputenancy.common.findings import Finding, Severity
from gputenancy.common.hints import did_you_mean
from gputenancy.inputs import fleet
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


def topology_mixed_queue(model: Model, catalog: Catalog) -> Iterator[Finding]:
    """A tenant's ClusterQueue on a cluster has only TAS flavors or none. Kueue treats a queue whose
    flavors are all bound to a topology as TAS-only and places every job there by topology; in a queue
    that mixes them, a job without a topology annotation is refused on the TAS flavors ('Flavor "h100"
    supports only TopologyAwareScheduling') and a job with one on the others ('does not support
    TopologyAwareScheduling'), so each job reaches only part of the tenant's budget
    (pkg/scheduler/flavorassigner/tas_flavorassigner.go, checkPodSetAndFlavorMatchForTAS;
    pkg/cache/scheduler/clusterqueue.go, isTASOnly). A MultiKueue manager's queues too: Kueue assigns
    flavors there before dispatching.

    Passes: budgets on prod for h100 and a100-mig, both bound to a topology there.
    Fails: budgets on prod for h100 (topologyName: h100-nvlink) and a100-mig (no topologyName).
    """
    for cluster in model.clusters.values():
        tas = {cap.flavor: cap.topology for cap in cluster.capacity if cap.topology is not None}
        if not tas:
            continue
        offered = {cap.flavor for cap in cluster.capacity}
        for tenant in model.tenants_on(cluster.name):
            budget = tenant.budget_for(cluster.name) or ()
            bound = [fb for fb in budget if fb.flavor in tas]
            plain = [fb for fb in budget if fb.flavor not in tas and fb.flavor in offered]  # flavor-unknown
            if not bound or not plain:
                continue
            yield plain[0].origin.finding(
                "topology-mixed-queue",
                f"ClusterQueue {tenant.name!r} on cluster {cluster.name!r} mixes TAS flavors "
                f"({', '.join(fb.flavor for fb in bound)}) with others "
                f"({', '.join(fb.flavor for fb in plain)}): Kueue refuses a job without a topology "
                f'annotation on {bound[0].flavor!r} (Flavor "{bound[0].flavor}" supports only '
                f"TopologyAwareScheduling) and one with it on {plain[0].flavor!r}, so each job reaches "
                f"part of the budget; bind all the tenant's flavors on {cluster.name!r} to a topology "
                f"(capacity[].topologyName in {cluster.path}), or none: a TAS-only queue places every job "
                "by topology",
                Severity.WARNING,
            )


def topology_fleet(model: Model, catalog: Catalog) -> Iterator[Finding]:
    """A flavor a MultiKueue worker binds to a topology is bound on its manager too, to a topology with the
    same levels. The manager takes the binding from its workers when every worker offering the flavor binds
    it to a topology with the same levels; otherwise it renders the flavor without one, and Kueue on the
    manager, which assigns flavors before dispatching, refuses every job whose pod template asks for a
    topology on it ('Flavor "h100" does not support TopologyAwareScheduling') so it never reaches a worker
    (pkg/scheduler/flavorassigner/tas_flavorassigner.go; the manager leaves the placement to the worker).

    Passes: gpu-west and gpu-east both bind h100 to a topology with levels [rack, hostname].
    Fails: gpu-west binds h100 to racks, gpu-east offers h100 bound to none.
    """
    for manager in fleet.managers(model):
        mine = {cap.flavor: cap.topology for cap in manager.capacity}
        levels = {t.name: t.levels for t in manager.topologies}
        for worker in fleet.workers_of(model, manager):
            theirs = {t.name: t.levels for t in worker.topologies}
            for cap in worker.capacity:
                if cap.topology is None or cap.topology not in theirs or cap.flavor not in mine:
                    continue  # `topology` says a missing Topology
                bound = mine[cap.flavor]
                if bound is not None and levels.get(bound) == theirs[cap.topology]:
                    continue
                others = [
                    w.name
                    for w in fleet.workers_of(model, manager)
                    for c in w.capacity
                    if c.flavor == cap.flavor and w.name != worker.name
                ]
                yield (cap.topology_origin or cap.origin).finding(
                    "topology-fleet",
                    f"flavor {cap.flavor!r} is bound to topology {cap.topology!r} on worker {worker.name!r} but "
                    f"not on its MultiKueue manager {manager.name!r}, because the other workers offering it "
                    f"({', '.join(others) or 'none'}) bind it to none or to a topology with other levels: Kueue "
                    f"on the manager refuses every job asking for a topology on {cap.flavor!r} "
                    f'(Flavor "{cap.flavor}" does not support TopologyAwareScheduling) and dispatches none; '
                    f"bind it to topologies with the same levels on every worker of {manager.name!r}",
                    Severity.WARNING,
                )
