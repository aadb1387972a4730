"""Mutants of the fleet, the hub and what a review shows: the MultiKueue rules at their boundaries (the
Kubernetes skew, twins matched by namespace and name), the manager's objects, the fleet section of
`budgets`, a worker joining or leaving in `plan`, the pool charts of the pull-request comment, the
`report` page, and the base Configuration mapping a class the catalog maps too (the record and the
other mutants: tools/mutants.py). Each names the tests (node ids) that pin its behaviour."""

from __future__ import annotations

from mutants import CONFIG, Mutant

POLICY_FLEET = "gputenancy/policy/fleet.py"
CHAIN_FLEET = "gputenancy/check/chain/fleet.py"
RENDER_MK = "gputenancy/render/multikueue.py"
FLEETVIEW = "gputenancy/deliver/fleetview.py"
FLEETRISKS = "gputenancy/deliver/fleetrisks.py"
BUDGETDIFF = "gputenancy/deliver/budgetdiff.py"
POOLCHART = "gputenancy/deliver/poolchart.py"
HTMLREPORT = "gputenancy/deliver/htmlreport.py"

T_SKEW = ("tests/test_fleet_rules.py::test_kubernetes_one_minor_from_the_manager_passes_and_two_are_refused",)
T_TWINS = ("tests/test_fleet_rules.py::test_twins_are_matched_by_namespace_and_name",)
T_MK = "tests/test_multikueue.py::"
T_FLEETS = ("tests/test_fleet_plan.py::test_two_fleets_each_list_their_own_tenants_and_workers",)
T_RISKS = ("tests/test_fleet_plan.py::test_plan_names_the_risks_of_a_worker_joining_and_leaving",)
T_PIES = "tests/test_plan_budgets.py::"
T_REPORT = "tests/test_report.py::"

FLEET: tuple[Mutant, ...] = (
    # ------------------------------------------------------------------ fleet rules at their boundaries
    Mutant(
        "fleet-skew-boundary",
        POLICY_FLEET,
        "            if skew is not None and skew > KUBERNETES_SKEW:",
        "            if skew is not None and skew >= KUBERNETES_SKEW:",
        T_SKEW,
        "a worker one Kubernetes minor from its manager is refused",
    ),
    Mutant(
        "fleet-skew-one-side",
        POLICY_FLEET,
        "    return abs(pa[1] - pb[1]) if pa[0] == pb[0] else 99",
        "    return pa[1] - pb[1] if pa[0] == pb[0] else 99",
        T_SKEW,
        "a worker two Kubernetes minors above its manager passes (the skew counted one way)",
    ),
    Mutant(
        "fleet-twin-by-name",
        CHAIN_FLEET,
        "if (t.namespace, t.name) == (b.namespace, b.name)",
        "if t.name == b.name",
        T_TWINS,
        "a LocalQueue or claim template of one namespace counts as the twin of another namespace's",
    ),
    # ------------------------------------------------------------------ the manager's objects
    Mutant(
        "multikueue-workers-sorted",
        RENDER_MK,
        "        workers=list(mk.worker_names),",
        "        workers=sorted(mk.worker_names),",
        (f"{T_MK}test_the_worker_preference_order_is_kept_not_sorted",),
        "the MultiKueueConfig lists the workers sorted, not in preference order",
    ),
    Mutant(
        "multikueue-check-on-workers",
        RENDER_MK,
        '    return [{"name": CHECK_NAME}] if cluster.multikueue is not None else []',
        '    return [{"name": CHECK_NAME}]',
        (f"{T_MK}test_manager_queues_carry_exactly_one_multikueue_check_and_worker_queues_none",),
        "every ClusterQueue gets the MultiKueue check, workers' too",
    ),
    Mutant(
        "multikueue-one-secret",
        RENDER_MK,
        "        secrets=[secret_name(w) for w in mk.worker_names],",
        "        secrets=[secret_name(mk.worker_names[0]) for w in mk.worker_names],",
        (f"{T_MK}test_the_manager_has_the_check_config_and_one_cluster_per_worker_naming_its_secret",),
        "every MultiKueueCluster names the first worker's kubeconfig Secret",
    ),
    Mutant(
        "multikueue-quota-label-manual",
        RENDER_MK,
        "    return {QUOTA_LABEL: AUTOMATED} if mk is not None and mk.quota_management == AUTOMATED else {}",
        "    return {QUOTA_LABEL: AUTOMATED} if mk is not None else {}",
        (f"{T_MK}test_without_automation_the_hub_applications_are_unchanged",),
        "a manager with manual quotas is labelled automated (Argo CD stops syncing its quotas)",
    ),
    # ------------------------------------------------------------------ budgets and plan on a fleet
    Mutant(
        "fleetview-every-fleets-rows",
        FLEETVIEW,
        "    lines: list[str] = []\n    for manager in dict.fromkeys(q.manager for q in rows):\n"
        "        mine = [q for q in rows if q.manager == manager]",
        "    lines: list[str] = []\n    for manager in dict.fromkeys(q.manager for q in rows):\n"
        "        mine = list(rows)",
        T_FLEETS,
        "each fleet's section lists the rows of every fleet",
    ),
    Mutant(
        "fleetview-every-tenants-lines",
        FLEETVIEW,
        "                    f\"    {q.text().removeprefix(f'{tenant} ')}; {_job(jobs, q).text()}\" for q in theirs",
        "                    f\"    {q.text().removeprefix(f'{tenant} ')}; {_job(jobs, q).text()}\" for q in mine",
        T_FLEETS,
        "each tenant of a fleet is shown with every tenant's quotas",
    ),
    Mutant(
        "fleetrisks-no-removal",
        FLEETRISKS,
        '        if o.key.kind != "MultiKueueCluster" or o.action not in ("added", "removed"):',
        '        if o.key.kind != "MultiKueueCluster" or o.action != "added":',
        T_RISKS,
        "a worker leaving a fleet is no risk",
    ),
    Mutant(
        "fleetrisks-swapped",
        FLEETRISKS,
        '        if o.action == "added":',
        '        if o.action == "removed":',
        T_RISKS,
        "a worker joining is reported as leaving and the other way round",
    ),
    # ------------------------------------------------------------------ the pool charts of the PR comment
    Mutant(
        "poolchart-capacity-only-undrawn",
        BUDGETDIFF,
        "            _holders(self.before) != _holders(self.after)\n            or _cap(self.before) != _cap(self.after)\n",
        "            _holders(self.before) != _holders(self.after)\n",
        (f"{T_PIES}test_a_capacity_change_alone_is_drawn_in_the_pr_comment",),
        "a change of capacity alone is not drawn",
    ),
    Mutant(
        "poolchart-free-at-full",
        POOLCHART,
        "    if headroom > 0:",
        "    if headroom >= 0:",
        (f"{T_PIES}test_the_pr_comment_draws_each_changed_gpu_pool_before_and_after",),
        "a pool exactly at capacity gets a free slice of 0",
    ),
    Mutant(
        "poolchart-over-at-full",
        POOLCHART,
        "    elif headroom < 0:",
        "    elif headroom <= 0:",
        (f"{T_PIES}test_the_pr_comment_draws_each_changed_gpu_pool_before_and_after",),
        "a pool exactly at capacity says it is over capacity by 0",
    ),
    Mutant(
        "poolchart-empty-share",
        POOLCHART,
        "for g in p.grants if g.nominal.value > 0]",
        "for g in p.grants if g.nominal.value >= 0]",
        (f"{T_PIES}test_pies_leave_out_empty_shares_and_stop_at_the_chart_limit",),
        "a tenant holding nothing of a pool gets a slice",
    ),
    Mutant(
        "poolchart-limit-note",
        POOLCHART,
        "        if drawn > MAX_CHARTS",
        "        if drawn >= MAX_CHARTS",
        (f"{T_PIES}test_pies_leave_out_empty_shares_and_stop_at_the_chart_limit",),
        "exactly the chart limit of changed pools says 0 more are in the tables",
    ),
    # ------------------------------------------------------------------ the report page
    Mutant(
        "report-draining-reach",
        HTMLREPORT,
        '            "reach": 0.0 if g.draining else float(g.reach.value / div),',
        '            "reach": float(g.reach.value / div),',
        (f"{T_REPORT}test_a_draining_tenant_reaches_nothing_and_the_rule_sits_at_the_capacity",),
        "a draining tenant is drawn reaching what it could borrow",
    ),
    Mutant(
        "report-rule-at-nominal",
        HTMLREPORT,
        '        capacity = alt.InlineData(values=[{"capacity": float(p.capacity.value / div)}])',
        '        capacity = alt.InlineData(values=[{"capacity": float(p.nominal.value / div)}])',
        (f"{T_REPORT}test_a_draining_tenant_reaches_nothing_and_the_rule_sits_at_the_capacity",),
        "the capacity rule is drawn at the sum of the budgets",
    ),
    Mutant(
        "report-headroom-as-nominal",
        HTMLREPORT,
        '    head = human(p.headroom, p.unit) if p.headroom is not None else "-"',
        '    head = human(p.nominal, p.unit) if p.headroom is not None else "-"',
        (f"{T_REPORT}test_the_page_holds_a_chart_per_pool_and_needs_no_network",),
        "a chart's caption gives the budgets' sum as its headroom",
    ),
    # ------------------------------------------------------------------ the base Configuration's mappings
    Mutant(
        "mapping-conflict-same-name",
        CONFIG,
        "            if cls in claimed:",
        '            if cls in claimed and claimed[cls] != m.get("name"):',
        (
            "tests/test_render.py::"
            "test_a_base_mapping_duplicating_the_catalogs_under_the_same_quota_name_is_reported",
        ),
        "a base mapping that repeats the catalog's, same quota name, is not reported",
    ),
)
