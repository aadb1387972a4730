"""The cluster a workload is judged against: the repository's rendered cluster (generated/<cluster>/, what
Argo CD applies), traced back to the inputs as the post-build checks trace what kustomize built
(`builtview.build_view`), and, with a `kubectl get -o yaml` dump (`--from`), what the cluster holds instead:
its queues, cohorts, flavors, claim templates and DeviceClasses as the server stores them (hand edits and
objects Git does not hold included), the namespaces' labels, the queues' usage and the admitted workloads.
The Kueue Configuration is the rendered one (the one the manager runs after a sync)."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Mapping
from decimal import Decimal
from pathlib import Path
from typing import Any

from gputenancy.admission.assign import Flavor
from gputenancy.admission.charge import Rules
from gputenancy.admission.quota import FR, Tree, status_usage
from gputenancy.assemble import output
from gputenancy.check.chain.admissible import undeclared_ignored
from gputenancy.check.chain.builtview import (
    DRA,
    KUEUE,
    Built,
    View,
    build_view,
    kueue_configuration,
    mappings,
)
from gputenancy.check.chain.charging import config_transformations, excluded_prefixes
from gputenancy.cluster.dump import Dump
from gputenancy.common import fastyaml
from gputenancy.common.findings import Origin, PipelineError
from gputenancy.common.objects import RenderedObject
from gputenancy.inputs.quantity import QuantityError, parse
from gputenancy.inputs.spec import Model
from gputenancy.policy.catalog import effective_catalog
from gputenancy.versions import gates, hami

RULE = "admit-input"
LIVE_KINDS = (
    "ClusterQueue",
    "Cohort",
    "LocalQueue",
    "ResourceFlavor",
    "ResourceClaimTemplate",
    "DeviceClass",
    "Topology",
)


@dataclasses.dataclass(frozen=True)
class Holder:
    """An admitted workload of the dump: what it holds, per flavor and resource."""

    namespace: str
    name: str
    queue: str
    holds: Mapping[FR, Decimal]
    origin: Origin


@dataclasses.dataclass
class Target:
    """Everything the judge reads about one cluster."""

    view: View
    tree: Tree
    flavors: Mapping[str, Flavor]
    rules: Rules
    ignore_undeclared: bool
    frameworks: tuple[str, ...]
    defaulting: bool  # LocalQueueDefaulting
    namespaces: Mapping[str, Mapping[str, str]]  # labels, from the dump
    holders: tuple[Holder, ...]
    source: str  # "generated/lab/" or the dump
    live: bool
    tas: bool = True  # the TopologyAwareScheduling gate: off, Kueue ignores flavors' topologyName

    @functools.cached_property
    def _local_queues(self) -> dict[tuple[str, str], Built]:
        return {(lq.namespace, lq.name): lq for lq in self.view.of(KUEUE, "LocalQueue")}

    @functools.cached_property
    def _templates(self) -> dict[tuple[str, str], Built]:
        return {(t.namespace, t.name): t for t in self.view.of(DRA, "ResourceClaimTemplate")}

    def local_queue(self, namespace: str, name: str) -> Built | None:
        return self._local_queues.get((namespace, name))

    def queues_in(self, namespace: str) -> list[str]:
        return sorted(name for ns, name in self._local_queues if ns == namespace)

    def templates_in(self, namespace: str) -> list[str]:
        return sorted(name for ns, name in self._templates if ns == namespace)

    def template(self, namespace: str, name: str) -> tuple[Mapping[str, Any], str] | None:
        t = self._templates.get((namespace, name))
        if t is None:
            return None
        spec = (t.body.get("spec") or {}).get("spec")
        where = f"{t.obj.origin.path}:{t.obj.origin.line}" if t.obj.origin.line else t.origin.path
        return (spec if isinstance(spec, dict) else {}), where


def _rendered(root: Path, cluster: str) -> list[RenderedObject]:
    directory = root / "generated" / cluster
    tree = output.read_tree(directory)
    if not tree:
        where = Origin(f"generated/{cluster}")
        raise PipelineError(
            [
                where.finding(
                    RULE, f"no rendered objects for cluster {cluster!r}: run `python pipeline.py render`"
                )
            ]
        )
    fallback = Origin(f"overlays/{cluster}/kustomization.yaml", 0, 0)
    out = []
    for rel, data in tree.items():
        if not rel.endswith((".yaml", ".yml")):
            continue
        for body in fastyaml.load_all(data.decode("utf-8")):
            if isinstance(body, dict) and body.get("kind"):
                out.append(RenderedObject(cluster, body, fallback))
    return out


def _live(dump: Dump, cluster: str) -> list[RenderedObject]:
    out = []
    for o in dump.of_kind(*LIVE_KINDS):
        if o.group not in (KUEUE, DRA):
            continue
        body = {k: v for k, v in o.body.items() if k != "status"}
        out.append(RenderedObject(cluster, body, o.origin))
    return out


def _levels(view: View) -> dict[str, tuple[str, ...]]:
    """Each Topology's level node labels, widest first."""
    out = {}
    for t in view.of(KUEUE, "Topology"):
        levels = _spec(t).get("levels")
        out[t.name] = tuple(
            str(lv["nodeLabel"]) for lv in levels or [] if isinstance(lv, dict) and "nodeLabel" in lv
        )
    return out


def _flavor(b: Built, levels: Mapping[str, tuple[str, ...]]) -> Flavor:
    spec = b.body.get("spec") if isinstance(b.body.get("spec"), dict) else {}
    assert isinstance(spec, dict)
    labels = spec.get("nodeLabels") if isinstance(spec.get("nodeLabels"), dict) else {}
    assert isinstance(labels, dict)
    topology = spec.get("topologyName") if isinstance(spec.get("topologyName"), str) else None
    return Flavor(
        b.name,
        {str(k): str(v) for k, v in labels.items()},
        tuple(t for t in spec.get("nodeTaints") or [] if isinstance(t, dict)),
        tuple(t for t in spec.get("tolerations") or [] if isinstance(t, dict)),
        topology,
        levels.get(topology, ()) if topology else (),
    )


def _holders(dump: Dump) -> tuple[Holder, ...]:
    out = []
    for w in dump.of_kind("Workload"):
        admission = (w.body.get("status") or {}).get("admission")
        if not isinstance(admission, dict) or not isinstance(admission.get("clusterQueue"), str):
            continue
        holds: dict[FR, Decimal] = {}
        for psa in admission.get("podSetAssignments") or []:
            flavors = psa.get("flavors") or {}
            for r, v in (psa.get("resourceUsage") or {}).items():
                if r in flavors:
                    try:
                        holds[(flavors[r], r)] = holds.get((flavors[r], r), Decimal(0)) + parse(v).value
                    except QuantityError:
                        continue
        out.append(Holder(w.namespace, w.name, admission["clusterQueue"], holds, w.origin))
    return tuple(out)


def load(root: Path, model: Model, cluster: str, dump: Dump | None, *, usage: bool = True) -> Target:
    """The target cluster from the repository at `root` (and the dump; `usage=False`: its objects without
    its usage, the cluster as it was before any workload ran)."""
    catalog = effective_catalog(model)
    objects = _rendered(root, cluster)
    if dump is not None:
        replaced = {(o.key.group, o.key.kind) for o in _live(dump, cluster)}
        replaced |= {(KUEUE, k) for k in LIVE_KINDS if k not in ("ResourceClaimTemplate", "DeviceClass")}
        replaced |= {(DRA, "ResourceClaimTemplate"), (DRA, "DeviceClass")}
        objects = [o for o in objects if (o.key.group, o.key.kind) not in replaced] + _live(dump, cluster)
    view = build_view(model, model.clusters[cluster], catalog, objects, kustomized=True)
    config, _ = kueue_configuration(view)
    tree = Tree(
        {b.name: _spec(b) for b in view.of(KUEUE, "ClusterQueue")},
        {b.name: _spec(b) for b in view.of(KUEUE, "Cohort")},
    )
    namespaces: dict[str, Mapping[str, str]] = {}
    holders: tuple[Holder, ...] = ()
    if dump is not None:
        for cq in dump.of_kind("ClusterQueue") if usage else []:
            if cq.name in tree.queues:
                tree.queues[cq.name].usage = status_usage(cq.body.get("status"))
        for ns in dump.of_kind("Namespace"):
            labels = (ns.body.get("metadata") or {}).get("labels") or {}
            namespaces[ns.name] = {str(k): str(v) for k, v in labels.items()}
        holders = _holders(dump) if usage else ()
    integrations = (config or {}).get("integrations") or {}
    frameworks = integrations.get("frameworks") if isinstance(integrations, dict) else None
    declared = (config or {}).get("featureGates") or {}
    try:
        effective = gates.effective_gates(
            view.cluster.kueue_version, {k: v for k, v in declared.items() if isinstance(v, bool)}
        )
    except ValueError:
        effective = {}
    levels = _levels(view)
    return Target(
        view=view,
        tree=tree,
        flavors={b.name: _flavor(b, levels) for b in view.of(KUEUE, "ResourceFlavor")},
        rules=Rules(
            mappings(config),
            config_transformations(config),
            excluded_prefixes(config),
            hami.retain_multiplied(view.cluster.kueue_version),
            _extended(view, mappings(config)) if effective.get("KueueDRAIntegrationExtendedResource") else {},
        ),
        ignore_undeclared=undeclared_ignored(config, view),
        frameworks=tuple(str(f) for f in frameworks)
        if isinstance(frameworks, list) and frameworks
        else ("batch/job",),
        # GA and locked on in v0.18, the gate removed from v0.19: defaulting always applies
        defaulting=bool(effective.get("LocalQueueDefaulting", True)),
        namespaces=namespaces,
        holders=holders,
        source=dump.path if dump is not None else f"generated/{cluster}/",
        live=dump is not None,
        tas=bool(effective.get("TopologyAwareScheduling", True)),
    )


def _extended(view: View, mapped: Mapping[str, str]) -> dict[str, tuple[str, str]]:
    """Extended resource -> (quota resource, DeviceClass) for the cluster's DeviceClasses that set
    `spec.extendedResourceName`: those on the cluster, and the catalog's classes a DRA driver installs
    (the name its chart sets, `versions.hami.driver_extended_resource_names`)."""
    out: dict[str, tuple[str, str]] = {}
    on_cluster = view.named(DRA, "DeviceClass")
    for name, b in sorted(on_cluster.items()):
        extended = _spec(b).get("extendedResourceName")
        if isinstance(extended, str) and extended:
            out.setdefault(extended, (mapped.get(name, extended), name))
    for name, extended in sorted(hami.driver_extended_resource_names().items()):
        if name in view.catalog.classes and name not in on_cluster:
            out.setdefault(extended, (mapped.get(name, extended), name))
    return out


def _spec(b: Built) -> Mapping[str, Any]:
    spec = b.body.get("spec")
    return spec if isinstance(spec, dict) else {}
