"""The fixed list of mutants of tools/mutate.py: one small deliberate bug each in a core behaviour.
This file holds the record and the mutants of the model, the Configuration merge, cache keys,
quantities and webhook rules; tools/mutants_delivery.py those of plan, publish, writes, input limits,
the claim chain per cluster, what people read and signals; tools/mutants_fleet.py those of the fleet,
the hub and what a review shows; tools/mutants_live.py those of the cluster reader, `status` and `admit`.
`MUTANTS` is all four, in that order.

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
MDSAFE = "gputenancy/common/mdsafe.py"
RULEINDEX = "gputenancy/cli/ruleindex.py"
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

CORE: tuple[Mutant, ...] = (
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
        "                total[key] = total.get(key, ZERO) + amount.nominal",
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
        ENGINE,
        "= (tenant, repr(tenant))",
        "= (tenant, tenant.name)",
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
        'return key_after("source", software(), path=path, file_bytes=data)',
        'return key_after("source", software(), path=path, file_bytes=b"")',
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
        "            if q < ZERO:",
        "            if q <= ZERO:",
        T_WEBHOOKS,
        "a zero quota is refused as negative",
    ),
)


def all_mutants() -> tuple[Mutant, ...]:
    """CORE, then the delivery mutants of tools/mutants_delivery.py, then those of the fleet, the hub
    and what a review shows (tools/mutants_fleet.py), then those of the commands that read a cluster or judge
    a job (tools/mutants_live.py)."""
    from mutants_delivery import DELIVERY
    from mutants_fleet import FLEET
    from mutants_live import LIVE

    return (*CORE, *DELIVERY, *FLEET, *LIVE)
