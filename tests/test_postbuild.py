"""Checks on what will be applied: every example of issue 12's "Why" refused at the input line that causes
it, through the command line and the real kustomize, on small repositories built under tmp_path."""

from __future__ import annotations

import re
from pathlib import Path
from typing import NamedTuple

import pytest
import smallrepo
from smallrepo import line_of

from gputenancy.assemble import output
from gputenancy.cli.app import main

LOCATED = re.compile(
    r"^(?P<path>[^:\s]+):(?P<line>\d+):(?P<col>\d+): error: (?P<message>.+) \((?P<rule>[a-z0-9-]+)\)$", re.M
)


class Found(NamedTuple):
    path: str
    line: int
    rule: str
    message: str


def validate(root: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, list[Found]]:
    code = main(["--root", str(root), "validate"])
    out = capsys.readouterr()
    text = out.out + out.err
    assert "Traceback" not in text
    found = [Found(m["path"], int(m["line"]), m["rule"], m["message"]) for m in LOCATED.finditer(text)]
    return code, found


def refused(
    root: Path, capsys: pytest.CaptureFixture[str], rule: str, path: str, needle: str, nth: int = 1
) -> Found:
    """validate exits 1 with a `rule` finding on the line of `path` holding `needle`; render writes nothing."""
    code, found = validate(root, capsys)
    assert code == 1, found
    line = line_of(root, path, needle, nth)
    hits = [f for f in found if f.rule == rule and f.path == path and f.line == line]
    assert hits, (rule, path, line, found)
    before = output.read_tree(root / "generated") if (root / "generated").exists() else {}
    assert main(["--root", str(root), "render"]) == 1
    capsys.readouterr()
    assert (output.read_tree(root / "generated") if (root / "generated").exists() else {}) == before
    return hits[0]


def test_the_small_repository_passes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = smallrepo.make(tmp_path, component="labels:\n  - pairs:\n      team: x\n")
    assert validate(root, capsys) == (0, [])


# ------------------------------------------------------------------------------ the tenant Component


def test_component_name_prefix(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = smallrepo.make(tmp_path, component="namePrefix: team-\n")
    hit = refused(root, capsys, "built-queue-reference", "tenants/a.yaml", "a-ns")
    assert "points at ClusterQueue 'a', which the build does not contain" in hit.message
    assert "now named 'team-a'" in hit.message
    assert "overlays/c1/tenants/kustomization.yaml:3 (namePrefix)" in hit.message
    # the names teams' pods use
    hit = refused(root, capsys, "built-renamed", "tenants/a.yaml", "- name: gpu-x2")
    assert "ResourceClaimTemplate a-ns/team-gpu-x2" in hit.message and "rendered as 'gpu-x2'" in hit.message
    refused(root, capsys, "built-renamed", "tenants/a.yaml", "a-ns")


def test_component_patch_removes_namespace_selector(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = smallrepo.make(
        tmp_path,
        component="""\
        patches:
          - target: {kind: ClusterQueue, name: a}
            patch: |-
              - op: remove
                path: /spec/namespaceSelector
        """,
    )
    hit = refused(root, capsys, "built-queue-reference", "tenants/a.yaml", "name: a")
    assert "has no namespaceSelector (Kueue admits no namespace)" in hit.message
    assert "tenants/kustomization.yaml:3 (patches)" in hit.message


def test_component_patch_points_a_local_queue_at_another_tenant(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = smallrepo.make(
        tmp_path,
        component="""\
        patches:
          - target: {kind: LocalQueue, namespace: a-ns}
            patch: |-
              - op: replace
                path: /spec/clusterQueue
                value: b
        """,
    )
    hit = refused(root, capsys, "built-queue-reference", "tenants/a.yaml", "a-ns")
    assert "ClusterQueue 'b' of tenant 'b', but namespace 'a-ns' belongs to tenant 'a'" in hit.message
    # and b's queue does not select a-ns either
    refused(root, capsys, "built-queue-reference", "tenants/b.yaml", "name: b")


def test_component_patch_changes_device_class_to_an_unmapped_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = smallrepo.make(
        tmp_path,
        component="""\
        patches:
          - target: {kind: ResourceClaimTemplate, name: gpu-x2}
            patch: |-
              - op: replace
                path: /spec/spec/devices/requests/0/exactly/deviceClassName
                value: other.example.com
        """,
    )
    hit = refused(root, capsys, "built-claim-chain", "tenants/a.yaml", "deviceClass: gpu.example.com")
    assert "DeviceClass 'other.example.com' is not in the Kueue Configuration's deviceClassMappings" in (
        " ".join(f.message for f in validate(root, capsys)[1])
    )
    assert "ResourceClaimTemplate a-ns/gpu-x2" in hit.message


def test_component_patch_sets_allocation_mode_all(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = smallrepo.make(
        tmp_path,
        component="""\
        patches:
          - target: {kind: ResourceClaimTemplate, name: gpu-x2}
            patch: |-
              - op: replace
                path: /spec/spec/devices/requests/0/exactly/allocationMode
                value: All
              - op: remove
                path: /spec/spec/devices/requests/0/exactly/count
        """,
    )
    hit = refused(root, capsys, "built-claim-kueue-support", "tenants/a.yaml", "- name: gpu-x2")
    assert "AllocationMode 'All' is not supported" in hit.message


@pytest.mark.parametrize(("value", "stored"), [('"32000m"', "'32'"), ("30e9", "'30G'")])
def test_component_patch_writes_a_non_canonical_quota(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], value: str, stored: str
) -> None:
    root = smallrepo.make(
        tmp_path,
        component=f"""\
        patches:
          - target: {{kind: ClusterQueue, name: a}}
            patch: |-
              - op: replace
                path: /spec/resourceGroups/0/flavors/0/resources/0/nominalQuota
                value: {value}
        """,
    )
    # resources[0] is cpu: the budget line of cpu in a's file
    hit = refused(root, capsys, "built-quantity-canonical", "tenants/a.yaml", "cpu: 32")
    assert f"stores as {stored}" in hit.message or f"as {stored}" in hit.message


# ------------------------------------------------------------------------------ the overlay


def test_overlay_name_prefix(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = smallrepo.make(tmp_path, overlay_extra="namePrefix: c1-\n")
    # ResourceFlavors renamed: the ClusterQueues' quotas name flavors the build no longer has
    hit = refused(root, capsys, "built-flavor-reference", "tenants/a.yaml", "- flavor: big")
    assert (
        "now named 'c1-big'" in hit.message and "overlays/c1/kustomization.yaml:6 (namePrefix)" in hit.message
    )
    # the Kueue install Application renamed (install: manifests): it would be a second install
    hit = refused(root, capsys, "built-renamed", "overlays/c1/cluster.yaml", "kueue:")
    assert "Application argocd/c1-kueue-c1" in " ".join(
        f.message for f in validate(root, capsys)[1] if f.rule == "built-renamed"
    )
    # the rendered DeviceClass renamed: mappings and templates still name it
    hit = refused(root, capsys, "built-claim-chain", "base/platform.yaml", "- name: slice.example.com")
    assert "renamed to 'c1-slice.example.com'" in hit.message


def test_overlay_namespace_moves_the_helm_application(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = smallrepo.make(
        tmp_path,
        install="helm",
        cluster_extra="""\
          helm:
            repoURL: registry.k8s.io/kueue/charts
            chart: kueue
            releaseName: kueue
        """,
        overlay_extra="namespace: somewhere\n",
    )
    hit = refused(root, capsys, "built-renamed", "overlays/c1/cluster.yaml", "helm:")
    assert "Application somewhere/kueue-c1" in hit.message and "Argo CD reads Applications" in hit.message


# ------------------------------------------------------------------------------ Kueue itself


def test_dra_integration_off_with_mappings_is_an_error_on_v018(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = smallrepo.make(
        tmp_path,
        version="v0.18.1",
        cluster_extra="""\
          featureGates:
            KueueDRAIntegration: false
        """,
    )
    hit = refused(
        root,
        capsys,
        "kueue-config-device-class-mappings",
        "overlays/c1/cluster.yaml",
        "KueueDRAIntegration: false",
    )
    assert "Inadmissible" in hit.message


def test_tas_off_while_dependent_gates_stay_on(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = smallrepo.make(
        tmp_path,
        cluster_extra="""\
          featureGates:
            TopologyAwareScheduling: false
        """,
    )
    code, found = validate(root, capsys)
    assert code == 1
    messages = [f.message for f in found if f.rule == "kueue-feature-gate-dependency"]
    assert any("cannot use a TAS profile with TAS disabled" in m for m in messages)
    assert any(
        "TASRecomputeAssignmentWithinSchedulingCycle requires TopologyAwareScheduling" in m for m in messages
    )
    assert any("TASFailedNodeReplacement requires TopologyAwareScheduling" in m for m in messages)
    # all of them on the line that turned TopologyAwareScheduling off
    line = line_of(root, "overlays/c1/cluster.yaml", "TopologyAwareScheduling: false")
    assert {(f.path, f.line) for f in found if f.rule == "kueue-feature-gate-dependency"} == {
        ("overlays/c1/cluster.yaml", line)
    }


def test_exponent_quantities_are_written_quoted(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tenant = (
        smallrepo.TENANT.format(name="a")
        .replace("cpu: 32", "cpu: 7500e-3")
        .replace("memory: 128Gi", "memory: 30e9")
    )
    root = smallrepo.make(tmp_path, tenants={"a": tenant}, component="labels:\n  - pairs:\n      team: x\n")
    assert main(["--root", str(root), "render"]) == 0
    capsys.readouterr()
    text = (root / "generated/c1/clusterqueue/a.yaml").read_text()
    # what kustomize, kubectl and Argo CD (YAML 1.2) read as strings, as the API server stores them
    assert "nominalQuota: '30e9'" in text and "nominalQuota: '7500e-3'" in text
    assert main(["--root", str(root), "check"]) == 0


@pytest.mark.parametrize(
    ("selector", "message"),
    [
        ("device.atributes['gpu.example.com'].model == 'x'", "undefined field 'atributes'"),
        ("device.driver == 1", "found no matching overload for '_==_' applied to '(string, int)'"),
    ],
)
def test_cel_selector_that_does_not_type_check(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], selector: str, message: str
) -> None:
    tenant = smallrepo.TENANT.format(name="a") + f'    selectors:\n      - "{selector}"\n'
    root = smallrepo.make(tmp_path, tenants={"a": tenant})
    hit = refused(root, capsys, "dra-cel-selector", "tenants/a.yaml", selector[:20])
    assert message in hit.message and "compilation failed: ERROR: <input>:1:" in hit.message


# ------------------------------------------------------------------------------ admissible claim templates


def test_tenant_budgeting_only_devices(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tenant = (
        smallrepo.TENANT.format(name="a")
        .replace("      resources:\n        cpu: 32\n        memory: 128Gi\n", "")
        .replace("  - a-ns\n", "  - a-ns\n  - a-ns2\n")
    )
    root = smallrepo.make(tmp_path, tenants={"a": tenant})
    hit = refused(root, capsys, "claim-admissible", "tenants/a.yaml", "- name: gpu-x2")
    assert "resource cpu unavailable in ClusterQueue" in hit.message
    assert "budget cpu on the flavors in tenants/a.yaml" in hit.message
    # one finding per template and missing resource, naming both namespaces
    line = line_of(root, "tenants/a.yaml", "- name: gpu-x2")
    on_line = [f for f in validate(root, capsys)[1] if f.rule == "claim-admissible" and f.line == line]
    assert len(on_line) == 2 and all("gpu-x2 (namespaces a-ns, a-ns2)" in f.message for f in on_line)


def test_flavor_with_devices_but_no_cpu(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tenant = (
        smallrepo.TENANT.format(name="a")
        .replace(
            "claimTemplates:",
            "    - flavor: small\n      devices:\n        gpu.example.com: 8\nclaimTemplates:",
        )
        .replace("count: 2", "count: 8")
    )
    root = smallrepo.make(tmp_path, tenants={"a": tenant})
    hit = refused(root, capsys, "claim-admissible", "tenants/a.yaml", "- name: gpu-x2")
    # big holds at most 4 GPUs (nothing to borrow: a is alone in its cohort); small has GPUs, no CPU quota
    assert "insufficient quota for example.com/gpu in flavor big" in hit.message
    assert "insufficient quota for cpu in flavor small" in hit.message
    assert "> maximum capacity (4)" in hit.message and "> maximum capacity (0)" in hit.message


def test_more_devices_than_any_flavor_can_provide(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tenant = smallrepo.TENANT.format(name="a").replace("count: 2", "count: 7").replace("cohort: pool\n", "")
    tenant = tenant.replace("{nominal: 4, borrowingLimit: 2}", "4")
    root = smallrepo.make(tmp_path, tenants={"a": tenant})
    hit = refused(root, capsys, "claim-admissible", "tenants/a.yaml", "- name: gpu-x2")
    assert "current podset request (7) > maximum capacity (4)" in hit.message


def test_borrowing_within_the_cohort_counts(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # nominal 4 + borrowingLimit 2, and b lends 4: a claim of 6 fits
    tenant = smallrepo.TENANT.format(name="a").replace("count: 2", "count: 6")
    root = smallrepo.make(tmp_path, tenants={"a": tenant, "b": smallrepo.TENANT.format(name="b")})
    assert validate(root, capsys) == (0, [])


def test_excluded_resources_need_no_quota(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tenant = smallrepo.TENANT.format(name="a").replace(
        "      resources:\n        cpu: 32\n        memory: 128Gi\n", ""
    )
    root = smallrepo.make(
        tmp_path,
        tenants={"a": tenant},
        cluster_extra="""\
          config:
            resources:
              excludeResourcePrefixes: [cpu, memory]
        """,
    )
    assert validate(root, capsys) == (0, [])


def test_platform_states_the_least_a_pod_asks_for(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = smallrepo.make(tmp_path, platform_extra="minimumPodRequests:\n  cpu: 100\n")
    hit = refused(root, capsys, "claim-admissible", "tenants/a.yaml", "- name: gpu-x2")
    assert (
        "insufficient quota for cpu in flavor big" in hit.message
        and "(100) > maximum capacity (64)" in hit.message
    )


def test_findings_from_the_cache_are_those_of_a_fresh_check(tmp_path: Path) -> None:
    from gputenancy import engine

    tenant = smallrepo.TENANT.format(name="a").replace(
        "      resources:\n        cpu: 32\n        memory: 128Gi\n", ""
    )
    root = smallrepo.make(tmp_path, tenants={"a": tenant}, component="labels:\n  - pairs:\n      team: x\n")
    store = tmp_path / "cache"
    first = engine.run(root, cache=store)
    again = engine.run(root, cache=store)
    assert again.stats.hits == 1 and again.findings == first.findings
    assert [f.rule for f in first.findings if f.rule == "claim-admissible"]
    assert again.findings == engine.run(root, cache=None).findings
    # the cluster's files are part of the key: leaving cpu and memory out of quota clears the findings
    cluster = root / "overlays/c1/cluster.yaml"
    cluster.write_text(
        cluster.read_text().replace(
            "capacity:", "  config:\n    resources:\n      excludeResourcePrefixes: [cpu, memory]\ncapacity:"
        )
    )
    assert not [f for f in engine.run(root, cache=store).findings if f.rule == "claim-admissible"]


def test_renaming_a_cluster_queue_is_allowed_when_its_references_follow(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # the ClusterQueue renamed by a patch, and the LocalQueue's reference moved with it: nothing breaks
    root = smallrepo.make(
        tmp_path,
        component="""\
        patches:
          - target: {kind: ClusterQueue, name: a}
            patch: |-
              - op: replace
                path: /metadata/name
                value: team-a
          - target: {kind: LocalQueue, namespace: a-ns}
            patch: |-
              - op: replace
                path: /spec/clusterQueue
                value: team-a
        """,
    )
    assert validate(root, capsys) == (0, [])
    # the reference left behind: refused at the namespace line, naming the patch
    (root / "overlays/c1/tenants/kustomization.yaml").write_text(
        smallrepo.COMPONENT
        + "patches:\n  - target: {kind: ClusterQueue, name: a}\n    patch: |-\n"
        + "      - op: replace\n        path: /metadata/name\n        value: team-a\n"
    )
    hit = refused(root, capsys, "built-queue-reference", "tenants/a.yaml", "a-ns")
    assert "now named 'team-a'" in hit.message


def test_overlay_patch_rewrites_the_kueue_configuration(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = smallrepo.make(
        tmp_path,
        overlay_extra="""\
        patches:
          - target: {kind: Application, name: kueue-c1}
            patch: |-
              - op: replace
                path: /spec/source/kustomize/patches/0/patch
                value: |
                  apiVersion: v1
                  kind: ConfigMap
                  data:
                    controller_manager_config.yaml: |
                      apiVersion: config.kueue.x-k8s.io/v1beta2
                      kind: Configuration
                      featureGates:
                        NoSuchGate: true
                  metadata:
                    name: manager-config
        """,
    )
    code, found = validate(root, capsys)
    assert code == 1
    hits = [f for f in found if f.rule == "built-kueue-config"]
    assert any("unrecognized feature gate: NoSuchGate" in f.message for f in hits), found
    assert all("overlays/c1/kustomization.yaml:6 (patches)" in f.message for f in hits)
    # the mappings went with the patch: every claim template is refused too
    assert any(f.rule == "built-claim-chain" and "deviceClassMappings" in f.message for f in found)


def test_overlay_patch_deletes_the_kueue_configuration(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = smallrepo.make(
        tmp_path,
        overlay_extra="""\
        patches:
          - patch: |-
              $patch: delete
              apiVersion: argoproj.io/v1alpha1
              kind: Application
              metadata:
                name: kueue-c1
                namespace: argocd
        """,
    )
    hit = refused(root, capsys, "built-kueue-config", "overlays/c1/cluster.yaml", "kueue:")
    assert "holds no Kueue Configuration" in hit.message


def test_every_built_rule_is_documented_by_the_rules_command(capsys: pytest.CaptureFixture[str]) -> None:
    from gputenancy.check.chain import postbuild

    assert main(["rules"]) == 0
    out = capsys.readouterr().out
    assert set(postbuild.RULES) >= {
        "built-renamed",
        "built-queue-reference",
        "built-flavor-reference",
        "built-claim-chain",
        "built-claim-kueue-support",
        "built-kueue-config",
        "built-quantity-canonical",
        "claim-admissible",
    }
    for rule_id, fn in postbuild.RULES.items():
        doc = fn.__doc__ or ""
        assert "Passes:" in doc and "Fails:" in doc, rule_id
        assert f"  {rule_id} " in out  # listed; `rules ID` explains it
        assert main(["rules", rule_id]) == 0
        explained = capsys.readouterr().out
        assert explained.startswith(f"{rule_id} (built)") and "Fails:  " in explained
    rules_page = (Path(__file__).resolve().parent.parent / "docs" / "rules.md").read_text()
    assert all(f"`{rule_id}`" in rules_page for rule_id in postbuild.RULES)
