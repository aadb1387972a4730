"""Admission rules that no OpenAPI schema carries, and the table that lists them.

Kueue's validating webhooks for ClusterQueue and Cohort are in `gputenancy.check.webhook.queuerules`, those for
ResourceFlavor and the LocalQueue naming rules that jobs depend on in `gputenancy.check.webhook.flavorrules`, the
API server's validation of resource.k8s.io ResourceClaimTemplate / ResourceClaim / DeviceClass in
`gputenancy.check.kubernetes.dra`. Each rule is one function in RULES; its docstring is
its documentation with a passing and a failing example. A rule takes an object body and yields Problems (a
field path and a message); `validate` turns them into findings at the input place that caused the field.

Every rule tolerates malformed input (wrong types, missing fields): schema validation reports those.
`label_problems` and the name checks `validate` applies to object metadata are re-exported here.
"""

from __future__ import annotations

import functools

from gputenancy.check.kubernetes import dra
from gputenancy.check.webhook.admission import Rule
from gputenancy.check.webhook.admission import label_problems as label_problems
from gputenancy.check.webhook.flavorrules import (
    lq_cluster_queue_ref,
    lq_name_length,
    rf_node_labels,
    rf_node_taints,
    rf_tolerations,
)
from gputenancy.check.webhook.queuerules import (
    cohort_fair_sharing,
    cohort_flavor_order,
    cohort_flavor_unique,
    cohort_limits_need_parent,
    cohort_quota_nonnegative,
    cohort_resource_count,
    cohort_resource_name,
    cohort_resource_unique,
    cq_admission_check_flavors,
    cq_borrowing_limit_cohort,
    cq_fair_sharing,
    cq_flavor_fungibility,
    cq_flavor_order,
    cq_flavor_resource_combinations,
    cq_flavor_unique,
    cq_lending_limit,
    cq_lending_limit_cohort,
    cq_namespace_selector,
    cq_preemption,
    cq_quota_nonnegative,
    cq_resource_count,
    cq_resource_name,
    cq_resource_unique,
    cq_total_flavors,
    cq_total_resources,
)
from gputenancy.common.names import dns1123_label_errors as dns1123_label_errors
from gputenancy.common.names import dns1123_subdomain_errors as dns1123_subdomain_errors
from gputenancy.common.names import qualified_name_errors as qualified_name_errors

KUEUE = "kueue.x-k8s.io"
RESOURCE = "resource.k8s.io"


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
