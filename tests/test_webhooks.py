"""Admission rules of gputenancy.check.webhook.webhooks: every rule with a passing and a failing case."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gputenancy.check.kubernetes import dra
from gputenancy.check.webhook import webhooks
from gputenancy.check.webhook.admission import Problem
from gputenancy.check.webhook.webhooks import RULES

Body = dict[str, Any]


def cluster_queue() -> Body:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ClusterQueue",
        "metadata": {"name": "team-a"},
        "spec": {
            "cohortName": "research",
            "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "team-a"}},
            "fairSharing": {"weight": "1"},
            "preemption": {"reclaimWithinCohort": "Any", "borrowWithinCohort": {"policy": "LowerPriority"}},
            "flavorFungibility": {
                "whenCanBorrow": "TryNextFlavor",
                "whenCanPreempt": "TryNextFlavor",
                "preference": "BorrowingOverPreemption",
            },
            "admissionChecksStrategy": {"admissionChecks": [{"name": "prov", "onFlavors": ["h100"]}]},
            "resourceGroups": [
                {
                    "coveredResources": ["cpu", "memory", "nvidia.com/gpu"],
                    "flavors": [
                        {
                            "name": "h100",
                            "resources": [
                                {"name": "cpu", "nominalQuota": "32"},
                                {"name": "memory", "nominalQuota": "256Gi"},
                                {
                                    "name": "nvidia.com/gpu",
                                    "nominalQuota": 4,
                                    "borrowingLimit": "2",
                                    "lendingLimit": "4",
                                },
                            ],
                        }
                    ],
                }
            ],
        },
    }


def cohort() -> Body:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Cohort",
        "metadata": {"name": "research"},
        "spec": {
            "parentName": "org",
            "fairSharing": {"weight": "2"},
            "resourceGroups": [
                {
                    "coveredResources": ["nvidia.com/gpu"],
                    "flavors": [
                        {
                            "name": "h100",
                            "resources": [
                                {"name": "nvidia.com/gpu", "nominalQuota": "8", "lendingLimit": "2"}
                            ],
                        }
                    ],
                }
            ],
        },
    }


def resource_flavor() -> Body:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ResourceFlavor",
        "metadata": {"name": "h100"},
        "spec": {
            "nodeLabels": {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"},
            "nodeTaints": [
                {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"},
                {"key": "nvidia.com/gpu", "effect": "NoExecute"},
            ],
            "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
        },
    }


def local_queue() -> Body:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "LocalQueue",
        "metadata": {"name": "team-a", "namespace": "team-a"},
        "spec": {"clusterQueue": "team-a"},
    }


def claim_template() -> Body:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": "single-gpu", "namespace": "team-a"},
        "spec": {
            "spec": {
                "devices": {
                    "requests": [
                        {
                            "name": "gpu",
                            "exactly": {
                                "deviceClassName": "gpu.nvidia.com",
                                "allocationMode": "ExactCount",
                                "count": 1,
                                "selectors": [
                                    {
                                        "cel": {
                                            "expression": "device.attributes['gpu.nvidia.com'].type == 'gpu'"
                                        }
                                    }
                                ],
                            },
                        },
                        {
                            "name": "alt",
                            "firstAvailable": [
                                {"name": "big", "deviceClassName": "gpu.nvidia.com"},
                                {"name": "small", "deviceClassName": "mig.nvidia.com", "count": 2},
                            ],
                        },
                    ],
                    "constraints": [
                        {"requests": ["gpu", "alt/big"], "matchAttribute": "gpu.nvidia.com/parentUUID"}
                    ],
                    "config": [
                        {
                            "requests": ["gpu"],
                            "opaque": {"driver": "gpu.nvidia.com", "parameters": {"kind": "GpuConfig"}},
                        }
                    ],
                }
            }
        },
    }


def device_class() -> Body:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": "gpu.nvidia.com"},
        "spec": {
            "selectors": [{"cel": {"expression": "device.driver == 'gpu.nvidia.com'"}}],
            "config": [{"opaque": {"driver": "gpu.nvidia.com", "parameters": {"kind": "GpuConfig"}}}],
            "extendedResourceName": "nvidia.com/gpu",
        },
    }


def _quota(body: Body, i: int = 2) -> dict[str, Any]:
    quota: dict[str, Any] = body["spec"]["resourceGroups"][0]["flavors"][0]["resources"][i]
    return quota


def _groups(n_groups: int, n_flavors: int, n_resources: int) -> list[dict[str, Any]]:
    return [
        {
            "coveredResources": [f"r{g}-{r}" for r in range(n_resources)],
            "flavors": [
                {
                    "name": f"f{g}-{f}",
                    "resources": [{"name": f"r{g}-{r}", "nominalQuota": "1"} for r in range(n_resources)],
                }
                for f in range(n_flavors)
            ],
        }
        for g in range(n_groups)
    ]


def _set(path: tuple[str | int, ...], value: Any) -> Callable[[Body], None]:
    def apply(body: Body) -> None:
        target: Any = body
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value

    return apply


def _drop(path: tuple[str | int, ...]) -> Callable[[Body], None]:
    def apply(body: Body) -> None:
        target: Any = body
        for key in path[:-1]:
            target = target[key]
        del target[path[-1]]

    return apply


RG0 = ("spec", "resourceGroups", 0)
Q2 = (*RG0, "flavors", 0, "resources", 2)
CO_Q0 = (*RG0, "flavors", 0, "resources", 0)
REQ0 = ("spec", "spec", "devices", "requests", 0)
REQ1 = ("spec", "spec", "devices", "requests", 1)

_second_group_cpu = {
    "coveredResources": ["cpu"],
    "flavors": [{"name": "a100", "resources": [{"name": "cpu", "nominalQuota": "1"}]}],
}
_second_group_h100 = {
    "coveredResources": ["x"],
    "flavors": [{"name": "h100", "resources": [{"name": "x", "nominalQuota": "1"}]}],
}


def _swap_resources(body: Body) -> None:
    res = body["spec"]["resourceGroups"][0]["flavors"][0]["resources"]
    res[0], res[1] = res[1], res[0]


# rule id -> (base body, mutation that passes, mutation that fails, substring of the failure message)
Case = tuple[Callable[[], Body], Callable[[Body], None], Callable[[Body], None], str]
_noop: Callable[[Body], None] = lambda body: None  # noqa: E731

CASES: dict[str, Case] = {
    "kueue-webhook-cq-resource-name": (
        cluster_queue,
        _noop,
        _set((*RG0, "coveredResources", 0), "gpu memory"),
        "name part",
    ),
    "kueue-webhook-cq-resource-unique": (
        cluster_queue,
        lambda b: b["spec"]["resourceGroups"].append(
            copy.deepcopy(_second_group_h100)
            | {"flavors": [{"name": "z", "resources": [{"name": "x", "nominalQuota": "1"}]}]}
        ),
        lambda b: b["spec"]["resourceGroups"].append(copy.deepcopy(_second_group_cpu)),
        'Duplicate value: "cpu"',
    ),
    "kueue-webhook-cq-flavor-unique": (
        cluster_queue,
        lambda b: b["spec"]["resourceGroups"].append(
            copy.deepcopy(_second_group_cpu) | {"coveredResources": ["y"]}
        ),
        lambda b: b["spec"]["resourceGroups"].append(copy.deepcopy(_second_group_h100)),
        'Duplicate value: "h100"',
    ),
    "kueue-webhook-cq-flavor-order": (
        cluster_queue,
        _noop,
        _swap_resources,
        "must match the name in coveredResources",
    ),
    "kueue-webhook-cq-resource-count": (
        cluster_queue,
        _noop,
        lambda b: b["spec"]["resourceGroups"][0]["flavors"][0]["resources"].pop(),
        "flavors must have the same number of resources as the coveredResources",
    ),
    "kueue-webhook-cq-quota-nonnegative": (
        cluster_queue,
        _set((*Q2, "nominalQuota"), "0"),
        _set((*Q2, "nominalQuota"), "-1"),
        "must be greater than or equal to 0",
    ),
    "kueue-webhook-cq-borrowing-limit-cohort": (
        cluster_queue,
        _noop,
        _drop(("spec", "cohortName")),
        "must be nil when cohort is empty",
    ),
    "kueue-webhook-cq-lending-limit-cohort": (
        cluster_queue,
        _noop,
        _drop(("spec", "cohortName")),
        "must be nil when cohort is empty",
    ),
    "kueue-webhook-cq-lending-limit": (
        cluster_queue,
        _set((*Q2, "lendingLimit"), "4000m"),
        _set((*Q2, "lendingLimit"), "6"),
        "6 exceeds nominalQuota 4 (must be less than or equal to the nominalQuota)",
    ),
    "kueue-webhook-cq-total-flavors": (
        cluster_queue,
        _set(("spec", "resourceGroups"), _groups(16, 16, 1)),
        _set(("spec", "resourceGroups"), _groups(16, 16, 1) + _groups(1, 1, 1)),
        "must be ≤ 256, got 257",
    ),
    "kueue-webhook-cq-total-resources": (
        cluster_queue,
        _set(("spec", "resourceGroups"), _groups(4, 1, 64)),
        _set(("spec", "resourceGroups"), _groups(5, 1, 64)),
        "must be ≤ 256, got 320",
    ),
    "kueue-webhook-cq-flavor-resource-combinations": (
        cluster_queue,
        _set(("spec", "resourceGroups"), _groups(1, 8, 64)),
        _set(("spec", "resourceGroups"), _groups(1, 9, 64)),
        "must be ≤ 512, got 576",
    ),
    "kueue-webhook-cq-namespace-selector": (
        cluster_queue,
        _set(("spec", "namespaceSelector"), {"matchExpressions": [{"key": "team", "operator": "Exists"}]}),
        _set(("spec", "namespaceSelector"), {"matchExpressions": [{"key": "team", "operator": "In"}]}),
        "must be specified when `operator` is 'In' or 'NotIn'",
    ),
    "kueue-webhook-cq-fair-sharing": (
        cluster_queue,
        _set(("spec", "fairSharing", "weight"), "0"),
        _set(("spec", "fairSharing", "weight"), "1n"),
        "When not 0, weight must be > 10e-9",
    ),
    "kueue-webhook-cq-preemption": (
        cluster_queue,
        _noop,
        _set(("spec", "preemption", "reclaimWithinCohort"), "Never"),
        "reclaimWithinCohort=Never and borrowWithinCohort.Policy!=Never",
    ),
    "kueue-webhook-cq-flavor-fungibility": (
        cluster_queue,
        _noop,
        _set(("spec", "flavorFungibility", "whenCanBorrow"), "MayStopSearch"),
        "requires both whenCanBorrow and whenCanPreempt to be TryNextFlavor",
    ),
    "kueue-webhook-cq-admission-check-flavors": (
        cluster_queue,
        _noop,
        _set(("spec", "admissionChecksStrategy", "admissionChecks", 0, "onFlavors"), ["missing"]),
        "not a flavor of this ClusterQueue",
    ),
    "kueue-webhook-cohort-resource-name": (
        cohort,
        _noop,
        _set((*RG0, "coveredResources", 0), "a/b/c"),
        "qualified name",
    ),
    "kueue-webhook-cohort-resource-unique": (
        cohort,
        _noop,
        lambda b: b["spec"]["resourceGroups"].append(
            {
                "coveredResources": ["nvidia.com/gpu"],
                "flavors": [{"name": "a100", "resources": [{"name": "nvidia.com/gpu", "nominalQuota": "1"}]}],
            }
        ),
        "Duplicate value",
    ),
    "kueue-webhook-cohort-flavor-unique": (
        cohort,
        _noop,
        lambda b: b["spec"]["resourceGroups"].append(copy.deepcopy(_second_group_h100)),
        'Duplicate value: "h100"',
    ),
    "kueue-webhook-cohort-flavor-order": (
        cohort,
        _noop,
        _set((*CO_Q0, "name"), "cpu"),
        "must match the name in coveredResources",
    ),
    "kueue-webhook-cohort-resource-count": (
        cohort,
        _noop,
        _set((*RG0, "coveredResources"), ["nvidia.com/gpu", "cpu"]),
        "flavors must have the same number of resources",
    ),
    "kueue-webhook-cohort-quota-nonnegative": (
        cohort,
        _noop,
        _set((*CO_Q0, "nominalQuota"), "lots"),
        "Invalid value",
    ),
    "kueue-webhook-cohort-limits-need-parent": (
        cohort,
        _noop,
        _drop(("spec", "parentName")),
        "must be nil when parent is empty",
    ),
    "kueue-webhook-cohort-fair-sharing": (
        cohort,
        _noop,
        _set(("spec", "fairSharing", "weight"), "-1"),
        "must be greater than or equal to 0",
    ),
    "kueue-webhook-rf-node-labels": (
        resource_flavor,
        _noop,
        _set(("spec", "nodeLabels"), {"gpu type": "h100"}),
        "name part",
    ),
    "kueue-webhook-rf-node-taints": (
        resource_flavor,
        _noop,
        _set(("spec", "nodeTaints", 1, "effect"), "NoSchedule"),
        "taints must be unique by key and effect pair",
    ),
    "kueue-webhook-rf-tolerations": (
        resource_flavor,
        _set(("spec", "tolerations"), [{"operator": "Exists"}]),
        _set(("spec", "tolerations", 0, "key"), "gpu type"),
        "name part",
    ),
    "kueue-lq-name-length": (
        local_queue,
        _set(("metadata", "name"), "q" * 63),
        _set(("metadata", "name"), "q" * 64),
        "at most 63 characters",
    ),
    "kueue-lq-cluster-queue-ref": (
        local_queue,
        _noop,
        _set(("spec", "clusterQueue"), "Team_A"),
        "RFC 1123 subdomain",
    ),
    "dra-request-name": (claim_template, _noop, _set((*REQ0, "name"), "GPU_0"), "RFC 1123 label"),
    "dra-device-class-name": (
        claim_template,
        _noop,
        _set((*REQ0, "exactly", "deviceClassName"), "GPU_Class"),
        "RFC 1123 subdomain",
    ),
    "dra-request-one-of": (
        claim_template,
        _noop,
        _set((*REQ0, "firstAvailable"), [{"name": "x", "deviceClassName": "gpu.nvidia.com"}]),
        "exactly one of `exactly` or `firstAvailable` is required",
    ),
    "dra-allocation-mode": (
        claim_template,
        _noop,
        _set((*REQ0, "exactly", "allocationMode"), "Sometimes"),
        "Unsupported value",
    ),
    "dra-count": (claim_template, _noop, _set((*REQ0, "exactly", "count"), 0), "must be greater than zero"),
    "dra-total-devices": (
        claim_template,
        _set((*REQ0, "exactly", "count"), 31),
        _set((*REQ0, "exactly", "count"), 32),
        "number of requested devices 33 exceeds the claim limit of 32",
    ),
    "dra-claim-limits": (
        claim_template,
        _noop,
        _set(
            ("spec", "spec", "devices", "requests"),
            [{"name": f"r{i}", "exactly": {"deviceClassName": "gpu.nvidia.com"}} for i in range(33)],
        ),
        "Too many: 33: must have at most 32 items",
    ),
    "dra-request-reference": (
        claim_template,
        _noop,
        _set(("spec", "spec", "devices", "constraints", 0, "requests"), ["gpus"]),
        "must be the name of a request in the claim",
    ),
    "dra-constraint-attribute": (
        claim_template,
        _noop,
        _set(("spec", "spec", "devices", "constraints", 0, "matchAttribute"), "parentUUID"),
        "must include a domain",
    ),
    "dra-cel-selector": (
        claim_template,
        _set(
            (*REQ0, "exactly", "selectors", 0, "cel", "expression"),
            "cel.bind(a, device.attributes['gpu.nvidia.com'], "
            "a.type == 'gpu' && ['x'].all(s, s in a.productName))",
        ),
        _set((*REQ0, "exactly", "selectors", 0, "cel", "expression"), "device.driver =="),
        "compilation failed",
    ),
    "dra-template-metadata": (
        claim_template,
        _set(("spec", "metadata"), {"labels": {"tenant": "team-a"}, "annotations": {"example.com/x": "y"}}),
        _set(("spec", "metadata"), {"labels": {"team name": "a"}}),
        "name part",
    ),
    "dra-opaque-config": (
        device_class,
        _noop,
        _set(("spec", "config", 0, "opaque", "driver"), "GPU.NVIDIA.COM"),
        "RFC 1123 subdomain",
    ),
    "dra-deviceclass-limits": (
        device_class,
        _noop,
        _set(("spec", "selectors"), [{"cel": {"expression": "true"}}] * 33),
        "Too many: 33",
    ),
    "dra-extended-resource-name": (
        device_class,
        _noop,
        _set(("spec", "extendedResourceName"), "kubernetes.io/gpu"),
        "kubernetes.io namespace",
    ),
}

_BY_ID = {r.id: r for r in RULES}


def _run(rule_id: str, body: Body) -> list[Problem]:
    return list(_BY_ID[rule_id].check(body))


def test_every_rule_has_a_case_and_a_documented_example() -> None:
    assert set(CASES) == set(_BY_ID), set(CASES) ^ set(_BY_ID)
    assert len(_BY_ID) == len(RULES)
    for rule in RULES:
        assert "Passes:" in rule.doc and "Fails:" in rule.doc, rule.id
    assert "### `kueue-webhook-cq-flavor-order`" in webhooks.documentation()


@pytest.mark.parametrize("rule_id", sorted(CASES))
def test_rule_passes_and_fails(rule_id: str) -> None:
    base, passing, failing, expected = CASES[rule_id]
    assert _run(rule_id, base()) == []
    good = base()
    passing(good)
    assert _run(rule_id, good) == []
    bad = base()
    failing(bad)
    problems = _run(rule_id, bad)
    assert problems, rule_id
    assert any(expected in p.message for p in problems), problems


def test_rules_select_by_api_version_and_kind() -> None:
    ids = {r.id for r in webhooks.rules_for("kueue.x-k8s.io/v1beta2", "ClusterQueue")}
    assert "kueue-webhook-cq-flavor-order" in ids and "kueue-webhook-cohort-flavor-order" not in ids
    assert webhooks.rules_for("kueue.x-k8s.io/v1beta1", "ClusterQueue") == ()
    assert {r.id for r in webhooks.rules_for("resource.k8s.io/v1", "DeviceClass")} >= {"dra-cel-selector"}


def test_flavor_order_points_at_the_resource_name() -> None:
    body = cluster_queue()
    _swap_resources(body)
    problems = _run("kueue-webhook-cq-flavor-order", body)
    assert [p.path for p in problems] == [
        (*RG0, "flavors", 0, "resources", 0, "name"),
        (*RG0, "flavors", 0, "resources", 1, "name"),
    ]
    assert (
        'Invalid value: "memory": must match the name in coveredResources (coveredResources[0] is "cpu")'
        in problems[0].message
    )


def test_quantities_compare_by_value() -> None:
    body = cluster_queue()
    _quota(body)["nominalQuota"] = "4"
    _quota(body)["lendingLimit"] = "4000m"
    assert _run("kueue-webhook-cq-lending-limit", body) == []
    _quota(body)["lendingLimit"] = "4001m"
    assert _run("kueue-webhook-cq-lending-limit", body)
    _quota(body)["borrowingLimit"] = "x1"
    assert any("x1" in p.message for p in _run("kueue-webhook-cq-quota-nonnegative", body))


def test_fair_sharing_weight_bounds() -> None:
    for weight, ok in (
        ("0", True),
        ("2n", True),
        ("1n", False),
        ("0.5n", False),
        ("-1", False),
        ("5p", False),
        (1, True),
    ):
        body = cluster_queue()
        body["spec"]["fairSharing"]["weight"] = weight
        assert (_run("kueue-webhook-cq-fair-sharing", body) == []) is ok, weight


def test_cel_selector_undeclared_variable_and_size() -> None:
    assert dra.cel_selector_error("device.driver == 'a'") is None
    assert "undeclared reference to 'devices'" in (dra.cel_selector_error("devices.driver == 'a'") or "")
    assert dra.cel_selector_error("device.attributes.exists(d, d == 'x')") is None
    big = "device.driver == '" + "a" * 10240 + "'"
    assert "must be no more than 10240 bytes" in (dra.cel_selector_error(big) or "")


def test_count_rules_for_all_mode() -> None:
    body = claim_template()
    body["spec"]["spec"]["devices"]["requests"][0]["exactly"].update({"allocationMode": "All", "count": 1})
    assert any(
        "must not be specified when allocationMode is 'All'" in p.message for p in _run("dra-count", body)
    )
    del body["spec"]["spec"]["devices"]["requests"][0]["exactly"]["count"]
    assert _run("dra-count", body) == []


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8) | st.floats(allow_nan=False),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=12), children, max_size=4)
    ),
    max_leaves=20,
)
_keys = st.sampled_from(
    [
        "resourceGroups",
        "coveredResources",
        "flavors",
        "resources",
        "name",
        "nominalQuota",
        "lendingLimit",
        "borrowingLimit",
        "cohortName",
        "fairSharing",
        "weight",
        "spec",
        "devices",
        "requests",
        "exactly",
        "firstAvailable",
        "count",
        "selectors",
        "cel",
        "expression",
        "config",
        "opaque",
        "constraints",
        "nodeTaints",
        "nodeLabels",
        "tolerations",
        "namespaceSelector",
        "matchExpressions",
        "values",
    ]
)
_shaped = st.recursive(
    st.none() | st.integers() | st.text(max_size=6),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(_keys, children, max_size=4),
    max_leaves=30,
)


@settings(max_examples=300)
@given(spec=_shaped | _json)
def test_rules_never_raise_on_malformed_objects(spec: Any) -> None:
    for rule in RULES:
        for kind in sorted(rule.kinds):
            body = {
                "apiVersion": sorted(rule.api_versions)[0],
                "kind": kind,
                "metadata": {"name": "x"},
                "spec": spec,
            }
            for problem in rule.check(body):
                assert isinstance(problem.message, str)


def test_admission_check_flavors_tolerates_a_malformed_flavor_name() -> None:
    from gputenancy.check.webhook.webhooks import cq_admission_check_flavors

    body = {
        "spec": {
            "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [{"name": ["not", "a", "name"]}]}],
            "admissionChecksStrategy": {"admissionChecks": [{"name": "ac", "onFlavors": ["default"]}]},
        }
    }
    (problem,) = cq_admission_check_flavors(body)
    assert "not a flavor of this ClusterQueue" in problem.message
