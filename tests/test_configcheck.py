"""Offline Kueue manager Configuration validation: passing and failing cases per rule, and upstream files."""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from gputenancy.check.config import configcheck
from gputenancy.check.config.configcheck import check_configuration, deployment_has_feature_gates_flag
from gputenancy.check.config.configfields import parse_go_duration
from gputenancy.common.findings import Finding, Origin, Severity

TAGS = ("v0.18.1", "v0.19.2")
V2 = "config.kueue.x-k8s.io/v1beta2"
V1 = "config.kueue.x-k8s.io/v1beta1"

Path_ = tuple[str | int, ...]


class Recorder:
    """origin_of stand-in: line = 1 + number of calls so far, and remembers which path each line was for."""

    def __init__(self) -> None:
        self.paths: list[Path_] = []

    def __call__(self, path: Path_) -> Origin:
        self.paths.append(path)
        return Origin("clusters/a/kueue.yaml", len(self.paths), 1)


def base(api_version: str = V2, **extra: Any) -> dict[str, Any]:
    cfg: dict[str, Any] = {"apiVersion": api_version, "kind": "Configuration"}
    cfg.update(extra)
    return cfg


def check(cfg: Any, version: str = "v0.19.2", **kwargs: Any) -> list[Finding]:
    return check_configuration(cfg, version, origin_of=Recorder(), **kwargs)


def rules(findings: list[Finding], severity: Severity | None = Severity.ERROR) -> list[str]:
    return [f.rule for f in findings if severity is None or f.severity is severity]


def only(findings: list[Finding], rule: str) -> list[Finding]:
    return [f for f in findings if f.rule == rule]


def mapping(name: str, *classes: str, **extra: Any) -> dict[str, Any]:
    return {"name": name, "deviceClassNames": list(classes), **extra}


def counter(name: str = "memory", driver: str = "gpu.example.com", expr: str | None = None) -> dict[str, Any]:
    cel = expr if expr is not None else f"device.driver == '{driver}'"
    return {"counter": {"name": name, "driver": driver, "deviceSelector": {"cel": {"expression": cel}}}}


def capacity(name: str = "gpu.example.com/memory", driver: str = "gpu.example.com") -> dict[str, Any]:
    cel = f"device.driver == '{driver}'"
    return {"capacity": {"name": name, "driver": driver, "deviceSelector": {"cel": {"expression": cel}}}}


def dcm(*mappings: dict[str, Any], gates: dict[str, bool] | None = None) -> dict[str, Any]:
    cfg = base(resources={"deviceClassMappings": list(mappings)})
    if gates is not None:
        cfg["featureGates"] = gates
    return cfg


# --- upstream files --------------------------------------------------------------------------------------


@pytest.mark.parametrize("tag", TAGS)
def test_shipped_default_config_passes(shared: Path, tag: str) -> None:
    cfg = yaml.safe_load(
        (shared / "kueue" / tag / "controller_manager_config.yaml").read_text(encoding="utf-8")
    )
    assert check(cfg, tag) == []


@pytest.mark.parametrize("tag", TAGS)
def test_helm_chart_manager_config_passes(shared: Path, tag: str) -> None:
    values = yaml.safe_load((shared / "kueue" / tag / "helm" / "values.yaml").read_text(encoding="utf-8"))
    cfg = yaml.safe_load(values["managerConfig"]["controllerManagerConfigYaml"])
    assert check(cfg, tag) == []


@pytest.mark.parametrize("tag", TAGS)
def test_every_framework_named_upstream_is_known(shared: Path, tag: str) -> None:
    text = (shared / "kueue" / tag / "controller_manager_config.yaml").read_text(encoding="utf-8")
    block = text.split("frameworks:", 1)[1].split("externalFrameworks", 1)[0]
    named = set(re.findall(r'^\s*#?\s*-\s*"([a-z0-9./-]+)"\s*$', block, re.MULTILINE))
    assert {"batch/job", "pod", "kubeflow.org/pytorchjob", "sparkoperator.k8s.io/sparkapplication"} <= named
    assert named <= configcheck.KNOWN_FRAMEWORKS


@pytest.mark.parametrize("tag", TAGS)
def test_shipped_config_with_commented_examples_enabled_passes(shared: Path, tag: str) -> None:
    """The commented-out examples of the shipped file, uncommented, are valid."""
    cfg = yaml.safe_load(
        (shared / "kueue" / tag / "controller_manager_config.yaml").read_text(encoding="utf-8")
    )
    cfg.update(
        pprofBindAddress=":8083",
        waitForPodsReady={
            "timeout": "5m",
            "recoveryTimeout": "3m",
            "blockAdmission": False,
            "requeuingStrategy": {
                "timestamp": "Eviction",
                "backoffLimitCount": None,
                "backoffBaseSeconds": 60,
                "backoffMaxSeconds": 3600,
            },
        },
        manageJobsWithoutQueueName=True,
        managedJobsNamespaceSelector={
            "matchExpressions": [
                {
                    "key": "kubernetes.io/metadata.name",
                    "operator": "NotIn",
                    "values": ["kube-system", "kueue-system"],
                }
            ]
        },
        internalCertManagement={"enable": False, "webhookServiceName": "", "webhookSecretName": ""},
        fairSharing={"preemptionStrategies": ["LessThanOrEqualToFinalShare", "LessThanInitialShare"]},
        admissionFairSharing={
            "usageHalfLifeTime": "168h",
            "usageSamplingInterval": "5m",
            "resourceWeights": {"cpu": 0, "memory": 0, "example.com/gpu": 100},
        },
        resources={
            "excludeResourcePrefixes": [],
            "quotaCheckStrategy": "BlockUndeclared",
            "transformations": [
                {
                    "input": "nvidia.com/mig-4g.5gb",
                    "strategy": "Replace",
                    "outputs": {"example.com/accelerator-memory": "5Gi", "example.com/accelerator-gpc": 4},
                }
            ],
        },
        objectRetentionPolicies={"workloads": {"afterFinished": None, "afterDeactivatedByKueue": "0s"}},
    )
    cfg["integrations"]["externalFrameworks"] = ["Foo.v1.example.com"]
    # QuotaCheckStrategy is Alpha (off) in v0.18: the field is accepted but ignored there.
    assert rules(check(cfg, tag)) == []


# --- kueue-config-version --------------------------------------------------------------------------------


@pytest.mark.parametrize("api_version", [V2, V1])
def test_version_accepted(api_version: str) -> None:
    assert check(base(api_version)) == []


@pytest.mark.parametrize(
    ("cfg", "path"),
    [
        ({"kind": "Configuration"}, ("apiVersion",)),
        (base("config.kueue.x-k8s.io/v1alpha1"), ("apiVersion",)),
        (base("kueue.x-k8s.io/v1beta2"), ("apiVersion",)),
        ({"apiVersion": V2, "kind": "KueueConfiguration"}, ("kind",)),
        ({"apiVersion": V2}, ("kind",)),
    ],
)
def test_version_rejected(cfg: dict[str, Any], path: Path_) -> None:
    recorder = Recorder()
    findings = check_configuration(cfg, "v0.19", origin_of=recorder)
    assert rules(findings) == ["kueue-config-version"]
    assert recorder.paths == [path]
    assert findings[0].line == 1 and findings[0].path == "clusters/a/kueue.yaml"


def test_not_a_mapping() -> None:
    assert rules(check(["apiVersion", V2])) == ["kueue-config-version"]


def test_unsupported_kueue_version_raises() -> None:
    with pytest.raises(ValueError, match=r"supported: v0\.18, v0\.19"):
        check(base(), "v0.20.0")


# --- kueue-config-unknown-field --------------------------------------------------------------------------

_FULL_V1BETA2: dict[str, Any] = base(
    namespace="kueue-system",
    webhook={"port": 9443, "host": "", "certDir": "/tmp/k8s-webhook-server/serving-certs"},
    leaderElection={
        "leaderElect": True,
        "leaseDuration": "15s",
        "renewDeadline": "10s",
        "retryPeriod": "2s",
        "resourceLock": "leases",
        "resourceName": "c1f6bfd2.kueue.x-k8s.io",
        "resourceNamespace": "kueue-system",
    },
    metrics={"bindAddress": ":8443", "enableClusterQueueResources": True},
    health={
        "healthProbeBindAddress": ":8081",
        "readinessEndpointName": "readyz",
        "livenessEndpointName": "healthz",
    },
    pprofBindAddress="",
    controller={"groupKindConcurrency": {"Job.batch": 5}, "cacheSyncTimeout": 120000000000},
    manageJobsWithoutQueueName=False,
    managedJobsNamespaceSelector={
        "matchLabels": {"gpu-tenancy/managed": "true"},
        "matchExpressions": [
            {"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": ["kube-system"]}
        ],
    },
    internalCertManagement={"enable": True},
    waitForPodsReady={
        "timeout": "1h30m",
        "blockAdmission": True,
        "recoveryTimeout": "0s",
        "requeuingStrategy": {"timestamp": "Creation", "backoffLimitCount": 5, "backoffBaseSeconds": 0},
    },
    clientConnection={"qps": 50.5, "burst": 100},
    integrations={"frameworks": ["batch/job", "pod"], "labelKeysToCopy": ["team"]},
    multiKueue={"gcInterval": "1m", "origin": "multikueue", "workerLostTimeout": "15m"},
    fairSharing={"preemptionStrategies": ["LessThanInitialShare"]},
    objectRetentionPolicies={"workloads": {"afterFinished": "1h"}},
    featureGates={"KueueDRAIntegration": True},
    resources={
        "quotaCheckStrategy": "BlockUndeclared",
        "deviceClassMappings": [
            mapping("example.com/gpu", "gpu-a100.example.com", "gpu-h100.example.com"),
            mapping("gpu.memory", "mig.example.com", sources=[counter()]),
        ],
    },
)


def test_full_v1beta2_configuration_passes() -> None:
    assert check(_FULL_V1BETA2) == []


@pytest.mark.parametrize(
    ("api_version", "mutate", "path", "hint"),
    [
        (V2, lambda c: c.update(waitForPodReady={}), ("waitForPodReady",), 'did you mean "waitForPodsReady"'),
        (V2, lambda c: c.update(FeatureGates={}), ("FeatureGates",), 'did you mean "featureGates"'),
        (
            V2,
            lambda c: c.update(waitForPodsReady={"requeuingStrategy": {"timestmp": "Eviction"}}),
            ("waitForPodsReady", "requeuingStrategy", "timestmp"),
            'did you mean "timestamp"',
        ),
        (V2, lambda c: c.update(fairSharing={"enable": True}), ("fairSharing", "enable"), f"only in {V1}"),
        (V2, lambda c: c.update(queueVisibility={}), ("queueVisibility",), f"only in {V1}"),
        (
            V2,
            lambda c: c.update(
                resources={"deviceClassMappings": [{**mapping("a", "b"), "deviceClasses": ["b"]}]}
            ),
            ("resources", "deviceClassMappings", 0, "deviceClasses"),
            "",
        ),
        (
            V1,
            lambda c: c.update(
                resources={"deviceClassMappings": [mapping("g", "gpu.example.com", sources=[counter()])]}
            ),
            ("resources", "deviceClassMappings", 0, "sources"),
            f"only in {V2}",
        ),
        (
            V1,
            lambda c: c.update(resources={"quotaCheckStrategy": "BlockUndeclared"}),
            ("resources", "quotaCheckStrategy"),
            f"only in {V2}",
        ),
        (V1, lambda c: c.update(tls={"minVersion": "VersionTLS12"}), ("tls",), f"only in {V2}"),
        (V2, lambda c: c.update(enableClusterQueueResources=True), ("enableClusterQueueResources",), ""),
    ],
)
def test_unknown_field(api_version: str, mutate: Any, path: Path_, hint: str) -> None:
    cfg = base(api_version)
    mutate(cfg)
    recorder = Recorder()
    findings = check_configuration(cfg, "v0.19.2", origin_of=recorder)
    assert rules(findings) == ["kueue-config-unknown-field"]
    assert recorder.paths == [path]
    assert f'unknown field "{path[-1]}"' in findings[0].message
    assert hint in findings[0].message


def test_v1beta1_fields_pass_on_v1beta1() -> None:
    cfg = base(
        V1,
        fairSharing={"enable": True},
        waitForPodsReady={"enable": True, "timeout": "5m"},
        integrations={"frameworks": ["batch/job"], "podOptions": {"namespaceSelector": {}}},
        resources={"deviceClassMappings": [mapping("example.com/gpu", "gpu.example.com")]},
    )
    assert check(cfg) == []


@pytest.mark.parametrize(
    ("extra", "path", "rule"),
    [
        (
            {"featureGates": {"KueueDRAIntegration": "true"}},
            ("featureGates", "KueueDRAIntegration"),
            "kueue-config-invalid",
        ),
        (
            {"controller": {"cacheSyncTimeout": "2m"}},
            ("controller", "cacheSyncTimeout"),
            "kueue-config-invalid",
        ),
        ({"clientConnection": {"burst": 2**31}}, ("clientConnection", "burst"), "kueue-config-invalid"),
        ({"webhook": {"port": "9443"}}, ("webhook", "port"), "kueue-config-invalid"),
        (
            {"integrations": {"frameworks": "batch/job"}},
            ("integrations", "frameworks"),
            "kueue-config-invalid",
        ),
        ({"multiKueue": {"gcInterval": 60}}, ("multiKueue", "gcInterval"), "kueue-config-invalid"),
        (
            {"waitForPodsReady": {"timeout": 300}},
            ("waitForPodsReady", "timeout"),
            "kueue-config-wait-for-pods-ready",
        ),
        (
            {"resources": {"deviceClassMappings": [{"name": 7, "deviceClassNames": ["a"]}]}},
            ("resources", "deviceClassMappings", 0, "name"),
            "kueue-config-device-class-mappings",
        ),
        (
            {"resources": {"transformations": [{"input": "a", "outputs": {"b": "lots"}}]}},
            ("resources", "transformations", 0, "outputs", "b"),
            "kueue-config-invalid",
        ),
    ],
)
def test_values_that_do_not_decode(extra: dict[str, Any], path: Path_, rule: str) -> None:
    recorder = Recorder()
    findings = check_configuration(base(**extra), "v0.19", origin_of=recorder)
    assert [f.rule for f in findings][:1] == [rule]
    assert recorder.paths[0] == path
    assert "cannot decode" in findings[0].message or "must be" in findings[0].message


# --- kueue-config-device-class-mappings ------------------------------------------------------------------

DCM = "kueue-config-device-class-mappings"


def test_dcm_valid_shapes() -> None:
    assert check(dcm(mapping("example.com/gpu", "gpu.example.com"))) == []
    assert check(dcm(mapping("gpu", "gpu"))) == []
    long_ok = "a" * 63
    assert check(dcm(mapping(f"{'b' * 180}.com/{long_ok}", long_ok))) == []
    assert check(dcm(*[mapping(f"example.com/r{i}", f"c{i}.example.com") for i in range(16)])) == []
    assert check(dcm(mapping("example.com/gpu", *[f"c{i}.example.com" for i in range(8)]))) == []


@pytest.mark.parametrize(
    ("mappings", "path", "text"),
    [
        # 1. at most 16 mappings
        (
            [mapping(f"example.com/r{i}", f"c{i}.example.com") for i in range(17)],
            ("resources", "deviceClassMappings"),
            "at most 16",
        ),
        # 2. name must be a label key, <= 253 characters
        ([mapping("Example.com/gpu", "a")], ("resources", "deviceClassMappings", 0, "name"), "prefix part"),
        ([mapping("example.com/" + "g" * 64, "a")], ("resources", "deviceClassMappings", 0, "name"), "63"),
        ([mapping("a/b/c", "a")], ("resources", "deviceClassMappings", 0, "name"), "qualified name"),
        ([mapping("", "a")], ("resources", "deviceClassMappings", 0, "name"), "non-empty"),
        ([{"deviceClassNames": ["a"]}], ("resources", "deviceClassMappings", 0, "name"), "non-empty"),
        ([mapping("gpu-", "a")], ("resources", "deviceClassMappings", 0, "name"), "name part"),
        # 3. duplicate name
        (
            [mapping("example.com/gpu", "a"), mapping("example.com/gpu", "b")],
            ("resources", "deviceClassMappings", 1, "name"),
            "Duplicate",
        ),
        # 4. 1..8 device class names
        (
            [mapping("example.com/gpu")],
            ("resources", "deviceClassMappings", 0, "deviceClassNames"),
            "at least one",
        ),
        (
            [{"name": "example.com/gpu"}],
            ("resources", "deviceClassMappings", 0, "deviceClassNames"),
            "at least one",
        ),
        (
            [mapping("example.com/gpu", *[f"c{i}" for i in range(9)])],
            ("resources", "deviceClassMappings", 0, "deviceClassNames"),
            "at most 8",
        ),
        # 5. each device class name is a label key (a plain name is limited to 63 characters)
        ([mapping("gpu", "g" * 64)], ("resources", "deviceClassMappings", 0, "deviceClassNames", 0), "63"),
        (
            [mapping("gpu", "gpu.example.com_")],
            ("resources", "deviceClassMappings", 0, "deviceClassNames", 0),
            "name part",
        ),
        # 6. same class twice in one mapping
        (
            [mapping("gpu", "a", "a")],
            ("resources", "deviceClassMappings", 0, "deviceClassNames", 1),
            "Duplicate",
        ),
        # 7. same class under two names
        (
            [mapping("example.com/gpu", "a"), mapping("example.com/other", "a")],
            ("resources", "deviceClassMappings", 1, "deviceClassNames", 0),
            "already mapped to resource example.com/gpu",
        ),
        (
            [mapping("gpu.memory", "a", sources=[counter()]), mapping("example.com/gpu", "a")],
            ("resources", "deviceClassMappings", 1, "deviceClassNames", 0),
            "already mapped to resource gpu.memory",
        ),
        (
            [
                mapping("gpu.memory", "a", sources=[counter("memory")]),
                mapping("gpu.mem2", "a", sources=[counter("memory")]),
            ],
            ("resources", "deviceClassMappings", 1, "deviceClassNames", 0),
            'already has a counter source for counter "memory"',
        ),
    ],
)
def test_dcm_rejected(mappings: list[dict[str, Any]], path: Path_, text: str) -> None:
    recorder = Recorder()
    findings = check_configuration(dcm(*mappings), "v0.19.2", origin_of=recorder)
    assert rules(findings) and set(rules(findings)) == {DCM}
    index = recorder.paths.index(path)
    assert text in findings[index].message


def test_dcm_same_class_with_distinct_counters_is_allowed() -> None:
    cfg = dcm(
        mapping("gpu.memory", "mig.example.com", sources=[counter("memory")]),
        mapping("gpu.compute", "mig.example.com", sources=[counter("compute")]),
        mapping("gpu.other", "mig.example.com", sources=[counter("other")]),
    )
    assert check(cfg) == []


@pytest.mark.parametrize(
    ("source", "path", "text"),
    [
        ({}, (0,), "exactly one source type"),
        ({"counter": None}, (0,), "exactly one source type"),
        ({**counter(), **capacity()}, (0,), "counter+capacity"),
        (counter(name=""), (0, "counter", "name"), "Required"),
        (counter(name="Memory"), (0, "counter", "name"), "RFC 1123 label"),
        (counter(driver=""), (0, "counter", "driver"), "Required"),
        (counter(driver="d" * 64), (0, "counter", "driver"), "must not exceed 63"),
        (counter(driver="GPU.example.com"), (0, "counter", "driver"), "RFC 1123 subdomain"),
        (counter(expr=""), (0, "counter", "deviceSelector", "cel", "expression"), "Required"),
        (
            {"counter": {"name": "m", "driver": "d.com"}},
            (0, "counter", "deviceSelector", "cel", "expression"),
            "Required",
        ),
        (
            counter(expr="device.driver =="),
            (0, "counter", "deviceSelector", "cel", "expression"),
            "CEL compilation failed",
        ),
        (
            counter(expr="dev.driver == 'x'"),
            (0, "counter", "deviceSelector", "cel", "expression"),
            "undeclared reference to 'dev'",
        ),
    ],
)
def test_dcm_source_rejected(source: dict[str, Any], path: Path_, text: str) -> None:
    recorder = Recorder()
    findings = check_configuration(
        dcm(mapping("gpu.memory", "mig.example.com", sources=[source])), "v0.19", origin_of=recorder
    )
    assert set(rules(findings)) == {DCM}
    full = ("resources", "deviceClassMappings", 0, "sources", *path)
    assert text in findings[recorder.paths.index(full)].message


@pytest.mark.parametrize(
    "expr",
    [
        "device.driver == 'gpu.example.com'",
        "device.attributes['gpu.example.com'].productName == 'A100' && "
        "device.capacity['gpu.example.com'].memory.compareTo(quantity('40Gi')) >= 0",
        "device.attributes['gpu.example.com'].exists(k, k == 'model') || size(device.attributes) > 0",
        "[1, 2].all(x, x > 0) && device.driver.startsWith('gpu')",
    ],
)
def test_dcm_cel_accepted(expr: str) -> None:
    assert check(dcm(mapping("gpu.memory", "mig.example.com", sources=[counter(expr=expr)]))) == []


def test_dcm_mixed_counter_and_capacity() -> None:
    cfg = dcm(
        mapping("gpu.memory", "mig.example.com", sources=[counter(), capacity()]),
        gates={"KueueDRAIntegrationConsumableCapacity": True},
    )
    recorder = Recorder()
    findings = check_configuration(cfg, "v0.19", origin_of=recorder)
    assert rules(findings) == [DCM]
    assert recorder.paths == [("resources", "deviceClassMappings", 0, "sources")]
    assert "cannot mix" in findings[0].message


def test_dcm_counter_source_gate_per_version() -> None:
    cfg = dcm(mapping("gpu.memory", "mig.example.com", sources=[counter()]))
    # Beta and on by default in v0.19; Alpha and off in v0.18.
    assert check(cfg, "v0.19.2") == []
    findings = check(cfg, "v0.18.1")
    assert rules(findings) == [DCM]
    assert "require KueueDRAIntegrationPartitionableDevices" in findings[0].message
    assert "off by default in Kueue v0.18" in findings[0].message
    enabled = dcm(
        mapping("gpu.memory", "mig.example.com", sources=[counter()]),
        gates={"KueueDRAIntegrationPartitionableDevices": True},
    )
    assert check(enabled, "v0.18.1") == []
    disabled = dcm(
        mapping("gpu.memory", "mig.example.com", sources=[counter()]),
        gates={"KueueDRAIntegrationPartitionableDevices": False},
    )
    assert rules(check(disabled, "v0.19.2")) == [DCM]


def test_dcm_capacity_source_gate_per_version() -> None:
    cfg = dcm(mapping("gpu.memory", "vgpu.example.com", sources=[capacity()]))
    findings = check(cfg, "v0.19.2")
    assert rules(findings) == [DCM] and "require KueueDRAIntegrationConsumableCapacity" in findings[0].message
    enabled = dcm(
        mapping("gpu.memory", "vgpu.example.com", sources=[capacity()]),
        gates={"KueueDRAIntegrationConsumableCapacity": True},
    )
    assert check(enabled, "v0.19.2") == []
    findings = check(cfg, "v0.18.1")
    assert rules(findings) == [DCM] and "v0.18 has no such gate" in findings[0].message


@pytest.mark.parametrize(
    ("name", "ok"),
    [
        ("memory", True),
        ("gpu.example.com/memory", True),
        ("gpu.example.com/", False),
        ("/memory", False),
        ("gpu.example.com/mem-ory", False),
        ("x" * 33, False),
        ("9memory", False),
    ],
)
def test_dcm_capacity_name(name: str, ok: bool) -> None:
    cfg = dcm(
        mapping("gpu.memory", "vgpu.example.com", sources=[capacity(name)]),
        gates={"KueueDRAIntegrationConsumableCapacity": True},
    )
    assert (check(cfg) == []) is ok


@pytest.mark.parametrize("version", ["v0.18.1", "v0.19.2"])
def test_dcm_with_dra_disabled_is_an_error(version: str) -> None:
    # kueue pkg/controller/core/workload_controller.go: with KueueDRAIntegration off and
    # KueueDRARejectWorkloadsWhenDRADisabled on (its default), a workload that uses DRA is made Inadmissible.
    cfg = dcm(mapping("example.com/gpu", "gpu.example.com"), gates={"KueueDRAIntegration": False})
    findings = only(check(cfg, version), DCM)
    assert len(findings) == 1
    assert "Inadmissible" in findings[0].message and "enable KueueDRAIntegration" in findings[0].message
    # without the rejection gate the mappings are ignored instead: still an error, another consequence
    cfg = dcm(
        mapping("example.com/gpu", "gpu.example.com"),
        gates={"KueueDRAIntegration": False, "KueueDRARejectWorkloadsWhenDRADisabled": False},
    )
    findings = only(check(cfg, version), DCM)
    assert len(findings) == 1 and "counts no DRA device" in findings[0].message


# --- feature gates ---------------------------------------------------------------------------------------


def test_known_gates_pass() -> None:
    cfg = base(
        featureGates={"KueueDRAIntegration": True, "TopologyAwareScheduling": True, "PartialAdmission": False}
    )
    assert check(cfg, "v0.18") == []
    assert check(cfg, "v0.19") == []


@pytest.mark.parametrize(
    ("version", "gate", "hint"),
    [
        ("v0.19.2", "DynamicResourceAllocation", "renamed to KueueDRAIntegration"),
        ("v0.19.2", "DRAExtendedResources", "renamed to KueueDRAIntegrationExtendedResource"),
        ("v0.18.1", "KueueDRAIntegrationConsumableCapacity", "exists only in Kueue v0.19"),
        ("v0.19.2", "LendingLimit", "exists only in Kueue v0.18"),
        ("v0.19.2", "KueueDRAIntegraton", 'did you mean "KueueDRAIntegration"'),
        ("v0.19.2", "NoSuchGate", ""),
    ],
)
def test_unknown_gate(version: str, gate: str, hint: str) -> None:
    recorder = Recorder()
    findings = check_configuration(base(featureGates={gate: True}), version, origin_of=recorder)
    assert rules(findings) == ["kueue-feature-gate-unknown"]
    assert recorder.paths == [("featureGates", gate)]
    assert f"unrecognized feature gate: {gate}" in findings[0].message
    assert hint in findings[0].message


def test_dynamic_resource_allocation_on_v018() -> None:
    # Deprecated and locked to false in v0.18: false is accepted, true is not.
    assert check(base(featureGates={"DynamicResourceAllocation": False}), "v0.18.1") == []
    findings = check(base(featureGates={"DynamicResourceAllocation": True}), "v0.18.1")
    assert rules(findings) == ["kueue-feature-gate-locked"]
    assert "locked to false" in findings[0].message and "use KueueDRAIntegration" in findings[0].message


@pytest.mark.parametrize(
    ("version", "gate", "value"),
    [
        ("v0.18.1", "DRAExtendedResources", True),
        ("v0.18.1", "LendingLimit", False),
        ("v0.19.2", "ManagedJobsNamespaceSelectorAlwaysRespected", False),
        ("v0.19.2", "MultiKueueAllowInsecureKubeconfigs", True),
    ],
)
def test_locked_gate(version: str, gate: str, value: bool) -> None:
    assert check(base(featureGates={gate: not value}), version) == []
    findings = check(base(featureGates={gate: value}), version)
    assert rules(findings) == ["kueue-feature-gate-locked"]
    assert f"cannot set feature gate {gate} to {str(value).lower()}" in findings[0].message


@pytest.mark.parametrize(
    ("version", "gates", "paths"),
    [
        (
            "v0.19.2",
            {"KueueDRAIntegration": False},
            [
                ("featureGates", "KueueDRAIntegration"),
                ("featureGates", "KueueDRAIntegration"),
            ],
        ),
        (
            "v0.18.1",
            {"KueueDRAIntegration": False, "KueueDRAIntegrationPartitionableDevices": True},
            [("featureGates", "KueueDRAIntegrationPartitionableDevices")],
        ),
        (
            "v0.19.2",
            {
                "KueueDRAIntegration": False,
                "KueueDRAIntegrationExtendedResource": False,
                "KueueDRAIntegrationPartitionableDevices": False,
                "KueueDRAIntegrationConsumableCapacity": True,
            },
            [("featureGates", "KueueDRAIntegrationConsumableCapacity")],
        ),
    ],
)
def test_gate_dependency_rejected(version: str, gates: dict[str, bool], paths: list[Path_]) -> None:
    recorder = Recorder()
    findings = check_configuration(base(featureGates=gates), version, origin_of=recorder)
    assert rules(findings) == ["kueue-feature-gate-dependency"] * len(paths)
    assert recorder.paths == paths
    assert all("requires KueueDRAIntegration to be enabled" in f.message for f in findings)


def test_gate_dependency_satisfied() -> None:
    off = {
        "KueueDRAIntegration": False,
        "KueueDRAIntegrationExtendedResource": False,
        "KueueDRAIntegrationPartitionableDevices": False,
    }
    assert check(base(featureGates=off), "v0.19.2") == []
    assert check(base(featureGates={"KueueDRAIntegration": False}), "v0.18.1") == []
    assert check(base(featureGates={"KueueDRAIntegrationPartitionableDevices": True}), "v0.18.1") == []


@pytest.mark.parametrize("gates", [{}, {"KueueDRAIntegration": True}])
def test_gate_conflict_with_flag(gates: dict[str, bool]) -> None:
    recorder = Recorder()
    findings = check_configuration(
        base(featureGates=gates), "v0.19", origin_of=recorder, feature_gates_flag=True
    )
    assert rules(findings) == ["kueue-feature-gate-conflict"]
    assert recorder.paths == [("featureGates",)]


def test_gate_no_conflict() -> None:
    assert check(base(), feature_gates_flag=True) == []
    assert check(base(featureGates=None), feature_gates_flag=True) == []
    assert check(base(featureGates={}), feature_gates_flag=False) == []


# --- kueue-config-wait-for-pods-ready --------------------------------------------------------------------

WFPR = "kueue-config-wait-for-pods-ready"


@pytest.mark.parametrize(
    "section",
    [
        {"timeout": "5m"},
        {"timeout": "1h30m", "recoveryTimeout": "0s"},
        {"timeout": "300s", "blockAdmission": True},
        {"timeout": "5m", "requeuingStrategy": {"timestamp": "Creation", "backoffLimitCount": 0}},
        {"requeuingStrategy": {"timestamp": "Eviction", "backoffBaseSeconds": 0, "backoffMaxSeconds": 0}},
        {},
    ],
)
def test_wait_for_pods_ready_valid(section: dict[str, Any]) -> None:
    assert check(base(waitForPodsReady=section)) == []
    assert check(base(V1, waitForPodsReady={"enable": True, **section})) == []


@pytest.mark.parametrize(
    ("section", "path", "text"),
    [
        ({"enable": True, "timeout": "5m"}, ("enable",), "no waitForPodsReady.enable"),
        ({"enable": False}, ("enable",), "DisableWaitForPodsReady"),
        ({"timeout": "-5m"}, ("timeout",), "greater than or equal to 0"),
        ({"timeout": "5 minutes"}, ("timeout",), "time: unknown unit"),
        ({"timeout": "5"}, ("timeout",), "time:"),
        ({"timeout": ""}, ("timeout",), "time: invalid duration"),
        ({"timeout": "5m", "recoveryTimeout": "-1s"}, ("recoveryTimeout",), "greater than or equal to 0"),
        (
            {"requeuingStrategy": {"timestamp": "Admission"}},
            ("requeuingStrategy", "timestamp"),
            "Unsupported value",
        ),
        (
            {"requeuingStrategy": {"backoffLimitCount": -1}},
            ("requeuingStrategy", "backoffLimitCount"),
            "greater",
        ),
        (
            {"requeuingStrategy": {"backoffBaseSeconds": -60}},
            ("requeuingStrategy", "backoffBaseSeconds"),
            "greater",
        ),
        (
            {"requeuingStrategy": {"backoffMaxSeconds": -1}},
            ("requeuingStrategy", "backoffMaxSeconds"),
            "greater",
        ),
    ],
)
def test_wait_for_pods_ready_rejected_v1beta2(section: dict[str, Any], path: Path_, text: str) -> None:
    recorder = Recorder()
    findings = check_configuration(base(waitForPodsReady=section), "v0.19.2", origin_of=recorder)
    assert rules(findings) == [WFPR]
    assert recorder.paths == [("waitForPodsReady", *path)]
    assert text in findings[0].message


def test_wait_for_pods_ready_enable_on_v018_has_no_gate_hint() -> None:
    findings = check(base(waitForPodsReady={"enable": True}), "v0.18.1")
    assert rules(findings) == [WFPR] and "DisableWaitForPodsReady" not in findings[0].message


def test_wait_for_pods_ready_zero_timeout() -> None:
    findings = check(base(waitForPodsReady={"timeout": "0s"}))
    assert rules(findings) == [] and rules(findings, Severity.WARNING) == [WFPR]
    findings = check(base(V1, waitForPodsReady={"enable": True, "timeout": "0s"}))
    assert rules(findings) == [WFPR] and "must be specified" in findings[0].message


def test_wait_for_pods_ready_v1beta1_disabled_skips_value_checks() -> None:
    assert check(base(V1, waitForPodsReady={"enable": False, "timeout": "-5m"})) == []
    assert check(base(V1, waitForPodsReady={"timeout": "-5m"})) == []
    # Decoding still happens, so a string that is not a duration is fatal even when disabled.
    assert rules(check(base(V1, waitForPodsReady={"enable": False, "timeout": "soon"}))) == [WFPR]
    assert rules(check(base(V1, waitForPodsReady={"enable": True, "timeout": "-5m"}))) == [WFPR]


def test_wait_for_pods_ready_disabled_by_gate_on_v019() -> None:
    cfg = base(waitForPodsReady={"timeout": "-5m"}, featureGates={"DisableWaitForPodsReady": True})
    assert check(cfg, "v0.19.2") == []
    assert rules(check(cfg, "v0.18.1")) == ["kueue-feature-gate-unknown", WFPR]


@pytest.mark.parametrize(
    ("text", "nanos"),
    [
        ("0", 0),
        ("0s", 0),
        ("5m", 300 * 10**9),
        ("1h30m", 5400 * 10**9),
        ("300s", 300 * 10**9),
        ("1.5h", 5400 * 10**9),
        ("-1.5h", -5400 * 10**9),
        ("+2ms", 2 * 10**6),
        ("1h2m3s4ms5us6ns", 3723004005006),
        ("1\u00b5s", 1000),
        (".5s", 5 * 10**8),
        ("1.s", 10**9),
    ],
)
def test_parse_go_duration(text: str, nanos: int) -> None:
    assert parse_go_duration(text) == nanos


@pytest.mark.parametrize("text", ["", "5", "m", "1d", "1 h", "-", ".s", "1h 30m", "3000000h", "5M", "1e3s"])
def test_parse_go_duration_rejects(text: str) -> None:
    with pytest.raises(ValueError, match="time:"):
        parse_go_duration(text)


# --- kueue-config-invalid --------------------------------------------------------------------------------

INVALID = "kueue-config-invalid"


@pytest.mark.parametrize(
    ("extra", "path", "text"),
    [
        (
            {"integrations": {"frameworks": ["batch/jobs"]}},
            ("integrations", "frameworks", 0),
            'did you mean "batch/job"',
        ),
        (
            {"integrations": {"frameworks": ["kubeflow.org/pytorch"]}},
            ("integrations", "frameworks", 0),
            "Unsupported",
        ),
        (
            {"integrations": {"frameworks": ["pod", "batch/job", "pod"]}},
            ("integrations", "frameworks", 2),
            "Duplicate",
        ),
        (
            {"integrations": {"externalFrameworks": ["Foo.v1"]}},
            ("integrations", "externalFrameworks", 0),
            "format",
        ),
        (
            {"integrations": {"externalFrameworks": ["Foo.v1.example.com", "Foo.v1.example.com"]}},
            ("integrations", "externalFrameworks", 1),
            "Duplicate",
        ),
        (
            {
                "resources": {
                    "transformations": [
                        {"input": "nvidia.com/gpu"},
                        {"input": "nvidia.com/gpu", "strategy": "Replace"},
                    ]
                }
            },
            ("resources", "transformations", 1, "input"),
            "Duplicate",
        ),
        (
            {"resources": {"transformations": [{"input": "a", "strategy": "Drop"}]}},
            ("resources", "transformations", 0, "strategy"),
            "Unsupported",
        ),
        (
            {
                "resources": {
                    "excludeResourcePrefixes": ["example.com/"],
                    "quotaCheckStrategy": "IgnoreUndeclared",
                }
            },
            ("resources", "quotaCheckStrategy"),
            "excludeResourcePrefixes is not allowed",
        ),
        ({"resources": {"quotaCheckStrategy": "Ignore"}}, ("resources", "quotaCheckStrategy"), "Unsupported"),
        ({"managedJobsNamespaceSelector": {}}, ("managedJobsNamespaceSelector",), '"kube-system"'),
        (
            {
                "managedJobsNamespaceSelector": {
                    "matchExpressions": [
                        {"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": ["kube-system"]}
                    ]
                }
            },
            ("managedJobsNamespaceSelector",),
            '"kueue-system"',
        ),
        (
            {
                "namespace": "gpu-kueue",
                "managedJobsNamespaceSelector": {
                    "matchExpressions": [
                        {
                            "key": "kubernetes.io/metadata.name",
                            "operator": "NotIn",
                            "values": ["kube-system", "kueue-system"],
                        }
                    ]
                },
            },
            ("managedJobsNamespaceSelector",),
            '"gpu-kueue"',
        ),
        (
            {"managedJobsNamespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "kube-system"}}},
            ("managedJobsNamespaceSelector",),
            '"kube-system"',
        ),
        (
            {"managedJobsNamespaceSelector": {"matchExpressions": [{"key": "team", "operator": "In"}]}},
            ("managedJobsNamespaceSelector", "matchExpressions", 0, "values"),
            "Required",
        ),
        (
            {
                "managedJobsNamespaceSelector": {
                    "matchExpressions": [{"key": "team", "operator": "Matches", "values": ["a"]}]
                }
            },
            ("managedJobsNamespaceSelector", "matchExpressions", 0, "operator"),
            "Unsupported",
        ),
        (
            {
                "fairSharing": {
                    "preemptionStrategies": ["LessThanInitialShare", "LessThanOrEqualToFinalShare"]
                }
            },
            ("fairSharing", "preemptionStrategies"),
            "Unsupported",
        ),
        (
            {"admissionFairSharing": {"usageHalfLifeTime": "-1h", "usageSamplingInterval": "5m"}},
            ("admissionFairSharing", "usageHalfLifeTime"),
            "greater",
        ),
        (
            {"admissionFairSharing": {"resourceWeights": {"cpu": -1}}},
            ("admissionFairSharing", "resourceWeights", "cpu"),
            "greater",
        ),
        (
            {"internalCertManagement": {"webhookServiceName": "1-service"}},
            ("internalCertManagement", "webhookServiceName"),
            "DNS-1035",
        ),
        ({"multiKueue": {"origin": "not a label"}}, ("multiKueue", "origin"), "label"),
        (
            {"objectRetentionPolicies": {"workloads": {"afterFinished": "-1s"}}},
            ("objectRetentionPolicies", "workloads", "afterFinished"),
            "greater",
        ),
    ],
)
def test_invalid(extra: dict[str, Any], path: Path_, text: str) -> None:
    recorder = Recorder()
    findings = check_configuration(base(**extra), "v0.19.2", origin_of=recorder)
    assert set(rules(findings)) == {INVALID}
    assert text in findings[recorder.paths.index(path)].message


@pytest.mark.parametrize(
    "extra",
    [
        {"integrations": {"frameworks": sorted(configcheck.KNOWN_FRAMEWORKS)}},
        {"integrations": {"frameworks": []}},
        {
            "resources": {
                "transformations": [
                    {"input": "a"},
                    {"input": "b", "strategy": "Replace", "outputs": {"c": "1Gi"}},
                ]
            }
        },
        {"resources": {"excludeResourcePrefixes": ["example.com/"], "quotaCheckStrategy": "BlockUndeclared"}},
        {"resources": {"quotaCheckStrategy": "IgnoreUndeclared"}},
        {
            "managedJobsNamespaceSelector": {
                "matchExpressions": [
                    {
                        "key": "kubernetes.io/metadata.name",
                        "operator": "NotIn",
                        "values": ["kube-system", "kueue-system"],
                    }
                ]
            }
        },
        {"managedJobsNamespaceSelector": {"matchLabels": {"gpu-tenancy/managed": "true"}}},
        {"managedJobsNamespaceSelector": {"matchExpressions": [{"key": "tenant", "operator": "Exists"}]}},
        {
            "namespace": "gpu-kueue",
            "managedJobsNamespaceSelector": {
                "matchExpressions": [
                    {
                        "key": "kubernetes.io/metadata.name",
                        "operator": "NotIn",
                        "values": ["kube-system", "gpu-kueue"],
                    }
                ]
            },
        },
        {"internalCertManagement": {"enable": False, "webhookServiceName": "", "webhookSecretName": ""}},
    ],
)
def test_valid_other_sections(extra: dict[str, Any]) -> None:
    assert check(base(**extra)) == []


def test_quota_check_strategy_gate_per_version() -> None:
    cfg = base(
        resources={"excludeResourcePrefixes": ["example.com/"], "quotaCheckStrategy": "IgnoreUndeclared"}
    )
    # Alpha and off in v0.18: Kueue ignores the field (and does not validate it).
    findings = check(cfg, "v0.18.1")
    assert rules(findings) == [] and rules(findings, Severity.WARNING) == [INVALID]
    enabled = copy.deepcopy(cfg)
    enabled["featureGates"] = {"QuotaCheckStrategy": True}
    assert rules(check(enabled, "v0.18.1")) == [INVALID]
    assert rules(check(cfg, "v0.19.2")) == [INVALID]


# --- deployment_has_feature_gates_flag -------------------------------------------------------------------


def deployment(*containers: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "spec": {"template": {"spec": {"containers": list(containers)}}},
    }


@pytest.mark.parametrize(
    ("container", "expected"),
    [
        ({"name": "manager", "args": ["--config=/c.yaml", "--feature-gates=KueueDRAIntegration=true"]}, True),
        ({"name": "manager", "args": ["--feature-gates", "KueueDRAIntegration=true"]}, True),
        ({"name": "manager", "args": ["-feature-gates=A=true"]}, True),
        ({"name": "manager", "command": ["/manager", "--feature-gates=A=true"]}, True),
        ({"name": "manager", "args": ["--config=/c.yaml", "--zap-log-level=2"]}, False),
        ({"name": "manager", "args": ["--feature-gates="]}, False),
        ({"name": "manager", "args": ["--feature-gates"]}, False),
        ({"name": "manager", "args": ["--feature-gates", "--zap-log-level=2"]}, False),
        ({"name": "manager", "args": ["--feature-gatesX=1", "--no-feature-gates=1"]}, False),
        ({"name": "manager"}, False),
    ],
)
def test_deployment_flag(container: dict[str, Any], expected: bool) -> None:
    assert deployment_has_feature_gates_flag(deployment(container)) is expected


def test_deployment_flag_in_any_container() -> None:
    plain = {"name": "sidecar", "args": ["--v=2"]}
    flagged = {"name": "manager", "args": ["--feature-gates=A=true"]}
    assert deployment_has_feature_gates_flag(deployment(plain, flagged)) is True
    assert deployment_has_feature_gates_flag({"kind": "Deployment"}) is False


@pytest.mark.parametrize("tag", TAGS)
def test_shipped_manifests_have_no_flag(shared: Path, tag: str) -> None:
    text = (shared / "kueue" / tag / "manifests.yaml").read_text(encoding="utf-8")
    chunks = [
        c for c in re.split(r"^---\s*$", text, flags=re.MULTILINE) if "\nkind: Deployment\n" in f"\n{c}"
    ]
    deployments = [
        d for d in map(yaml.safe_load, chunks) if isinstance(d, dict) and d.get("kind") == "Deployment"
    ]
    assert len(deployments) == 1
    assert deployment_has_feature_gates_flag(deployments[0]) is False
    patched = copy.deepcopy(deployments[0])
    patched["spec"]["template"]["spec"]["containers"][0]["args"].append(
        "--feature-gates=KueueDRAIntegration=true"
    )
    assert deployment_has_feature_gates_flag(patched) is True
