"""Risks the plan names beyond deletions and replacements of immutable objects: what a change does to
workloads already on the cluster.

- `queue-draining`: a ClusterQueue's stopPolicy becomes HoldAndDrain (`state: draining`): Kueue stops
  admitting and evicts the workloads it admitted (their pods are stopped; they go back to pending).
- `localqueue-renamed`: in one namespace a LocalQueue disappears and another appears (`localQueueName`
  changed): jobs carry the queue's name in the label `kueue.x-k8s.io/queue-name`, so every job labelled
  with the old name is left without a queue (not admitted) until it is relabelled.
- `namespace-removed`: a namespace loses its LocalQueue while the tenant stays: jobs there labelled
  `kueue.x-k8s.io/queue-name: <queue>` are no longer admitted.

- `clusterqueue-replaced`: a ClusterQueue is deleted and another created, and LocalQueues move from the
  old one to the new one (a tenant renamed): the old queue stays Terminating, held by its
  `kueue.x-k8s.io/resource-in-use` finalizer, while its admitted workloads still use its quota, and the
  new one starts with none of its usage or fair-sharing history.

- `immutable-field`: a change Kueue's CRDs refuse in place (a ResourceFlavor's topologyName, and once
  it is set its nodeLabels and tolerations; a Topology's levels): Argo CD's sync fails until the object
  is deleted and created again.

`localqueue-renamed` and `namespace-removed` replace the generic `queue-deleted` risk of that LocalQueue. The functions take
the plan's ObjectChange records and return (risk, subject, message) triples, so this module does not
import the plan.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
HELD = "HoldAndDrain"


def _spec(body: Mapping[str, Any] | None) -> Mapping[str, Any]:
    spec = (body or {}).get("spec")
    return spec if isinstance(spec, Mapping) else {}


def more(
    cluster: str, objects: Sequence[Any], olds: Mapping[Any, Any]
) -> tuple[list[tuple[str, str, str]], set[str]]:
    """(risks, subjects whose generic queue-deleted risk these replace)."""
    out: list[tuple[str, str, str]] = []
    replaced: set[str] = set()
    removed_lq: dict[str, list[Any]] = defaultdict(list)
    added_lq: dict[str, list[Any]] = defaultdict(list)
    removed_cq = {o.key.name for o in objects if o.key.kind == "ClusterQueue" and o.action == "removed"}
    for o in objects:
        subject = o.title.removeprefix(f"{cluster} ")
        if o.key.kind == "ClusterQueue" and o.action == "changed":
            for c in o.changes:
                if c.path == ("spec", "stopPolicy") and c.new == HELD and c.old != HELD:
                    out.append(
                        (
                            "queue-draining",
                            subject,
                            f"{subject} gets stopPolicy: HoldAndDrain (`state: draining`): Kueue admits nothing "
                            "new and evicts every workload it admitted from this queue (running pods are "
                            "stopped, the jobs go back to pending); its queues move to the last sync wave",
                        )
                    )
        if o.key.kind == "LocalQueue" and o.action == "removed":
            removed_lq[o.key.namespace].append(o)
        if o.key.kind == "LocalQueue" and o.action == "added":
            added_lq[o.key.namespace].append(o)
    added_cq = {o.key.name for o in objects if o.key.kind == "ClusterQueue" and o.action == "added"}
    moves: dict[tuple[str, str], list[str]] = defaultdict(list)
    for o in objects:
        for c in o.changes if o.key.kind == "LocalQueue" else ():
            if c.path == ("spec", "clusterQueue") and c.old in removed_cq and c.new in added_cq:
                moves[(str(c.old), str(c.new))].append(o.key.namespace)
    for ns, gone in removed_lq.items():  # renamed with the tenant: LocalQueues named after their queue
        for o in gone:
            old = str(_spec(olds.get(o.key)).get("clusterQueue", ""))
            for a in added_lq.get(ns, ()):
                if old in removed_cq and a.key.name in added_cq:
                    moves[(old, a.key.name)].append(ns)
    for (old, new), namespaces in sorted(moves.items()):
        out.append(
            (
                "clusterqueue-replaced",
                f"ClusterQueue {old}",
                f"ClusterQueue {old} is replaced by {new} (LocalQueues in {', '.join(sorted(namespaces))} move "
                f"to it): {old} stays Terminating, held by its kueue.x-k8s.io/resource-in-use finalizer, "
                f"while workloads it admitted still use its quota; {new} starts with no usage or fair-sharing "
                "history",
            )
        )
    for ns, gone in sorted(removed_lq.items()):
        for o in gone:
            subject = o.title.removeprefix(f"{cluster} ")
            target = str(_spec(olds.get(o.key)).get("clusterQueue", ""))
            if ns in added_lq:
                new = ", ".join(a.key.name for a in added_lq[ns])
                out.append(
                    (
                        "localqueue-renamed",
                        subject,
                        f"LocalQueue {o.key.name} in namespace {ns} is replaced by {new}: jobs labelled "
                        f"{QUEUE_LABEL}: {o.key.name} are left without a queue and are not admitted; "
                        f"relabel them {QUEUE_LABEL}: {new} (running workloads of the old queue are evicted "
                        "when it is deleted)",
                    )
                )
                replaced.add(subject)
            elif target and target not in removed_cq:
                out.append(
                    (
                        "namespace-removed",
                        subject,
                        f"namespace {ns} loses LocalQueue {o.key.name} (ClusterQueue {target} stays): jobs "
                        f"there labelled {QUEUE_LABEL}: {o.key.name} are no longer admitted; drain them "
                        "first or move them to a namespace of the tenant",
                    )
                )
                replaced.add(subject)
    out += _immutable(cluster, objects, olds)
    return out, replaced


_IMMUTABLE = (
    "{what} is immutable{when} (Kueue's CRD: \"{rule}\"): Argo CD's apply of the change is refused and the "
    "sync stays failed, retrying; the {kind} must be deleted and created again (the sync option "
    "Replace=true on it, or by hand){held}"
)
_HELD = (
    ", which its kueue.x-k8s.io/resource-in-use finalizer blocks while a ClusterQueue names the flavor: "
    "take it out of the queues first; workloads admitted on it keep running, new ones wait"
)


def _immutable(cluster: str, objects: Sequence[Any], olds: Mapping[Any, Any]) -> list[tuple[str, str, str]]:
    """`immutable-field`: a change Kueue's CRDs refuse in place: a ResourceFlavor's topologyName, and
    once it has one its nodeLabels and tolerations; a Topology's levels."""
    out: list[tuple[str, str, str]] = []
    for o in objects:
        if o.action != "changed" or o.key.kind not in ("ResourceFlavor", "Topology"):
            continue
        subject = o.title.removeprefix(f"{cluster} ")
        fields = sorted({str(c.path[1]) for c in o.changes if len(c.path) > 1 and c.path[0] == "spec"})
        if o.key.kind == "Topology" and "levels" in fields:
            message = _IMMUTABLE.format(
                what=f"{subject}: spec.levels", when="", rule="field is immutable", kind="Topology", held=""
            )
            out.append(("immutable-field", subject, message))
        old = _spec(olds.get(o.key)).get("topologyName")
        frozen = [f for f in fields if f in ("topologyName", "nodeLabels", "tolerations")]
        if o.key.kind == "ResourceFlavor" and old and frozen:
            message = _IMMUTABLE.format(
                what=f"{subject}: spec.{', spec.'.join(frozen)}",
                when=f" once topologyName is set (it is {old!r})",
                rule=f"{frozen[0]} {'are' if frozen[0] != 'topologyName' else 'is'} immutable when topologyName is set",
                kind="ResourceFlavor",
                held=_HELD,
            )
            out.append(("immutable-field", subject, message))
    return out
