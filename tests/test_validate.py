"""validate_objects against the real Kueue CRDs in ../shared and kubernetes-validate's bundled schemas."""

from __future__ import annotations

import copy
import shutil
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from gputenancy.check.checkrun import format_path
from gputenancy.check.kubernetes import crds as crd_files
from gputenancy.check.kubernetes.crdschema import json_schema, unsupported_cel_rules
from gputenancy.check.validate import ValidationReport, validate_objects
from gputenancy.common.findings import Finding, Origin, Severity
from gputenancy.common.objects import FieldPath, RenderedObject

Body = dict[str, Any]
KUEUE_VERSIONS = ("v0.18.1", "v0.19.2")
TENANT = "tenants/team-a.yaml"


def crds(shared: Path, version: str = "v0.19.2") -> Path:
    return shared / "kueue" / version / "crds"


def cluster_queue() -> Body:
    """Every field the API server would default written out (kueue.md §5)."""
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ClusterQueue",
        "metadata": {"name": "team-a", "labels": {"gputenancy.io/tenant": "team-a"}},
        "spec": {
            "cohortName": "research",
            "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "team-a"}},
            "queueingStrategy": "BestEffortFIFO",
            "stopPolicy": "None",
            "flavorFungibility": {"whenCanBorrow": "MayStopSearch", "whenCanPreempt": "TryNextFlavor"},
            "preemption": {
                "reclaimWithinCohort": "Never",
                "withinClusterQueue": "Never",
                "borrowWithinCohort": {"policy": "Never"},
            },
            "fairSharing": {"weight": "1"},
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
                                    "nominalQuota": "4",
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


def local_queue() -> Body:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "LocalQueue",
        "metadata": {"name": "team-a", "namespace": "team-a"},
        "spec": {"clusterQueue": "team-a", "stopPolicy": "None", "fairSharing": {"weight": "1"}},
    }


def cohort() -> Body:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Cohort",
        "metadata": {"name": "research"},
        "spec": {
            "parentName": "org",
            "fairSharing": {"weight": "1"},
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
            "nodeTaints": [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}],
            "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
        },
    }


def claim_template() -> Body:
    """dra.md §2 complete v1 example."""
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": "single-gpu", "namespace": "team-a", "labels": {"tenant": "team-a"}},
        "spec": {
            "metadata": {"labels": {"tenant": "team-a"}},
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
                                            "expression": "device.capacity['gpu.nvidia.com'].memory"
                                            ".compareTo(quantity('40Gi')) >= 0"
                                        }
                                    }
                                ],
                            },
                        },
                        {
                            "name": "alt",
                            "firstAvailable": [
                                {
                                    "name": "big",
                                    "deviceClassName": "gpu.nvidia.com",
                                    "selectors": [
                                        {
                                            "cel": {
                                                "expression": "device.attributes['gpu.nvidia.com']"
                                                ".productName == 'NVIDIA H100 80GB HBM3'"
                                            }
                                        }
                                    ],
                                },
                                {"name": "small", "deviceClassName": "mig.nvidia.com", "count": 2},
                            ],
                        },
                    ],
                    "constraints": [{"requests": ["gpu"], "matchAttribute": "gpu.nvidia.com/parentUUID"}],
                    "config": [
                        {
                            "requests": ["gpu"],
                            "opaque": {
                                "driver": "gpu.nvidia.com",
                                "parameters": {
                                    "apiVersion": "resource.nvidia.com/v1beta1",
                                    "kind": "GpuConfig",
                                    "sharing": {"strategy": "TimeSlicing"},
                                },
                            },
                        }
                    ],
                }
            },
        },
    }


def device_class() -> Body:
    """dra.md §3."""
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": "gpu.nvidia.com"},
        "spec": {
            "selectors": [
                {
                    "cel": {
                        "expression": "device.driver == 'gpu.nvidia.com' && "
                        "device.attributes['gpu.nvidia.com'].type == 'gpu'"
                    }
                }
            ],
            "extendedResourceName": "nvidia.com/gpu",
        },
    }


def namespace() -> Body:
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": "team-a", "labels": {"tenant": "team-a"}},
    }


def config_map() -> Body:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "kueue-manager-config", "namespace": "kueue-system"},
        "data": {"controller_manager_config.yaml": "apiVersion: config.kueue.x-k8s.io/v1beta2\n"},
    }


def partial_deployment() -> Body:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": "kueue-controller-manager",
            "namespace": "kueue-system",
            "annotations": {"gputenancy.io/partial": "true"},
        },
        "spec": {"template": {"metadata": {"annotations": {"gputenancy.io/kueue-config-checksum": "abc"}}}},
    }


VALID = (
    cluster_queue,
    local_queue,
    cohort,
    resource_flavor,
    claim_template,
    device_class,
    namespace,
    config_map,
    partial_deployment,
)


def rendered(body: Body, origins: dict[FieldPath, Origin] | None = None) -> RenderedObject:
    return RenderedObject("prod", body, Origin(TENANT, 1, 1), origins or {})


def run(
    *bodies: Body | RenderedObject, crd_dir: Path | None, k8s: str = "1.35", kueue: str = "v0.19.2"
) -> ValidationReport:
    objects = [b if isinstance(b, RenderedObject) else rendered(b) for b in bodies]
    return validate_objects(objects, kueue_version=kueue, kubernetes_version=k8s, crd_dir=crd_dir)


def errors_of(report: ValidationReport) -> list[Finding]:
    return [f for f in report.findings if f.severity is Severity.ERROR]


def rules_of(report: ValidationReport) -> set[str]:
    return {f.rule for f in report.findings}


def only(report: ValidationReport, rule: str) -> Finding:
    found = [f for f in report.findings if f.rule == rule]
    assert len(found) == 1, report.findings
    return found[0]


# --- positives ------------------------------------------------------------------------------------


@pytest.mark.parametrize("version", KUEUE_VERSIONS)
def test_valid_objects_have_no_findings(shared: Path, version: str) -> None:
    report = run(*(make() for make in VALID), crd_dir=crds(shared, version), kueue=version)
    assert report.findings == ()
    assert report.schema_dirs_used == (
        str(crds(shared, version).resolve()),
        "kubernetes-validate/v1.35.0-local-strict",
    )
    assert report.skipped == ()


def _upstream_examples(shared: Path) -> list[RenderedObject]:
    objects = []
    for folder in ("kueue-v0.19.2-docs", "kueue-main-ff69552"):
        for file in sorted((shared / "upstream-examples" / folder).glob("*.yaml")):
            for i, doc in enumerate(yaml.safe_load_all(file.read_text(encoding="utf-8"))):
                api = str((doc or {}).get("apiVersion", ""))
                if api in ("kueue.x-k8s.io/v1beta2", "resource.k8s.io/v1"):
                    objects.append(RenderedObject("prod", doc, Origin(f"{folder}/{file.name}", i + 1, 1)))
    return objects


@pytest.mark.parametrize("version", KUEUE_VERSIONS)
def test_upstream_examples_are_accepted(shared: Path, version: str) -> None:
    objects = _upstream_examples(shared)
    kinds = {o.body["kind"] for o in objects}
    assert kinds == {"ResourceFlavor", "ClusterQueue", "LocalQueue", "ResourceClaimTemplate"}
    assert len(objects) >= 20
    for k8s in ("1.34", "1.35", "1.36"):
        report = validate_objects(
            objects, kueue_version=version, kubernetes_version=k8s, crd_dir=crds(shared, version)
        )
        assert errors_of(report) == [], [f.format() for f in errors_of(report)]
        assert report.findings == ()


@pytest.mark.parametrize("version", KUEUE_VERSIONS)
def test_every_cel_rule_of_the_crds_compiles(shared: Path, version: str) -> None:
    assert unsupported_cel_rules(crds(shared, version)) == ()


@pytest.mark.parametrize("version", KUEUE_VERSIONS)
def test_no_unsupported_cel_warnings_when_every_rule_runs(shared: Path, version: str) -> None:
    rf = resource_flavor()
    rf["spec"]["topologyName"] = "default"
    cq = cluster_queue()
    cq["spec"]["flavorFungibility"] = {
        "whenCanBorrow": "TryNextFlavor",
        "whenCanPreempt": "TryNextFlavor",
        "preference": "BorrowingOverPreemption",
    }
    report = run(cq, rf, cohort(), local_queue(), crd_dir=crds(shared, version), kueue=version)
    assert report.findings == ()


# --- Kueue CRD schema and CEL ---------------------------------------------------------------------


def test_unknown_field_is_an_error_at_its_path(shared: Path) -> None:
    body = cluster_queue()
    body["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["nominalQuotas"] = "1"
    body["spec"]["cohort"] = "research"
    report = run(body, crd_dir=crds(shared))
    unknown = [f for f in report.findings if f.rule == "crd-unknown-field"]
    assert [f.message.split(": ")[1] for f in unknown] == [
        "spec.cohort",
        "spec.resourceGroups[0].flavors[0].resources[0].nominalQuotas",
    ]
    assert all('unknown field "' in f.message for f in unknown)


def test_borrowing_limit_without_cohort_reports_the_crd_cel_message(shared: Path) -> None:
    body = cluster_queue()
    del body["spec"]["cohortName"]
    report = run(body, crd_dir=crds(shared))
    cel = only(report, "crd-cel")
    assert cel.message == "ClusterQueue team-a: spec: borrowingLimit must be nil when cohort is empty"
    # The webhook's copy of this rule stays quiet when the CRD rule ran; lendingLimit is webhook-only.
    assert "kueue-webhook-cq-borrowing-limit-cohort" not in rules_of(report)
    lending = only(report, "kueue-webhook-cq-lending-limit-cohort")
    assert 'lendingLimit: Invalid value: "4": must be nil when cohort is empty' in lending.message


def test_wrong_enum(shared: Path) -> None:
    body = cluster_queue()
    body["spec"]["queueingStrategy"] = "FIFO"
    body["spec"]["flavorFungibility"]["whenCanBorrow"] = "Borrow"
    report = run(body, crd_dir=crds(shared))
    schema = sorted(f.message for f in report.findings if f.rule == "crd-schema")
    assert len(schema) == 2
    assert schema[1].startswith('ClusterQueue team-a: spec.queueingStrategy: "FIFO" is not one of')
    assert "spec.flavorFungibility.whenCanBorrow" in schema[0]


def test_resource_count_mismatch_is_the_crd_cel_rule(shared: Path) -> None:
    body = cluster_queue()
    body["spec"]["resourceGroups"][0]["flavors"][0]["resources"].pop()
    report = run(body, crd_dir=crds(shared))
    assert only(report, "crd-cel").message == (
        "ClusterQueue team-a: spec.resourceGroups[0]: flavors must have the same number of resources as the "
        "coveredResources"
    )
    assert "kueue-webhook-cq-resource-count" not in rules_of(report)


def test_webhook_order_mismatch(shared: Path) -> None:
    body = cluster_queue()
    resources = body["spec"]["resourceGroups"][0]["flavors"][0]["resources"]
    resources[0], resources[1] = resources[1], resources[0]
    report = run(body, crd_dir=crds(shared))
    assert rules_of(report) == {"kueue-webhook-cq-flavor-order"}
    assert len(report.findings) == 2


def test_lending_limit_message_and_origin(shared: Path) -> None:
    body = cluster_queue()
    body["spec"]["resourceGroups"][0]["flavors"][0]["resources"][1] = {
        "name": "memory",
        "nominalQuota": 4,
        "lendingLimit": 6,
    }
    origins = {
        ("spec", "resourceGroups", 0): Origin(TENANT, 10, 3),
        ("spec", "resourceGroups", 0, "flavors", 0, "resources", 1): Origin(TENANT, 14, 7),
    }
    report = run(rendered(body, origins), crd_dir=crds(shared))
    finding = only(report, "kueue-webhook-cq-lending-limit")
    assert (finding.path, finding.line, finding.col) == (TENANT, 14, 7)
    assert finding.message == (
        "ClusterQueue team-a: spec.resourceGroups[0].flavors[0].resources[1].lendingLimit: "
        "6 exceeds nominalQuota 4 (must be less than or equal to the nominalQuota)"
    )
    assert finding.format().startswith(f"{TENANT}:14:7: error: ClusterQueue team-a:")


def test_list_map_keys_are_unique(shared: Path) -> None:
    body = cluster_queue()
    flavors = body["spec"]["resourceGroups"][0]["flavors"]
    flavors.append(copy.deepcopy(flavors[0]))
    report = run(body, crd_dir=crds(shared))
    duplicate = only(report, "crd-list-duplicate")
    assert (
        duplicate.message
        == 'ClusterQueue team-a: spec.resourceGroups[0].flavors[1]: Duplicate value: {"name": "h100"}'
    )
    assert "kueue-webhook-cq-flavor-unique" in rules_of(report)


def test_cel_rule_on_array_items_and_evaluation_errors(shared: Path) -> None:
    rf = resource_flavor()
    rf["spec"]["tolerations"] = [{"operator": "Equal", "value": "x"}]
    del rf["spec"]["nodeLabels"]
    rf["spec"]["topologyName"] = "default"
    report = run(rf, crd_dir=crds(shared))
    messages = sorted(f.message for f in report.findings if f.rule == "crd-cel")
    assert messages[1] == (
        "ResourceFlavor h100: spec: at least one nodeLabel is required when topology is set "
        "(evaluation error: no such key: nodeLabels)"
    )
    assert messages[0] == (
        "ResourceFlavor h100: spec.tolerations: operator must be Exists when 'key' is empty, which means "
        "'match all values and all keys'"
    )


def test_defaults_are_applied_before_cel(shared: Path) -> None:
    body = cluster_queue()
    body["spec"]["preemption"] = {"borrowWithinCohort": {"policy": "LowerPriority"}}
    report = run(body, crd_dir=crds(shared))
    # reclaimWithinCohort defaults to Never, which forbids a borrowWithinCohort policy.
    assert only(report, "crd-cel").message.endswith(
        "reclaimWithinCohort=Never and borrowWithinCohort.Policy!=Never"
    )


def test_transition_rules_are_skipped_on_create(shared: Path) -> None:
    report = run(local_queue(), crd_dir=crds(shared))
    assert report.findings == ()


def test_metadata_rules(shared: Path) -> None:
    body = cluster_queue()
    body["metadata"] = {"name": "Team_A", "labels": {"bad key!": "v"}, "annotation": {}}
    report = run(body, crd_dir=crds(shared))
    messages = [f.message for f in report.findings]
    assert any('metadata.name: Invalid value: "Team_A"' in m for m in messages)
    assert any("metadata.labels[bad key!]" in m for m in messages)
    assert any('metadata.annotation: unknown field "annotation"' in m for m in messages)


def test_kueue_version_checks(shared: Path) -> None:
    body = cluster_queue()
    body["apiVersion"] = "kueue.x-k8s.io/v1alpha1"
    assert only(run(body, crd_dir=crds(shared)), "crd-version-not-served").severity is Severity.ERROR
    body["kind"] = "ClusterQueues"
    assert "crd-kind-unknown" in rules_of(run(body, crd_dir=crds(shared)))
    lq = local_queue()
    lq["apiVersion"] = "kueue.x-k8s.io/v1beta1"
    assert only(run(lq, crd_dir=crds(shared)), "crd-version-deprecated").severity is Severity.WARNING
    mismatch = run(local_queue(), crd_dir=crds(shared, "v0.18.1"), kueue="v0.19.2")
    assert only(mismatch, "crd-version-mismatch").severity is Severity.WARNING


def test_no_crd_dir_skips_schema_but_runs_webhook_rules(shared: Path) -> None:
    body = cluster_queue()
    resources = body["spec"]["resourceGroups"][0]["flavors"][0]["resources"]
    resources[0], resources[1] = resources[1], resources[0]
    body["spec"]["unknownField"] = 1
    report = run(body, crd_dir=None)
    assert report.skipped == ("Kueue CRD schema validation skipped: no schema directory configured",)
    assert report.schema_dirs_used == ("kubernetes-validate/v1.35.0-local-strict",)
    assert rules_of(report) == {"kueue-webhook-cq-flavor-order"}
    # Without the CRD, the webhook copy of the CEL rule speaks.
    del body["spec"]["cohortName"]
    assert "kueue-webhook-cq-borrowing-limit-cohort" in rules_of(run(body, crd_dir=None))


def test_missing_crd_dir_is_a_skip_note(tmp_path: Path) -> None:
    report = run(local_queue(), crd_dir=tmp_path / "nope")
    assert report.skipped == (f"Kueue CRD schema validation skipped: {tmp_path / 'nope'} is not a directory",)
    assert report.findings == ()


# --- resource.k8s.io and built-in kinds ------------------------------------------------------------


def test_v1beta1_flat_request_under_v1_is_an_unknown_field(shared: Path) -> None:
    body = claim_template()
    body["spec"]["spec"]["devices"]["requests"] = [{"name": "gpu", "deviceClassName": "gpu.nvidia.com"}]
    body["spec"]["spec"]["devices"]["constraints"] = []
    body["spec"]["spec"]["devices"]["config"] = []
    report = run(body, crd_dir=crds(shared))
    unknown = only(report, "k8s-unknown-field")
    assert unknown.message.startswith(
        "ResourceClaimTemplate team-a/single-gpu: "
        "spec.spec.devices.requests[0].deviceClassName: unknown field"
    )
    assert "dra-request-one-of" in rules_of(report)


def test_count_zero(shared: Path) -> None:
    body = claim_template()
    body["spec"]["spec"]["devices"]["requests"][0]["exactly"]["count"] = 0
    finding = only(run(body, crd_dir=crds(shared)), "dra-count")
    assert finding.message.endswith(
        "spec.spec.devices.requests[0].exactly.count: Invalid value: 0: must be greater than zero"
    )


def test_exactly_and_first_available_both(shared: Path) -> None:
    body = claim_template()
    body["spec"]["spec"]["devices"]["requests"][1]["exactly"] = {"deviceClassName": "gpu.nvidia.com"}
    finding = only(run(body, crd_dir=crds(shared)), "dra-request-one-of")
    assert finding.message.endswith("requests[1]: exactly one of `exactly` or `firstAvailable` is required")


def test_thirty_three_requests(shared: Path) -> None:
    body = claim_template()
    body["spec"]["spec"]["devices"]["requests"] = [
        {"name": f"gpu-{i}", "exactly": {"deviceClassName": "gpu.nvidia.com"}} for i in range(33)
    ]
    body["spec"]["spec"]["devices"]["constraints"][0]["requests"] = ["gpu-0"]
    body["spec"]["spec"]["devices"]["config"][0]["requests"] = ["gpu-0"]
    report = run(body, crd_dir=crds(shared))
    assert rules_of(report) == {"dra-claim-limits", "dra-total-devices"}
    assert "Too many: 33: must have at most 32 items" in only(report, "dra-claim-limits").message


def test_kubernetes_1_33_is_one_clear_finding(shared: Path) -> None:
    report = run(
        claim_template(), claim_template(), device_class(), cluster_queue(), crd_dir=crds(shared), k8s="1.33"
    )
    finding = only(report, "k8s-version-unsupported")
    assert "resource.k8s.io/v1, which Kueue reads, needs Kubernetes >= 1.34" in finding.message
    assert errors_of(report) == [finding]


def test_kubernetes_version_outside_the_bundled_schemas(shared: Path) -> None:
    report = run(config_map(), crd_dir=crds(shared), k8s="v1.40.1")
    assert report.findings == ()
    assert report.schema_dirs_used[-1] == "kubernetes-validate/v1.37.0-local-strict"
    assert "newest bundled" in report.skipped[0]
    old = run(config_map(), crd_dir=crds(shared), k8s="1.20")
    assert "k8s-version-unsupported" in rules_of(old)
    assert any("no bundled schemas" in note for note in old.skipped)


def test_partial_objects_relax_required_but_not_unknown_fields(shared: Path) -> None:
    assert run(partial_deployment(), crd_dir=None).findings == ()
    full = partial_deployment()
    del full["metadata"]["annotations"]
    assert {f.message.split(": ")[1] for f in run(full, crd_dir=None).findings} == {"spec.selector"}
    typo = partial_deployment()
    typo["spec"]["template"]["metadata"]["annotation"] = {}
    assert only(run(typo, crd_dir=None), "k8s-unknown-field").message.endswith(
        'spec.template.metadata.annotation: unknown field "annotation" '
        "(the API server would reject or prune it, and Argo CD would show a diff forever)"
    )


def test_argocd_objects_are_skipped(shared: Path) -> None:
    app = {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "Application",
        "metadata": {"name": "Bad_Name"},
        "spec": 1,
    }
    assert run(app, crd_dir=crds(shared)).findings == ()


def test_unknown_kinds(shared: Path) -> None:
    builtin = {"apiVersion": "apps/v1", "kind": "Deploymnet", "metadata": {"name": "x"}}
    assert only(run(builtin, crd_dir=None), "k8s-schema-not-found").severity is Severity.ERROR
    foreign = {"apiVersion": "monitoring.coreos.com/v1", "kind": "ServiceMonitor", "metadata": {"name": "x"}}
    assert only(run(foreign, crd_dir=None), "k8s-schema-not-found").severity is Severity.WARNING
    assert only(run({"metadata": {"name": "x"}}, crd_dir=None), "k8s-schema").message.endswith(
        "apiVersion and kind are required"
    )


def _deployment() -> Body:
    body = partial_deployment()
    del body["metadata"]["annotations"]
    body["spec"] = {
        "selector": {"matchLabels": {"app": "x"}},
        "template": {
            "metadata": {"labels": {"app": "x"}},
            "spec": {"containers": [{"name": "c", "image": "i"}]},
        },
    }
    return body


def _mutated(make: Any, path: tuple[str | int, ...], value: Any) -> Body:
    body: Body = make()
    target: Any = body
    for key in path[:-1]:
        target = target[key]
    if value is None:
        del target[path[-1]]
    else:
        target[path[-1]] = value
    return body


BUILTIN_CASES = [
    claim_template(),
    _mutated(claim_template, ("spec", "spec", "devices", "requests", 0, "exactly", "count"), "one"),
    _mutated(claim_template, ("spec", "spec", "devices", "requests", 0, "deviceClassName"), "x"),
    _mutated(claim_template, ("spec", "spec"), None),
    _mutated(claim_template, ("metadata", "uid"), 3),
    device_class(),
    _mutated(device_class, ("spec", "selectors", 0, "cel", "expr"), "x"),
    config_map(),
    _mutated(config_map, ("data", "n"), 1),
    _mutated(config_map, ("immutable",), "yes"),
    namespace(),
    _mutated(namespace, ("spec",), {"finalizers": ["kubernetes"], "extra": 1}),
    _deployment(),
    _mutated(_deployment, ("spec", "selector"), None),
    _mutated(_deployment, ("spec", "replicas"), "2"),
]


@pytest.mark.parametrize("body", BUILTIN_CASES)
def test_builtin_verdicts_match_kubernetes_validate(body: Body) -> None:
    try:
        kubernetes_validate.validate(copy.deepcopy(body), "1.35", strict=True)
        expected = True
    except kubernetes_validate.ValidationError:
        expected = False
    report = run(body, crd_dir=None)
    ours = not any(f.rule.startswith("k8s-") for f in report.findings)
    assert ours is expected, report.findings


def test_namespace_on_cluster_scoped_and_generate_name(shared: Path) -> None:
    cq = cluster_queue()
    cq["metadata"]["namespace"] = "team-a"
    warning = only(run(cq, crd_dir=crds(shared)), "k8s-metadata")
    assert warning.severity is Severity.WARNING and "cluster-scoped" in warning.message
    cm = config_map()
    cm["metadata"] = {"generateName": "cfg-", "namespace": "x"}
    assert only(run(cm, crd_dir=None), "k8s-metadata").severity is Severity.WARNING
    cm["metadata"]["generateName"] = "Cfg-"
    assert len([f for f in run(cm, crd_dir=None).findings if f.severity is Severity.ERROR]) == 1


# --- helpers ---------------------------------------------------------------------------------------


def test_format_path() -> None:
    assert format_path(("spec", "resourceGroups", 0, "flavors")) == "spec.resourceGroups[0].flavors"
    assert (
        format_path(("metadata", "labels", "kueue.x-k8s.io/queue-name"))
        == "metadata.labels[kueue.x-k8s.io/queue-name]"
    )


def test_json_schema_conversion() -> None:
    converted = json_schema(
        {
            "type": "object",
            "properties": {
                "q": {"anyOf": [{"type": "integer"}, {"type": "string"}], "x-kubernetes-int-or-string": True},
                "n": {"type": "integer", "format": "int32", "minimum": 0, "nullable": True},
                "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                "m": {"type": "object", "additionalProperties": {"type": "string"}},
            },
        }
    )
    assert converted["additionalProperties"] is False
    assert converted["properties"]["q"] == {"type": ["integer", "string"]}
    assert converted["properties"]["n"] == {"type": ["integer", "null"], "minimum": 0, "maximum": 2**31 - 1}
    assert "additionalProperties" not in converted["properties"]["free"]
    assert converted["properties"]["m"]["additionalProperties"] == {"type": "string"}


WIDGET_CRD = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "widgets.kueue.x-k8s.io"},
    "spec": {
        "group": "kueue.x-k8s.io",
        "names": {"kind": "Widget", "plural": "widgets"},
        "scope": "Namespaced",
        "versions": [
            {
                "name": "v1beta2",
                "served": True,
                "storage": True,
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "properties": {
                            "apiVersion": {"type": "string"},
                            "kind": {"type": "string"},
                            "metadata": {"type": "object"},
                            "spec": {
                                "type": "object",
                                "x-kubernetes-validations": [
                                    {
                                        "rule": "self.size > 0",
                                        "messageExpression": "'size ' + string(self.size)",
                                    },
                                    {"rule": "self.size < 10", "message": "too big", "fieldPath": ".size"},
                                    {
                                        "rule": "!oldSelf.hasValue() || oldSelf.value() == self",
                                        "optionalOldSelf": True,
                                    },
                                    {"rule": "self == oldSelf", "message": "immutable"},
                                    {"rule": "self.size ==", "message": "broken"},
                                ],
                                "properties": {
                                    "size": {"type": "integer", "default": 0},
                                    "tags": {
                                        "type": "array",
                                        "items": {"type": "string"},
                                        "x-kubernetes-list-type": "set",
                                    },
                                    "limits": {
                                        "type": "object",
                                        "additionalProperties": {
                                            "type": "string",
                                            "x-kubernetes-validations": [
                                                {"rule": "self != 'none'", "message": "no none"}
                                            ],
                                        },
                                    },
                                },
                            },
                        },
                    }
                },
            }
        ],
    },
}


def test_cel_features_on_a_small_crd(tmp_path: Path) -> None:
    (tmp_path / "widgets.yaml").write_text(yaml.safe_dump(WIDGET_CRD), encoding="utf-8")
    widget = {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Widget",
        "metadata": {"name": "w", "namespace": "team-a"},
        "spec": {"size": 12, "tags": ["a", "b", "a"], "limits": {"cpu": "1", "gpu": "none"}},
    }
    empty = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Widget", "metadata": {"name": "v"}, "spec": {}}
    report = run(widget, empty, crd_dir=tmp_path)
    messages = {f.message for f in report.findings if f.severity is Severity.ERROR}
    assert messages == {
        "Widget team-a/w: spec.size: too big",
        'Widget team-a/w: spec.tags[2]: Duplicate value: "a"',
        "Widget team-a/w: spec.limits.gpu: no none",
        "Widget v: spec: size 0",
    }
    unsupported = only(report, "crd-cel-unsupported")
    assert unsupported.severity is Severity.WARNING and unsupported.message.endswith(": self.size ==")
    assert unsupported.message.startswith(
        "Widget team-a/w: spec: CEL rule not checked offline (Failed to parse"
    )
    assert unsupported_cel_rules(tmp_path) == (("Widget", "v1beta2", "self.size =="),)


def test_unreadable_kubernetes_version(shared: Path) -> None:
    report = run(config_map(), crd_dir=crds(shared), k8s="latest")
    assert "cannot read Kubernetes version 'latest'" in only(report, "k8s-version-unsupported").message


_PIECES = (
    "  group: kueue.x-k8s.io\n",
    "  group: 'x'\n",
    "  group: two words\n",
    "  group: g",
    "  names:\n",
    "  names:",
    "    kind: Foo\n",
    "    plural: foos\n",
    "   \n",
    "\n",
    "  names:\n    kind: Bar\n",
    "kind: CustomResourceDefinition\n",
    "x",
)


@settings(max_examples=2000, deadline=None, database=None, derandomize=True)
@given(text=st.lists(st.sampled_from(_PIECES), max_size=12).map("".join))
def test_which_crd_a_file_holds_is_read_off_its_lines_as_the_patterns_read_it(text: str) -> None:
    """The lines `guess_kind` reads (found with str.find) are those its multi-line patterns find."""
    assert crd_files._groups(text) == crd_files._CRD_GROUP.findall(text)
    assert crd_files._names(text) == crd_files._CRD_NAMES.findall(text)


@pytest.mark.parametrize("version", ["v0.18.1", "v0.19.2"])
def test_the_kind_of_each_crd_file_is_read_off_its_text(shared: Path, version: str) -> None:
    for file in sorted(crds(shared, version).glob("*.yaml")):
        text = file.read_text()
        assert crd_files._groups(text) == crd_files._CRD_GROUP.findall(text)
        assert crd_files._names(text) == crd_files._CRD_NAMES.findall(text)
        assert crd_files.guess_kind(text) == next(iter(crd_files.read_crds(file)))


@pytest.mark.parametrize("version", ["v0.18.1", "v0.19.2"])
def test_crd_files_are_parsed_when_first_needed_and_give_what_a_full_parse_gives(
    shared: Path, version: str
) -> None:
    directory = crds(shared, version)
    full: dict[tuple[str, str], Any] = {}
    for file in sorted(directory.glob("*.yaml")):
        full.update(crd_files.read_crds(file))
    lazy = crd_files.CrdDirectory(directory)
    assert ("kueue.x-k8s.io", "Workload") in full
    assert lazy[("kueue.x-k8s.io", "ClusterQueue")] == full[("kueue.x-k8s.io", "ClusterQueue")]
    assert len(lazy._parsed) == 1  # the Workload CRD (1.4 MB) was not read
    assert len(lazy) == len(full)
    assert dict(lazy) == full


def test_a_crd_directory_that_is_not_one_crd_per_file_is_parsed_whole(shared: Path, tmp_path: Path) -> None:
    source = crds(shared)
    queues = (source / "kueue.x-k8s.io_clusterqueues.yaml").read_text()
    flavors = (source / "kueue.x-k8s.io_resourceflavors.yaml").read_text()
    (tmp_path / "both.yaml").write_text(queues + "\n---\n" + flavors)
    lazy = crd_files.CrdDirectory(tmp_path)
    assert set(lazy) == {("kueue.x-k8s.io", "ClusterQueue"), ("kueue.x-k8s.io", "ResourceFlavor")}
    # names written in flow style: not the usual layout, parsed whole
    (tmp_path / "both.yaml").unlink()
    flow = queues.replace(
        "  names:\n    kind: ClusterQueue\n", "  names: {kind: ClusterQueue}\n  x-names:\n", 1
    )
    assert flow != queues
    (tmp_path / "a.yaml").write_text(flow)
    assert crd_files.guess_kind(flow) is None
    lazy = crd_files.CrdDirectory(tmp_path)
    assert lazy._parsed == {tmp_path / "a.yaml"}


def test_a_crd_file_that_holds_another_kind_than_its_text_says_is_parsed_whole(
    shared: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("clusterqueues", "cohorts"):
        shutil.copyfile(crds(shared) / f"kueue.x-k8s.io_{name}.yaml", tmp_path / f"{name}.yaml")
    swapped = {"ClusterQueue": "Cohort", "Cohort": "ClusterQueue"}
    real_guess = crd_files.guess_kind

    def misread(text: str) -> tuple[str, str] | None:
        found = real_guess(text)
        return (found[0], swapped[found[1]]) if found else None

    monkeypatch.setattr(crd_files, "guess_kind", misread)
    lazy = crd_files.CrdDirectory(tmp_path)
    assert lazy[("kueue.x-k8s.io", "Cohort")].source == "cohorts.yaml"
    assert lazy._where is None  # found out, and parsed whole
    assert set(lazy) == {("kueue.x-k8s.io", "ClusterQueue"), ("kueue.x-k8s.io", "Cohort")}
