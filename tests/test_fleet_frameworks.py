"""The job frameworks each cluster has installed (`frameworks:` in its overlay, a default in
base/platform.yaml): each Configuration enables only those, a MultiKueue manager only what every worker
has (`fleet-frameworks`, refused before merge at the line that enables it), and what the tenants of a
fleet were promised: the largest job they can run, the mixed-hardware fleet, overcommitted workers, fleet
quota no template can use, and advice that keeps the fleet sum."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import fleetrepo
import pytest
import repokit
import yaml
from smallrepo import line_of
from test_fleet_rules import _without_mappings

from gputenancy import engine
from gputenancy.check.chain import fleet as fleetcheck
from gputenancy.cli.app import main
from gputenancy.common.findings import Finding, Severity
from gputenancy.policy.rules import effective_catalog

JOBSET = "jobset.x-k8s.io/jobset"
RAY = "ray.io/raycluster"
BASE = "base/kueue-config.yaml"
MGR = "overlays/mgr/cluster.yaml"
ENABLED = {**repokit.BASE_CONFIG, "integrations": {"frameworks": ["batch/job", JOBSET, RAY]}}


def run(root: Path) -> engine.Result:
    return engine.run(root, cache=None)


def of(result: engine.Result, rule: str) -> list[Finding]:
    return [f for f in result.findings if f.rule == rule]


def at(finding: Finding, root: Path, rel: str, needle: str) -> None:
    assert (finding.path, finding.line) == (rel, line_of(root, rel, needle)), finding.format()


def configuration(result: engine.Result, cluster: str) -> Mapping[str, Any]:
    """The Kueue Configuration rendered for `cluster` (the ConfigMap patch of its install Application)."""
    for o in result.clusters[cluster].objects:
        source = o.body.get("spec", {}).get("source", {}) if o.body.get("kind") == "Application" else {}
        for entry in source.get("kustomize", {}).get("patches", []):
            patch = yaml.safe_load(entry["patch"])
            if patch.get("kind") == "ConfigMap":
                (text,) = patch["data"].values()
                config: Mapping[str, Any] = yaml.safe_load(text)
                return config
    raise AssertionError(f"no Kueue Configuration rendered for {cluster}")


def frameworks_of(result: engine.Result, cluster: str) -> list[str]:
    return list(configuration(result, cluster)["integrations"]["frameworks"])


def fleet(
    root: Path,
    *,
    manager: list[str] | None = None,
    w1: list[str] | None = None,
    w2: list[str] | None = None,
    platform: list[str] | None = None,
    kueue_config: Mapping[str, Any] = ENABLED,
    manager_config: Mapping[str, Any] | None = None,
) -> Path:
    """The fleet of `fleetrepo` whose clusters declare the given frameworks (None: not declared)."""
    mgr = fleetrepo.manager()
    workers = {"w1": fleetrepo.worker("w1"), "w2": fleetrepo.worker("w2")}
    for body, declared in ((mgr, manager), (workers["w1"], w1), (workers["w2"], w2)):
        if declared is not None:
            body["frameworks"] = declared
    if manager_config is not None:
        mgr["kueue"]["config"] = dict(manager_config)
    fields = {"frameworks": platform} if platform is not None else None
    return fleetrepo.write(
        root, clusters=[mgr, *workers.values()], kueue_config=kueue_config, platform_fields=fields
    )


# ------------------------------------------------------------------------------ one cluster's Configuration


def test_a_configuration_enables_only_the_frameworks_its_cluster_has(tmp_path: Path) -> None:
    root = fleet(tmp_path, platform=[JOBSET, RAY], manager=[JOBSET], w1=["batch/job", JOBSET], w2=[JOBSET])
    result = run(root)
    assert not result.failed, [f.format() for f in result.findings if f.severity is Severity.ERROR]
    for cluster in ("mgr", "w1", "w2"):  # built-in batch/job needs no CRD
        assert frameworks_of(result, cluster) == ["batch/job", JOBSET]
    # what the platform enables for every cluster, a cluster lacks: a note at the line that enables it
    notes = of(result, "framework-not-installed")
    assert {(f.severity, f.path, f.line) for f in notes} == {(Severity.NOTE, BASE, line_of(root, BASE, RAY))}
    assert sorted(f.message.split("cluster ")[1].split(" ")[0] for f in notes) == ["'mgr'", "'w1'", "'w2'"]
    (on_w1,) = [f for f in notes if "'w1'" in f.message]
    w1_line = line_of(root, "overlays/w1/cluster.yaml", "frameworks:")
    assert f"(frameworks at overlays/w1/cluster.yaml:{w1_line}): left out of its Kueue Configuration" in (
        on_w1.message
    )


def test_a_cluster_that_declares_nothing_keeps_what_its_configuration_enables(tmp_path: Path) -> None:
    clusters = [repokit.cluster("c1")]
    root = repokit.write(tmp_path, [repokit.tenant("a")], clusters, kueue_config=ENABLED)
    result = run(root)
    assert frameworks_of(result, "c1") == ["batch/job", JOBSET, RAY] and not of(
        result, "framework-not-installed"
    )


def test_an_overlay_enabling_what_its_own_cluster_lacks_is_a_warning(tmp_path: Path) -> None:
    body = repokit.cluster("c1", frameworks=["batch/job"])
    body["kueue"]["config"] = {"integrations": {"frameworks": ["batch/job", RAY]}}
    root = repokit.write(tmp_path, [repokit.tenant("a")], [body])
    result = run(root)
    assert not result.failed  # a single cluster tolerates it: lenient
    (hit,) = of(result, "framework-not-installed")
    assert hit.severity is Severity.WARNING
    at(hit, root, "overlays/c1/cluster.yaml", f"- {RAY}")
    assert "remove it from kueue.config.integrations.frameworks" in hit.message
    assert frameworks_of(result, "c1") == ["batch/job"]


def test_a_name_kueue_does_not_know_is_refused_at_its_line(tmp_path: Path) -> None:
    root = fleet(tmp_path, platform=["ray.io/rayjobs"])
    (hit,) = of(run(root), "framework-unknown")
    at(hit, root, "base/platform.yaml", "ray.io/rayjobs")
    assert 'did you mean "ray.io/rayjob"?' in hit.message


# ------------------------------------------------------------------------------------------- the fleet rule


def test_a_manager_enabling_a_framework_a_worker_lacks_is_refused_at_the_enabling_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = fleet(tmp_path, platform=[JOBSET, RAY], w2=[JOBSET])  # w2: no KubeRay
    (hit,) = of(run(root), "fleet-frameworks")
    at(hit, root, BASE, RAY)
    assert hit.severity is Severity.ERROR
    w2_line = line_of(root, "overlays/w2/cluster.yaml", "frameworks:")
    assert (
        f"MultiKueue manager 'mgr' enables '{RAY}', which is not installed on its worker(s) w2 "
        f"(overlays/w2/cluster.yaml:{w2_line})" in hit.message
    )
    assert "ClientConnectionFailed" in hit.message and "install it on those workers" in hit.message
    # refused before merge: exit 1, the finding at file:line, nothing written
    assert main(["--root", str(root), "render"]) == 1
    out = capsys.readouterr().out
    assert f"{BASE}:{line_of(root, BASE, RAY)}:" in out and "(fleet-frameworks)" in out
    assert not (root / "generated").exists()


def test_the_finding_follows_the_overlay_that_enables_it(tmp_path: Path) -> None:
    enabling = {"integrations": {"frameworks": ["batch/job", RAY]}}
    root = fleet(tmp_path, platform=[JOBSET, RAY], w1=[JOBSET], manager_config=enabling)
    (hit,) = of(run(root), "fleet-frameworks")
    at(hit, root, MGR, f"- {RAY}")
    assert "worker(s) w1 (" in hit.message


def test_a_worker_declaring_no_frameworks_is_named(tmp_path: Path) -> None:
    root = fleet(tmp_path, manager=["batch/job", JOBSET], w1=[JOBSET])  # w2 declares nothing
    (hit,) = of(run(root), "fleet-frameworks")
    at(hit, root, BASE, JOBSET)
    assert "w2 (declares no frameworks: add them to overlays/w2/cluster.yaml)" in hit.message


def test_a_fleet_whose_workers_have_what_the_manager_enables_passes(tmp_path: Path) -> None:
    root = fleet(tmp_path, manager=["batch/job", JOBSET], w1=[JOBSET, RAY], w2=[JOBSET])
    result = run(root)
    assert not of(result, "fleet-frameworks") and not result.failed
    assert frameworks_of(result, "mgr") == ["batch/job", JOBSET]
    # the manager's credential on each worker may handle exactly the kinds the manager dispatches
    role = next(o.body for o in result.clusters["w1"].objects if o.body["kind"] == "ClusterRole")
    groups = {g for rule in role["rules"] for g in rule["apiGroups"]}
    assert "jobset.x-k8s.io" in groups and "ray.io" not in groups


def test_only_frameworks_built_into_kubernetes_need_nothing_declared(tmp_path: Path) -> None:
    root = fleet(tmp_path, kueue_config=repokit.BASE_CONFIG)  # batch/job only, nothing declared
    assert not of(run(root), "fleet-frameworks")


# ---------------------------------------------------------------------------- what the tenants were promised


def alone(gpus: Mapping[str, int]) -> dict[str, Any]:
    """nlp on the fleet without a cohort (what it reaches is its nominal quota), GPUs per cluster."""
    flavor = {**fleetrepo.FLAVOR_OF, "mgr": "h100"}
    nlp = repokit.tenant("nlp", clusters=["mgr"])
    nlp["budgets"] = {
        "clusters": {
            c: [{"flavor": flavor[c], "devices": {fleetrepo.GPU: n}, "resources": dict(repokit.POD)}]
            for c, n in gpus.items()
        }
    }
    nlp["claimTemplates"] = [{"name": "gpu", "deviceClass": fleetrepo.GPU}]
    return nlp


def _budgets(root: Path, capsys: pytest.CaptureFixture[str], fmt: str) -> str:
    assert main(["--root", str(root), "budgets", "--format", fmt]) == 0
    return capsys.readouterr().out


def test_the_largest_job_is_one_workers_reach_not_the_fleet_sum(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    solo = alone({"w1": 4, "w2": 4})
    root = fleetrepo.write(tmp_path, tenants=[solo])
    doc = json.loads(_budgets(root, capsys, "json"))
    (gpu,) = [r for r in doc["fleets"] if r["resource"] == "nvidia.com/gpu"]
    assert gpu["managerQuota"] == "8" and gpu["largestJob"] == "4"  # 4 + 4: one 8-GPU job never runs
    text = _budgets(root, capsys, "text")
    assert "nvidia.com/gpu: manager 8 = w1 4 + w2 4; largest job 4 (one worker's reach: w1 4, w2 4)" in text
    assert "a larger one is admitted by the manager, holds its quota there and never runs" in text
    markdown = _budgets(root, capsys, "markdown")
    assert "| nlp | nvidia.com/gpu | 8 | 4 | 4 | the sum of its workers' quotas | 4 |" in markdown
    # the plan says it too
    assert main(["--root", str(root), "render"]) == 0
    capsys.readouterr()
    fleetrepo.write(tmp_path, tenants=[{**solo, "namespaces": ["nlp-ns", "nlp-two"]}])
    main(["--root", str(root), "plan", "--format", "json"])
    plan = json.loads(capsys.readouterr().out)
    assert any(
        "mgr: the largest job nlp can run on the fleet:" in n and "nvidia.com/gpu 4" in n
        for n in plan["notes"]
    ), plan["notes"]


def test_a_manager_budget_smaller_than_a_worker_limits_the_largest_job(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    nlp = alone({"w1": 4, "w2": 4, "mgr": 3})
    root = fleetrepo.write(tmp_path, tenants=[nlp])
    text = _budgets(root, capsys, "text")
    assert "largest job 3 (the manager admits at most 3)" in text


def _mixed(excluded: bool) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """w1 has MIG slices besides its H100s, w2 has none; nlp's MIG template is on the manager and w1."""
    w1 = fleetrepo.worker("w1")
    w1["capacity"].append({"flavor": "a100", "devices": {repokit.MIG: 14}, "resources": repokit.POD_CAPACITY})
    nlp = fleetrepo.tenant("nlp", {"w1": 4, "w2": 2})
    nlp["budgets"]["clusters"]["w1"].append(
        {"flavor": "a100", "devices": {repokit.MIG: 7}, "resources": dict(repokit.POD)}
    )
    template: dict[str, Any] = {"name": "mig", "deviceClass": repokit.MIG, "clusters": ["mgr", "w1"]}
    if excluded:
        template["excludedWorkers"] = {"w2": "no MIG there: w1 admits these jobs"}
    nlp["claimTemplates"].append(template)
    return [fleetrepo.manager(), w1, fleetrepo.worker("w2")], nlp


FLAVORS = {
    "flavors": [{"name": f, "nodeLabels": {"example.com/flavor": f}} for f in ("h100", "h200", "a100")]
}


def test_a_mixed_hardware_fleet_needs_no_mapping_where_its_templates_are_excluded(tmp_path: Path) -> None:
    clusters, nlp = _mixed(excluded=True)
    root = fleetrepo.write(tmp_path, clusters=clusters, tenants=[nlp], platform_fields=FLAVORS)
    result = run(root)
    assert not result.failed, [f.format() for f in result.findings if f.severity is Severity.ERROR]
    mapped = {m["name"] for m in configuration(result, "w2")["resources"]["deviceClassMappings"]}
    assert mapped == {"nvidia.com/gpu"}  # the manager also maps MIG: w2 never admits those jobs


def test_a_worker_lacking_a_mapping_is_refused_in_the_workers_file(tmp_path: Path) -> None:
    root = fleetrepo.write(tmp_path)
    result = run(root)
    objects = {n: list(r.objects) for n, r in result.clusters.items()}
    objects["w2"] = [_without_mappings(o) for o in objects["w2"]]
    found = fleetcheck.check(result.model, effective_catalog(result.model), objects, kustomized=True)
    (hit,) = [f for f in found if f.rule == "fleet-mappings"]
    assert hit.path == "overlays/w2/cluster.yaml", hit.format()
    assert (
        "worker 'w2' of manager 'mgr' lacks the deviceClassMappings gpu.nvidia.com -> nvidia.com/gpu, which "
        "claim templates dispatched to it need" in hit.message
    )


def test_an_overcommitted_worker_leaves_the_manager_alone(tmp_path: Path) -> None:
    clusters = [fleetrepo.manager(), fleetrepo.worker("w1", gpus=4, overcommit=True), fleetrepo.worker("w2")]
    root = fleetrepo.write(tmp_path, clusters=clusters)
    found = engine.check_only(root, cache=None)[1]
    capacity = [f for f in found if f.rule == "capacity"]
    assert [(f.path, f.severity) for f in capacity] == [("overlays/w1/cluster.yaml", Severity.WARNING)]
    assert not any("'mgr'" in f.message for f in found if f.rule == "capacity")


def test_a_budget_declared_for_the_manager_over_the_fleet_is_refused_at_its_line(tmp_path: Path) -> None:
    nlp = fleetrepo.tenant("nlp", {"w1": 4, "w2": 2})
    nlp["budgets"]["clusters"]["mgr"] = fleetrepo.budget("h100", 30)
    root = fleetrepo.write(tmp_path, tenants=[nlp])
    found = [f for f in engine.check_only(root, cache=None)[1] if f.rule == "capacity"]
    (hit,) = [f for f in found if "manager" in f.message]
    assert hit.severity is Severity.ERROR and hit.path == "tenants/nlp.yaml"
    assert "budget for MultiKueue manager 'mgr' (30 nvidia.com/gpu on flavor 'h100')" in hit.message
    assert "remove budgets.clusters.mgr so the manager holds the sum" in hit.message


def test_fleet_quota_no_template_can_use_is_a_warning(tmp_path: Path) -> None:
    nlp = fleetrepo.tenant("nlp", {"w1": 4, "w2": 2}, claimTemplates=[])
    root = fleetrepo.write(tmp_path, tenants=[nlp])
    found = engine.check_only(root, cache=None)[1]
    (hit,) = [f for f in found if f.rule == "fleet-quota-unclaimed"]
    assert hit.severity is Severity.WARNING
    at(hit, root, "tenants/nlp.yaml", "- mgr")
    assert (
        "tenant 'nlp' has nvidia.com/gpu quota on MultiKueue manager 'mgr' but no claim template"
        in hit.message
    )
    assert not [
        f
        for f in engine.check_only(fleetrepo.write(tmp_path), cache=None)[1]
        if f.rule == "fleet-quota-unclaimed"
    ]


def test_advice_for_budgets_default_on_a_new_worker_keeps_the_fleet_sum(tmp_path: Path) -> None:
    clusters = [fleetrepo.manager(), fleetrepo.worker("w1"), fleetrepo.worker("w2", gpus=4, flavor="h100")]
    nlp = repokit.tenant("nlp", fleetrepo.budget("h100", 8), cohort="research", clusters=["mgr"])
    nlp["claimTemplates"] = [{"name": "g", "deviceClass": fleetrepo.GPU}]
    root = fleetrepo.write(tmp_path, clusters=clusters, tenants=[nlp])
    found = [f for f in engine.check_only(root, cache=None)[1] if f.rule == "capacity"]
    assert not any("cluster 'mgr'" in f.message for f in found)  # nothing to lower on the manager
    (hit,) = [f for f in found if f.path == "tenants/nlp.yaml"]
    assert "to change it for 'w2' alone, set budgets.clusters.w2" in hit.message
    assert "budgets.clusters.mgr" not in hit.message
    clusters[2] = fleetrepo.worker("w2", flavor="h200")  # w2 offers another flavor
    root = fleetrepo.write(tmp_path, clusters=clusters, tenants=[nlp])
    (flavor,) = [f for f in engine.check_only(root, cache=None)[1] if f.rule == "flavor-unknown"]
    assert "set budgets.clusters.w2 (a worker of MultiKueue manager 'mgr'" in flavor.message


def test_a_template_excluded_on_every_worker_is_refused(tmp_path: Path) -> None:
    template = {
        "name": "gpu-x2",
        "deviceClass": fleetrepo.GPU,
        "count": 2,
        "clusters": ["mgr"],
        "excludedWorkers": {"w1": "no such GPUs on w1", "w2": "no such GPUs on w2"},
    }
    nlp = fleetrepo.tenant("nlp", {"w1": 4, "w2": 2}, claimTemplates=[template])
    root = fleetrepo.write(tmp_path, tenants=[nlp])
    found = [f for f in engine.check_only(root, cache=None)[1] if f.rule == "fleet-claim-template"]
    (hit,) = found
    at(hit, root, "tenants/nlp.yaml", "- name: gpu-x2")
    assert "excluded on every one of its workers (w1, w2)" in hit.message
