"""Admission rules that no OpenAPI schema carries.

Kueue's validating webhooks (ClusterQueue, Cohort, ResourceFlavor), the LocalQueue naming rules that
jobs depend on, and the API server's own validation of resource.k8s.io ResourceClaimTemplate /
ResourceClaim / DeviceClass. Each rule is one function in RULES; its docstring is its documentation
with a passing and a failing example. A rule takes an object body and yields Problems (a field path
and a message); `validate` turns them into findings at the input place that caused the field.

Every rule tolerates malformed input (wrong types, missing fields): schema validation reports those.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import re
from collections.abc import Callable, Iterator, Mapping
from typing import Any, NamedTuple

import cel

from gputenancy.findings import Severity
from gputenancy.objects import FieldPath
from gputenancy.quantity import Quantity, QuantityError, parse

KUEUE = "kueue.x-k8s.io"
RESOURCE = "resource.k8s.io"

_LABEL_RE = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
_SUBDOMAIN_RE = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_NAME_PART_RE = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
_C_IDENTIFIER_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_ZERO = parse("0")
_NANO = parse("1n")
_NAME_PART_MSG = (
    "must consist of alphanumeric characters, '-', '_' or '.', "
    "and must start and end with an alphanumeric character"
)


# --- Kubernetes name rules (k8s.io/apimachinery/pkg/util/validation) -------------------------------


def dns1123_label_errors(value: str) -> list[str]:
    """IsDNS1123Label: lower-case alphanumerics and '-', at most 63 characters."""
    errs = []
    if len(value) > 63:
        errs.append("must be no more than 63 characters")
    if not _LABEL_RE.fullmatch(value):
        errs.append(
            "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
            "and must start and end with an alphanumeric character"
        )
    return errs


def dns1123_subdomain_errors(value: str) -> list[str]:
    """IsDNS1123Subdomain: dot-separated DNS labels, at most 253 characters."""
    errs = []
    if len(value) > 253:
        errs.append("must be no more than 253 characters")
    if not _SUBDOMAIN_RE.fullmatch(value):
        errs.append(
            "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
            "and must start and end with an alphanumeric character"
        )
    return errs


def qualified_name_errors(value: str) -> list[str]:
    """IsQualifiedName (label keys, resource names): `[prefix/]name`, name <= 63, prefix a DNS subdomain."""
    parts = value.split("/")
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            return ["prefix part must be non-empty"]
        errs = [f"prefix part {msg}" for msg in dns1123_subdomain_errors(prefix)]
        if errs:
            return errs
    else:
        return [
            f"a qualified name {_NAME_PART_MSG} with an optional DNS subdomain prefix and '/' "
            "(e.g. 'example.com/MyName')"
        ]
    if not name:
        return ["name part must be non-empty"]
    errs = []
    if len(name) > 63:
        errs.append("name part must be no more than 63 characters")
    if not _NAME_PART_RE.fullmatch(name):
        errs.append(f"name part {_NAME_PART_MSG}")
    return errs


def label_value_errors(value: str) -> list[str]:
    """IsValidLabelValue: empty, or at most 63 characters of alphanumerics, '-', '_', '.'."""
    errs = []
    if len(value) > 63:
        errs.append("must be no more than 63 characters")
    if value and not _NAME_PART_RE.fullmatch(value):
        errs.append(f"a valid label must be an empty string or {_NAME_PART_MSG.removeprefix('must ')}")
    return errs


# --- Problems, rules and small accessors ---------------------------------------------------------


class Problem(NamedTuple):
    """One violation at a field path inside an object body."""

    path: FieldPath
    message: str
    severity: Severity = Severity.ERROR


Check = Callable[[Mapping[str, Any]], Iterator[Problem]]


@dataclasses.dataclass(frozen=True)
class Rule:
    """A rule applies to objects whose apiVersion is in `api_versions` and whose kind is in `kinds`.

    `also_in_crd` marks a rule that repeats an `x-kubernetes-validations` rule of the Kueue CRD; it runs
    only when no CRD schema was applied, so one mistake yields one finding.
    """

    id: str
    api_versions: frozenset[str]
    kinds: frozenset[str]
    check: Check
    also_in_crd: bool = False

    @property
    def doc(self) -> str:
        return (self.check.__doc__ or "").strip()


def _get(body: Any, *keys: str) -> Any:
    for key in keys:
        if not isinstance(body, dict | Mapping):
            return None
        body = body.get(key)
    return body


def _items(value: Any) -> Iterator[tuple[int, Mapping[str, Any]]]:
    if isinstance(value, list):
        for i, item in enumerate(value):
            if isinstance(item, dict | Mapping):
                yield i, item


def _strings(value: Any) -> Iterator[tuple[int, str]]:
    if isinstance(value, list):
        for i, item in enumerate(value):
            if isinstance(item, str):
                yield i, item


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


def _invalid(value: Any, msg: str) -> str:
    return f"Invalid value: {json.dumps(value)}: {msg}"


def label_problems(labels: Any, path: FieldPath) -> Iterator[Problem]:
    """ValidateLabels: every key a qualified name, every value a label value."""
    if not isinstance(labels, Mapping):
        return
    for key, value in labels.items():
        for msg in qualified_name_errors(str(key)):
            yield Problem((*path, str(key)), _invalid(key, msg))
        if isinstance(value, str):
            for msg in label_value_errors(value):
                yield Problem((*path, str(key)), _invalid(value, msg))


def label_selector_problems(selector: Any, path: FieldPath) -> Iterator[Problem]:
    """ValidateLabelSelector with default options (label values must be valid)."""
    if not isinstance(selector, Mapping):
        return
    yield from label_problems(selector.get("matchLabels"), (*path, "matchLabels"))
    for i, expr in _items(selector.get("matchExpressions")):
        at = (*path, "matchExpressions", i)
        op, values = expr.get("operator"), expr.get("values") or []
        if op in ("In", "NotIn"):
            if not values:
                yield Problem(
                    (*at, "values"), "Required value: must be specified when `operator` is 'In' or 'NotIn'"
                )
        elif op in ("Exists", "DoesNotExist"):
            if values:
                yield Problem(
                    (*at, "values"),
                    "Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
                )
        else:
            yield Problem(
                (*at, "operator"),
                f"Unsupported value: {json.dumps(op)}: supported values: "
                '"In", "NotIn", "Exists", "DoesNotExist"',
            )
        key = expr.get("key")
        for msg in qualified_name_errors(key if isinstance(key, str) else ""):
            yield Problem((*at, "key"), _invalid(key, msg))
        for j, value in _strings(values):
            for msg in label_value_errors(value):
                yield Problem((*at, "values", j), _invalid(value, msg))


# --- Kueue resource groups (pkg/webhooks/clusterqueue_webhook.go, cohort_webhook.go, common.go) ----

RG: FieldPath = ("spec", "resourceGroups")


def _groups(body: Mapping[str, Any]) -> Iterator[tuple[FieldPath, Mapping[str, Any]]]:
    for i, rg in _items(_get(body, "spec", "resourceGroups")):
        yield (*RG, i), rg


def _quotas(body: Mapping[str, Any]) -> Iterator[tuple[FieldPath, Mapping[str, Any], int, list[Any]]]:
    """(path of flavors[j].resources[i], resource quota, i, coveredResources of its group)."""
    for path, rg in _groups(body):
        covered = rg.get("coveredResources")
        covered = covered if isinstance(covered, list) else []
        for j, flavor in _items(rg.get("flavors")):
            for i, quota in _items(flavor.get("resources")):
                yield (*path, "flavors", j, "resources", i), quota, i, covered


def _resource_names(body: Mapping[str, Any]) -> Iterator[Problem]:
    for path, rg in _groups(body):
        for j, name in _strings(rg.get("coveredResources")):
            for msg in qualified_name_errors(name):
                yield Problem((*path, "coveredResources", j), _invalid(name, msg))


def _resources_unique(body: Mapping[str, Any]) -> Iterator[Problem]:
    seen: set[str] = set()
    for path, rg in _groups(body):
        for j, name in _strings(rg.get("coveredResources")):
            if name in seen:
                yield Problem(
                    (*path, "coveredResources", j),
                    f"Duplicate value: {json.dumps(name)} (a resource may appear in only one resource group)",
                )
            seen.add(name)


def _flavors_unique(body: Mapping[str, Any]) -> Iterator[Problem]:
    seen: set[str] = set()
    for path, rg in _groups(body):
        for j, flavor in _items(rg.get("flavors")):
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
                f"{_invalid(quota.get('name'), 'must match the name in coveredResources')} "
                f"(coveredResources[{i}] is {json.dumps(covered[i])})",
            )


def _resource_count(body: Mapping[str, Any]) -> Iterator[Problem]:
    for path, rg in _groups(body):
        covered = rg.get("coveredResources")
        for j, flavor in _items(rg.get("flavors")):
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
                yield Problem((*path, field), _invalid(value, str(exc)))
                continue
            if q < _ZERO:
                yield Problem((*path, field), _invalid(value, "must be greater than or equal to 0"))


def _limits_need(
    body: Mapping[str, Any], fields: tuple[str, ...], owner: str, what: str
) -> Iterator[Problem]:
    if _get(body, "spec", owner):
        return
    for path, quota, _, _ in _quotas(body):
        for field in fields:
            if quota.get(field) is not None:
                yield Problem((*path, field), _invalid(quota[field], f"must be nil when {what} is empty"))


def _fair_sharing(body: Mapping[str, Any]) -> Iterator[Problem]:
    value = _get(body, "spec", "fairSharing", "weight")
    if value is None:
        return
    path = ("spec", "fairSharing", "weight")
    try:
        weight = _parse_any(value)
    except QuantityError as exc:
        yield Problem(path, _invalid(value, str(exc)))
        return
    if weight < _ZERO:
        yield Problem(path, _invalid(value, "must be greater than or equal to 0"))
    elif weight > _ZERO and not weight > _NANO:
        yield Problem(path, _invalid(value, "When not 0, weight must be > 10e-9"))


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
        total = sum(_len(f.get("resources")) for _, f in _items(rg.get("flavors")))
        if total > 512:
            yield Problem(
                path, f"number of flavor-resource combinations in a resourceGroup must be ≤ 512, got {total}"
            )


def cq_namespace_selector(body: Mapping[str, Any]) -> Iterator[Problem]:
    """namespaceSelector is a valid LabelSelector (In/NotIn need values, Exists/DoesNotExist forbid them).

    Passes: {matchExpressions: [{key: team, operator: In, values: [a]}]}.
    Fails: {matchExpressions: [{key: team, operator: In}]}; operator: Equals.
    """
    yield from label_selector_problems(_get(body, "spec", "namespaceSelector"), ("spec", "namespaceSelector"))


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
    preemption = _get(body, "spec", "preemption")
    reclaim = _get(preemption, "reclaimWithinCohort") or "Never"
    policy = _get(preemption, "borrowWithinCohort", "policy") or "Never"
    if reclaim == "Never" and policy != "Never":
        yield Problem(
            ("spec", "preemption"), "reclaimWithinCohort=Never and borrowWithinCohort.Policy!=Never"
        )


def cq_flavor_fungibility(body: Mapping[str, Any]) -> Iterator[Problem]:
    """preference needs whenCanBorrow and whenCanPreempt both TryNextFlavor (also a CRD CEL rule).

    Passes: whenCanBorrow/whenCanPreempt TryNextFlavor, preference: BorrowingOverPreemption.
    Fails: whenCanBorrow: MayStopSearch with a preference.
    """
    ff = _get(body, "spec", "flavorFungibility")
    preference = _get(ff, "preference")
    if preference is not None and (
        (_get(ff, "whenCanBorrow") or "MayStopSearch") != "TryNextFlavor"
        or (_get(ff, "whenCanPreempt") or "TryNextFlavor") != "TryNextFlavor"
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
    flavors = {f.get("name") for _, rg in _groups(body) for _, f in _items(rg.get("flavors"))}
    checks = _get(body, "spec", "admissionChecksStrategy", "admissionChecks")
    for i, check in _items(checks):
        for j, name in _strings(check.get("onFlavors")):
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
    yield from label_problems(_get(body, "spec", "nodeLabels"), ("spec", "nodeLabels"))


def rf_node_taints(body: Mapping[str, Any]) -> Iterator[Problem]:
    """ResourceFlavor nodeTaints: valid key and value, unique by key and effect.

    Passes: [{key: gpu, value: "true", effect: NoSchedule}, {key: gpu, effect: NoExecute}].
    Fails: two taints with key gpu and effect NoSchedule.
    """
    seen: set[tuple[Any, Any]] = set()
    for i, taint in _items(_get(body, "spec", "nodeTaints")):
        key, value = taint.get("key"), taint.get("value")
        for msg in qualified_name_errors(key if isinstance(key, str) else ""):
            yield Problem(("spec", "nodeTaints", i, "key"), _invalid(key, msg))
        for msg in label_value_errors(value) if isinstance(value, str) else []:
            yield Problem(("spec", "nodeTaints", i, "value"), _invalid(value, msg))
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
    for i, tol in _items(_get(body, "spec", "tolerations")):
        key, value = tol.get("key"), tol.get("value")
        if isinstance(key, str) and key:
            for msg in qualified_name_errors(key):
                yield Problem(("spec", "tolerations", i, "key"), _invalid(key, msg))
        if tol.get("operator", "Equal") == "Equal" and isinstance(value, str):
            for msg in label_value_errors(value):
                yield Problem(("spec", "tolerations", i, "value"), _invalid(value, msg))


def lq_name_length(body: Mapping[str, Any]) -> Iterator[Problem]:
    """A LocalQueue name fits the kueue.x-k8s.io/queue-name label value: at most 63 characters.

    Passes: name: team-a.
    Fails: a 64-character name (jobs could not select the queue).
    """
    name = _get(body, "metadata", "name")
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
    ref = _get(body, "spec", "clusterQueue")
    if not isinstance(ref, str) or not ref:
        yield Problem(("spec", "clusterQueue"), "Required value: a LocalQueue must name its ClusterQueue")
        return
    for msg in dns1123_subdomain_errors(ref):
        yield Problem(("spec", "clusterQueue"), _invalid(ref, msg))


# --- resource.k8s.io (pkg/apis/resource/validation/validation.go) ----------------------------------

MAX_REQUESTS = MAX_SELECTORS = MAX_CONSTRAINTS = MAX_CONFIG = MAX_DEVICES = 32
MAX_SUBREQUESTS = 8
MAX_TOLERATIONS = 16
MAX_CEL_BYTES = MAX_OPAQUE_BYTES = 10 * 1024
_COMPREHENSION_VARS = re.compile(
    r"\.\s*(?:all|exists|exists_one|map|filter|transformList|transformMap|transformMapEntry|sortBy)"
    r"\(\s*([A-Za-z_]\w*)\s*,(?:\s*([A-Za-z_]\w*)\s*,)?"
)
_BIND_VARS = re.compile(r"\bcel\s*\.\s*bind\(\s*([A-Za-z_]\w*)")


def _claim_spec(body: Mapping[str, Any]) -> tuple[FieldPath, Any]:
    if body.get("kind") == "ResourceClaimTemplate":
        return ("spec", "spec"), _get(body, "spec", "spec")
    return ("spec",), _get(body, "spec")


def _requests(body: Mapping[str, Any]) -> Iterator[tuple[FieldPath, Mapping[str, Any]]]:
    root, spec = _claim_spec(body)
    for i, req in _items(_get(spec, "devices", "requests")):
        yield (*root, "devices", "requests", i), req


def _device_requests(body: Mapping[str, Any]) -> Iterator[tuple[FieldPath, Mapping[str, Any]]]:
    """Every `exactly` request and every firstAvailable subrequest: both carry class, selectors, count."""
    for path, req in _requests(body):
        if isinstance(req.get("exactly"), Mapping):
            yield (*path, "exactly"), req["exactly"]
        for k, sub in _items(req.get("firstAvailable")):
            yield (*path, "firstAvailable", k), sub


def _selectors(body: Mapping[str, Any]) -> Iterator[tuple[FieldPath, Any]]:
    if body.get("kind") == "DeviceClass":
        yield ("spec", "selectors"), _get(body, "spec", "selectors")
    for path, dev in _device_requests(body):
        yield (*path, "selectors"), dev.get("selectors")


def _device_count(dev: Mapping[str, Any]) -> int | None:
    mode, count = dev.get("allocationMode") or "ExactCount", dev.get("count", 1)
    if mode != "ExactCount" or isinstance(count, bool) or not isinstance(count, int):
        return None
    return count


@functools.lru_cache(maxsize=4096)
def cel_selector_error(expression: str) -> str | None:
    """Why the API server would refuse a DRA CEL selector, or None: size, syntax, undeclared names."""
    if len(expression.encode()) > MAX_CEL_BYTES:
        return f"must be no more than {MAX_CEL_BYTES} bytes, got {len(expression.encode())}"
    try:
        program = cel.compile(expression)
    except (ValueError, TypeError, RuntimeError) as exc:
        return f"compilation failed: {str(exc).strip()}"
    bound = {"device", "cel"}
    for match in (*_COMPREHENSION_VARS.finditer(expression), *_BIND_VARS.finditer(expression)):
        bound.update(name for name in match.groups() if name)
    unknown = sorted(set(program.variables()) - bound)
    if unknown:
        return f"compilation failed: undeclared reference to {unknown[0]!r} (the only variable is 'device')"
    return None


def dra_request_name(body: Mapping[str, Any]) -> Iterator[Problem]:
    """Request and subrequest names are DNS labels, unique within the claim / the request.

    Passes: requests [{name: gpu}, {name: nic}].
    Fails: requests [{name: GPU_0}]; two requests named gpu.
    """
    seen: set[str] = set()
    for path, req in _requests(body):
        name = req.get("name")
        if isinstance(name, str):
            for msg in dns1123_label_errors(name):
                yield Problem((*path, "name"), _invalid(name, msg))
            if name in seen:
                yield Problem((*path, "name"), f"Duplicate value: {json.dumps(name)}")
            seen.add(name)
        subs: set[str] = set()
        for k, sub in _items(req.get("firstAvailable")):
            sub_name = sub.get("name")
            if isinstance(sub_name, str):
                for msg in dns1123_label_errors(sub_name):
                    yield Problem((*path, "firstAvailable", k, "name"), _invalid(sub_name, msg))
                if sub_name in subs:
                    yield Problem(
                        (*path, "firstAvailable", k, "name"), f"Duplicate value: {json.dumps(sub_name)}"
                    )
                subs.add(sub_name)


def dra_device_class_name(body: Mapping[str, Any]) -> Iterator[Problem]:
    """deviceClassName of every exactly request and subrequest is a DNS subdomain.

    Passes: deviceClassName: gpu.nvidia.com.
    Fails: deviceClassName: GPU_Class.
    """
    for path, dev in _device_requests(body):
        name = dev.get("deviceClassName")
        if isinstance(name, str):
            for msg in dns1123_subdomain_errors(name):
                yield Problem((*path, "deviceClassName"), _invalid(name, msg))


def dra_request_one_of(body: Mapping[str, Any]) -> Iterator[Problem]:
    """A request sets exactly one of `exactly` and `firstAvailable`.

    Passes: {name: gpu, exactly: {deviceClassName: gpu.nvidia.com}}.
    Fails: both exactly and firstAvailable; neither.
    """
    for path, req in _requests(body):
        if (req.get("exactly") is None) == (req.get("firstAvailable") is None):
            yield Problem(path, "exactly one of `exactly` or `firstAvailable` is required")


def dra_allocation_mode(body: Mapping[str, Any]) -> Iterator[Problem]:
    """allocationMode is ExactCount or All.

    Passes: allocationMode: ExactCount.
    Fails: allocationMode: Sometimes.
    """
    for path, dev in _device_requests(body):
        mode = dev.get("allocationMode")
        if mode is not None and mode not in ("ExactCount", "All"):
            yield Problem(
                (*path, "allocationMode"),
                f'Unsupported value: {json.dumps(mode)}: supported values: "All", "ExactCount"',
            )


def dra_count(body: Mapping[str, Any]) -> Iterator[Problem]:
    """ExactCount needs count > 0; All forbids count.

    The API server defaults a zero count to 1, so `count: 0` would also leave Argo CD out of sync.
    Passes: count: 2; allocationMode: All without count.
    Fails: count: 0; allocationMode: All with count: 1.
    """
    for path, dev in _device_requests(body):
        mode, count = dev.get("allocationMode") or "ExactCount", dev.get("count")
        if mode == "All" and "count" in dev:
            yield Problem(
                (*path, "count"), _invalid(count, "must not be specified when allocationMode is 'All'")
            )
        elif mode == "ExactCount" and isinstance(count, int) and not isinstance(count, bool) and count <= 0:
            yield Problem((*path, "count"), _invalid(count, "must be greater than zero"))


def dra_total_devices(body: Mapping[str, Any]) -> Iterator[Problem]:
    """A claim asks for at most 32 devices (ExactCount counts; the smallest firstAvailable alternative).

    Passes: two requests of 16.
    Fails: one request of 33 (the allocator refuses: exceeds the claim limit of 32).
    """
    total = 0
    for _, req in _requests(body):
        exact = req.get("exactly")
        if isinstance(exact, Mapping):
            total += _device_count(exact) or 0
        counts = [_device_count(sub) for _, sub in _items(req.get("firstAvailable"))]
        known = [c for c in counts if c is not None]
        total += min(known) if known and len(known) == len(counts) else 0
    if total > MAX_DEVICES:
        root, _ = _claim_spec(body)
        yield Problem(
            (*root, "devices", "requests"),
            f"number of requested devices {total} exceeds the claim limit of {MAX_DEVICES}",
        )


def _too_many(path: FieldPath, value: Any, limit: int) -> Iterator[Problem]:
    if isinstance(value, list) and len(value) > limit:
        yield Problem(path, f"Too many: {len(value)}: must have at most {limit} items")


def dra_claim_limits(body: Mapping[str, Any]) -> Iterator[Problem]:
    """At most 32 requests, selectors per request, constraints and config entries; 8 firstAvailable
    subrequests; 16 tolerations per request.

    Passes: 32 requests.
    Fails: 33 requests.
    """
    root, spec = _claim_spec(body)
    for field, limit in (
        ("requests", MAX_REQUESTS),
        ("constraints", MAX_CONSTRAINTS),
        ("config", MAX_CONFIG),
    ):
        yield from _too_many((*root, "devices", field), _get(spec, "devices", field), limit)
    for path, req in _requests(body):
        yield from _too_many((*path, "firstAvailable"), req.get("firstAvailable"), MAX_SUBREQUESTS)
    for path, dev in _device_requests(body):
        yield from _too_many((*path, "selectors"), dev.get("selectors"), MAX_SELECTORS)
        yield from _too_many((*path, "tolerations"), dev.get("tolerations"), MAX_TOLERATIONS)


def dra_template_metadata(body: Mapping[str, Any]) -> Iterator[Problem]:
    """A ResourceClaimTemplate's spec.metadata carries valid labels and annotation keys for its claims.

    Passes: spec.metadata.labels: {tenant: team-a}.
    Fails: spec.metadata.labels: {"team name": a}.
    """
    meta = _get(body, "spec", "metadata")
    yield from label_problems(_get(meta, "labels"), ("spec", "metadata", "labels"))
    annotations = _get(meta, "annotations")
    if isinstance(annotations, dict | Mapping):
        for key in annotations:
            for msg in qualified_name_errors(str(key).lower()):
                yield Problem(("spec", "metadata", "annotations", str(key)), _invalid(key, msg))


def dra_deviceclass_limits(body: Mapping[str, Any]) -> Iterator[Problem]:
    """A DeviceClass has at most 32 selectors and 32 config entries.

    Passes: 1 selector.
    Fails: 33 selectors.
    """
    yield from _too_many(("spec", "selectors"), _get(body, "spec", "selectors"), MAX_SELECTORS)
    yield from _too_many(("spec", "config"), _get(body, "spec", "config"), MAX_CONFIG)


def dra_cel_selector(body: Mapping[str, Any]) -> Iterator[Problem]:
    """CEL selectors are at most 10 KiB, compile, and use no variable but `device`.

    Passes: device.driver == 'gpu.nvidia.com'.
    Fails: device.driver == ; devices.driver == 'x'.
    """
    for path, selectors in _selectors(body):
        for i, sel in _items(selectors):
            expr = _get(sel, "cel", "expression")
            if isinstance(expr, str):
                err = cel_selector_error(expr)
                if err:
                    yield Problem((*path, i, "cel", "expression"), f"Invalid value: {err}")


def dra_request_reference(body: Mapping[str, Any]) -> Iterator[Problem]:
    """constraints[].requests and config[].requests name requests of the claim (or `<request>/<subrequest>`).

    Passes: requests: [gpu] with a request gpu.
    Fails: requests: [gpus].
    """
    valid: set[str] = set()
    for _, req in _requests(body):
        if isinstance(req.get("name"), str):
            valid.add(req["name"])
            valid.update(f"{req['name']}/{sub.get('name')}" for _, sub in _items(req.get("firstAvailable")))
    root, spec = _claim_spec(body)
    for field in ("constraints", "config"):
        for i, entry in _items(_get(spec, "devices", field)):
            for j, ref in _strings(entry.get("requests")):
                if ref not in valid:
                    yield Problem(
                        (*root, "devices", field, i, "requests", j),
                        _invalid(
                            ref,
                            "must be the name of a request in the claim or the name of a request "
                            "and a subrequest separated by '/'",
                        ),
                    )


def dra_constraint_attribute(body: Mapping[str, Any]) -> Iterator[Problem]:
    """A constraint sets one of matchAttribute / distinctAttribute, a fully qualified `<domain>/<name>`.

    Passes: matchAttribute: resource.kubernetes.io/pcieRoot.
    Fails: matchAttribute: pcieRoot.
    """
    root, spec = _claim_spec(body)
    for i, con in _items(_get(spec, "devices", "constraints")):
        path = (*root, "devices", "constraints", i)
        set_fields = [f for f in ("matchAttribute", "distinctAttribute") if con.get(f) is not None]
        if len(set_fields) != 1:
            yield Problem(path, "exactly one of `matchAttribute` or `distinctAttribute` is required")
        for field in set_fields:
            value = con[field]
            domain, _, name = str(value).partition("/")
            errs = [] if name else ["must include a domain: <domain>/<name>"]
            errs += [f"domain {m}" for m in dns1123_subdomain_errors(domain)] if name else []
            if name and (len(name) > 32 or not _C_IDENTIFIER_RE.fullmatch(name)):
                errs.append("name must be a C identifier of at most 32 characters")
            for msg in errs:
                yield Problem((*path, field), _invalid(value, msg))


def dra_opaque_config(body: Mapping[str, Any]) -> Iterator[Problem]:
    """Opaque config: driver is a lower-case DNS subdomain of at most 63 characters; parameters <= 10 KiB.

    Passes: {driver: gpu.nvidia.com, parameters: {kind: GpuConfig}}.
    Fails: {driver: GPU.NVIDIA.COM}.
    """
    root: FieldPath = ("spec", "config")
    configs = _get(body, "spec", "config")
    if body.get("kind") != "DeviceClass":
        claim, spec = _claim_spec(body)
        root, configs = (*claim, "devices", "config"), _get(spec, "devices", "config")
    for i, entry in _items(configs):
        opaque = entry.get("opaque")
        driver = _get(opaque, "driver")
        path = (*root, i, "opaque")
        if isinstance(driver, str):
            errs = dns1123_subdomain_errors(driver)
            errs += ["must be no more than 63 characters"] if len(driver) > 63 else []
            for msg in errs:
                yield Problem((*path, "driver"), _invalid(driver, msg))
        params = _get(opaque, "parameters")
        size = len(json.dumps(params, separators=(",", ":")).encode()) if params is not None else 0
        if size > MAX_OPAQUE_BYTES:
            yield Problem(
                (*path, "parameters"), f"Too long: {size} bytes: must have at most {MAX_OPAQUE_BYTES} bytes"
            )


def dra_extended_resource_name(body: Mapping[str, Any]) -> Iterator[Problem]:
    """DeviceClass extendedResourceName is an extended resource name: `<domain>/<name>`, not kubernetes.io.

    Passes: extendedResourceName: nvidia.com/gpu.
    Fails: extendedResourceName: gpu; kubernetes.io/gpu.
    """
    name = _get(body, "spec", "extendedResourceName")
    if not isinstance(name, str):
        return
    domain = name.partition("/")[0] if "/" in name else ""
    errs = [] if domain else ["must be a fully qualified name: <domain>/<name>"]
    if domain == "kubernetes.io" or domain.endswith(".kubernetes.io"):
        errs.append("must not be in the kubernetes.io namespace")
    errs += qualified_name_errors(f"requests.{name}")
    for msg in errs:
        yield Problem(("spec", "extendedResourceName"), _invalid(name, msg))


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
    Rule("dra-request-name", _DRA, _CLAIMS, dra_request_name),
    Rule("dra-device-class-name", _DRA, _CLAIMS, dra_device_class_name),
    Rule("dra-request-one-of", _DRA, _CLAIMS, dra_request_one_of),
    Rule("dra-allocation-mode", _DRA, _CLAIMS, dra_allocation_mode),
    Rule("dra-count", _DRA, _CLAIMS, dra_count),
    Rule("dra-total-devices", _DRA, _CLAIMS, dra_total_devices),
    Rule("dra-claim-limits", _DRA, _CLAIMS, dra_claim_limits),
    Rule("dra-request-reference", _DRA, _CLAIMS, dra_request_reference),
    Rule("dra-constraint-attribute", _DRA, _CLAIMS, dra_constraint_attribute),
    Rule("dra-cel-selector", _DRA, _CLAIMS | _DC, dra_cel_selector),
    Rule("dra-opaque-config", _DRA, _CLAIMS | _DC, dra_opaque_config),
    Rule("dra-template-metadata", _DRA, frozenset({"ResourceClaimTemplate"}), dra_template_metadata),
    Rule("dra-deviceclass-limits", _DRA, _DC, dra_deviceclass_limits),
    Rule("dra-extended-resource-name", _DRA, _DC, dra_extended_resource_name),
)


@functools.cache
def rules_for(api_version: str, kind: str) -> tuple[Rule, ...]:
    return tuple(r for r in RULES if api_version in r.api_versions and kind in r.kinds)


def documentation() -> str:
    """All rules with their docstrings, as Markdown."""
    return "\n".join(f"### `{r.id}`\n\n{r.doc}\n" for r in RULES)
