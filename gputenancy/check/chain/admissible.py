"""Every claim template admissible: a pod that uses it fits in one flavor of its tenant's ClusterQueue.

Kueue assigns one flavor per resource group to a pod set, and refuses a flavor when the pod set's request
exceeds the flavor's maximum capacity (nominal quota plus what it may borrow):
"insufficient quota for <resource> in flavor <flavor>, previously considered podsets requests (0) +
current podset request (<n>) > maximum capacity (<m>)" (pkg/scheduler/flavorassigner/flavorassigner.go);
a resource no resource group covers is "resource <name> unavailable in ClusterQueue". A pod using a
claim template asks for its devices (counted through deviceClassMappings) plus at least the CPU and
memory the platform states (`minimumPodRequests` in base/platform.yaml, default cpu 100m, memory 128Mi).
Every pod also counts one `pods` when the ClusterQueue covers `pods`, and `resources.transformations` turn
container requests into what Kueue charges (Replace drops the input, Retain keeps it).
Resources the Kueue Configuration leaves out of quota are not asked for: `resources.excludeResourcePrefixes`
(pkg/workload/workload.go `dropExcludedResources`), and with `quotaCheckStrategy: IgnoreUndeclared` (gate
QuotaCheckStrategy) resources the ClusterQueue does not cover. A queue with `stopPolicy: Hold` or
`HoldAndDrain` admits nothing: it is not judged.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from decimal import Decimal
from typing import Any

from gputenancy.check.chain.builtview import (
    DRA,
    KUEUE,
    Built,
    View,
    kueue_configuration,
    mappings,
    queue_of_namespace,
    spec_of,
)
from gputenancy.check.chain.charging import (
    _q,
    claim_device_classes,
    config_transformations,
    excluded_prefixes,
    transformed,
)
from gputenancy.common.findings import Finding, Origin, Severity
from gputenancy.inputs.quantity import ZERO, Quantity, parse
from gputenancy.inputs.records import DEFAULT_POD_REQUESTS
from gputenancy.policy import quotatree
from gputenancy.versions import gates as kueuegates

RULES: dict[str, Callable[[View], Iterator[Finding]]] = {}
_CHANGES = ("patches", "patchesStrategicMerge", "patchesJson6902", "replacements", "transformers")


ONE = parse(1)
HELD = ("Hold", "HoldAndDrain")
_NONE = Decimal(0)
_TENANT = "\x00tenant\x00"


def undeclared_ignored(config: Mapping[str, Any] | None, view: View) -> bool:
    """quotaCheckStrategy: IgnoreUndeclared with the QuotaCheckStrategy gate on."""
    resources = (config or {}).get("resources") or {}
    if not isinstance(resources, dict) or resources.get("quotaCheckStrategy") != "IgnoreUndeclared":
        return False
    declared = (config or {}).get("featureGates") or {}
    try:
        effective = kueuegates.effective_gates(
            view.cluster.kueue_version, {k: v for k, v in declared.items() if isinstance(v, bool)}
        )
    except ValueError:
        return False
    return bool(effective.get("QuotaCheckStrategy", False))


def minimum_pod_requests(view: View) -> list[tuple[str, Quantity, Origin]]:
    stated = view.model.platform.pod_requests
    if stated:
        return list(stated)
    origin = Origin(view.model.platform.path, 1, 1)
    return [(name, parse(amount), origin) for name, amount in DEFAULT_POD_REQUESTS]


def _held(cq: Built) -> bool:
    return spec_of(cq).get("stopPolicy") in HELD


def _not_judged(view: View, cq: Built, rcts: list[Built]) -> Finding:
    """The note for a stopped or draining queue: it admits nothing by design, so its claim templates are
    not judged."""
    policy = spec_of(cq).get("stopPolicy")
    tenant = cq.tenant
    why = (
        f"`state: draining` in {tenant.path}"
        if tenant is not None and tenant.state == "draining" and policy == "HoldAndDrain"
        else f"stopPolicy: {policy}{cq.changed_by(*_CHANGES)}"
    )
    names = ", ".join(sorted({r.name for r in rcts}))
    return cq.origin.finding(
        "claim-admissible",
        f"ClusterQueue {cq.name!r} on cluster {view.cluster.name!r} is stopped ({why}): Kueue admits nothing "
        f"from it by design, so its claim templates ({names}) are not judged for admissibility; they are "
        "again when the queue is active",
        Severity.NOTE,
    )


Written = dict[tuple[str, str], str]  # (flavor, resource) -> what to change, for zeros the pipeline writes


def _written_zeros(view: View, cq: Built) -> Written:
    """The quotas of `cq` the pipeline writes as 0 itself: a resource its group covers (because the tenant
    budgets it on another flavor) that the tenant does not budget on this flavor."""
    tenant = cq.tenant
    budgets = tenant.budget_for(view.cluster.name) if tenant is not None else None
    if tenant is None or not budgets:
        return {}
    stated: dict[str, set[str]] = {}
    where: dict[str, list[str]] = {}
    origins: dict[str, Origin] = {}
    for fb in budgets:
        origins[fb.flavor] = fb.origin
        for resource, amount in view.catalog.amounts(fb, view.cluster.name):
            stated.setdefault(fb.flavor, set()).add(resource)
            where.setdefault(resource, []).append(f"{fb.flavor} at {tenant.path}:{amount.origin.line}")
    out: Written = {}
    for (flavor, resource), (nominal, _, _) in queue_quotas(spec_of(cq))[1].items():
        if nominal.value == 0 and flavor in origins and resource not in stated.get(flavor, set()):
            elsewhere = ", ".join(where.get(resource, [])) or "another flavor"
            out[(flavor, resource)] = (
                f"a 0 the pipeline writes: {resource} is budgeted on {elsewhere}, not on {flavor}; budget it at "
                f"{tenant.path}:{origins[flavor].line}"
            )
    return out


Quota = tuple[Quantity, Quantity | None, Quantity | None]  # nominal, borrowingLimit, lendingLimit
Quotas = dict[tuple[str, str], Quota]  # (flavor, resource) -> quota


def queue_quotas(spec: Mapping[str, Any]) -> tuple[list[tuple[set[str], list[str]]], Quotas]:
    """Resource groups as (covered resources, flavor names in order) and every quota of a queue's spec."""
    groups: list[tuple[set[str], list[str]]] = []
    quotas: Quotas = {}
    for group in spec.get("resourceGroups") or []:
        if not isinstance(group, dict):
            continue
        names: list[str] = []
        for flavor in group.get("flavors") or []:
            if not isinstance(flavor, dict) or not isinstance(flavor.get("name"), str):
                continue
            names.append(flavor["name"])
            for res in flavor.get("resources") or []:
                if isinstance(res, dict) and isinstance(res.get("name"), str):
                    nominal = _q(res.get("nominalQuota")) or ZERO
                    quotas[(flavor["name"], res["name"])] = (
                        nominal,
                        _q(res.get("borrowingLimit")),
                        _q(res.get("lendingLimit")),
                    )
        covered = {r for r in group.get("coveredResources") or [] if isinstance(r, str)}
        groups.append((covered, names))
    return groups, quotas


Lent = tuple[str, list[tuple[str, str, Decimal]]]  # cohortName ("": none), (flavor, resource, amount)


def lent(spec: Mapping[str, Any]) -> Lent:
    """What a ClusterQueue (its spec) lends its cohort: per flavor and resource, its nominal quota less
    what its lendingLimit keeps (`quotatree.lendable`: the lendingLimit when below nominal)."""
    cohort = spec.get("cohortName")
    amounts = [
        (flavor, resource, quotatree.lendable(_values(quota)))
        for (flavor, resource), quota in queue_quotas(spec)[1].items()
    ]
    return (cohort if isinstance(cohort, str) else "", amounts)


def _values(quota: Quota) -> quotatree.Quota:
    nominal, borrowing, lending = quota
    return (
        nominal.value,
        borrowing.value if borrowing is not None else None,
        lending.value if lending is not None else None,
    )


class Pool:
    """What each ClusterQueue may reach through its cohorts (`quotatree.Tree`): made from the Cohorts
    (their parents and own quotas, `spec.resourceGroups`) and what every ClusterQueue of a cluster lends
    its cohort (`lent`), in order."""

    def __init__(self, cohorts: Sequence[Built], lent: Iterable[Lent]) -> None:
        parents: dict[str, str] = {}
        own: dict[str, dict[tuple[str, str], quotatree.Quota]] = {}
        for c in cohorts:
            spec = spec_of(c)
            parent = spec.get("parentName")
            if isinstance(parent, str) and parent:
                parents[c.name] = parent
            held = queue_quotas(spec)[1]
            if held:
                own[c.name] = {key: _values(quota) for key, quota in held.items()}
        self.parents = parents
        self.queues: dict[str, tuple[list[tuple[set[str], list[str]]], Quotas]] = {}
        self.capacities: dict[tuple[str, str, str], Quantity | None] = {}
        self.tree = quotatree.Tree(
            parents,
            own,
            quotatree.summed(
                (cohort, (flavor, resource), value)
                for cohort, amounts in lent
                if cohort
                for flavor, resource, value in amounts
            ),
        )

    @classmethod
    def of(cls, view: View) -> Pool:
        """The pool of the view's cluster (shared by the views of its parts)."""
        if view.around is not None:
            pool: Pool = view.around.pool
            return pool
        return cls(view.of(KUEUE, "Cohort"), (lent(spec_of(cq)) for cq in view.of(KUEUE, "ClusterQueue")))

    def queue(self, cq: Built) -> tuple[list[tuple[set[str], list[str]]], Quotas]:
        """The queue's resource groups and quotas (`_quotas`), worked out once."""
        found = self.queues.get(cq.name)
        if found is None:
            found = self.queues[cq.name] = queue_quotas(spec_of(cq))
        return found

    def described(self, tree: str) -> str:
        """What a queue of `tree` may reach depends on, as text (a part of the key of its findings)."""
        return self.tree.describe(tree)

    def root(self, cohort: str) -> str:
        return self.tree.root(cohort)

    def max_capacity(self, cq: Built, flavor: str, resource: str) -> Quantity | None:
        """Nominal quota plus what the queue may borrow through its cohorts; None for no bound known
        here (a cohort in a cycle of parents, which Kueue deactivates)."""
        key = (cq.name, flavor, resource)
        if key not in self.capacities:
            nominal, borrowing, lending = self.queue(cq)[1].get((flavor, resource), (ZERO, None, None))
            cohort = spec_of(cq).get("cohortName")
            reach = self.tree.reach(
                cohort if isinstance(cohort, str) and cohort else None,
                _values((nominal, borrowing, lending)),
                (flavor, resource),
            )
            self.capacities[key] = Quantity(reach, nominal.format) if reach is not None else None
        return self.capacities[key]


def _device_needs(rct: Built, mapped: Mapping[str, str]) -> dict[str, Quantity]:
    """Devices per quota resource a pod using the template is charged (Kueue sums the counts)."""
    needs: dict[str, int] = {}
    spec = spec_of(rct).get("spec")
    devices = (spec or {}).get("devices") or {} if isinstance(spec, dict) else {}
    for req in devices.get("requests") or [] if isinstance(devices, dict) else []:
        exactly = req.get("exactly") if isinstance(req, dict) else None
        if not isinstance(exactly, dict) or exactly.get("allocationMode", "ExactCount") != "ExactCount":
            continue
        per_class, _, _ = claim_device_classes({"devices": {"requests": [{"exactly": exactly}]}})
        for name, count in per_class.items():
            resource = mapped.get(name)
            if resource is not None:
                needs[resource] = needs.get(resource, 0) + count
    return {resource: _q(n) or ZERO for resource, n in needs.items()}


def insufficient(resource: str, flavor: str, need: Quantity, cap: Quantity) -> str:
    """Kueue's reason (flavorassigner.go, without its "previously considered podsets requests (0) +")."""
    return (
        f'"insufficient quota for {resource} in flavor {flavor}, current podset request ({need.canonical()}) > '
        f'maximum capacity ({cap.canonical()})"'
    )


def claim_admissible(view: View) -> Iterator[Finding]:
    """For each tenant, cluster and claim template, at least one flavor of the tenant's ClusterQueue can
    hold a pod using it, as Kueue's flavor assignment judges it: every covered resource the pod is charged
    must fit in the same flavor (nominal quota plus what the cohort lets it borrow). A pod is charged the
    claim's devices, the CPU and memory it asks for at least (`minimumPodRequests` in base/platform.yaml,
    default cpu 100m and memory 128Mi) as the Kueue Configuration's `resources.transformations` turn them,
    and one `pods` when the queue covers `pods`; what the Configuration leaves out of quota
    (`excludeResourcePrefixes`, `quotaCheckStrategy: IgnoreUndeclared`) is not. The finding names each
    resource and flavor that blocks, and a 0 quota the pipeline writes itself (a resource the group covers
    but the flavor's budget does not name) with the budget line to change. A stopped or draining queue
    (`state: draining`) admits nothing by design: its templates are not judged, and a note says so.

    Passes: flavor h100 with nvidia.com/gpu 8, cpu 96, memory 1792Gi and a template of 8 GPUs.
    Fails: a tenant budgeting only GPUs (no cpu); a template of 8 GPUs with nominal 4 and no borrowing;
    `pods: 110` budgeted on the CPU flavor only (the GPU flavor gets pods 0).
    """
    config, _ = kueue_configuration(view)
    mapped = mappings(config)
    excluded = excluded_prefixes(config)
    ignore_undeclared = undeclared_ignored(config, view)
    minimum = minimum_pod_requests(view)
    transformations = config_transformations(config)
    pool = Pool.of(view)
    held: dict[str, tuple[Built, list[Built]]] = {
        cq.name: (cq, []) for cq in view.of(KUEUE, "ClusterQueue") if _held(cq)
    }
    verdicts: dict[tuple[str, tuple[tuple[str, Quantity, str], ...]], list[str]] = {}
    found: dict[
        tuple[Origin, str, tuple[str, tuple[tuple[str, Quantity, str], ...]]], tuple[Built, list[str]]
    ] = {}
    for rct in view.of(DRA, "ResourceClaimTemplate"):
        cq = queue_of_namespace(view, rct.namespace)
        devices = _device_needs(rct, mapped)
        if cq is None or not devices:
            continue  # built-claim-chain reports it
        if cq.name in held:
            held[cq.name][1].append(rct)
            continue
        needs: dict[str, tuple[Quantity, str]] = {}
        for name, amount, origin in minimum:
            if not amount.is_negative() and amount > ZERO:
                where = (
                    f"minimumPodRequests at {origin.path}" if view.model.platform.pod_requests else "default"
                )
                needs[name] = (amount, where)
        needs = transformed(needs, transformations)
        for resource, q in devices.items():
            needs[resource] = (q, "the claim template")
        if any("pods" in covered for covered, _ in pool.queue(cq)[0]):
            needs["pods"] = (ONE, "one per pod")  # Kueue counts every pod when the queue covers pods
        key = (cq.name, tuple(sorted((r, q, w) for r, (q, w) in needs.items() if not r.startswith(excluded))))
        if key not in verdicts:
            verdicts[key] = _verdict(
                pool,
                cq,
                key[1],
                ignore_undeclared,
                _once(functools.partial(_written_zeros, view, cq)),
            )
        if verdicts[key]:
            # one finding per template and problem, naming every namespace it is rendered in
            found.setdefault((rct.origin, rct.name, key), (rct, []))[1].append(rct.namespace)
    for cq, rcts in held.values():
        if rcts:
            yield _not_judged(view, cq, rcts)
    for (_, name, key), (rct, namespaces) in found.items():
        where = (
            f"{', '.join(namespaces)}/{name}"
            if len(namespaces) == 1
            else f"{name} (namespaces {', '.join(namespaces)})"
        )
        subject = f"ResourceClaimTemplate {where} on cluster {view.cluster.name!r}"
        tenant = rct.tenant.path if rct.tenant is not None else "the tenant file"
        for problem in verdicts[key]:
            yield rct.origin.finding(
                "claim-admissible",
                f"{subject}: {problem.replace(_TENANT, tenant)}{rct.changed_by(*_CHANGES)}",
            )


def _once(make: Callable[[], Written]) -> Callable[[], Written]:
    """`make`, called at most once (functools.cache would copy its attributes on every verdict)."""
    made: list[Written] = []

    def get() -> Written:
        if not made:
            made.append(make())
        return made[0]

    return get


def _verdict(
    pool: Pool,
    cq: Built,
    needs: tuple[tuple[str, Quantity, str], ...],
    ignore_undeclared: bool,
    zeros: Callable[[], Written],
) -> list[str]:
    """Why no flavor of `cq` holds a pod asking for `needs`; messages name the tenant file as _TENANT."""
    groups = pool.queue(cq)[0]
    covered_all = set().union(*(c for c, _ in groups)) if groups else set()
    problems = []
    for resource, amount, why in needs:
        if resource not in covered_all and not ignore_undeclared:
            problems.append(
                f"a pod using it asks for {resource} ({amount.canonical()}, {why}), but ClusterQueue "
                f"{cq.name!r} does not cover {resource}: Kueue leaves it pending with "
                f'"resource {resource} unavailable in ClusterQueue"; budget {resource} on the flavors in '
                + _TENANT
            )
    for covered, flavors in groups:
        wanted = [(r, q) for r, q, _ in needs if r in covered]
        if not wanted or not flavors:
            continue
        blocking: list[tuple[str, str, Quantity, Quantity]] = []
        for flavor in flavors:
            lacking = []
            for resource, amount in wanted:
                cap = pool.max_capacity(cq, flavor, resource)
                if cap is not None and amount > cap:
                    lacking.append((resource, flavor, amount, cap))
            if not lacking:
                break
            blocking.extend(lacking)
        else:
            asks = ", ".join(f"{r} {q.canonical()}" for r, q in wanted)
            reasons = []
            for resource, flavor, amount, cap in blocking:
                zero = zeros().get((flavor, resource)) if cap.value == 0 else None
                reasons.append(insufficient(resource, flavor, amount, cap) + (f" ({zero})" if zero else ""))
            problems.append(
                f"no flavor of ClusterQueue {cq.name!r} can ever hold a pod using it ({asks}); Kueue says "
                f"{'; '.join(reasons)}; raise the budget (nominal or borrowingLimit) in {_TENANT} or lower what "
                "the pod asks for"
            )
    return problems


RULES["claim-admissible"] = claim_admissible
