"""Mutants of the commands that read a cluster or judge a job: the cluster reader (`cluster/`: the dump's
names, the read-only `kubectl`, what normalisation removes and converts, the field-by-field comparison),
`status` (`live/`: who set a field, what Argo CD does with an object, devices, drained queues, cohorts,
the exit code) and `admit` (`admission/`, `check/chain/charging.py`: what a pod is charged, the quota tree,
the flavor search, the verdict's exit code). Each names the tests (files or node ids) that pin its
behaviour (the record and the other mutants: tools/mutants.py)."""

from __future__ import annotations

from mutants import Mutant

DUMP = "gputenancy/cluster/dump.py"
KUBECTL = "gputenancy/cluster/kubectl.py"
NORMALISE = "gputenancy/cluster/normalise.py"
COMPARE = "gputenancy/cluster/compare.py"
OWNERS = "gputenancy/live/owners.py"
DRIFT = "gputenancy/live/drift.py"
DEVICES = "gputenancy/live/devices.py"
DRAIN = "gputenancy/live/drain.py"
TEAMS = "gputenancy/live/teams.py"
MANAGER = "gputenancy/live/manager.py"
VIEW = "gputenancy/live/view.py"
CHARGING = "gputenancy/check/chain/charging.py"
CHARGE = "gputenancy/admission/charge.py"
QUOTA = "gputenancy/admission/quota.py"
ASSIGN = "gputenancy/admission/assign.py"
JUDGE = "gputenancy/admission/judge.py"
MANIFESTS = "gputenancy/admission/manifests.py"
ADOPT_QUOTA = "gputenancy/adopt/quota.py"
ADOPT_GROUPING = "gputenancy/adopt/grouping.py"
ADOPT_COMPARE = "gputenancy/adopt/compare.py"
ADOPT_PROOF = "gputenancy/adopt/proof.py"

T_READER = ("tests/test_cluster_reader.py",)
T_R = "tests/test_cluster_reader.py::"
T_STATUS = "tests/test_status.py::"
T_LAB = (f"{T_STATUS}test_lab_runs_what_git_says",)
T_PROD = (f"{T_STATUS}test_prod_differs_in_exactly_what_its_readme_lists",)
T_OWNERS = (f"{T_STATUS}test_the_field_manager_of_a_path_is_read_from_the_fieldsv1_trie",)
T_ADMIT = ("tests/test_admit_model.py", "tests/test_admit.py")
T_MODEL = "tests/test_admit_model.py::"
T_ADOPT = ("tests/test_adopt.py",)

LIVE: tuple[Mutant, ...] = (
    # ------------------------------------------------------------------ the cluster reader
    Mutant(
        "dump-namespace-unchecked",
        DUMP,
        "        errors = names.dns1123_label_errors(namespace)",
        "        errors = []",
        (f"{T_R}test_namespaces_are_labels_and_every_object_names_one_the_api_server_accepts",),
        "an object's metadata.namespace is not checked as a name the API server accepts",
    ),
    Mutant(
        "dump-namespace-as-subdomain",
        DUMP,
        'errors = (names.dns1123_label_errors if kind == "Namespace" else names.dns1123_subdomain_errors)(name)',
        "errors = names.dns1123_subdomain_errors(name)",
        (f"{T_R}test_namespaces_are_labels_and_every_object_names_one_the_api_server_accepts",),
        "a Namespace named like a subdomain (with dots) passes: namespaces are DNS-1123 labels",
    ),
    Mutant(
        "kubectl-context-dash",
        KUBECTL,
        '    if not _CONTEXT.fullmatch(context) or context.startswith("-"):',
        "    if not _CONTEXT.fullmatch(context):",
        (f"{T_R}test_a_context_that_is_not_a_kubeconfig_name_is_refused",),
        "a context name starting with '-' reaches kubectl as an option",
    ),
    Mutant(
        "kubectl-context-any-text",
        KUBECTL,
        '_CONTEXT = re.compile(r"[A-Za-z0-9@:/._-]{1,253}")',
        '_CONTEXT = re.compile(r".{1,253}", re.DOTALL)',
        (f"{T_R}test_a_context_that_is_not_a_kubeconfig_name_is_refused",),
        "a context name with spaces, newlines or shell characters is not refused",
    ),
    Mutant(
        "kubectl-read-guard-removed",
        KUBECTL,
        "        if _verb(argv) not in READ_VERBS:",
        "        if False:",
        (f"{T_R}test_read_live_starts_nothing_whose_verb_is_not_get",),
        "the read-only guard is gone: an argv whose verb is not `get` would be run",
    ),
    Mutant(
        "kubectl-verb-skips-one-word",
        KUBECTL,
        '        rest = rest[2:] if rest[0] in ("--context", "-n") else rest[1:]',
        "        rest = rest[1:]",
        T_READER,
        "the verb of `kubectl --context C get` is read as C: the guard refuses every read",
    ),
    Mutant(
        "kubectl-one-namespace",
        KUBECTL,
        '"get", ",".join(KINDS), "-A",',
        '"get", ",".join(KINDS),',
        T_READER,
        "the objects are read from the current namespace only (no -A)",
    ),
    Mutant(
        "normalise-keeps-managed-fields",
        NORMALISE,
        '    "managedFields",\n    "uid",',
        '    "uid",',
        T_READER,
        "a server-owned field (metadata.managedFields) is kept, so every live object differs from Git",
    ),
    Mutant(
        "normalise-keeps-kueue-finalizer",
        NORMALISE,
        '            meta["finalizers"] = [f for f in finalizers if f not in KUEUE_FINALIZERS]',
        '            meta["finalizers"] = list(finalizers)',
        T_READER,
        "Kueue's own finalizers are kept",
    ),
    Mutant(
        "normalise-v1beta1-cluster-queue-missed",
        NORMALISE,
        '    if body.get("kind") != "ClusterQueue" or not isinstance(spec, dict):',
        '    if body.get("kind") != "Cohort" or not isinstance(spec, dict):',
        T_READER,
        "a v1beta1 ClusterQueue's spec is not converted (cohort, admissionChecks, flavorFungibility)",
    ),
    Mutant(
        "normalise-fungibility-one-field",
        NORMALISE,
        '        for key in ("whenCanBorrow", "whenCanPreempt"):',
        '        for key in ("whenCanPreempt",):',
        T_READER,
        "v1beta1's whenCanBorrow: Borrow is not converted to MayStopSearch",
    ),
    Mutant(
        "normalise-quotas-raw",
        NORMALISE,
        '        _canonical_quotas(out.get("spec"))',
        "        pass",
        T_READER,
        "quota quantities are compared as written (8 against '8', 1000m against 1)",
    ),
    Mutant(
        "compare-bool-equals-int",
        COMPARE,
        "    if live != rendered or isinstance(live, bool) != isinstance(rendered, bool):",
        "    if live != rendered:",
        (f"{T_R}test_compare_sees_a_flavor_order_changed_and_a_boolean_for_a_number",),
        "true and 1 (false and 0) compare equal",
    ),
    Mutant(
        "compare-flavor-order-ignored",
        COMPARE,
        "        if a is not None and b is not None and list(a) == list(b):",
        "        if a is not None and b is not None and set(a) == set(b):",
        (f"{T_R}test_compare_sees_a_flavor_order_changed_and_a_boolean_for_a_number",),
        "named list items compared by name whatever their order: a flavor order reversed on the cluster is in sync",
    ),
    # ------------------------------------------------------------------ status
    Mutant(
        "owners-any-list-item",
        OWNERS,
        "                and all(item.get(k) == v for k, v in want.items())",
        "",
        T_OWNERS,
        "a list item's owner is read from the first keyed entry, another item's",
    ),
    Mutant(
        "owners-no-enclosing",
        OWNERS,
        "        walk = walk[:-1]\n    return ()",
        "        return ()\n    return ()",
        T_OWNERS,
        "a field absent on the cluster has no owner (not those of the value holding it)",
    ),
    Mutant(
        "drift-argocd-manager-name",
        OWNERS,
        'ARGOCD = "argocd-controller"',
        'ARGOCD = "argocd-application-controller"',
        T_LAB,
        "Argo CD's field manager is taken to be its controller's name: every object reads as adopted",
    ),
    Mutant(
        "drift-tracking-ignored",
        DRIFT,
        "    if tracked or owners.ARGOCD in managers:",
        "    if owners.ARGOCD in managers:",
        (f"{T_STATUS}test_an_extra_object_argo_cd_tracks_is_pruned",),
        "an extra object carrying Argo CD's tracking id is said to be left alone; prune deletes it",
    ),
    Mutant(
        "devices-short-at-equal",
        DEVICES,
        "    if row.published < row.declared:",
        "    if row.published <= row.declared:",
        T_LAB,
        "as many devices published as declared is a warning",
    ),
    Mutant(
        "drain-reserving-ignored",
        DRAIN,
        "        max(admitted, reserving) + pending,",
        "        admitted + pending,",
        (f"{T_STATUS}test_a_queue_that_only_reserves_quota_is_not_empty",),
        "a ClusterQueue whose workloads only reserve quota counts as empty: a drained tenant's removal is allowed",
    ),
    Mutant(
        "cohort-used-as-nominal",
        TEAMS,
        "        used[key] = used.get(key, ZERO) + u.used",
        "        used[key] = used.get(key, ZERO) + u.nominal",
        (f"{T_STATUS}test_a_cohorts_use_is_what_its_queues_use_not_their_quota",),
        "a cohort's use is the sum of its queues' nominal quota, not of what they use",
    ),
    Mutant(
        "manager-restart-git-text-flipped",
        MANAGER,
        "        elif live_text == git.text:",
        "        elif live_text != git.text:",
        (f"{T_STATUS}test_the_config_map_back_at_gits_with_the_manager_on_another_checksum_says_restart",),
        "a ConfigMap back at Git's text with the manager on another checksum is said to hold neither",
    ),
    Mutant(
        "status-exit-differs-0",
        VIEW,
        "    return 2 if found.differs else 0",
        "    return 0",
        (f"{T_STATUS}test_the_command_exits_0_2_1_and_prints_text_markdown_json",),
        "status exits 0 when the cluster differs from Git",
    ),
    # ------------------------------------------------------------------ admit
    Mutant(
        "charge-init-summed",
        CHARGE,
        "        if r not in total or v > total[r][0]:\n"
        '            total[r] = (v, q, why + (" (more than the containers)" if r in total else ""), at)',
        "        _add(total, r, Quantity(v, q.format), why, at)",
        (f"{T_MODEL}test_a_pod_is_charged_as_kueue_sums_it",),
        "init containers are added to the containers instead of taken at their largest",
    ),
    Mutant(
        "charge-init-without-sidecars",
        CHARGE,
        "            need = v + sidecars.get(r, Decimal(0))",
        "            need = v",
        (f"{T_MODEL}test_a_pod_is_charged_as_kueue_sums_it",),
        "an init container's need leaves out the sidecars started before it",
    ),
    Mutant(
        "charge-limits-over-requests",
        CHARGE,
        '    for key, source in (("limits", limits), ("requests", requests)):  # requests win over limits\n'
        "        for r, v in source.items():\n"
        "            q = _quantity(v)\n"
        '            if q is None or (key == "limits" and r in requests):',
        '    for key, source in (("requests", requests), ("limits", limits)):  # requests win over limits\n'
        "        for r, v in source.items():\n"
        "            q = _quantity(v)\n"
        '            if q is None or (key == "requests" and r in limits):',
        (
            f"{T_MODEL}test_a_pod_is_charged_as_kueue_sums_it",
            f"{T_MODEL}test_requests_are_charged_not_limits",
        ),
        "a container with both limits and requests is charged its limits",
    ),
    Mutant(
        "charge-allocation-all-ignored",
        CHARGING,
        '        if exactly.get("allocationMode", "ExactCount") == "All":',
        '        if exactly.get("allocationMode", "ExactCount") == "all":',
        (f"{T_MODEL}test_allocation_mode_all_is_inadmissible",),
        "a claim with allocationMode All is charged one device, not Inadmissible",
    ),
    Mutant(
        "charge-count-default-zero",
        CHARGING,
        '        count = exactly.get("count", 1)',
        '        count = exactly.get("count", 0)',
        (f"{T_MODEL}test_a_claim_without_a_count_is_charged_one_device",),
        "an exactly request without count is charged no device (the API server defaults it to 1)",
    ),
    Mutant(
        "job-parallelism-not-capped",
        MANIFESTS,
        "        min(pods, completions) if isinstance(completions, int)",
        "        max(pods, completions) if isinstance(completions, int)",
        (f"{T_MODEL}test_a_pod_is_charged_as_kueue_sums_it",),
        "a Job's pod count is not capped by its completions",
    ),
    Mutant(
        "quota-borrowing-limit-ignored",
        QUOTA,
        "        return min(most, self.subtree_quota(node, fr) + limit) if limit is not None else most",
        "        return most",
        (
            f"{T_MODEL}test_more_than_any_flavor_can_hold_never_runs",
            f"{T_MODEL}test_the_borrowing_limit_bounds_what_a_queue_can_ever_take",
        ),
        "a queue's maximum capacity ignores its borrowingLimit",
    ),
    Mutant(
        "quota-lending-limit-ignored",
        QUOTA,
        "        return max(_ZERO, self.subtree_quota(node, fr) - lending) if lending is not None else _ZERO",
        "        return _ZERO",
        T_ADMIT,
        "a queue's lendingLimit no longer keeps the rest of its quota for itself",
    ),
    Mutant(
        "assign-flavor-order-reversed",
        ASSIGN,
        "            for name in names:",
        "            for name in reversed(names):",
        (f"{T_MODEL}test_the_first_flavor_that_fits_is_taken_in_the_queues_order",),
        "flavors are tried last first: a job two flavors can hold gets the second",
    ),
    Mutant(
        "assign-capacity-at-equal",
        ASSIGN,
        "                    if val > cap:",
        "                    if val >= cap:",
        (f"{T_MODEL}test_pod_sets_count_what_the_ones_before_them_took",),
        "a request exactly at a queue's maximum capacity never runs",
    ),
    Mutant(
        "judge-pending-exits-0",
        JUDGE,
        "    return 2 if any(v.outcome == PENDING for v in verdicts) else 0",
        "    return 0",
        ("tests/test_admit.py::test_seed_second_job_waits_behind_the_first_with_the_lab_dump",),
        "admit exits 0 when a workload waits for quota",
    ),
    Mutant(
        "judge-inadmissible-exits-2",
        JUDGE,
        "    if findings or any(v.outcome in (NEVER, INADMISSIBLE) for v in verdicts):",
        "    if findings or any(v.outcome == NEVER for v in verdicts):",
        (f"{T_MODEL}test_allocation_mode_all_is_inadmissible",),
        "an Inadmissible workload exits 0 (or 2), as if it could run",
    ),
    # ------------------------------------------------------------------ import
    Mutant(
        "adopt-proof-blind",
        ADOPT_PROOF,
        "        diffs = compare.compare(o.body, found, rendered.crd_dir)\n        if diffs:",
        "        diffs = compare.compare(o.body, found, rendered.crd_dir)\n        if False:",
        T_ADOPT,
        "the round trip calls an object reproduced exactly whatever fields differ",
    ),
    Mutant(
        "adopt-bookkeeping-kept",
        ADOPT_COMPARE,
        "        kept = {k: v for k, v in (meta.get(key) or {}).items() if k not in names or k in theirs}",
        "        kept = dict(meta.get(key) or {})",
        T_ADOPT,
        "the pipeline's own labels and annotations count as differences from the live object",
    ),
    Mutant(
        "adopt-zero-resource-dropped",
        ADOPT_QUOTA,
        "            if name not in written and entries:",
        "            if False:",
        (
            "tests/test_adopt.py::test_a_resource_zero_in_every_flavor_is_imported_so_the_queue_still_covers_it",
        ),
        "a resource zero in every flavor is not written: the group no longer covers it",
    ),
    Mutant(
        "adopt-borrowing-limit-dropped",
        ADOPT_QUOTA,
        '        out["borrowingLimit"] = amount_value(borrowing)',
        "        pass",
        T_ADOPT,
        "a live borrowingLimit is not imported into the budget",
    ),
    Mutant(
        "adopt-grouped-flavors-sorted",
        ADOPT_GROUPING,
        "    for flavor in order:",
        "    for flavor in sorted(order):",
        T_ADOPT,
        "a grouped team's flavors are written in name order, not the queues' order (Kueue tries them in order)",
    ),
)
