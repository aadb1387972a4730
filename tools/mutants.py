"""The fixed list of mutants of tools/mutate.py: one small deliberate bug each in a core behaviour.

Each mutant names its file, the exact source text it changes (found once, or the run stops) and the
replacement, the tests that concern it (pytest paths or node ids, run with -x), and what it breaks.
When a change of the code moves or rewrites an anchor, update the mutant here so it still makes the
same bug; delete it only with the behaviour it tests.
"""

from __future__ import annotations

import dataclasses


@dataclasses.dataclass(frozen=True)
class Mutant:
    id: str
    path: str
    old: str
    new: str
    tests: tuple[str, ...]
    why: str
    timeout: float = 0.0  # seconds; 0: the runner's default


CAPACITY = "gputenancy/policy/capacity.py"
BUDGETS = "gputenancy/policy/budgets.py"
CATALOG = "gputenancy/policy/catalog.py"
DEVICES = "gputenancy/policy/devices.py"
PLACEMENT = "gputenancy/policy/placement.py"
CONFIG = "gputenancy/render/kueueconfig.py"
ENGINE = "gputenancy/engine.py"
CACHEKEY = "gputenancy/caching/cachekey.py"
MEMO = "gputenancy/caching/memo.py"
QUANTITY = "gputenancy/inputs/quantity.py"
QUEUERULES = "gputenancy/check/webhook/queuerules.py"
PLANVIEW = "gputenancy/deliver/planview.py"
PLAN = "gputenancy/deliver/plan.py"
PUBLISH = "gputenancy/deliver/publish.py"
OUTPUT = "gputenancy/assemble/output.py"
SWAP = "gputenancy/assemble/swap.py"
FILES = "gputenancy/inputs/files.py"
DOCUMENT = "gputenancy/inputs/document.py"
YAMLBUILD = "gputenancy/inputs/yamlbuild.py"
DRAMAPPINGS = "gputenancy/check/config/dramappings.py"
POSTBUILD = "gputenancy/check/chain/postbuild.py"
MANIFESTS = "gputenancy/render/manifests.py"
MDSAFE = "gputenancy/deliver/mdsafe.py"
RULEINDEX = "gputenancy/check/ruleindex.py"
INTERRUPT = "gputenancy/common/interrupt.py"

T_RULES = ("tests/test_boundaries.py", "tests/test_rules.py")
T_CHAIN = ("tests/test_boundaries.py", "tests/test_chain_property.py", "tests/test_render.py")
T_CACHE = ("tests/test_cachekey.py", "tests/test_scale.py")
T_QUANTITY = ("tests/test_boundaries.py", "tests/test_quantity.py")
T_WEBHOOKS = ("tests/test_boundaries.py", "tests/test_webhooks.py")
T_PLAN = ("tests/test_plan.py",)
T_PUBLISH = ("tests/test_publish.py",)
T_OUTPUT = (
    "tests/test_cli.py",
    "tests/test_trust_environment.py",
    "tests/test_publish.py::test_interrupted_write_leaves_the_directory_as_it_was",
)
T_SOURCE = ("tests/test_boundaries.py", "tests/test_source.py")
T_MAPPINGS = ("tests/test_mapping_chain.py", "tests/test_chain_property.py")
T_DOCS = ("tests/test_docs_prose.py", "tests/test_rules.py", "tests/test_trust_environment.py")
T_SIGNALS = ("tests/test_signals.py",)

MUTANTS: tuple[Mutant, ...] = (
    # ------------------------------------------------------------------ model rules
    Mutant(
        "capacity-boundary",
        CAPACITY,
        "        if used > cap[0]:",
        "        if used >= cap[0]:",
        T_RULES,
        "capacity refuses budgets exactly at capacity",
    ),
    Mutant(
        "capacity-one-class-per-resource",
        CAPACITY,
        "out[key] = ((prev[0] + q) if prev else q, origin)",
        "out[key] = (q, origin)",
        T_RULES,
        "capacity of two device classes on one quota resource no longer adds up",
    ),
    Mutant(
        "usage-one-class-per-resource",
        CAPACITY,
        "                total[key] = total.get(key, parse(0)) + amount.nominal",
        "                total[key] = amount.nominal",
        T_RULES,
        "budgets on one quota resource no longer add up",
    ),
    Mutant(
        "quota-limits-equal",
        BUDGETS,
        "amount.lending > amount.nominal",
        "amount.lending >= amount.nominal",
        T_RULES,
        "quota-limits refuses lendingLimit == nominal, which Kueue allows",
    ),
    Mutant(
        "cohort-required-lending",
        BUDGETS,
        "if amount.borrowing is not None or amount.lending is not None:",
        "if amount.borrowing is not None:",
        T_RULES,
        "cohort-required ignores a lendingLimit without a cohort",
    ),
    Mutant(
        "classes-used-no-claims",
        CATALOG,
        "            used.setdefault(ct.device_class, ct.class_origin)",
        "            pass",
        T_CHAIN,
        "classes_used ignores claim templates: a class only claimed gets no DeviceClass nor mapping",
    ),
    Mutant(
        "claim-coverage-off",
        DEVICES,
        "if entry is not None and entry.resource not in covered:",
        "if entry is not None and entry.resource not in covered and False:",
        T_RULES,
        "claim-coverage never fires",
    ),
    Mutant(
        "namespace-owner-off",
        PLACEMENT,
        "        if len({t.name for t, _ in owners}) < 2:",
        "        if len({t.name for t, _ in owners}) < 3:",
        T_RULES,
        "a namespace listed by two tenants passes",
    ),
    Mutant(
        "mapping-limits-boundary",
        DEVICES,
        "        if len(by_resource) > MAX_MAPPINGS:",
        "        if len(by_resource) >= MAX_MAPPINGS:",
        T_RULES,
        "mapping-limits refuses exactly 16 mappings",
    ),
    Mutant(
        "mapping-classes-boundary",
        DEVICES,
        "            if len(classes) > MAX_CLASSES_PER_MAPPING:",
        "            if len(classes) > MAX_CLASSES_PER_MAPPING + 1:",
        T_RULES,
        "mapping-limits lets 9 classes into one mapping",
    ),
    Mutant(
        "catalog-last-declaration-wins",
        CATALOG,
        "            classes.setdefault(entry.name, entry)",
        "            classes[entry.name] = entry",
        T_RULES,
        "a tenant's declaration overrides the platform catalog",
    ),
    # ------------------------------------------------------------------ the Kueue Configuration merge
    Mutant(
        "merge-drops-base-mappings",
        CONFIG,
        "merged = sorted([*existing, *generated]",
        "merged = sorted([*generated]",
        T_CHAIN,
        "deviceClassMappings of base/kueue-config.yaml are dropped by the merge",
    ),
    Mutant(
        "merge-replaces-maps",
        CONFIG,
        "if isinstance(value, Mapping) and isinstance(out.get(key), Mapping):",
        "if False:",
        ("tests/test_boundaries.py", "tests/test_render.py", "tests/test_configcheck.py"),
        "an overlay's kueue.config map replaces the base map instead of merging into it",
    ),
    Mutant(
        "merge-no-conflict-check",
        CONFIG,
        "            if cls in claimed:",
        "            if cls in claimed and cls not in claimed:",
        ("tests/test_render.py",),
        "a class mapped both in the Configuration and by the catalog passes",
    ),
    Mutant(
        "mapping-one-class",
        CONFIG,
        '{"name": res, "deviceClassNames": sorted(names)}',
        '{"name": res, "deviceClassNames": sorted(names)[:1]}',
        T_CHAIN,
        "a mapping keeps only the first of the classes on its quota resource",
    ),
    Mutant(
        "feature-gates-dropped",
        CONFIG,
        '        body["featureGates"] = gates',
        "        pass",
        ("tests/test_render.py", "tests/test_kueuegates.py", "tests/test_configcheck.py"),
        "the overlay's featureGates never reach the Configuration",
    ),
    # ------------------------------------------------------------------ cache keys
    Mutant(
        "key-no-kustomize-version",
        ENGINE,
        "            kustomize_version=self.tool,",
        '            kustomize_version="",',
        T_CACHE,
        "the cluster key (and so every tenant key) leaves out the kustomize version",
    ),
    Mutant(
        "key-no-crd-contents",
        ENGINE,
        'crd_files=cachekey.tree_digest(crd_dir) if crd_dir is not None else "",',
        'crd_files="",',
        T_CACHE,
        "the cluster key no longer hashes the CRD files' contents",
    ),
    Mutant(
        "key-no-crd-dir",
        ENGINE,
        "            crd_dir=str(crd_dir),",
        '            crd_dir="",',
        T_CACHE,
        "the cluster key leaves out where the CRDs are (with or without --schemas)",
    ),
    Mutant(
        "key-no-templates",
        CACHEKEY,
        'and path.suffix != ".pyc":',
        'and path.suffix not in (".pyc", ".j2"):',
        T_CACHE,
        "the software hash skips the .j2 templates",
    ),
    Mutant(
        "key-no-libraries",
        CACHEKEY,
        'libraries="\\n".join(libraries),',
        'libraries="",',
        T_CACHE,
        "the software hash leaves out the library versions",
    ),
    Mutant(
        "key-no-catalog",
        ENGINE,
        "            catalog=self.catalog + self._hami(c.name),",
        "            catalog=self._hami(c.name),",
        T_CACHE,
        "the cluster key leaves out the device-class catalog",
    ),
    Mutant(
        "key-tenant-by-name",
        MEMO,
        "tenant_record=repr(tenant)",
        "tenant_record=tenant.name",
        T_CACHE,
        "a tenant's cache entry is keyed by its name, not its record",
    ),
    Mutant(
        "key-no-kubernetes-version",
        ENGINE,
        "            kubernetes_version=c.kubernetes_version,",
        '            kubernetes_version="",',
        T_CACHE,
        "the cluster key leaves out the Kubernetes version",
    ),
    Mutant(
        "key-no-stage",
        ENGINE,
        'staged_files=stage.digest() if stage is not None else "",',
        'staged_files="",',
        T_CACHE,
        "the cluster key leaves out the staged kustomizations",
    ),
    Mutant(
        "key-source-by-path",
        CACHEKEY,
        'return key("source", software=software(), path=path, file_bytes=data)',
        'return key("source", software=software(), path=path, file_bytes=b"")',
        T_CACHE,
        "a loaded input file is cached by its path, not its bytes",
    ),
    # ------------------------------------------------------------------ quantity printing
    Mutant(
        "quantity-binary-threshold",
        QUANTITY,
        "if -1024 < value < 1024 or not self.is_integer():",
        "if -1000 < value < 1000 or not self.is_integer():",
        T_QUANTITY,
        "BinarySI values between 1000 and 1023 print in the wrong form",
    ),
    Mutant(
        "quantity-exponent-multiple-of-3",
        QUANTITY,
        "    shift = exponent % 3\n",
        "    shift = 0\n",
        T_QUANTITY,
        "decimal exponents are no longer multiples of 3",
    ),
    Mutant(
        "quantity-binary-power",
        QUANTITY,
        "magnitude % 1024 == 0:",
        "magnitude % 1000 == 0:",
        T_QUANTITY,
        "BinarySI suffixes are chosen by powers of 1000",
    ),
    Mutant(
        "quantity-exponent-letter",
        QUANTITY,
        'return number if exponent == 0 else f"{number}e{exponent}"',
        'return number if exponent == 0 else f"{number}E{exponent}"',
        T_QUANTITY,
        "the exponent form prints E instead of e",
    ),
    Mutant(
        "quantity-binary-boundary",
        QUANTITY,
        "if -1024 < value < 1024 or not self.is_integer():",
        "if -1024 < value <= 1024 or not self.is_integer():",
        T_QUANTITY,
        "1024 in BinarySI prints as 1024 instead of 1Ki",
    ),
    # ------------------------------------------------------------------ webhook rules
    Mutant(
        "webhook-borrowing-checks-lending",
        QUEUERULES,
        'yield from _limits_need(body, ("borrowingLimit",), "cohortName", "cohort")',
        'yield from _limits_need(body, ("lendingLimit",), "cohortName", "cohort")',
        T_WEBHOOKS,
        'the rule "borrowingLimit needs a cohort" checks lendingLimit',
    ),
    Mutant(
        "webhook-lending-checks-borrowing",
        QUEUERULES,
        'yield from _limits_need(body, ("lendingLimit",), "cohortName", "cohort")',
        'yield from _limits_need(body, ("borrowingLimit",), "cohortName", "cohort")',
        T_WEBHOOKS,
        'the rule "lendingLimit needs a cohort" checks borrowingLimit',
    ),
    Mutant(
        "webhook-lending-limit-boundary",
        QUEUERULES,
        "if lend is not None and nominal is not None and lend > nominal:",
        "if lend is not None and nominal is not None and lend >= nominal:",
        T_WEBHOOKS,
        "the webhook refuses lendingLimit == nominalQuota",
    ),
    Mutant(
        "webhook-cohort-parent-one-field",
        QUEUERULES,
        '_limits_need(body, ("borrowingLimit", "lendingLimit"), "parentName", "parent")',
        '_limits_need(body, ("borrowingLimit",), "parentName", "parent")',
        T_WEBHOOKS,
        "a Cohort's lendingLimit without a parent passes",
    ),
    Mutant(
        "webhook-negative-zero",
        QUEUERULES,
        "            if q < _ZERO:",
        "            if q <= _ZERO:",
        T_WEBHOOKS,
        "a zero quota is refused as negative",
    ),
    # ------------------------------------------------------------------ plan exit codes and refusals
    Mutant(
        "plan-exit-no-changes",
        PLANVIEW,
        "return 1 if plan.failed else 2 if plan.changed else 0",
        "return 1 if plan.failed else 0",
        T_PLAN,
        "plan exits 0 when there are changes",
    ),
    Mutant(
        "plan-exit-refusal-as-change",
        PLANVIEW,
        "return 1 if plan.failed else 2 if plan.changed else 0",
        "return 2 if plan.changed else 1 if plan.failed else 0",
        T_PLAN,
        "a refused plan with changes exits 2 instead of 1",
    ),
    Mutant(
        "plan-exit-render-failed",
        PLANVIEW,
        "        emit(text)\n        return 1\n",
        "        emit(text)\n        return 2\n",
        T_PLAN,
        "a plan whose render fails exits 2",
    ),
    Mutant(
        "removal-refused-when-drained",
        PLAN,
        'o.key.kind == "ClusterQueue" and policy != DRAINED:',
        'o.key.kind == "ClusterQueue" and policy == DRAINED:',
        (*T_PLAN, "tests/test_publish.py"),
        "removing an undrained tenant is allowed, a drained one refused",
    ),
    # ------------------------------------------------------------------ publish refusals
    Mutant(
        "publish-superseded-is-an-error",
        PUBLISH,
        '                return Outcome("superseded", text, tip.hexsha)',
        '                raise gitrepo.fail(text, rule="publish-stale")',
        T_PUBLISH,
        "a publish superseded during its retries fails instead of stepping back",
    ),
    Mutant(
        "publish-stale-pushes",
        PUBLISH,
        "            if newer:\n",
        "            if newer and not newer:\n",
        T_PUBLISH,
        "a publish from an older source moves the deploy branch backwards",
    ),
    Mutant(
        "publish-unknown-source-pushes",
        PUBLISH,
        "            if newer is None:\n",
        "            if newer is None and newer is not None:\n",
        T_PUBLISH,
        "a publish whose source cannot be ordered against the deploy branch pushes",
    ),
    Mutant(
        "publish-dirty-allowed",
        PUBLISH,
        "changed = [] if dry_run else gitrepo.dirty(",
        "changed = [] if True else gitrepo.dirty(",
        T_PUBLISH,
        "publish commits from uncommitted inputs",
    ),
    Mutant(
        "publish-no-source-trailer",
        PUBLISH,
        'trailers = f"Source-Repository: {source_url}\\nSource-Commit: {source_commit}"',
        'trailers = f"Source-Repository: {source_url}"',
        T_PUBLISH,
        "commits lose the Source-Commit trailer that keeps the branch from going backwards",
    ),
    # ------------------------------------------------------------------ atomic write
    Mutant(
        "write-removes-first",
        SWAP,
        "    with output.staged(parent, {n: trees[n] for n in changed}) as staged:\n",
        "    for n in changed:\n"
        "        shutil.rmtree(parent / n, ignore_errors=True)\n"
        "    with output.staged(parent, {n: trees[n] for n in changed}) as staged:\n",
        T_OUTPUT,
        "the old directory is removed before the new one is complete",
    ),
    Mutant(
        "write-staging-left",
        INTERRUPT,
        "        yield path\n    finally:\n        rmtree(path)",
        "        yield path\n    finally:\n        forget(path)",
        T_OUTPUT,
        "a failed write leaves its staging directory behind",
    ),
    Mutant(
        "write-prunes-always",
        SWAP,
        "        if prune and parent.is_dir()",
        "        if parent.is_dir()",
        (*T_OUTPUT, "tests/test_publish.py::test_deploy_path_and_one_cluster"),
        "writing one cluster removes the others",
    ),
    Mutant(
        "write-all-changed",
        SWAP,
        "changed = [n for n, t in trees.items() if output.read_tree(parent / n) != dict(t)]",
        "changed = list(trees)",
        T_OUTPUT,
        "every directory is rewritten and reported changed",
    ),
    # ------------------------------------------------------------------ source limits
    Mutant(
        "source-size-read",
        FILES,
        "        if info.st_size > max_bytes:",
        "        if info.st_size > max_bytes and not info:",
        T_SOURCE,
        "the size on disk is not checked: a bounded read sees part of a large file and misreports its size",
    ),
    Mutant(
        "source-size-limit",
        DOCUMENT,
        "MAX_FILE_BYTES = 256 * 1024",
        "MAX_FILE_BYTES = 512 * 1024",
        (*T_SOURCE, "tests/test_negative.py::test_oversized_file"),
        "files up to 512 KiB are accepted",
    ),
    Mutant(
        "source-depth",
        YAMLBUILD,
        "        if depth > MAX_DEPTH:",
        "        if depth > MAX_DEPTH + 1:",
        T_SOURCE,
        "one level of nesting more than MAX_DEPTH passes",
    ),
    Mutant(
        "source-alias-allowed",
        YAMLBUILD,
        '            self.report(\n                mark, "source-alias", f"alias',
        '            (lambda *a: None)(\n                mark, "source-alias", f"alias',
        T_SOURCE,
        "aliases are accepted (only anchors are reported)",
    ),
    Mutant(
        "source-tag-allowed",
        YAMLBUILD,
        '        self.report(\n            mark, "source-tag",',
        '        (lambda *a: None)(\n            mark, "source-tag",',
        T_SOURCE,
        "explicit tags are accepted",
    ),
    Mutant(
        "source-merge-key-allowed",
        YAMLBUILD,
        '        if plain and text == "<<":',
        '        if plain and text == "<<" and not plain:',
        T_SOURCE,
        "merge keys are accepted",
    ),
    Mutant(
        "source-findings-cap",
        YAMLBUILD,
        "        if same < MAX_FINDINGS_PER_RULE:",
        "        if same <= MAX_FINDINGS_PER_RULE:",
        T_SOURCE,
        "one finding more than the cap per rule is shown",
    ),
    # ------------------------------------------------------------------ mappings merge, claim chain per cluster
    Mutant(
        "mapping-duplicate-name-allowed",
        DRAMAPPINGS,
        "            if name in seen_names:\n",
        "            if name in seen_names and not seen_names:\n",
        T_MAPPINGS,
        "two deviceClassMappings with one name (base Configuration and catalog) pass; Kueue refuses them",
    ),
    Mutant(
        "merge-unsorted",
        CONFIG,
        'merged = sorted([*existing, *generated], key=lambda m: str(m.get("name", "")))',
        "merged = [*existing, *generated]",
        T_MAPPINGS,
        "merged mappings keep their sources' order (base first) instead of name order",
    ),
    Mutant(
        "built-chain-coverage-off",
        POSTBUILD,
        "            elif resource not in covered(cq) and not ignored:",
        "            elif resource not in covered(cq) and not ignored and cq is None:",
        T_MAPPINGS,
        "after kustomize, a ClusterQueue that does not cover the claimed resource passes",
    ),
    Mutant(
        "coverage-default-budget",
        CATALOG,
        '    """Quota resource names the tenant\'s ClusterQueue on `cluster` covers."""\n'
        "    out: dict[str, Origin] = {}\n"
        "    for fb in tenant.budget_for(cluster) or ():",
        '    """Quota resource names the tenant\'s ClusterQueue on `cluster` covers."""\n'
        "    out: dict[str, Origin] = {}\n"
        "    for fb in tenant.default_budget or tenant.budget_for(cluster) or ():",
        T_MAPPINGS,
        "claim-coverage checks the default budget on every cluster, not the cluster's own",
    ),
    Mutant(
        "queue-default-budget",
        MANIFESTS,
        "budget = tenant.budget_for(cluster.name) or ()",
        "budget = tenant.default_budget or tenant.budget_for(cluster.name) or ()",
        T_MAPPINGS,
        "a ClusterQueue gets the tenant's default budget on a cluster that has its own",
    ),
    Mutant(
        "claims-first-namespace",
        MANIFESTS,
        "for ns in ct.namespaces or namespaces:",
        "for ns in ct.namespaces or namespaces[:1]:",
        ("tests/test_chain_property.py",),
        "a claim template not scoped to namespaces lands in the tenant's first namespace only",
    ),
    # ------------------------------------------------------------------ what people read
    Mutant(
        "prose-angle-brackets-raw",
        MDSAFE,
        r"\[\]<>!|~",
        r"\[\]!|~",
        T_DOCS,
        "`<` and `>` in PR-comment prose are written raw: tags, comments and quotes open",
    ),
    Mutant(
        "prose-greater-than-raw",
        MDSAFE,
        r"\[\]<>!|~",
        r"\[\]<!|~",
        T_DOCS,
        "`>` in PR-comment prose is written raw",
    ),
    Mutant(
        "rules-explain-swapped",
        RULEINDEX,
        "\\n\\nFails:  {d.fails}\\nPasses: {d.passes}\\n",
        "\\n\\nFails:  {d.passes}\\nPasses: {d.fails}\\n",
        T_DOCS,
        "`rules ID` prints the passing example under Fails and the failing one under Passes",
    ),
    Mutant(
        "rules-docstring-swapped",
        RULEINDEX,
        'fails.group(1) if fails else "", passes.group(1) if passes else ""',
        'passes.group(1) if passes else "", fails.group(1) if fails else ""',
        T_DOCS,
        "examples documented in docstrings come out under the wrong heading",
    ),
    Mutant(
        "rules-passes-runs-on",
        RULEINDEX,
        r"Passes:\s*(.*?)(?=\s*Fails:|$)",
        r"Passes:\s*(.*?)(?=$)",
        T_DOCS,
        "a docstring's Passes example runs on into the Fails example after it",
    ),
    Mutant(
        "rules-table-swapped",
        RULEINDEX,
        "out += [RuleDoc(*row) for row in _TABLE]",
        "out += [RuleDoc(*row[:3], row[4], row[3]) for row in _TABLE]",
        T_DOCS,
        "the rule table's examples come out under the wrong heading",
    ),
    # ------------------------------------------------------------------ signals
    Mutant(
        "stop-no-sweep",
        INTERRUPT,
        "            if os.path.lexists(path):\n                shutil.rmtree(path, ignore_errors=True)\n",
        "            if os.path.lexists(path) and not path:\n                shutil.rmtree(path, ignore_errors=True)\n",
        T_SIGNALS,
        "what a stop leaves registered (generated/.old-* after the commit point) is not removed",
    ),
    Mutant(
        "stop-staging-unregistered",
        OUTPUT,
        'with interrupt.temporary_directory(f".staging-{os.getpid()}-", parent) as staging:',
        'with contextlib.nullcontext(Path(__import__("tempfile").mkdtemp(prefix=".staging-", dir=parent))) as staging:',
        T_SIGNALS,
        "generated/.staging-* is made outside the registry and never removed",
    ),
)
