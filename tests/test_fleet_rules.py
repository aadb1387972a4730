"""Each fleet rule refuses its failure at the input line, with every finding in one run, exit 1, nothing
written: on the inputs (workers, capacity, origins, versions, version-gated settings, quota automation,
claim templates) and on the built objects of a manager and its workers together (queue and claim
template twins, mappings, the one MultiKueue check)."""

from __future__ import annotations

import copy
import textwrap
from pathlib import Path
from typing import Any

import fleetrepo
import hamitree
import pytest
import repokit
import trees
import yaml
from smallrepo import line_of

from gputenancy import engine
from gputenancy.check.chain import fleet as fleetcheck
from gputenancy.cli.app import main
from gputenancy.common.findings import Finding, Severity
from gputenancy.common.objects import RenderedObject
from gputenancy.policy.rules import effective_catalog

MGR = "overlays/mgr/cluster.yaml"


def model_findings(root: Path) -> list[Finding]:
    return [f for f in engine.check_only(root, cache=None)[1] if f.severity is Severity.ERROR]


def one(findings: list[Finding], rule: str) -> Finding:
    hits = [f for f in findings if f.rule == rule]
    assert len(hits) == 1, [f.format() for f in findings]
    return hits[0]


def at(finding: Finding, root: Path, rel: str, needle: str) -> None:
    assert (finding.path, finding.line) == (rel, line_of(root, rel, needle)), finding.format()


def test_the_fleet_passes_every_rule(tmp_path: Path) -> None:
    assert model_findings(fleetrepo.write(tmp_path)) == []


def test_a_worker_without_overlay_and_the_manager_itself_are_refused(tmp_path: Path) -> None:
    clusters = [
        fleetrepo.manager(workers=["w1", "w2", "w3", "mgr"]),
        fleetrepo.worker("w1"),
        fleetrepo.worker("w2"),
    ]
    root = fleetrepo.write(tmp_path, clusters=clusters)
    hits = [f for f in model_findings(root) if f.rule == "fleet-worker"]
    assert [f.message for f in hits] == [
        "worker 'w3' of manager 'mgr' has no overlay (known: mgr, w1, w2)",
        "worker 'mgr' of manager 'mgr' is the manager itself (a manager cannot be its own worker)",
    ]
    assert {f.line for f in hits} == {line_of(root, MGR, "- w3"), line_of(root, MGR, "- mgr")}


def test_a_worker_that_is_a_manager_is_refused(tmp_path: Path) -> None:
    clusters = [fleetrepo.manager(), fleetrepo.manager("w1", workers=["w2"]), fleetrepo.worker("w2")]
    root = fleetrepo.write(tmp_path, clusters=clusters)
    hit = one(model_findings(root), "fleet-worker")
    assert (
        hit.message
        == "worker 'w1' of manager 'mgr' is itself a MultiKueue manager (workers are ordinary clusters)"
    )
    at(hit, root, MGR, "- w1")


def test_a_manager_declaring_capacity_is_refused(tmp_path: Path) -> None:
    mgr = fleetrepo.manager()
    mgr["capacity"] = [{"flavor": "h100", "devices": {fleetrepo.GPU: 8}}]
    root = fleetrepo.write(tmp_path, clusters=[mgr, fleetrepo.worker("w1"), fleetrepo.worker("w2")])
    hit = one(model_findings(root), "fleet-capacity")
    at(hit, root, MGR, "capacity:")


def test_two_managers_sharing_a_worker_need_distinct_origins(tmp_path: Path) -> None:
    clusters = [
        fleetrepo.manager(origin="fleet"),
        fleetrepo.manager("mgr2", workers=["w1"], origin="fleet"),
        fleetrepo.worker("w1"),
        fleetrepo.worker("w2"),
    ]
    root = fleetrepo.write(tmp_path, clusters=clusters)
    hit = one(model_findings(root), "fleet-origin")
    assert "managers 'mgr' and 'mgr2' both dispatch to 'w1' with origin 'fleet'" in hit.message
    at(hit, root, "overlays/mgr2/cluster.yaml", "origin: fleet")
    clusters[1]["multiKueue"]["origin"] = "fleet-2"
    assert model_findings(fleetrepo.write(tmp_path, clusters=clusters)) == []


def test_an_origin_that_is_not_a_label_value_is_refused(tmp_path: Path) -> None:
    root = fleetrepo.write(tmp_path, origin="gpu fleet")
    hit = one(model_findings(root), "fleet-origin")
    at(hit, root, MGR, "origin:")


def test_a_worker_on_another_kueue_minor_or_far_kubernetes_is_refused(tmp_path: Path) -> None:
    clusters = [
        fleetrepo.manager(),
        fleetrepo.worker("w1", version="v0.18.1"),
        repokit.cluster("w2", (fleetrepo.worker("w2")["capacity"][0],), kubernetes="1.37"),
    ]
    root = fleetrepo.write(tmp_path, clusters=clusters)
    hits = sorted((f for f in model_findings(root) if f.rule == "fleet-versions"), key=lambda f: f.line)
    assert len(hits) == 2, [f.format() for f in hits]
    assert "worker 'w1' runs Kueue v0.18.1" in hits[0].message and hits[0].line == line_of(root, MGR, "- w1")
    assert "Kubernetes 1.37, manager 'mgr' 1.35" in hits[1].message and hits[1].line == line_of(
        root, MGR, "- w2"
    )


def test_settings_a_kueue_version_lacks_or_that_break_multikueue_are_refused(tmp_path: Path) -> None:
    root = fleetrepo.write(tmp_path, version="v0.18.1", dispatcher="Incremental", stepSize=2, gcInterval="0s")
    hits = [f for f in model_findings(root) if f.rule == "fleet-version-fields"]
    assert sorted(f.line for f in hits) == [line_of(root, MGR, "stepSize"), line_of(root, MGR, "gcInterval")]
    assert any("stepSize needs Kueue v0.19 or later" in f.message for f in hits)
    root = fleetrepo.write(tmp_path, version="v0.19.2", stepSize=2)  # AllAtOnce: no step size
    hit = one(model_findings(root), "fleet-version-fields")
    assert "applies to the incremental dispatcher only" in hit.message


def test_quota_automation_needs_the_gate_and_one_flavor_per_queue(tmp_path: Path) -> None:
    root = fleetrepo.write(tmp_path, quotaManagement="Automated")
    hits = [f for f in model_findings(root) if f.rule == "fleet-quota-automation"]
    gate = [f for f in hits if f.path == MGR]
    assert len(gate) == 1 and "MultiKueueManagerQuotaAutomation: true" in gate[0].message
    at(gate[0], root, MGR, "quotaManagement")
    flavors = sorted(f.path for f in hits if f.path != MGR)
    assert flavors == ["tenants/nlp.yaml", "tenants/speech.yaml"]  # h100 on w1, h200 on w2


def test_a_claim_template_offered_on_the_manager_but_missing_on_a_worker_is_refused(tmp_path: Path) -> None:
    nlp = fleetrepo.tenant(
        "nlp",
        {"w1": 4, "w2": 2},
        claimTemplates=[
            {"name": "gpu-x2", "deviceClass": fleetrepo.GPU, "count": 2, "clusters": ["mgr", "w1"]}
        ],
    )
    root = fleetrepo.write(tmp_path, tenants=[nlp])
    hit = one(model_findings(root), "fleet-claim-template")
    assert (
        "claim template 'gpu-x2' of 'nlp' is offered on manager 'mgr' but not on its worker(s) w2"
        in hit.message
    )
    at(hit, root, "tenants/nlp.yaml", "- name: gpu-x2")


def test_a_worker_excluded_with_a_reason_may_lack_the_template(tmp_path: Path) -> None:
    def nlp(excluded: dict[str, str], clusters: list[str]) -> dict[str, Any]:
        template = {"name": "gpu-x2", "deviceClass": fleetrepo.GPU, "count": 2, "clusters": clusters}
        return fleetrepo.tenant(
            "nlp", {"w1": 4, "w2": 2}, claimTemplates=[{**template, "excludedWorkers": excluded}]
        )

    why = "no H100 there; its copies wait for w1"
    root = fleetrepo.write(tmp_path, tenants=[nlp({"w2": why}, ["mgr", "w1"])])
    result = engine.run(root, cache=None)
    assert [f.format() for f in result.findings if f.severity is Severity.ERROR] == []
    on_w2 = [o for o in result.clusters["w2"].objects if o.body["kind"] == "ResourceClaimTemplate"]
    assert on_w2 == [] and [
        o for o in result.clusters["mgr"].objects if o.body["kind"] == "ResourceClaimTemplate"
    ]
    root = fleetrepo.write(tmp_path, tenants=[nlp({"w3": why}, ["mgr", "w1", "w2"])])
    hit = one(model_findings(root), "fleet-claim-template")
    assert (
        hit.message
        == "excludedWorkers: 'w3' is not a worker of a MultiKueue manager this template is offered on"
    )
    at(hit, root, "tenants/nlp.yaml", "w3:")
    root = fleetrepo.write(tmp_path, tenants=[nlp({"w2": why}, ["mgr", "w1", "w2"])])
    hit = one(model_findings(root), "fleet-claim-template")
    assert "'w2' is excluded but the template is offered there" in hit.message


def test_findings_print_at_the_input_line_all_in_one_run_nothing_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    clusters = [
        fleetrepo.manager(workers=["w1", "w2", "w3"], quotaManagement="Automated"),
        fleetrepo.worker("w1"),
        fleetrepo.worker("w2"),
    ]
    root = fleetrepo.write(tmp_path, clusters=clusters)
    assert main(["--root", str(root), "render"]) == 1
    out = capsys.readouterr()
    assert "Traceback" not in out.out + out.err
    assert f"{MGR}:{line_of(root, MGR, '- w3')}:" in out.out and "(fleet-worker)" in out.out
    assert (
        f"{MGR}:{line_of(root, MGR, 'quotaManagement')}:" in out.out and "(fleet-quota-automation)" in out.out
    )
    assert not (root / "generated").exists()


# ------------------------------------------------------------------------ on the built objects, together


def component(root: Path, cluster: str, text: str) -> None:
    body = {
        "apiVersion": "kustomize.config.k8s.io/v1alpha1",
        "kind": "Component",
        **yaml.safe_load(textwrap.dedent(text)),
    }
    repokit.dump(root / "overlays" / cluster / "tenants" / "kustomization.yaml", body)


def patched(tmp_path: Path, cluster: str, target: str, ops: str) -> list[Finding]:
    """The fleet of speech alone, with JSON patch `ops` on `target` in `cluster`'s tenant Component:
    what the fleet rules find on the built objects."""
    root = fleetrepo.write(tmp_path, tenants=fleetrepo.TEAMS[1:])
    patch = {"target": yaml.safe_load(target), "patch": textwrap.dedent(ops)}
    component(root, cluster, yaml.safe_dump({"patches": [patch]}))
    return built(root)


def built(root: Path) -> list[Finding]:
    result = engine.run(root, cache=None)
    return [f for f in result.findings if f.rule.startswith("fleet-")]


def test_a_worker_without_the_local_queue_is_refused(tmp_path: Path) -> None:
    root = fleetrepo.write(tmp_path)
    component(
        root,
        "w2",
        """\
        patches:
          - target: {kind: LocalQueue, namespace: speech-ns}
            patch: |-
              $patch: delete
              apiVersion: kueue.x-k8s.io/v1beta2
              kind: LocalQueue
              metadata: {name: speech, namespace: speech-ns}
        """,
    )
    hit = one(built(root), "fleet-queue-twin")
    assert "LocalQueue speech-ns/speech on manager 'mgr' has no twin on worker 'w2'" in hit.message
    at(hit, root, "tenants/speech.yaml", "speech-ns")


def test_a_worker_template_with_another_count_is_refused(tmp_path: Path) -> None:
    ops = """\
        - op: replace
          path: /spec/spec/devices/requests/0/exactly/count
          value: 1
        """
    hit = one(patched(tmp_path, "w1", "{kind: ResourceClaimTemplate, name: gpu-x2}", ops), "fleet-claim-twin")
    assert (
        "asks for 1 x gpu.nvidia.com while the manager's asks for 2 x gpu.nvidia.com on worker 'w1'"
        in hit.message
    )
    at(hit, tmp_path, "tenants/speech.yaml", "- name: gpu-x2")


def test_a_multikueue_check_on_some_flavors_only_is_refused(tmp_path: Path) -> None:
    ops = """\
        - op: add
          path: /spec/admissionChecksStrategy/admissionChecks/0/onFlavors
          value: [h100]
        """
    hit = one(patched(tmp_path, "mgr", "{kind: ClusterQueue, name: speech}", ops), "fleet-admission-check")
    assert "limits its MultiKueue admission check to some flavors" in hit.message
    assert hit.path == "tenants/speech.yaml"


def test_a_second_admission_check_is_refused(tmp_path: Path) -> None:
    ops = """\
        - op: add
          path: /spec/admissionChecksStrategy/admissionChecks/-
          value: {name: multikueue}
        """
    hit = one(patched(tmp_path, "mgr", "{kind: ClusterQueue, name: speech}", ops), "fleet-admission-check")
    assert "has 2 MultiKueue admission checks (exactly one is needed)" in hit.message


def test_mappings_missing_on_a_worker_are_refused(tmp_path: Path) -> None:
    root = fleetrepo.write(tmp_path)
    result = engine.run(root, cache=None)
    assert not result.failed
    objects = {n: list(r.objects) for n, r in result.clusters.items()}
    assert fleetcheck.check(result.model, effective_catalog(result.model), objects, kustomized=True) == []
    objects["w2"] = [_without_mappings(o) for o in objects["w2"]]
    found = fleetcheck.check(result.model, effective_catalog(result.model), objects, kustomized=True)
    hit = one(found, "fleet-mappings")
    assert (
        "worker 'w2' of manager 'mgr' lacks the deviceClassMappings gpu.nvidia.com -> nvidia.com/gpu"
        in hit.message
    )


def _without_mappings(o: RenderedObject) -> RenderedObject:
    if o.body.get("kind") != "Application" or "kustomize" not in o.body["spec"]["source"]:
        return o  # not the Kueue install, which carries the Configuration
    body: dict[str, Any] = copy.deepcopy(dict(o.body))
    for entry in body["spec"]["source"]["kustomize"]["patches"]:
        patch = yaml.safe_load(entry["patch"])
        if patch.get("kind") == "ConfigMap":
            (key,) = patch["data"]
            config = yaml.safe_load(patch["data"][key])
            del config["resources"]["deviceClassMappings"]
            patch["data"][key] = yaml.safe_dump(config)
            entry["patch"] = yaml.safe_dump(patch)
    return RenderedObject(o.cluster, body, o.origin, o.field_origins)


def test_hami_vgpus_in_a_fleet_tenants_worker_budget_are_refused(tmp_path: Path) -> None:
    root = hamitree.build(tmp_path)
    trees.write(root, "overlays/mgr/cluster.yaml", fleetrepo.manager(workers=["site"]))
    kustomization = trees.read(root, "overlays/site/kustomization.yaml")
    trees.write(root, "overlays/mgr/kustomization.yaml", kustomization)
    assert not [f for f in model_findings(root) if f.rule == "fleet-budget"]  # tenants on site only
    trees.edit(root, "tenants/serving.yaml", lambda d: d.update(clusters=["mgr"]))
    hit = one(model_findings(root), "fleet-budget")
    assert (
        "tenant 'serving' budgets HAMi vGPUs on 'site', a worker of MultiKueue manager 'mgr'" in hit.message
    )
    at(hit, root, "tenants/serving.yaml", "hami:")


@pytest.mark.parametrize(
    ("manager", "worker", "refused"),
    [
        ("1.35", "1.34", False),
        ("1.35", "1.36", False),
        ("1.35", "1.37", True),
        ("1.36", "1.34", True),
    ],
)
def test_kubernetes_one_minor_from_the_manager_passes_and_two_are_refused(
    tmp_path: Path, manager: str, worker: str, refused: bool
) -> None:
    """The skew limit at its boundary, on both sides of the manager: a worker one minor below or above
    passes, two minors above or below is refused."""
    mgr = fleetrepo.manager()
    mgr["kubernetesVersion"] = manager
    w2 = repokit.cluster("w2", (fleetrepo.worker("w2")["capacity"][0],), kubernetes=worker)
    w1 = repokit.cluster("w1", (fleetrepo.worker("w1")["capacity"][0],), kubernetes=manager)
    root = fleetrepo.write(tmp_path, clusters=[mgr, w1, w2])
    hits = [f for f in model_findings(root) if f.rule == "fleet-versions"]
    if not refused:
        assert hits == []
        return
    hit = one(hits, "fleet-versions")
    assert f"worker 'w2' runs Kubernetes {worker}, manager 'mgr' {manager}" in hit.message
    assert "at most 1 minor version apart" in hit.message
    at(hit, root, MGR, "- w2")


def test_twins_are_matched_by_namespace_and_name(tmp_path: Path) -> None:
    """nlp has the LocalQueue nlp and the claim template gpu-x2 in two namespaces. On w2, the ones in
    nlp-serve are deleted: the same names still exist there in nlp-train, which is not a twin."""
    root = fleetrepo.write(tmp_path)
    component(
        root,
        "w2",
        """\
        patches:
          - target: {kind: LocalQueue, namespace: nlp-serve}
            patch: |-
              $patch: delete
              apiVersion: kueue.x-k8s.io/v1beta2
              kind: LocalQueue
              metadata: {name: nlp, namespace: nlp-serve}
          - target: {kind: ResourceClaimTemplate, namespace: nlp-serve}
            patch: |-
              $patch: delete
              apiVersion: resource.k8s.io/v1
              kind: ResourceClaimTemplate
              metadata: {name: gpu-x2, namespace: nlp-serve}
        """,
    )
    result = engine.run(root, cache=None)
    on_w2 = {
        (o.body["kind"], o.body["metadata"]["namespace"], o.body["metadata"]["name"])
        for o in result.clusters["w2"].objects
        if o.body["kind"] in ("LocalQueue", "ResourceClaimTemplate")
    }
    assert ("LocalQueue", "nlp-train", "nlp") in on_w2 and ("LocalQueue", "nlp-serve", "nlp") not in on_w2
    assert ("ResourceClaimTemplate", "nlp-train", "gpu-x2") in on_w2
    assert ("ResourceClaimTemplate", "nlp-serve", "gpu-x2") not in on_w2
    found = [f for f in result.findings if f.rule.startswith("fleet-")]
    queue = one(found, "fleet-queue-twin")
    assert "LocalQueue nlp-serve/nlp on manager 'mgr' has no twin on worker 'w2'" in queue.message
    claim = one(found, "fleet-claim-twin")
    assert (
        "ResourceClaimTemplate nlp-serve/gpu-x2 of manager 'mgr' is missing on worker 'w2'" in claim.message
    )
