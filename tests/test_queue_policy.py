"""Queue policy in Kueue's field names: preemption beyond the presets, flavorFungibility, stopPolicy and
admission checks (a ProvisioningRequest check with its ProvisioningRequestConfig), per tenant and as
platform defaults, rendered with every default written out and held to Kueue's rules at the input line."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import trees

from gputenancy import engine
from gputenancy.check.kubernetes import crdschema
from gputenancy.check.kubernetes.crdcheck import apply_defaults

PROVISIONING = {
    "name": "gpu-provisioning",
    "provisioningRequestConfig": {
        "provisioningClassName": "check-capacity.autoscaling.x-k8s.io",
        "managedResources": ["nvidia.com/gpu"],
        "retryStrategy": {"backoffLimitCount": 5},
    },
}


def _objects(result: engine.Result, cluster: str, kind: str) -> dict[str, dict[str, Any]]:
    return {
        o.body["metadata"]["name"]: o.body for o in result.clusters[cluster].objects if o.body["kind"] == kind
    }


def test_a_tenant_states_its_policy_in_kueue_terms_and_every_supported_version_accepts_it(
    tmp_path: Path, shared: Path
) -> None:
    root = trees.example(tmp_path, generated=False)
    trees.edit(root, "base/platform.yaml", lambda d: d.update(admissionChecks=[PROVISIONING]))
    policy = {
        "preemption": {
            "reclaimWithinCohort": "Any",
            "borrowWithinCohort": {"policy": "LowerPriority", "maxPriorityThreshold": 100},
        },
        "flavorFungibility": {
            "whenCanBorrow": "TryNextFlavor",
            "preference": "BorrowingOverPreemption",
        },
        "admissionChecks": [{"name": "gpu-provisioning", "onFlavors": ["t4"]}],
    }
    trees.edit(root, "tenants/sandbox.yaml", lambda d: d.update(policy))  # lab: Kueue v0.18
    trees.edit(
        root,
        "tenants/vision.yaml",
        lambda d: d.update(policy, admissionChecks=[{"name": "gpu-provisioning"}]),
    )
    result = engine.run(root, schemas=shared)
    assert [f.format() for f in result.findings] == []
    assert not [n for n in result.notes if "skipped" in n]
    cq = _objects(result, "lab", "ClusterQueue")["sandbox"]["spec"]
    assert cq["preemption"] == {
        "reclaimWithinCohort": "Any",
        "withinClusterQueue": "Never",
        "borrowWithinCohort": {"policy": "LowerPriority", "maxPriorityThreshold": 100},
    }
    assert cq["flavorFungibility"] == {
        "whenCanBorrow": "TryNextFlavor",
        "whenCanPreempt": "TryNextFlavor",
        "preference": "BorrowingOverPreemption",
    }
    assert cq["admissionChecksStrategy"] == {
        "admissionChecks": [{"name": "gpu-provisioning", "onFlavors": ["t4"]}]
    }
    check = _objects(result, "lab", "AdmissionCheck")["gpu-provisioning"]["spec"]
    assert check == {
        "controllerName": "kueue.x-k8s.io/provisioning-request",
        "parameters": {
            "apiGroup": "kueue.x-k8s.io",
            "kind": "ProvisioningRequestConfig",
            "name": "gpu-provisioning",
        },
    }
    prc = _objects(result, "lab", "ProvisioningRequestConfig")["gpu-provisioning"]["spec"]
    # the API server's retryStrategy defaults written out: no drift in Argo CD
    assert prc["retryStrategy"] == {
        "backoffBaseSeconds": 60,
        "backoffLimitCount": 5,
        "backoffMaxSeconds": 1800,
    }
    assert "AdmissionCheck" in {o.body["kind"] for o in result.clusters["prod"].objects}


def test_a_provisioning_request_config_may_have_a_name_of_its_own(tmp_path: Path) -> None:
    """As Kueue's own example (an AdmissionCheck sample-prov whose parameters name prov-test-config)."""
    root = trees.example(tmp_path, generated=False)
    prc = {"name": "prov-test-config", "provisioningClassName": "check-capacity.autoscaling.x-k8s.io"}
    trees.edit(
        root,
        "base/platform.yaml",
        lambda d: d.update(admissionChecks=[{"name": "sample-prov", "provisioningRequestConfig": prc}]),
    )
    trees.edit(root, "tenants/speech.yaml", lambda d: d.update(admissionChecks=[{"name": "sample-prov"}]))
    result = engine.run(root, cluster="prod")
    assert [f.format() for f in result.findings] == []
    assert (
        _objects(result, "prod", "AdmissionCheck")["sample-prov"]["spec"]["parameters"]["name"]
        == "prov-test-config"
    )
    assert "prov-test-config" in _objects(result, "prod", "ProvisioningRequestConfig")


def test_platform_defaults_apply_where_a_tenant_states_nothing(tmp_path: Path) -> None:
    root = trees.example(tmp_path, generated=False)
    trees.edit(
        root,
        "base/platform.yaml",
        lambda d: d.update(
            queueDefaults={
                "preemption": "within-queue",
                "queueingStrategy": "StrictFIFO",
                "fairSharingWeight": 3,
            },
        ),
    )
    result = engine.run(root)
    assert [f.format() for f in result.findings] == []
    queues = _objects(result, "prod", "ClusterQueue")
    assert queues["speech"]["spec"]["preemption"]["withinClusterQueue"] == "LowerPriority"  # from the default
    assert queues["vision"]["spec"]["preemption"]["reclaimWithinCohort"] == "Any"  # its own preset: reclaim
    assert {q["spec"]["queueingStrategy"] for q in queues.values()} == {"StrictFIFO"}
    assert queues["speech"]["spec"]["fairSharing"] == {"weight": "3"}
    assert queues["nlp"]["spec"]["fairSharing"] == {"weight": "2"}  # its own fairSharingWeight


def test_stop_policy_hold(tmp_path: Path) -> None:
    root = trees.example(tmp_path, generated=False)
    trees.edit(root, "tenants/speech.yaml", lambda d: d.update(stopPolicy="Hold"))
    result = engine.run(root, cluster="prod")
    cq = _objects(result, "prod", "ClusterQueue")["speech"]
    assert cq["spec"]["stopPolicy"] == "Hold"
    assert _objects(result, "prod", "LocalQueue")["speech"]["spec"]["stopPolicy"] == "Hold"
    notes = [f for f in result.findings if f.rule == "claim-admissible"]
    assert notes and all("stopped" in f.message for f in notes)


@pytest.mark.parametrize(
    ("change", "rule", "words"),
    [
        (
            {"preemption": {"borrowWithinCohort": {"policy": "LowerPriority"}}},
            "queue-policy",
            "reclaimWithinCohort",
        ),
        ({"flavorFungibility": {"preference": "BorrowingOverPreemption"}}, "queue-policy", "TryNextFlavor"),
        (
            {"admissionChecks": [{"name": "gpu-provisioning", "onFlavors": ["t4"]}]},
            "queue-policy",
            "onFlavors t4",
        ),
        ({"admissionChecks": [{"name": "gpu-provisoning"}]}, "admission-check", "did you mean"),
        ({"state": "draining", "stopPolicy": "Hold"}, "queue-policy", "draining"),
    ],
)
def test_policy_kueue_refuses_is_a_finding_at_its_line(
    tmp_path: Path, change: dict[str, Any], rule: str, words: str
) -> None:
    root = trees.example(tmp_path, generated=False)
    trees.edit(root, "base/platform.yaml", lambda d: d.update(admissionChecks=[PROVISIONING]))
    trees.edit(root, "tenants/vision.yaml", lambda d: d.update(change))
    found = [f for f in engine.check_only(root)[1] if f.rule == rule]
    assert found and found[0].path == "tenants/vision.yaml" and words in found[0].message, found


def test_an_admission_check_without_a_controller(tmp_path: Path) -> None:
    root = trees.example(tmp_path, generated=False)
    trees.edit(root, "base/platform.yaml", lambda d: d.update(admissionChecks=[{"name": "multikueue"}]))
    found = [f.message for f in engine.check_only(root)[1] if f.rule == "admission-check"]
    assert any("names no controller" in m for m in found) and any("MultiKueue" in m for m in found)


def test_every_new_shape_is_rendered_as_the_api_server_stores_it(tmp_path: Path, shared: Path) -> None:
    """The API server's structural defaulting (each supported Kueue version's CRDs) adds nothing to what
    the pipeline renders for the new shapes: a department Cohort with quota, a two-group queue, a queue
    policy in Kueue's terms, an AdmissionCheck with its ProvisioningRequestConfig, a label selector, a
    Topology and a TAS flavor. What Argo CD applies is what the server keeps: no drift."""
    root = trees.example(tmp_path, generated=False)
    trees.edit(root, "base/platform.yaml", lambda d: d.update(admissionChecks=[PROVISIONING]))
    policy = {
        "preemption": {"reclaimWithinCohort": "Any", "borrowWithinCohort": {"policy": "LowerPriority"}},
        "flavorFungibility": {"whenCanBorrow": "TryNextFlavor"},
        "admissionChecks": [{"name": "gpu-provisioning"}],
        "namespaceSelector": {"matchLabels": {"team": "sandbox"}},
        "namespaceLabels": {"team": "sandbox"},
    }
    trees.edit(root, "tenants/sandbox.yaml", lambda d: d.update(policy))
    topology = {"name": "lab", "levels": [{"nodeLabel": "kubernetes.io/hostname"}]}

    def tas(d: dict[str, Any]) -> None:
        d["topologies"] = [topology]
        d["capacity"][0]["topologyName"] = "lab"

    trees.edit(root, "overlays/lab/cluster.yaml", tas)
    result = engine.run(root, schemas=shared, cluster="lab")
    # sandbox's CPU and memory sit on the node-agnostic default-flavor, which no topology can bind: the
    # queue mixes a TAS flavor with another, which Kueue accepts and the pipeline warns about.
    assert [(f.rule, f.severity.value) for f in result.findings] == [("topology-mixed-queue", "warning")]
    kinds = {
        "Cohort",
        "ClusterQueue",
        "ResourceFlavor",
        "Topology",
        "AdmissionCheck",
        "ProvisioningRequestConfig",
    }
    seen = set()
    for tag in ("v0.18.1", "v0.19.2"):
        crds = shared / "kueue" / tag / "crds"
        for o in result.clusters["lab"].objects:
            kind = o.body["kind"]
            if kind not in kinds:
                continue
            compiled = crdschema.compiled(crds, "kueue.x-k8s.io", kind, "v1beta2")
            stored = copy.deepcopy(dict(o.body))
            assert compiled.plan is not None
            apply_defaults(stored, compiled.plan)
            assert stored == o.body, (tag, kind, o.body["metadata"]["name"])
            seen.add(kind)
    assert seen == kinds
