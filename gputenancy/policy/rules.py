"""Named policy rules over the model: the one table of them (RULES), running them, and their documentation.

Each rule is one function in its family's module (`placement`, `budgets`, `devices`, `capacity`,
`boundary`, `versionrules`, `destinations`) listed in
RULES; its docstring is its documentation (`python pipeline.py rules` prints them) with a passing and a
failing example.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from gputenancy.common.findings import Finding
from gputenancy.inputs.spec import Model
from gputenancy.policy import (
    boundary,
    budgets,
    capacity,
    cohorts,
    destinations,
    devices,
    draquota,
    fleet,
    frameworks,
    hami,
    namespacelabels,
    placement,
    queuepolicy,
    resourcegroups,
    topology,
    versionrules,
)
from gputenancy.policy.catalog import Catalog as Catalog
from gputenancy.policy.catalog import effective_catalog as effective_catalog

Rule = Callable[[Model, Catalog], Iterable[Finding]]

RULES: dict[str, Rule] = {
    "tenant-duplicate": placement.tenant_duplicate,
    "namespace-owner": placement.namespace_owner,
    "cluster-unknown": placement.cluster_unknown,
    "tenant-no-budget": placement.tenant_no_budget,
    "flavor-unknown": budgets.flavor_unknown,
    "device-class-unknown": devices.device_class_unknown,
    "device-class-conflict": devices.device_class_conflict,
    "budget-duplicate-resource": budgets.budget_duplicate_resource,
    "budget-duplicate-flavor": budgets.budget_duplicate_flavor,
    "quota-limits": budgets.quota_limits,
    "cohort-required": budgets.cohort_required,
    "cohort-unknown": budgets.cohort_unknown,
    "claim-coverage": devices.claim_coverage,
    "claim-scope": devices.claim_scope,
    "mapping-limits": devices.mapping_limits,
    "capacity": capacity.capacity,
    "cohort-cycle": boundary.cohort_cycle,
    "namespace-reserved": boundary.namespace_reserved,
    "hami-units": hami.hami_units,
    "hami-device": hami.hami_device,
    "hami-flavor": hami.hami_flavor,
    "hami-dra": hami.hami_dra,
    "hami-names": hami.hami_names,
    "hami-collision": hami.hami_collision,
    "hami-transformation": hami.hami_transformation,
    "hami-template": hami.hami_template,
    "dra-capacity-quota": draquota.dra_capacity_quota,
    "kueue-version-unsupported": versionrules.kueue_version_unsupported,
    "k8s-version-unsupported": versionrules.k8s_version_unsupported,
    "argocd-destination-duplicate": destinations.argocd_destination_duplicate,
    "argocd-destination-unknown": destinations.argocd_destination_unknown,
    "argocd-destination-split": destinations.argocd_destination_split,
    "fleet-worker": fleet.fleet_worker,
    "fleet-capacity": fleet.fleet_capacity,
    "fleet-origin": fleet.fleet_origin,
    "fleet-versions": fleet.fleet_versions,
    "fleet-version-fields": fleet.fleet_version_fields,
    "fleet-quota-automation": fleet.fleet_quota_automation,
    "fleet-claim-template": fleet.fleet_claim_template,
    "fleet-budget": fleet.fleet_budget,
    "framework-unknown": frameworks.framework_unknown,
    "fleet-quota-unclaimed": fleet.fleet_quota_unclaimed,
    "cohort-budget": cohorts.cohort_budget,
    "cohort-limits": cohorts.cohort_limits,
    "budget-resource-groups": resourcegroups.budget_resource_groups,
    "queue-policy": queuepolicy.queue_policy,
    "admission-check": queuepolicy.admission_check,
    "namespace-selector": namespacelabels.namespace_selector,
    "topology": topology.topology,
}
"""Every rule by id, in the order `python pipeline.py rules` documents them."""


def check(model: Model) -> list[Finding]:
    catalog = effective_catalog(model)
    findings: list[Finding] = []
    for fn in RULES.values():
        findings.extend(fn(model, catalog))
    return sorted(set(findings))


def documentation() -> str:
    """All rules with their docstrings, as Markdown."""
    parts = []
    for rule_id, fn in RULES.items():
        doc = (fn.__doc__ or "").strip()
        parts.append(f"### `{rule_id}`\n\n{doc}\n")
    return "\n".join(parts)
