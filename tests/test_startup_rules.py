"""Kueue's start-up feature-gate rules, per version (gputenancy/versions/data/kueue_startup_rules.json).

Each case names the upstream rule it mirrors: kubernetes-sigs/kueue pkg/config/validation.go at the tag,
`LoadAndValidateFeatureGates` (cmd/kueue/main.go exits with "conflicting feature gates detected" when it
returns an error) and `validateDRAFeatureGateDependencies`.
"""

from __future__ import annotations

import json
from importlib import resources
from typing import Any

import pytest

from gputenancy.check.config.configcheck import check_configuration
from gputenancy.common.findings import Origin, Severity
from gputenancy.versions import gates, startup

DEP = "kueue-feature-gate-dependency"


def _check(version: str, feature_gates: dict[str, bool]) -> list[tuple[str, str]]:
    config: dict[str, Any] = {
        "apiVersion": "config.kueue.x-k8s.io/v1beta2",
        "kind": "Configuration",
        "featureGates": feature_gates,
    }
    found = check_configuration(config, version, origin_of=lambda path: Origin("kueue.yaml", len(path)))
    return sorted((f.message, f.rule) for f in found if f.severity is Severity.ERROR)


# (version, gates, expected message fragment, upstream line it mirrors)
CASES = [
    # v0.18.1 pkg/config/validation.go:607 `!TopologyAwareScheduling && enabledProfilesCount > 0`
    ("v0.18.1", {"TopologyAwareScheduling": False}, "cannot use a TAS profile with TAS disabled"),
    # v0.19.2 pkg/config/validation.go:666, same rule
    ("v0.19.2", {"TopologyAwareScheduling": False}, "cannot use a TAS profile with TAS disabled"),
    # v0.19.2 :685 validateFeatureGateDependency(TASRecomputeAssignmentWithinSchedulingCycle, TAS), on by default
    (
        "v0.19.2",
        {"TopologyAwareScheduling": False, "TASProfileMixed": False},
        "TASRecomputeAssignmentWithinSchedulingCycle requires TopologyAwareScheduling to be enabled",
    ),
    # v0.18.1 :618 validateFeatureGateDependency(TASFailedNodeReplacement, TopologyAwareScheduling)
    (
        "v0.18.1",
        {"TopologyAwareScheduling": False, "TASProfileMixed": False, "TASFailedNodeReplacement": True},
        "TASFailedNodeReplacement requires TopologyAwareScheduling to be enabled",
    ),
    # v0.18.1 :619 TASFailedNodeReplacementFailFast needs its parent TASFailedNodeReplacement
    (
        "v0.18.1",
        {"TASFailedNodeReplacement": False, "TASFailedNodeReplacementFailFast": True},
        "TASFailedNodeReplacementFailFast requires TASFailedNodeReplacement to be enabled",
    ),
    # v0.19.2 :680 TASReplaceNodeDueToNotReadyOverFixedTime needs TASFailedNodeReplacement (new in v0.19)
    (
        "v0.19.2",
        {"TASFailedNodeReplacement": False, "TASReplaceNodeDueToNotReadyOverFixedTime": True},
        "TASReplaceNodeDueToNotReadyOverFixedTime requires TASFailedNodeReplacement to be enabled",
    ),
    # v0.19.2 :686 UnadmittedWorkloadsExplicitStatus needs UnadmittedWorkloadsObservability
    (
        "v0.19.2",
        {"UnadmittedWorkloadsExplicitStatus": True},
        "UnadmittedWorkloadsExplicitStatus requires UnadmittedWorkloadsObservability to be enabled",
    ),
    # v0.18.1 :626-633 ElasticJobsViaWorkloadSlicesWithTAS needs ElasticJobsViaWorkloadSlices
    (
        "v0.18.1",
        {"ElasticJobsViaWorkloadSlices": False, "ElasticJobsViaWorkloadSlicesWithTAS": True},
        "ElasticJobsViaWorkloadSlicesWithTAS requires ElasticJobsViaWorkloadSlices to be enabled",
    ),
    # v0.19.2 :736 validateDRAFeatureGateDependencies: ConsumableCapacity needs KueueDRAIntegration
    (
        "v0.19.2",
        {
            "KueueDRAIntegration": False,
            "KueueDRAIntegrationExtendedResource": False,
            "KueueDRAIntegrationPartitionableDevices": False,
            "KueueDRAIntegrationConsumableCapacity": True,
        },
        "KueueDRAIntegrationConsumableCapacity requires KueueDRAIntegration to be enabled",
    ),
]


@pytest.mark.parametrize(("version", "feature_gates", "message"), CASES)
def test_start_up_rule_refused(version: str, feature_gates: dict[str, bool], message: str) -> None:
    found = _check(version, feature_gates)
    assert any(message in m and rule == DEP for m, rule in found), found


def test_rule_absent_from_a_version_is_not_applied() -> None:
    # UnadmittedWorkloadsExplicitStatus does not exist in v0.18: the gate is unknown there, not a dependency
    assert not any(r == DEP for _, r in _check("v0.18.1", {"UnadmittedWorkloadsExplicitStatus": True}))


def test_defaults_of_every_version_pass() -> None:
    for minor in gates.supported_versions():
        assert _check(minor, {}) == []


def test_turning_a_parent_off_names_the_children_on_by_default() -> None:
    found = _check("v0.19.2", {"KueueDRAIntegration": False})
    messages = [m for m, r in found if r == DEP]
    # ExtendedResource and PartitionableDevices are Beta and on by default in v0.19
    assert any(
        "KueueDRAIntegrationExtendedResource requires" in m and "set it to false too" in m for m in messages
    )
    assert any("KueueDRAIntegrationPartitionableDevices requires" in m for m in messages)


def test_every_gate_named_by_a_rule_exists_in_that_version() -> None:
    raw = json.loads(
        resources.files("gputenancy.versions").joinpath("data", "kueue_startup_rules.json").read_text()
    )
    for minor in raw:
        table = gates.gates_for(minor)
        rules = startup.rules_for(minor)
        assert rules is not None
        for dep in rules.dependencies:
            assert dep.gate in table and dep.requires in table, (minor, dep)
        assert rules.mappings_gate in table and rules.reject_gate in table
    assert sorted(raw) == gates.supported_versions()


# --- the loader's other checks (pkg/config/validation.go validateTLS, validateVisibilityServer,
# validateCustomLabels; called from Validate, which cmd/kueue/main.go runs before starting) ---------------


def _invalid(version: str, **sections: Any) -> list[str]:
    config: dict[str, Any] = {
        "apiVersion": "config.kueue.x-k8s.io/v1beta2",
        "kind": "Configuration",
        **sections,
    }
    found = check_configuration(config, version, origin_of=lambda path: Origin("kueue.yaml", len(path)))
    return [f.message for f in found if f.rule == "kueue-config-invalid"]


@pytest.mark.parametrize("version", ["v0.18.1", "v0.19.2"])
def test_tls(version: str) -> None:
    # tlsconfig.convertTLSMinVersion refuses TLS 1.0/1.1; validateTLS refuses cipherSuites with TLS 1.3
    assert (
        _invalid(version, tls={"minVersion": "VersionTLS12", "cipherSuites": ["TLS_AES_128_GCM_SHA256"]})
        == []
    )
    assert any("invalid minVersion" in m for m in _invalid(version, tls={"minVersion": "VersionTLS11"}))
    assert any(
        "may not be specified when `minVersion` is 'VersionTLS13'" in m
        for m in _invalid(
            version, tls={"minVersion": "VersionTLS13", "cipherSuites": ["TLS_AES_128_GCM_SHA256"]}
        )
    )


@pytest.mark.parametrize("version", ["v0.18.1", "v0.19.2"])
def test_visibility_server(version: str) -> None:
    assert _invalid(version, visibilityServer={"bindAddress": "0.0.0.0", "bindPort": 8082}) == []
    messages = _invalid(version, visibilityServer={"bindAddress": "localhost", "bindPort": 70000})
    assert any("must be a valid IP address" in m for m in messages)
    assert any("must be a valid port number (1-65535)" in m for m in messages)


@pytest.mark.parametrize("version", ["v0.18.1", "v0.19.2"])
def test_custom_label_names(version: str) -> None:
    labels = [
        {"name": "team"},
        {"name": "team"},
        {"name": "9lives"},
        {"name": "x", "sourceLabelKey": "a", "sourceAnnotationKey": "b"},
    ]
    messages = _invalid(version, metrics={"customLabels": labels})
    assert any("Duplicate value: 'team'" in m for m in messages)
    assert any("must match ^[a-zA-Z][a-zA-Z0-9_]*$" in m for m in messages)
    assert any("mutually exclusive" in m for m in messages)


def test_custom_label_limits_are_those_of_v019_only() -> None:
    # v0.19.2 validation.go:817 maxCustomLabels = 20; maxCustomLabelsPerSourceKind ClusterQueue 6 (the default kind)
    labels = [{"name": f"l{i}"} for i in range(7)]
    assert any(
        "too many custom labels for source kind ClusterQueue: found 7, expected <= 6" in m
        for m in _invalid("v0.19.2", metrics={"customLabels": labels})
    )
    assert _invalid("v0.18.1", metrics={"customLabels": labels}) == []
    # Workload labels need 1-12 tracked values (maxTrackedWlCustomLabelValues)
    workload = [{"name": "w", "sourceKind": "Workload"}]
    assert any(
        "must not be empty when sourceKind is 'Workload'" in m
        for m in _invalid("v0.19.2", metrics={"customLabels": workload})
    )
