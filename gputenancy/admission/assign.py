"""Kueue's flavor assignment for one workload, and the verdict in Kueue's words.

As pkg/scheduler/flavorassigner/flavorassigner.go (v0.18, v0.19) does it: per pod set, per resource group
of the ClusterQueue, the flavors in order; a flavor whose taints the pod does not tolerate ("untolerated
taint <taint> in flavor <f>") or whose node labels its nodeSelector / required node affinity rules out ("flavor
<f> doesn't match node affinity") is skipped; then every requested resource of the group (previous pod sets'
requests on the flavor included) against the queue's maximum capacity ("insufficient quota for <r> in flavor
<f>, previously considered podsets requests (<a>) + current podset request (<n>) > maximum capacity (<m>)")
and what it can use now ("insufficient unused quota for <r> in flavor <f>, <n> more needed"). The search
stops at a flavor that fits without borrowing, and at one that fits by borrowing when `flavorFungibility
.whenCanBorrow` is MayStopSearch (the default); else the best is kept. A resource no group covers is
"resource <r> unavailable in ClusterQueue". With the TopologyAwareScheduling gate on, before the taints
(tas_flavorassigner.go, checkPodSetAndFlavorMatchForTAS): in a ClusterQueue whose flavors are all bound to
a topology (TAS-only) every pod set is placed by topology; otherwise a pod set whose template asks for a
topology (kueue.x-k8s.io/podset-required-topology and the like) is refused on a flavor bound to none when
it requests a resource of the group ('Flavor "<f>" does not support TopologyAwareScheduling') and on a
topology without the level it names ('Flavor "<f>" does not contain the requested level'), and one that
does not ask is refused on a TAS flavor ('Flavor "<f>" supports only TopologyAwareScheduling'). The reasons of a pod set are sorted and joined, after
"couldn't assign flavors to pod set <name>: ", as Kueue's Status.Message does. Preemption is not simulated:
a workload that does not fit now waits.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from decimal import Decimal
from typing import Any

from gputenancy.admission.charge import PodSetCharge
from gputenancy.admission.quota import FR, Node, Tree
from gputenancy.inputs.quantity import Format, Quantity

FIT, BORROW, WAIT, NOFIT = 3, 2, 1, 0


@dataclasses.dataclass(frozen=True)
class Flavor:
    name: str
    node_labels: Mapping[str, str]
    taints: tuple[Mapping[str, Any], ...]
    tolerations: tuple[Mapping[str, Any], ...]
    topology: str | None = None  # spec.topologyName: a TAS flavor
    levels: tuple[str, ...] = ()  # its Topology's level node labels ((): the Topology is not known)


@dataclasses.dataclass(frozen=True)
class Assignment:
    """The flavor each resource of each pod set gets (empty when none), the mode, and Kueue's reasons."""

    flavors: tuple[tuple[str, tuple[tuple[str, str], ...]], ...]  # pod set -> (resource, flavor)
    mode: int
    message: str  # Kueue's, "" when it fits
    borrowing: tuple[tuple[str, str, Decimal], ...]  # (flavor, resource, amount beyond nominal)
    blocked: tuple[tuple[str, str], ...]  # (flavor, resource) that stopped the best flavor
    uncovered: tuple[str, ...]
    usage: Mapping[FR, Decimal]
    topology: tuple[
        tuple[str, str], ...
    ] = ()  # (flavor, Kueue's reason) refused by Topology Aware Scheduling


def _taint_text(t: Mapping[str, Any]) -> str:
    key, value, effect = t.get("key", ""), t.get("value", ""), t.get("effect", "")
    return f"{key}={value}:{effect}" if value else f"{key}:{effect}"


def _tolerates(tol: Mapping[str, Any], taint: Mapping[str, Any]) -> bool:
    if tol.get("effect") and tol.get("effect") != taint.get("effect"):
        return False
    if tol.get("operator", "Equal") == "Exists":
        return not tol.get("key") or tol.get("key") == taint.get("key")
    return tol.get("key") == taint.get("key") and (tol.get("value") or "") == (taint.get("value") or "")


def untolerated(flavor: Flavor, pod: Mapping[str, Any]) -> str | None:
    tolerations = [t for t in pod.get("tolerations") or [] if isinstance(t, dict)] + list(flavor.tolerations)
    for taint in flavor.taints:
        if taint.get("effect") not in ("NoSchedule", "NoExecute"):
            continue
        if not any(_tolerates(t, taint) for t in tolerations):
            return _taint_text(taint)
    return None


def _expression(e: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    key, op, values = e.get("key"), e.get("operator"), [str(v) for v in e.get("values") or []]
    present = key in labels
    if op == "In":
        return present and labels[str(key)] in values
    if op == "NotIn":
        return not present or labels[str(key)] not in values
    if op == "Exists":
        return present
    if op == "DoesNotExist":
        return not present
    return True  # Gt / Lt: not judged


def matches(flavor: Flavor, pod: Mapping[str, Any], keys: set[str]) -> bool:
    """The pod's nodeSelector and required node affinity, on the group's label keys, against the flavor's
    node labels (Kueue's `flavorSelector`)."""
    labels = flavor.node_labels
    selector = pod.get("nodeSelector") if isinstance(pod.get("nodeSelector"), dict) else {}
    assert isinstance(selector, dict)
    for k, v in selector.items():
        if k in keys and labels.get(k) != str(v):
            return False
    affinity = (
        ((pod.get("affinity") or {}).get("nodeAffinity") or {})
        if isinstance(pod.get("affinity"), dict)
        else {}
    )
    required = (
        affinity.get("requiredDuringSchedulingIgnoredDuringExecution") if isinstance(affinity, dict) else None
    )
    terms = (required or {}).get("nodeSelectorTerms") if isinstance(required, dict) else None
    if not terms:
        return True
    for term in terms:
        exprs = [
            e
            for e in (term or {}).get("matchExpressions") or []
            if isinstance(e, dict) and e.get("key") in keys
        ]
        if all(_expression(e, labels) for e in exprs):
            return True
    return False


REQUIRED = "kueue.x-k8s.io/podset-required-topology"
PREFERRED = "kueue.x-k8s.io/podset-preferred-topology"
UNCONSTRAINED = "kueue.x-k8s.io/podset-unconstrained-topology"
SLICE_REQUIRED = "kueue.x-k8s.io/podset-slice-required-topology"
SLICE_SIZE = "kueue.x-k8s.io/podset-slice-size"
SLICE_CONSTRAINTS = "kueue.x-k8s.io/podset-slice-required-topology-constraints"


def asks_topology(annotations: Mapping[str, str]) -> bool:
    """The pod template requests TAS explicitly (jobframework/tas.go Build, workload.IsExplicitlyRequestingTAS)."""
    return any(k in annotations for k in (REQUIRED, PREFERRED, UNCONSTRAINED, SLICE_CONSTRAINTS)) or (
        SLICE_REQUIRED in annotations and SLICE_SIZE in annotations
    )


def _pod_resources(pod: Mapping[str, Any]) -> set[str]:
    """The resources the pod spec's containers, init containers and overhead request (Kueue's
    NewRequestsFromPodSpec; limits stand for missing requests, as the API server defaults them)."""
    out = {str(k) for k in pod.get("overhead") or {}} if isinstance(pod.get("overhead"), dict) else set()
    for c in [*(pod.get("containers") or []), *(pod.get("initContainers") or [])]:
        resources = c.get("resources") if isinstance(c, dict) else None
        for part in ("requests", "limits"):
            amounts = resources.get(part) if isinstance(resources, dict) else None
            out.update(str(k) for k in amounts or {} if isinstance(amounts, dict))
    return out


def tas_mismatch(
    flavor: Flavor, annotations: Mapping[str, str], pod: Mapping[str, Any], covered: set[str], tas_only: bool
) -> str | None:
    """Kueue's reason a pod set cannot use `flavor` by Topology Aware Scheduling, or None."""
    if asks_topology(annotations):
        if flavor.topology is None:
            if not _pod_resources(pod) & covered:
                return None  # the flavor gives only what the TAS flavor does not (quota-only resources)
            return f'Flavor "{flavor.name}" does not support TopologyAwareScheduling'
        asked = [annotations[k] for k in (REQUIRED, PREFERRED, SLICE_REQUIRED) if k in annotations][:1]
        if flavor.levels and any(level not in flavor.levels for level in asked):
            return f'Flavor "{flavor.name}" does not contain the requested level'
        return None
    if flavor.topology is not None and not tas_only:
        return f'Flavor "{flavor.name}" supports only TopologyAwareScheduling'
    return None


def _plain(resource: str, value: Decimal) -> str:
    """An amount as Kueue prints it (`resources.ResourceQuantityString`: memory and storage binary)."""
    binary = resource in ("memory", "ephemeral-storage") or resource.endswith(("memory", "storage"))
    return Quantity(value, Format.BINARY_SI if binary else Format.DECIMAL_SI).canonical()


def assign(
    tree: Tree,
    queue: Node,
    groups: Sequence[tuple[set[str], list[str]]],
    flavors: Mapping[str, Flavor],
    fungibility: Mapping[str, Any],
    pod_sets: Sequence[tuple[PodSetCharge, Mapping[str, Any]]],
    ignore_undeclared: bool,
    annotations: Sequence[Mapping[str, str]] = (),  # each pod set's template annotations
    tas: bool = True,  # the TopologyAwareScheduling gate
) -> Assignment:
    named = [flavors.get(n) for _, names in groups for n in names]
    tas_only = all(f is not None and f.topology is not None for f in named)
    topology: list[tuple[str, str]] = []
    may_stop_borrowing = fungibility.get("whenCanBorrow", "MayStopSearch") in ("MayStopSearch", "Borrow")
    assumed: dict[FR, Decimal] = {}
    chosen: list[tuple[str, tuple[tuple[str, str], ...]]] = []
    messages: list[str] = []
    borrowing: list[tuple[str, str, Decimal]] = []
    blocked: list[tuple[str, str]] = []
    uncovered: list[str] = []
    worst = FIT
    for index, (ps, pod) in enumerate(pod_sets):
        asked = annotations[index] if index < len(annotations) else {}
        requests = {r: q.value for r, q in ps.total().items()}
        reasons: list[str] = []
        picked: list[tuple[str, str]] = []
        this = FIT  # the pod set's own mode: Kueue prints the reasons of pod sets that do not fit
        for r in sorted(requests):
            if not any(r in covered for covered, _ in groups) and not ignore_undeclared:
                reasons.append(f"resource {r} unavailable in ClusterQueue")
                uncovered.append(r)
                this = NOFIT
        for covered, names in groups:
            wanted = {r: v for r, v in requests.items() if r in covered}
            if not wanted:
                continue
            keys = {k for n in names if n in flavors for k in flavors[n].node_labels}
            best: tuple[int, str, dict[FR, Decimal], list[tuple[str, str, Decimal]], list[FR]] | None = None
            for name in names:
                flavor = flavors.get(name)
                if flavor is None:
                    reasons.append(f"flavor {name} not found")
                    continue
                mismatch = tas_mismatch(flavor, asked, pod, covered, tas_only) if tas else None
                if mismatch is not None:
                    reasons.append(mismatch)
                    topology.append((name, mismatch))
                    continue
                taint = untolerated(flavor, pod)
                if taint is not None:
                    reasons.append(f"untolerated taint {taint} in flavor {name}")
                    continue
                if not matches(flavor, pod, keys):
                    reasons.append(f"flavor {name} doesn't match node affinity")
                    continue
                mode, use, borrow, lacking = FIT, {}, [], []
                for r in sorted(wanted):
                    fr = (name, r)
                    before = assumed.get(fr, Decimal(0))
                    val = before + wanted[r]
                    cap = tree.potential(queue, fr)
                    if val > cap:
                        reasons.append(
                            f"insufficient quota for {r} in flavor {name}, previously considered podsets requests "
                            f"({_plain(r, before)}) + current podset request ({_plain(r, wanted[r])}) > maximum "
                            f"capacity ({_plain(r, cap)})"
                        )
                        mode = NOFIT
                        lacking.append(fr)
                        break
                    free = tree.available(queue, fr)
                    if val > free:
                        reasons.append(
                            f"insufficient unused quota for {r} in flavor {name}, {_plain(r, val - free)} more needed"
                        )
                        mode = min(mode, WAIT)
                        lacking.append(fr)
                    else:
                        over = tree.usage(queue, fr) + val - queue.nominal.get(fr, Decimal(0))
                        if over > 0:
                            borrow.append((name, r, over))
                            mode = min(mode, BORROW)
                    use[fr] = wanted[r]
                if best is None or mode > best[0]:
                    best = (mode, name, use, borrow, lacking)
                if mode == FIT or (mode == BORROW and may_stop_borrowing):
                    break
            if best is None:
                this = NOFIT
                continue
            mode, name, use, borrow, lacking = best
            this = min(this, mode)
            if mode >= BORROW:
                picked.extend((r, name) for r in sorted(wanted))
                for fr, v in use.items():
                    assumed[fr] = assumed.get(fr, Decimal(0)) + v
                borrowing.extend(borrow)
            else:
                blocked.extend(lacking)
        worst = min(worst, this)
        if reasons and this < BORROW:
            messages.append(f"couldn't assign flavors to pod set {ps.name}: {', '.join(sorted(reasons))}")
        chosen.append((ps.name, tuple(picked)))
    return Assignment(
        tuple(chosen),
        worst,
        "; ".join(messages),
        tuple(borrowing),
        tuple(blocked),
        tuple(uncovered),
        assumed,
        tuple(dict.fromkeys(topology)),
    )
