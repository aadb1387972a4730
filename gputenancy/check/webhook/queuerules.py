"""Kueue's validating webhooks for ClusterQueue and Cohort (pkg/webhooks/clusterqueue_webhook.go,
cohort_webhook.go, common.go): resource groups, quotas, limits, fair sharing, preemption. Each rule's
docstring is its documentation, listed by `gputenancy.check.webhook.webhooks.RULES`."""

from __future__ import annotations

import functools
import json
from collections.abc import Iterator, Mapping
from typing import Any

from gputenancy.check.webhook.admission import Problem, get_in, mapping_items, string_items
from gputenancy.common.names import invalid, label_selector_errors, qualified_name_errors
from gputenancy.common.objects import FieldPath
from gputenancy.inputs.quantity import ZERO, Quantity, QuantityError, parse

_NANO = parse("1n")


# --- quantities and lists ------------------------------------------------------------------------


def _len(value: Any) -> int:
    return len(value) if isinstance(value, list) else 0


@functools.lru_cache(maxsize=4096, typed=True)
def _parse(value: str | int | float) -> Quantity:
    return parse(value)


def _parse_any(value: Any) -> Quantity:
    """parse() with a cache for the scalars rendered objects repeat; QuantityError for anything else."""
    if isinstance(value, str | int | float):
        return _parse(value)
    return parse(value)


def _quantity(value: Any) -> Quantity | None:
    try:
        return _parse_any(value)
    except QuantityError:
        return None


# --- Kueue resource groups (pkg/webhooks/clusterqueue_webhook.go, cohort_webhook.go, common.go) ----

RG: FieldPath = ("spec", "resourceGroups")


def _groups(body: Mapping[str, Any]) -> Iterator[tuple[FieldPath, Mapping[str, Any]]]:
    for i, rg in mapping_items(get_in(body, "spec", "resourceGroups")):
        yield (*RG, i), rg


def _quotas(body: Mapping[str, Any]) -> Iterator[tuple[FieldPath, Mapping[str, Any], int, list[Any]]]:
    """(path of flavors[j].resources[i], resource quota, i, coveredResources of its group)."""
    for path, rg in _groups(body):
        covered = rg.get("coveredResources")
        covered = covered if isinstance(covered, list) else []
        for j, flavor in mapping_items(rg.get("flavors")):
            for i, quota in mapping_items(flavor.get("resources")):
                yield (*path, "flavors", j, "resources", i), quota, i, covered


def _resource_names(body: Mapping[str, Any]) -> Iterator[Problem]:
    for path, rg in _groups(body):
        for j, name in string_items(rg.get("coveredResources")):
            for msg in qualified_name_errors(name):
                yield Problem((*path, "coveredResources", j), invalid(name, msg))


def _resources_unique(body: Mapping[str, Any]) -> Iterator[Problem]:
    seen: set[str] = set()
    for path, rg in _groups(body):
        for j, name in string_items(rg.get("coveredResources")):
            if name in seen:
                yield Problem(
                    (*path, "coveredResources", j),
                    f"Duplicate value: {json.dumps(name)} (a resource may appear in only one resource group)",
                )
            seen.add(name)


def _flavors_unique(body: Mapping[str, Any]) -> Iterator[Problem]:
    seen: set[str] = set()
    for path, rg in _groups(body):
        for j, flavor in mapping_items(rg.get("flavors")):
            name = flavor.get("name")
            if isinstance(name, str):
                if name in seen:
                    yield Problem(
                        (*path, "flavors", j, "name"),
                        f"Duplicate value: {json.dumps(name)} "
                        "(a flavor may appear in only one resource group)",
                    )
                seen.add(name)


def _flavor_order(body: Mapping[str, Any]) -> Iterator[Problem]:
    for path, quota, i, covered in _quotas(body):
        if i < len(covered) and quota.get("name") != covered[i]:
            yield Problem(
                (*path, "name"),
                f"{invalid(quota.get('name'), 'must match the name in coveredResources')} "
                f"(coveredResources[{i}] is {json.dumps(covered[i])})",
            )


def _resource_count(body: Mapping[str, Any]) -> Iterator[Problem]:
    for path, rg in _groups(body):
        covered = rg.get("coveredResources")
        for j, flavor in mapping_items(rg.get("flavors")):
            resources = flavor.get("resources")
            if isinstance(covered, list) and isinstance(resources, list) and len(resources) != len(covered):
                yield Problem(
                    (*path, "flavors", j, "resources"),
                    f"{len(resources)} resources for {len(covered)} coveredResources: "
                    "flavors must have the same number of resources as the coveredResources",
                )


def _quota_nonnegative(body: Mapping[str, Any]) -> Iterator[Problem]:
    for path, quota, _, _ in _quotas(body):
        for field in ("nominalQuota", "borrowingLimit", "lendingLimit"):
            value = quota.get(field)
            if value is None:
                continue
            try:
                q = _parse_any(value)
            except QuantityError as exc:
                yield Problem((*path, field), invalid(value, str(exc)))
                continue
            if q < ZERO:
                yield Problem((*path, field), invalid(value, "must be greater than or equal to 0"))


def _limits_need(
    body: Mapping[str, Any], fields: tuple[str, ...], owner: str, what: str
) -> Iterator[Problem]:
    if get_in(body, "spec", owner):
        return
    for path, quota, _, _ in _quotas(body):
        for field in fields:
            if quota.get(field) is not None:
                yield Problem((*path, field), invalid(quota[field], f"must be nil when {what} is empty"))


def _fair_sharing(body: Mapping[str, Any]) -> Iterator[Problem]:
    value = get_in(body, "spec", "fairSharing", "weight")
    if value is None:
        return
    path = ("spec", "fairSharing", "weight")
    try:
        weight = _parse_any(value)
    except QuantityError as exc:
        yield Problem(path, invalid(value, str(exc)))
        return
    if weight < ZERO:
        yield Problem(path, invalid(value, "must be greater than or equal to 0"))
    elif weight > ZERO and not weight > _NANO:
        yield Problem(path, invalid(value, "When not 0, weight must be > 10e-9"))


def cq_resource_name(body: Mapping[str, Any]) -> Iterator[Problem]:
    """Each coveredResources entry is a valid resource name (a qualified name, like a label key).

    Passes: coveredResources: [cpu, nvidia.com/gpu].
    Fails: coveredResources: ["gpu memory"].
    """
    yield from _resource_names(body)


def cq_resource_unique(body: Mapping[str, Any]) -> Iterator[Problem]:
    """A resource appears in only one resource group.

    Passes: group 0 covers [cpu, memory], group 1 covers [nvidia.com/gpu].
    Fails: group 0 and group 1 both cover cpu.
    """
    yield from _resources_unique(body)


def cq_flavor_unique(body: Mapping[str, Any]) -> Iterator[Problem]:
    """A flavor appears in only one resource group.

    Passes: group 0 uses flavor default, group 1 uses flavor a100.
    Fails: group 0 and group 1 both list flavor default.
    """
    yield from _flavors_unique(body)


def cq_flavor_order(body: Mapping[str, Any]) -> Iterator[Problem]:
    """flavors[j].resources[i].name equals coveredResources[i]: same names, same order.

    Passes: coveredResources [cpu, memory]; resources [{name: cpu}, {name: memory}].
    Fails: coveredResources [cpu, memory]; resources [{name: memory}, {name: cpu}].
    """
    yield from _flavor_order(body)


def cq_resource_count(body: Mapping[str, Any]) -> Iterator[Problem]:
    """Every flavor lists as many resources as the group covers (a CRD CEL rule, checked without a CRD).

    Passes: coveredResources [cpu, memory]; a flavor with 2 resources.
    Fails: coveredResources [cpu, memory]; a flavor with only cpu.
    """
    yield from _resource_count(body)


def cq_quota_nonnegative(body: Mapping[str, Any]) -> Iterator[Problem]:
    """nominalQuota, borrowingLimit and lendingLimit are valid quantities >= 0.

    Passes: nominalQuota: "4".
    Fails: nominalQuota: "-1"; lendingLimit: "lots".
    """
    yield from _quota_nonnegative(body)


def cq_borrowing_limit_cohort(body: Mapping[str, Any]) -> Iterator[Problem]:
    """borrowingLimit is set only when the ClusterQueue has a cohortName (also a CRD CEL rule).

    Passes: cohortName: research; borrowingLimit: "2".
    Fails: no cohortName; borrowingLimit: "2".
    """
    yield from _limits_need(body, ("borrowingLimit",), "cohortName", "cohort")


def cq_lending_limit_cohort(body: Mapping[str, Any]) -> Iterator[Problem]:
    """lendingLimit is set only when the ClusterQueue has a cohortName.

    Passes: cohortName: research; lendingLimit: "2".
    Fails: no cohortName; lendingLimit: "2".
    """
    yield from _limits_need(body, ("lendingLimit",), "cohortName", "cohort")


def cq_lending_limit(body: Mapping[str, Any]) -> Iterator[Problem]:
    """lendingLimit is at most nominalQuota.

    Passes: nominalQuota "4", lendingLimit "4".
    Fails: nominalQuota "4", lendingLimit "6".
    """
    for path, quota, _, _ in _quotas(body):
        lend, nominal = _quantity(quota.get("lendingLimit")), _quantity(quota.get("nominalQuota"))
        if lend is not None and nominal is not None and lend > nominal:
            yield Problem(
                (*path, "lendingLimit"),
                f"{quota['lendingLimit']} exceeds nominalQuota {quota['nominalQuota']} "
                "(must be less than or equal to the nominalQuota)",
            )


def cq_total_flavors(body: Mapping[str, Any]) -> Iterator[Problem]:
    """At most 256 flavors across all resource groups.

    Passes: 16 groups of 16 flavors.
    Fails: 5 groups of 64 flavors (320).
    """
    total = sum(_len(rg.get("flavors")) for _, rg in _groups(body))
    if total > 256:
        yield Problem(RG, f"total number of flavors across all resourceGroups must be ≤ 256, got {total}")


def cq_total_resources(body: Mapping[str, Any]) -> Iterator[Problem]:
    """At most 256 covered resources across all resource groups.

    Passes: 4 groups covering 64 resources each.
    Fails: 5 groups covering 64 resources each (320).
    """
    total = sum(_len(rg.get("coveredResources")) for _, rg in _groups(body))
    if total > 256:
        yield Problem(
            RG, f"total number of covered resources across all resourceGroups must be ≤ 256, got {total}"
        )


def cq_flavor_resource_combinations(body: Mapping[str, Any]) -> Iterator[Problem]:
    """At most 512 flavor x resource entries in one resource group.

    Passes: 8 flavors x 64 resources.
    Fails: 9 flavors x 64 resources (576).
    """
    for path, rg in _groups(body):
        total = sum(_len(f.get("resources")) for _, f in mapping_items(rg.get("flavors")))
        if total > 512:
            yield Problem(
                path, f"number of flavor-resource combinations in a resourceGroup must be ≤ 512, got {total}"
            )


def cq_namespace_selector(body: Mapping[str, Any]) -> Iterator[Problem]:
    """namespaceSelector is a valid LabelSelector (In/NotIn need values, Exists/DoesNotExist forbid them).

    Passes: {matchExpressions: [{key: team, operator: In, values: [a]}]}.
    Fails: {matchExpressions: [{key: team, operator: In}]}; operator: Equals.
    """
    selector = get_in(body, "spec", "namespaceSelector")
    for path, message in label_selector_errors(selector, ("spec", "namespaceSelector")):
        yield Problem(path, message)


def cq_fair_sharing(body: Mapping[str, Any]) -> Iterator[Problem]:
    """fairSharing.weight is >= 0 and, when not 0, greater than 1n (10^-9).

    Passes: weight: "1"; weight: "0".
    Fails: weight: "-1"; weight: "1n".
    """
    yield from _fair_sharing(body)


def cq_preemption(body: Mapping[str, Any]) -> Iterator[Problem]:
    """reclaimWithinCohort Never forbids a borrowWithinCohort policy other than Never (also a CRD CEL rule).

    Passes: reclaimWithinCohort: Any; borrowWithinCohort: {policy: LowerPriority}.
    Fails: reclaimWithinCohort: Never; borrowWithinCohort: {policy: LowerPriority}.
    """
    preemption = get_in(body, "spec", "preemption")
    reclaim = get_in(preemption, "reclaimWithinCohort") or "Never"
    policy = get_in(preemption, "borrowWithinCohort", "policy") or "Never"
    if reclaim == "Never" and policy != "Never":
        yield Problem(
            ("spec", "preemption"), "reclaimWithinCohort=Never and borrowWithinCohort.Policy!=Never"
        )


def cq_flavor_fungibility(body: Mapping[str, Any]) -> Iterator[Problem]:
    """preference needs whenCanBorrow and whenCanPreempt both TryNextFlavor (also a CRD CEL rule).

    Passes: whenCanBorrow/whenCanPreempt TryNextFlavor, preference: BorrowingOverPreemption.
    Fails: whenCanBorrow: MayStopSearch with a preference.
    """
    ff = get_in(body, "spec", "flavorFungibility")
    preference = get_in(ff, "preference")
    if preference is not None and (
        (get_in(ff, "whenCanBorrow") or "MayStopSearch") != "TryNextFlavor"
        or (get_in(ff, "whenCanPreempt") or "TryNextFlavor") != "TryNextFlavor"
    ):
        yield Problem(
            ("spec", "flavorFungibility", "preference"),
            f"preference {json.dumps(preference)} requires both whenCanBorrow and whenCanPreempt "
            "to be TryNextFlavor",
        )


def cq_admission_check_flavors(body: Mapping[str, Any]) -> Iterator[Problem]:
    """admissionChecksStrategy.admissionChecks[].onFlavors name flavors of this ClusterQueue.

    Passes: onFlavors: [default] with flavor default in a resource group.
    Fails: onFlavors: [missing].
    """
    flavors = {
        name
        for _, rg in _groups(body)
        for _, f in mapping_items(rg.get("flavors"))
        if isinstance(name := f.get("name"), str)
    }
    checks = get_in(body, "spec", "admissionChecksStrategy", "admissionChecks")
    for i, check in mapping_items(checks):
        for j, name in string_items(check.get("onFlavors")):
            if name not in flavors:
                path = ("spec", "admissionChecksStrategy", "admissionChecks", i, "onFlavors", j)
                yield Problem(
                    path, f"Unsupported value: {json.dumps(name)}: not a flavor of this ClusterQueue"
                )


def cohort_resource_name(body: Mapping[str, Any]) -> Iterator[Problem]:
    """Each coveredResources entry of a Cohort is a valid resource name.

    Passes: coveredResources: [nvidia.com/gpu].
    Fails: coveredResources: ["gpu memory"].
    """
    yield from _resource_names(body)


def cohort_resource_unique(body: Mapping[str, Any]) -> Iterator[Problem]:
    """A resource appears in only one resource group of a Cohort.

    Passes: one group covering [cpu].
    Fails: two groups covering cpu.
    """
    yield from _resources_unique(body)


def cohort_flavor_unique(body: Mapping[str, Any]) -> Iterator[Problem]:
    """A flavor appears in only one resource group of a Cohort.

    Passes: flavor default in one group.
    Fails: flavor default in two groups.
    """
    yield from _flavors_unique(body)


def cohort_flavor_order(body: Mapping[str, Any]) -> Iterator[Problem]:
    """Cohort flavors[j].resources[i].name equals coveredResources[i].

    Passes: coveredResources [cpu]; resources [{name: cpu}].
    Fails: coveredResources [cpu]; resources [{name: memory}].
    """
    yield from _flavor_order(body)


def cohort_resource_count(body: Mapping[str, Any]) -> Iterator[Problem]:
    """Every Cohort flavor lists as many resources as the group covers (a CRD CEL rule).

    Passes: coveredResources [cpu]; one resource.
    Fails: coveredResources [cpu, memory]; one resource.
    """
    yield from _resource_count(body)


def cohort_quota_nonnegative(body: Mapping[str, Any]) -> Iterator[Problem]:
    """Cohort nominalQuota, borrowingLimit and lendingLimit are valid quantities >= 0.

    Passes: nominalQuota: "8".
    Fails: nominalQuota: "-8".
    """
    yield from _quota_nonnegative(body)


def cohort_limits_need_parent(body: Mapping[str, Any]) -> Iterator[Problem]:
    """A Cohort sets borrowingLimit or lendingLimit only when it has a parentName.

    Passes: parentName: org; lendingLimit: "2".
    Fails: no parentName; borrowingLimit: "2".
    """
    yield from _limits_need(body, ("borrowingLimit", "lendingLimit"), "parentName", "parent")


def cohort_fair_sharing(body: Mapping[str, Any]) -> Iterator[Problem]:
    """Cohort fairSharing.weight is >= 0 and, when not 0, greater than 1n.

    Passes: weight: "2".
    Fails: weight: "0.5n" (rounds to 1n).
    """
    yield from _fair_sharing(body)
