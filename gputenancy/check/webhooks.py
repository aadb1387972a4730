"""Admission rules that no OpenAPI schema carries, and the table that lists them.

Kueue's validating webhooks (ClusterQueue, Cohort, ResourceFlavor) and the LocalQueue naming rules that
jobs depend on are here; the API server's validation of resource.k8s.io ResourceClaimTemplate /
ResourceClaim / DeviceClass is in `gputenancy.check.dra`. Each rule is one function in RULES; its docstring is
its documentation with a passing and a failing example. A rule takes an object body and yields Problems (a
field path and a message); `validate` turns them into findings at the input place that caused the field.

Every rule tolerates malformed input (wrong types, missing fields): schema validation reports those.
`label_problems` and the name checks `validate` applies to object metadata are re-exported here.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterator, Mapping
from typing import Any

from gputenancy.check import dra
from gputenancy.check.dra import Problem, Rule, get_in, mapping_items, string_items
from gputenancy.check.dra import label_problems as label_problems
from gputenancy.check.names import dns1123_label_errors as dns1123_label_errors
from gputenancy.check.names import dns1123_subdomain_errors as dns1123_subdomain_errors
from gputenancy.check.names import invalid, label_selector_errors, label_value_errors
from gputenancy.check.names import qualified_name_errors as qualified_name_errors
from gputenancy.inputs.quantity import Quantity, QuantityError, parse
from gputenancy.objects import FieldPath

KUEUE = "kueue.x-k8s.io"
RESOURCE = "resource.k8s.io"

_ZERO = parse("0")
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
            if q < _ZERO:
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
    if weight < _ZERO:
        yield Problem(path, invalid(value, "must be greater than or equal to 0"))
    elif weight > _ZERO and not weight > _NANO:
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


# --- ResourceFlavor and LocalQueue -----------------------------------------------------------------


def rf_node_labels(body: Mapping[str, Any]) -> Iterator[Problem]:
    """ResourceFlavor nodeLabels: keys are qualified names, values are label values.

    Passes: nodeLabels: {nvidia.com/gpu.product: NVIDIA-H100-80GB-HBM3}.
    Fails: nodeLabels: {"gpu type": h100}.
    """
    yield from label_problems(get_in(body, "spec", "nodeLabels"), ("spec", "nodeLabels"))


def rf_node_taints(body: Mapping[str, Any]) -> Iterator[Problem]:
    """ResourceFlavor nodeTaints: valid key and value, unique by key and effect.

    Passes: [{key: gpu, value: "true", effect: NoSchedule}, {key: gpu, effect: NoExecute}].
    Fails: two taints with key gpu and effect NoSchedule.
    """
    seen: set[tuple[Any, Any]] = set()
    for i, taint in mapping_items(get_in(body, "spec", "nodeTaints")):
        key, value = taint.get("key"), taint.get("value")
        for msg in qualified_name_errors(key if isinstance(key, str) else ""):
            yield Problem(("spec", "nodeTaints", i, "key"), invalid(key, msg))
        for msg in label_value_errors(value) if isinstance(value, str) else []:
            yield Problem(("spec", "nodeTaints", i, "value"), invalid(value, msg))
        pair = (key, taint.get("effect"))
        if pair in seen:
            yield Problem(
                ("spec", "nodeTaints", i), "Duplicate value: taints must be unique by key and effect pair"
            )
        seen.add(pair)


def rf_tolerations(body: Mapping[str, Any]) -> Iterator[Problem]:
    """ResourceFlavor tolerations: a non-empty key is a qualified name; an Equal value is a label value.

    Passes: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}].
    Fails: [{key: "gpu type", operator: Exists}].
    """
    for i, tol in mapping_items(get_in(body, "spec", "tolerations")):
        key, value = tol.get("key"), tol.get("value")
        if isinstance(key, str) and key:
            for msg in qualified_name_errors(key):
                yield Problem(("spec", "tolerations", i, "key"), invalid(key, msg))
        if tol.get("operator", "Equal") == "Equal" and isinstance(value, str):
            for msg in label_value_errors(value):
                yield Problem(("spec", "tolerations", i, "value"), invalid(value, msg))


def lq_name_length(body: Mapping[str, Any]) -> Iterator[Problem]:
    """A LocalQueue name fits the kueue.x-k8s.io/queue-name label value: at most 63 characters.

    Passes: name: team-a.
    Fails: a 64-character name (jobs could not select the queue).
    """
    name = get_in(body, "metadata", "name")
    if isinstance(name, str) and len(name) > 63:
        yield Problem(
            ("metadata", "name"),
            f"{len(name)} characters: a LocalQueue name must be at most 63 characters, "
            "since jobs select it with the kueue.x-k8s.io/queue-name label",
        )


def lq_cluster_queue_ref(body: Mapping[str, Any]) -> Iterator[Problem]:
    """spec.clusterQueue is a ClusterQueue reference: a DNS subdomain of at most 253 characters.

    Passes: clusterQueue: team-a.
    Fails: clusterQueue: Team_A; clusterQueue missing.
    """
    ref = get_in(body, "spec", "clusterQueue")
    if not isinstance(ref, str) or not ref:
        yield Problem(("spec", "clusterQueue"), "Required value: a LocalQueue must name its ClusterQueue")
        return
    for msg in dns1123_subdomain_errors(ref):
        yield Problem(("spec", "clusterQueue"), invalid(ref, msg))


# --- the table -----------------------------------------------------------------------------------

_V1B2 = frozenset({f"{KUEUE}/v1beta2"})
_DRA = frozenset({f"{RESOURCE}/v1", f"{RESOURCE}/v1beta2"})
_CQ, _CO, _RF, _LQ = (frozenset({k}) for k in ("ClusterQueue", "Cohort", "ResourceFlavor", "LocalQueue"))
_CLAIMS = frozenset({"ResourceClaimTemplate", "ResourceClaim"})
_DC = frozenset({"DeviceClass"})

RULES: tuple[Rule, ...] = (
    Rule("kueue-webhook-cq-resource-name", _V1B2, _CQ, cq_resource_name),
    Rule("kueue-webhook-cq-resource-unique", _V1B2, _CQ, cq_resource_unique),
    Rule("kueue-webhook-cq-flavor-unique", _V1B2, _CQ, cq_flavor_unique),
    Rule("kueue-webhook-cq-flavor-order", _V1B2, _CQ, cq_flavor_order),
    Rule("kueue-webhook-cq-resource-count", _V1B2, _CQ, cq_resource_count, also_in_crd=True),
    Rule("kueue-webhook-cq-quota-nonnegative", _V1B2, _CQ, cq_quota_nonnegative),
    Rule("kueue-webhook-cq-borrowing-limit-cohort", _V1B2, _CQ, cq_borrowing_limit_cohort, also_in_crd=True),
    Rule("kueue-webhook-cq-lending-limit-cohort", _V1B2, _CQ, cq_lending_limit_cohort),
    Rule("kueue-webhook-cq-lending-limit", _V1B2, _CQ, cq_lending_limit),
    Rule("kueue-webhook-cq-total-flavors", _V1B2, _CQ, cq_total_flavors),
    Rule("kueue-webhook-cq-total-resources", _V1B2, _CQ, cq_total_resources),
    Rule("kueue-webhook-cq-flavor-resource-combinations", _V1B2, _CQ, cq_flavor_resource_combinations),
    Rule("kueue-webhook-cq-namespace-selector", _V1B2, _CQ, cq_namespace_selector),
    Rule("kueue-webhook-cq-fair-sharing", _V1B2, _CQ, cq_fair_sharing),
    Rule("kueue-webhook-cq-preemption", _V1B2, _CQ, cq_preemption, also_in_crd=True),
    Rule("kueue-webhook-cq-flavor-fungibility", _V1B2, _CQ, cq_flavor_fungibility, also_in_crd=True),
    Rule("kueue-webhook-cq-admission-check-flavors", _V1B2, _CQ, cq_admission_check_flavors),
    Rule("kueue-webhook-cohort-resource-name", _V1B2, _CO, cohort_resource_name),
    Rule("kueue-webhook-cohort-resource-unique", _V1B2, _CO, cohort_resource_unique),
    Rule("kueue-webhook-cohort-flavor-unique", _V1B2, _CO, cohort_flavor_unique),
    Rule("kueue-webhook-cohort-flavor-order", _V1B2, _CO, cohort_flavor_order),
    Rule("kueue-webhook-cohort-resource-count", _V1B2, _CO, cohort_resource_count, also_in_crd=True),
    Rule("kueue-webhook-cohort-quota-nonnegative", _V1B2, _CO, cohort_quota_nonnegative),
    Rule("kueue-webhook-cohort-limits-need-parent", _V1B2, _CO, cohort_limits_need_parent),
    Rule("kueue-webhook-cohort-fair-sharing", _V1B2, _CO, cohort_fair_sharing),
    Rule("kueue-webhook-rf-node-labels", _V1B2, _RF, rf_node_labels),
    Rule("kueue-webhook-rf-node-taints", _V1B2, _RF, rf_node_taints),
    Rule("kueue-webhook-rf-tolerations", _V1B2, _RF, rf_tolerations),
    Rule("kueue-lq-name-length", _V1B2, _LQ, lq_name_length),
    Rule("kueue-lq-cluster-queue-ref", _V1B2, _LQ, lq_cluster_queue_ref),
    Rule("dra-request-name", _DRA, _CLAIMS, dra.dra_request_name),
    Rule("dra-device-class-name", _DRA, _CLAIMS, dra.dra_device_class_name),
    Rule("dra-request-one-of", _DRA, _CLAIMS, dra.dra_request_one_of),
    Rule("dra-allocation-mode", _DRA, _CLAIMS, dra.dra_allocation_mode),
    Rule("dra-count", _DRA, _CLAIMS, dra.dra_count),
    Rule("dra-total-devices", _DRA, _CLAIMS, dra.dra_total_devices),
    Rule("dra-claim-limits", _DRA, _CLAIMS, dra.dra_claim_limits),
    Rule("dra-request-reference", _DRA, _CLAIMS, dra.dra_request_reference),
    Rule("dra-constraint-attribute", _DRA, _CLAIMS, dra.dra_constraint_attribute),
    Rule("dra-cel-selector", _DRA, _CLAIMS | _DC, dra.dra_cel_selector),
    Rule("dra-opaque-config", _DRA, _CLAIMS | _DC, dra.dra_opaque_config),
    Rule("dra-template-metadata", _DRA, frozenset({"ResourceClaimTemplate"}), dra.dra_template_metadata),
    Rule("dra-deviceclass-limits", _DRA, _DC, dra.dra_deviceclass_limits),
    Rule("dra-extended-resource-name", _DRA, _DC, dra.dra_extended_resource_name),
)


@functools.cache
def rules_for(api_version: str, kind: str, kueue_version: str | None = None) -> tuple[Rule, ...]:
    """The rules for objects of `api_version` and `kind`; with `kueue_version`, without those that
    version's data lists as not enforced (gputenancy/versions/data/kueue/<minor>.json)."""
    skip: frozenset[str] = frozenset()
    if kueue_version is not None:
        from gputenancy.versions import kueue

        try:
            skip = kueue.for_version(kueue_version).webhook_rules_not_enforced
        except kueue.UnsupportedVersion:
            skip = frozenset()
    return tuple(r for r in RULES if api_version in r.api_versions and kind in r.kinds and r.id not in skip)


def documentation() -> str:
    """All rules with their docstrings, as Markdown."""
    return "\n".join(f"### `{r.id}`\n\n{r.doc}\n" for r in RULES)
