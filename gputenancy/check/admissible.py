"""Every claim template admissible: a pod that uses it fits in one flavor of its tenant's ClusterQueue.

Kueue assigns one flavor per resource group to a pod set, and refuses a flavor when the pod set's request
exceeds the flavor's maximum capacity (nominal quota plus what it may borrow):
"insufficient quota for <resource> in flavor <flavor>, previously considered podsets requests (0) +
current podset request (<n>) > maximum capacity (<m>)" (pkg/scheduler/flavorassigner/flavorassigner.go);
a resource no resource group covers is "resource <name> unavailable in ClusterQueue". A pod using a
claim template asks for its devices (counted through deviceClassMappings) plus at least the CPU and
memory the platform states (`minimumPodRequests` in base/platform.yaml, default cpu 100m, memory 128Mi).
Resources the Kueue Configuration leaves out of quota are not asked for: `resources.excludeResourcePrefixes`
(pkg/workload/workload.go `dropExcludedResources`), and with `quotaCheckStrategy: IgnoreUndeclared` (gate
QuotaCheckStrategy) resources the ClusterQueue does not cover.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any

from gputenancy.check.builtview import (
    DRA,
    KUEUE,
    Built,
    View,
    kueue_configuration,
    mappings,
    queue_of_namespace,
    spec_of,
)
from gputenancy.findings import Finding, Origin
from gputenancy.inputs.quantity import Quantity, QuantityError, parse
from gputenancy.inputs.spec import DEFAULT_POD_REQUESTS
from gputenancy.versions import gates as kueuegates

RULES: dict[str, Callable[[View], Iterator[Finding]]] = {}


def _q(value: Any) -> Quantity | None:
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        return None
    try:
        return parse(value)
    except QuantityError:
        return None


def undeclared_ignored(config: Mapping[str, Any] | None, view: View) -> bool:
    """quotaCheckStrategy: IgnoreUndeclared with the QuotaCheckStrategy gate on."""
    resources = (config or {}).get("resources") or {}
    if not isinstance(resources, Mapping) or resources.get("quotaCheckStrategy") != "IgnoreUndeclared":
        return False
    declared = (config or {}).get("featureGates") or {}
    try:
        effective = kueuegates.effective_gates(
            view.cluster.kueue_version, {k: v for k, v in declared.items() if isinstance(v, bool)}
        )
    except ValueError:
        return False
    return bool(effective.get("QuotaCheckStrategy", False))


def _excluded(config: Mapping[str, Any] | None) -> tuple[str, ...]:
    resources = (config or {}).get("resources") or {}
    prefixes = resources.get("excludeResourcePrefixes") if isinstance(resources, Mapping) else None
    return tuple(p for p in prefixes or [] if isinstance(p, str))


def _pod_requests(view: View) -> list[tuple[str, Quantity, Origin]]:
    stated = view.model.platform.pod_requests
    if stated:
        return list(stated)
    origin = Origin(view.model.platform.path, 1, 1)
    return [(name, parse(amount), origin) for name, amount in DEFAULT_POD_REQUESTS]


Quota = tuple[Quantity, Quantity | None, Quantity | None]  # nominal, borrowingLimit, lendingLimit
Quotas = dict[tuple[str, str], Quota]  # (flavor, resource) -> quota


def _quotas(cq: Built) -> tuple[list[tuple[set[str], list[str]]], Quotas]:
    """Resource groups as (covered resources, flavor names in order) and every quota of the queue."""
    groups: list[tuple[set[str], list[str]]] = []
    quotas: Quotas = {}
    for group in spec_of(cq).get("resourceGroups") or []:
        if not isinstance(group, Mapping):
            continue
        names: list[str] = []
        for flavor in group.get("flavors") or []:
            if not isinstance(flavor, Mapping) or not isinstance(flavor.get("name"), str):
                continue
            names.append(flavor["name"])
            for res in flavor.get("resources") or []:
                if isinstance(res, Mapping) and isinstance(res.get("name"), str):
                    nominal = _q(res.get("nominalQuota")) or parse(0)
                    quotas[(flavor["name"], res["name"])] = (
                        nominal,
                        _q(res.get("borrowingLimit")),
                        _q(res.get("lendingLimit")),
                    )
        covered = {r for r in group.get("coveredResources") or [] if isinstance(r, str)}
        groups.append((covered, names))
    return groups, quotas


def _cohort_root(view: View, cohort: str) -> str:
    parents: dict[str, str] = {}
    for c in view.of(KUEUE, "Cohort"):
        parent = spec_of(c).get("parentName")
        if isinstance(parent, str) and parent:
            parents[c.name] = parent
    seen = {cohort}
    while cohort in parents and parents[cohort] not in seen:
        cohort = parents[cohort]
        seen.add(cohort)
    return cohort


def _max_capacity(view: View, cq: Built, quotas: Quotas, flavor: str, resource: str) -> Quantity | None:
    """Nominal quota plus what the queue may borrow in its cohort; None for no bound known here."""
    nominal, borrowing, _ = quotas.get((flavor, resource), (parse(0), None, None))
    cohort = spec_of(cq).get("cohortName")
    if not isinstance(cohort, str) or not cohort:
        return nominal
    root = _cohort_root(view, cohort)
    lendable = parse(0)
    for other in view.of(KUEUE, "ClusterQueue"):
        other_cohort = spec_of(other).get("cohortName")
        if other.name == cq.name or not isinstance(other_cohort, str):
            continue
        if _cohort_root(view, other_cohort) != root:
            continue
        o_nominal, _, o_lending = _quotas(other)[1].get((flavor, resource), (parse(0), None, None))
        lendable = lendable + (o_lending if o_lending is not None else o_nominal)
    for co in view.of(KUEUE, "Cohort"):
        if _cohort_root(view, co.name) == root and spec_of(co).get("resourceGroups"):
            return None  # cohort-level quotas: not modelled here
    extra = lendable if borrowing is None else min(borrowing, lendable)
    return nominal + extra


def _device_needs(rct: Built, mapped: Mapping[str, str]) -> dict[str, Quantity]:
    needs: dict[str, Quantity] = {}
    devices = (spec_of(rct).get("spec") or {}).get("devices") or {}
    for req in devices.get("requests") or [] if isinstance(devices, Mapping) else []:
        exactly = req.get("exactly") if isinstance(req, Mapping) else None
        if not isinstance(exactly, Mapping) or exactly.get("allocationMode", "ExactCount") != "ExactCount":
            continue
        resource = mapped.get(str(exactly.get("deviceClassName")))
        count = exactly.get("count", 1)
        if resource is None or isinstance(count, bool) or not isinstance(count, int):
            continue
        needs[resource] = needs.get(resource, parse(0)) + parse(count)
    return needs


def _insufficient(resource: str, flavor: str, need: Quantity, cap: Quantity) -> str:
    return (
        f"insufficient quota for {resource} in flavor {flavor}, previously considered podsets requests (0) + "
        f"current podset request ({need.canonical()}) > maximum capacity ({cap.canonical()})"
    )


def claim_admissible(view: View) -> Iterator[Finding]:
    """For each tenant, cluster and claim template, at least one flavor of the tenant's ClusterQueue can
    hold a pod using it: the device count within nominal quota plus borrowing, and the CPU and memory a
    pod asks for at least (`minimumPodRequests` in base/platform.yaml, default cpu 100m and memory
    128Mi) covered with quota in the same flavor, unless the Kueue Configuration leaves them out of quota
    (`excludeResourcePrefixes`, `quotaCheckStrategy: IgnoreUndeclared`).

    Passes: flavor h100 with nvidia.com/gpu 8, cpu 96, memory 1792Gi and a template of 8 GPUs.
    Fails: a tenant budgeting only GPUs (no cpu); a template of 8 GPUs with nominal 4 and no borrowing.
    """
    config, _ = kueue_configuration(view)
    mapped = mappings(config)
    excluded = _excluded(config)
    ignore_undeclared = undeclared_ignored(config, view)
    minimum = _pod_requests(view)
    cache: dict[str, tuple[list[tuple[set[str], list[str]]], Quotas]] = {}
    for rct in view.of(DRA, "ResourceClaimTemplate"):
        cq = queue_of_namespace(view, rct.namespace)
        devices = _device_needs(rct, mapped)
        if cq is None or not devices:
            continue  # built-claim-chain reports it
        groups, quotas = cache.setdefault(cq.name, _quotas(cq))
        needs: dict[str, tuple[Quantity, str]] = {r: (q, "the claim template") for r, q in devices.items()}
        for name, amount, origin in minimum:
            if name not in needs and not amount.is_negative() and amount > parse(0):
                where = (
                    f"minimumPodRequests at {origin.path}" if view.model.platform.pod_requests else "default"
                )
                needs[name] = (amount, where)
        needs = {r: v for r, v in needs.items() if not any(r.startswith(p) for p in excluded)}
        covered_all = set().union(*(c for c, _ in groups)) if groups else set()
        subject = f"ResourceClaimTemplate {rct.namespace}/{rct.name} on cluster {view.cluster.name!r}"
        tenant = rct.tenant.path if rct.tenant is not None else "the tenant file"
        for resource in sorted(needs):
            if resource not in covered_all and not ignore_undeclared:
                amount, why = needs[resource]
                yield rct.origin.finding(
                    "claim-admissible",
                    f"{subject}: a pod using it asks for {resource} ({amount.canonical()}, {why}), but "
                    f"ClusterQueue {cq.name!r} does not cover {resource}: Kueue leaves it pending with "
                    f'"resource {resource} unavailable in ClusterQueue"; budget {resource} on the flavors '
                    f"in {tenant}{rct.changed_by('patches')}",
                )
        for covered, flavors in groups:
            wanted = {r: needs[r][0] for r in needs if r in covered}
            if not wanted or not flavors:
                continue
            reasons: list[str] = []
            for flavor in flavors:
                lacking = []
                for resource, amount in sorted(wanted.items()):
                    cap = _max_capacity(view, cq, quotas, flavor, resource)
                    if cap is not None and amount > cap:
                        lacking.append(_insufficient(resource, flavor, amount, cap))
                if not lacking:
                    break
                reasons.append(lacking[0])
            else:
                asks = ", ".join(f"{r} {q.canonical()}" for r, q in sorted(wanted.items()))
                yield rct.origin.finding(
                    "claim-admissible",
                    f"{subject}: no flavor of ClusterQueue {cq.name!r} can ever hold a pod using it ({asks}): "
                    f'Kueue says "{"; ".join(reasons)}"; raise the budget (nominal or borrowingLimit) on a '
                    f"flavor in {tenant}, or lower the claim's count{rct.changed_by('patches')}",
                )


RULES["claim-admissible"] = claim_admissible
