"""The verdict on each workload, in order, as Kueue would reach it on the target cluster.

Before quota, as Kueue's controllers do: the job kind must be an integration the Configuration enables; the
queue is the `kueue.x-k8s.io/queue-name` label, or the namespace's LocalQueue `default` where the
LocalQueueDefaulting gate is on; "LocalQueue <q> doesn't exist", "LocalQueue <q> is inactive", "ClusterQueue
<c> doesn't exist", "ClusterQueue <c> is inactive" (stopPolicy Hold / HoldAndDrain) and claims Kueue does
not support keep it Inadmissible; "Workload namespace doesn't match ClusterQueue selector" keeps it pending
for ever. Then what it is charged (`charge`) and the flavor assignment (`assign`) against the queue's quota
tree. A workload that is admitted adds its usage for the workloads after it, as Kueue would admit them in
that order.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from decimal import Decimal
from typing import Any

from gputenancy.admission.assign import BORROW, FIT, NOFIT, REQUIRED, assign
from gputenancy.admission.charge import PodSetCharge, charge
from gputenancy.admission.manifests import QUEUE_LABEL, Workload
from gputenancy.admission.target import RULE, Holder, Target
from gputenancy.check.chain.admissible import HELD, minimum_pod_requests, queue_quotas
from gputenancy.check.chain.builtview import KUEUE, Built
from gputenancy.common.findings import Finding, Origin

ADMITTED, PENDING, INADMISSIBLE, NEVER = "admitted", "pending", "inadmissible", "never"


@dataclasses.dataclass(frozen=True)
class Verdict:
    workload: Workload
    outcome: str
    local_queue: str
    cluster_queue: str
    charges: tuple[PodSetCharge, ...]
    flavors: tuple[tuple[str, tuple[tuple[str, str], ...]], ...]
    message: str  # Kueue's condition message, "" when admitted
    why: str  # what decides it
    origin: Origin  # the input line or object that decides it
    fix: str
    borrowing: tuple[str, ...] = ()
    behind: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()


def _selects(selector: Any, namespace: str, labels: Mapping[str, str]) -> bool:
    if not isinstance(selector, dict):
        return False  # nil selector: no namespace
    have = dict(labels) or {}
    have.setdefault("kubernetes.io/metadata.name", namespace)
    for k, v in (selector.get("matchLabels") or {}).items():
        if have.get(k) != v:
            return False
    for e in selector.get("matchExpressions") or []:
        key, op, values = e.get("key"), e.get("operator"), e.get("values") or []
        present = key in have
        ok = {
            "In": present and have.get(key) in values,
            "NotIn": not present or have.get(key) not in values,
            "Exists": present,
            "DoesNotExist": not present,
        }.get(op, False)
        if not ok:
            return False
    return True


def judge(target: Target, workloads: Sequence[Workload]) -> tuple[list[Verdict], list[Finding]]:
    verdicts: list[Verdict] = []
    findings: list[Finding] = []
    queues = target.view.named(KUEUE, "ClusterQueue")
    holders = list(target.holders)  # the cluster's admitted workloads, then those admitted in this run
    for w in workloads:
        if w.framework not in target.frameworks:
            findings.append(
                w.key_origin("kind").finding(
                    RULE,
                    f"{w.title}: the Kueue Configuration of cluster {target.view.cluster.name!r} does not enable the "
                    f"{w.framework!r} integration (integrations.frameworks: {', '.join(target.frameworks)}): Kueue "
                    "would not manage it and it would run outside any quota; enable it or use a managed kind",
                )
            )
            continue
        queue, queue_at = w.queue, w.key_origin("metadata", "labels", QUEUE_LABEL)
        if not queue:
            if target.defaulting and target.local_queue(w.namespace, "default") is not None:
                queue, queue_at = "default", w.origin("metadata")
            else:
                have = ", ".join(target.queues_in(w.namespace)) or "none"
                findings.append(
                    w.origin("metadata").finding(
                        RULE,
                        f"{w.title} has no {QUEUE_LABEL} label and namespace {w.namespace!r} has no LocalQueue "
                        f"'default'{' for Kueue to default it to' if target.defaulting else ''}: Kueue would not "
                        f"manage it; label it with one of the namespace's LocalQueues ({have})",
                    )
                )
                continue
        missing: list[tuple[Origin, str]] = []

        def verdict(
            outcome: str,
            cq: str,
            message: str,
            why: str,
            at: Origin,
            fix: str,
            w: Workload = w,
            queue: str = queue,
            **kw: Any,
        ) -> Verdict:
            return Verdict(
                w,
                outcome,
                queue,
                cq,
                kw.pop("charges", ()),
                kw.pop("flavors", ()),
                message,
                why,
                at,
                fix,
                **kw,
            )

        lq = target.local_queue(w.namespace, queue)
        if lq is None:
            have = ", ".join(target.queues_in(w.namespace)) or "none"
            verdicts.append(
                verdict(
                    INADMISSIBLE,
                    "",
                    f"LocalQueue {queue} doesn't exist",
                    f"no LocalQueue {w.namespace}/{queue} on cluster {target.view.cluster.name!r} ({target.source})",
                    queue_at,
                    f"use a LocalQueue of namespace {w.namespace} ({have}), or give the namespace to a tenant",
                )
            )
            continue
        lq_spec = lq.body.get("spec") or {}
        cq_name = str(lq_spec.get("clusterQueue", ""))
        cq = queues.get(cq_name)
        if lq_spec.get("stopPolicy") in HELD:
            verdicts.append(
                verdict(
                    INADMISSIBLE,
                    cq_name,
                    f"LocalQueue {queue} is inactive",
                    f"LocalQueue {w.namespace}/{queue} has stopPolicy {lq_spec.get('stopPolicy')}",
                    lq.origin,
                    "wait until the queue is active again",
                )
            )
            continue
        if cq is None:
            verdicts.append(
                verdict(
                    INADMISSIBLE,
                    cq_name,
                    f"ClusterQueue {cq_name} doesn't exist",
                    f"LocalQueue {w.namespace}/{queue} points at a missing ClusterQueue",
                    lq.origin,
                    "point the LocalQueue at an existing ClusterQueue",
                )
            )
            continue
        cq_spec = cq.body.get("spec") or {}
        if cq_spec.get("stopPolicy") in HELD:
            verdicts.append(
                verdict(
                    INADMISSIBLE,
                    cq_name,
                    f"ClusterQueue {cq_name} is inactive",
                    f"ClusterQueue {cq_name} has stopPolicy {cq_spec.get('stopPolicy')} (draining or held)",
                    cq.origin,
                    "wait until the tenant's queue is active again",
                )
            )
            continue
        if not _selects(
            cq_spec.get("namespaceSelector"), w.namespace, target.namespaces.get(w.namespace, {})
        ):
            verdicts.append(
                verdict(
                    NEVER,
                    cq_name,
                    "Workload namespace doesn't match ClusterQueue selector",
                    f"ClusterQueue {cq_name}'s namespaceSelector does not select namespace {w.namespace}",
                    cq.origin,
                    f"add namespace {w.namespace} to the tenant of ClusterQueue {cq_name}",
                )
            )
            continue
        groups, _ = queue_quotas(cq_spec)
        covers_pods = any("pods" in covered for covered, _ in groups)
        charges = tuple(
            charge(w, i, target.rules, target.template, covers_pods, missing) for i in range(len(w.pod_sets))
        )
        for at, name in missing:
            have = ", ".join(target.templates_in(w.namespace)) or "none"
            findings.append(
                at.finding(
                    RULE,
                    f"{w.title}: no ResourceClaimTemplate {name!r} in namespace {w.namespace} on cluster {target.view.cluster.name!r} (it has: {have})",
                )
            )
        if missing:
            continue
        notes = _below_minimum(target, charges)
        refused = next((c.refusal for c in charges if c.refusal is not None), None)
        if refused is not None:
            verdicts.append(
                verdict(
                    INADMISSIBLE,
                    cq_name,
                    refused.message,
                    "Kueue refuses the claim before quota",
                    refused.origin,
                    refused.fix,
                    charges=charges,
                    notes=notes,
                )
            )
            continue
        pods = [(c, w.pod_sets[i].spec) for i, c in enumerate(charges)]
        fungible = cq_spec.get("flavorFungibility")
        fungibility: Mapping[str, Any] = fungible if isinstance(fungible, dict) else {}
        result = assign(
            target.tree,
            target.tree.queues[cq_name],
            groups,
            target.flavors,
            fungibility,
            pods,
            target.ignore_undeclared,
            [ps.annotations for ps in w.pod_sets],
            target.tas,
        )
        if result.mode >= BORROW:
            target.tree.add(cq_name, result.usage)
            holders.append(Holder(w.namespace, w.name, cq_name, dict(result.usage), w.origin()))
            borrowing = tuple(
                f"{r} {amount} on {f} from cohort {target.tree.root(target.tree.queues[cq_name]).name}"
                + (
                    f" (lent by {', '.join(n for n, _ in target.tree.lenders(target.tree.queues[cq_name], (f, r)))})"
                    if target.tree.lenders(target.tree.queues[cq_name], (f, r))
                    else ""
                )
                for f, r, amount in result.borrowing
            )
            how = "within nominal quota" if result.mode == FIT else "by borrowing " + "; ".join(borrowing)
            verdicts.append(
                verdict(
                    ADMITTED,
                    cq_name,
                    "",
                    f"fits {how}",
                    _budget_line(target, cq, [(f, r) for f, r, _ in result.borrowing]) or cq.origin,
                    "",
                    charges=charges,
                    notes=notes,
                    flavors=result.flavors,
                    borrowing=borrowing,
                )
            )
            continue
        lacking = set(result.blocked)
        if result.mode == NOFIT and result.topology and not result.uncovered:
            ruled_out = [f for f, _ in result.topology]
            verdicts.append(
                verdict(
                    NEVER,
                    cq_name,
                    result.message,
                    f"Topology Aware Scheduling rules out {', '.join(ruled_out)} for this job"
                    + ("; the queue's other flavors cannot hold it" if lacking else ""),
                    _flavor_line(target, cq, ruled_out[0]) or cq.origin,
                    _tas_fix(cq_name, result.topology),
                    charges=charges,
                    notes=notes,
                )
            )
            continue
        if result.mode == NOFIT:
            verdicts.append(
                verdict(
                    NEVER,
                    cq_name,
                    result.message,
                    "more than the queue can ever hold"
                    if not result.uncovered
                    else f"the queue does not cover {', '.join(result.uncovered)}",
                    _budget_line(target, cq, sorted(lacking)) or cq.origin,
                    _never_fix(cq_name, result.uncovered, lacking),
                    charges=charges,
                    notes=notes,
                )
            )
            continue
        behind = tuple(_behind(holders, target, cq_name, lacking))
        verdicts.append(
            verdict(
                PENDING,
                cq_name,
                result.message,
                "waits for quota: " + (", ".join(f"{r} on {f}" for f, r in sorted(lacking))),
                _budget_line(target, cq, sorted(lacking)) or cq.origin,
                "wait for the workloads holding the quota to finish, or ask less",
                charges=charges,
                notes=notes,
                behind=behind,
            )
        )
    return verdicts, findings


def _below_minimum(target: Target, charges: Sequence[PodSetCharge]) -> tuple[str, ...]:
    """Pod sets asking for less than the platform's `minimumPodRequests` (what `claim-admissible` assumes
    every pod asks for at least): Kueue charges what they ask, but the platform's promise is built on the
    minimum."""
    out = []
    for c in charges:
        asked = {x.resource: x.amount for x in c.per_pod}
        for name, least, origin in minimum_pod_requests(target.view):
            have = asked.get(name)
            if have is None or have < least:
                out.append(
                    f"pod set {c.name} asks for {f'{name} {have.canonical()}' if have else f'no {name}'}, less than the "
                    f"platform's minimumPodRequests {least.canonical()} ({origin.path}); Kueue charges what it asks"
                )
    return tuple(out)


def _budget_line(target: Target, cq: Built, wanted: Sequence[tuple[str, str]]) -> Origin | None:
    """The tenant's budget line behind the first (flavor, resource) of `wanted` on the target cluster (the
    flavor's line when the resource is not budgeted there), None for a queue no tenant renders."""
    tenant, cluster = cq.tenant, target.view.cluster.name
    budgets = tenant.budget_for(cluster) if tenant is not None else None
    if tenant is None or not budgets:
        return None
    for flavor, resource in wanted:
        for fb in budgets:
            if fb.flavor != flavor:
                continue
            for name, amount in target.view.catalog.amounts(fb, cluster):
                if name == resource:
                    return Origin(tenant.path, amount.origin.line, amount.origin.col)
            return Origin(tenant.path, fb.origin.line, fb.origin.col)
    return None


def _flavor_line(target: Target, cq: Built, flavor: str) -> Origin | None:
    """The tenant's budget line of `flavor` on the target cluster, None when it has none."""
    budgets = cq.tenant.budget_for(target.view.cluster.name) if cq.tenant is not None else None
    for fb in budgets or ():
        if fb.flavor == flavor and cq.tenant is not None:
            return Origin(cq.tenant.path, fb.origin.line, fb.origin.col)
    return None


def _tas_fix(cq: str, refused: Sequence[tuple[str, str]]) -> str:
    reason = refused[0][1]
    if "supports only" in reason:
        return (
            f"annotate the pod template with {REQUIRED} (or podset-preferred-topology, "
            f'podset-unconstrained-topology: "true") to use {refused[0][0]}; or bind every flavor of '
            f"ClusterQueue {cq} to a topology, so Kueue places unannotated jobs by topology too, or none "
            "(topology-mixed-queue)"
        )
    if "requested level" in reason:
        return f"ask for a level of {refused[0][0]}'s Topology, or give it that level"
    return (
        f"drop the topology annotations to use {refused[0][0]}, or bind every flavor of ClusterQueue {cq} to "
        "a topology (topology-mixed-queue)"
    )


def _never_fix(cq: str, uncovered: Sequence[str], lacking: set[tuple[str, str]]) -> str:
    if uncovered:
        return f"budget {', '.join(uncovered)} for the tenant of ClusterQueue {cq}, or do not ask for it"
    things = ", ".join(f"{r} on {f}" for f, r in sorted(lacking))
    return f"ask for less than the most ClusterQueue {cq} can hold ({things}), or raise the tenant's budget"


def _behind(holders: Sequence[Holder], target: Target, cq: str, lacking: set[tuple[str, str]]) -> list[str]:
    """The admitted workloads holding what the workload waits for: its own queue's first, then the tree's."""
    tree = target.tree
    root = tree.root(tree.queues[cq]) if cq in tree.queues else None
    same_tree = {n.name for n in tree.leaves(root)} if root is not None else {cq}
    out = []
    for h in sorted(holders, key=lambda h: (h.queue != cq, h.queue, h.namespace, h.name)):
        held = [(fr, v) for fr, v in h.holds.items() if fr in lacking]
        if h.queue in same_tree and held:
            what = ", ".join(f"{r} {v.normalize()} on {f}" for (f, r), v in held)
            out.append(
                f"{h.namespace}/{h.name} (ClusterQueue {h.queue}: {what}) at {h.origin.path}:{h.origin.line}"
            )
    return out


def exit_code(verdicts: Sequence[Verdict], findings: Sequence[Finding]) -> int:
    if findings or any(v.outcome in (NEVER, INADMISSIBLE) for v in verdicts):
        return 1
    return 2 if any(v.outcome == PENDING for v in verdicts) else 0


def amounts(total: Mapping[str, Decimal]) -> str:
    return ", ".join(f"{r} {v}" for r, v in sorted(total.items()))
