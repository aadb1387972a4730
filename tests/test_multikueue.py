"""MultiKueue fleets: a manager and two workers rendered, built by the real kustomize and validated against
the upstream CRD schemas and CEL rules of each Kueue version; the links across clusters (a LocalQueue and a
claim template on the manager have their twins on every worker, mappings on both sides, one MultiKueue
check per ClusterQueue); the sums the manager's quota is made of."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import fleetrepo
import pytest
import repokit

from gputenancy import engine
from gputenancy.check.validate import validate_objects
from gputenancy.common.objects import RenderedObject
from gputenancy.render import hub, multikueue

VERSIONS = ("v0.18.1", "v0.19.2")
WAVE = "argocd.argoproj.io/sync-wave"


def run(root: Path, shared: Path) -> engine.Result:
    return engine.run(root, schemas=shared, cache=None)


def of(result: engine.Result, cluster: str, kind: str) -> list[Mapping[str, Any]]:
    return [o.body for o in result.clusters[cluster].objects if o.body.get("kind") == kind]


def spoke(result: engine.Result, cluster: str) -> Mapping[str, Any]:
    """The hub's Application that syncs the cluster's objects."""
    (app,) = [
        b for b in of(result, cluster, "Application") if b["metadata"]["name"] == f"gputenancy-{cluster}"
    ]
    return app


def keys(bodies: Sequence[Mapping[str, Any]]) -> set[tuple[str, str]]:
    return {(b["metadata"].get("namespace", ""), b["metadata"]["name"]) for b in bodies}


def exactly(rct: Mapping[str, Any]) -> Mapping[str, Any]:
    result: Mapping[str, Any] = rct["spec"]["spec"]["devices"]["requests"][0]["exactly"]
    return result


@pytest.fixture(scope="module", params=VERSIONS)
def fleet(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, shared: Path
) -> engine.Result:
    root = fleetrepo.write(tmp_path_factory.mktemp(f"fleet-{request.param}"), version=request.param)
    result = run(root, shared)
    assert [f.format() for f in result.findings] == []
    return result


def test_the_fleet_renders_builds_and_validates_against_each_versions_crds(fleet: engine.Result) -> None:
    assert sorted(fleet.clusters) == ["mgr", "w1", "w2"]
    version = fleet.model.clusters["mgr"].kueue_version
    for name in fleet.clusters:
        assert f"{name}: Kueue CRD schema and CEL validation ran (Kueue {version}" in " ".join(fleet.notes)


def test_the_manager_has_the_check_config_and_one_cluster_per_worker_naming_its_secret(
    fleet: engine.Result,
) -> None:
    (check,) = of(fleet, "mgr", "AdmissionCheck")
    (config,) = of(fleet, "mgr", "MultiKueueConfig")
    assert check["spec"] == {
        "controllerName": "kueue.x-k8s.io/multikueue",
        "parameters": {
            "apiGroup": "kueue.x-k8s.io",
            "kind": "MultiKueueConfig",
            "name": config["metadata"]["name"],
        },
    }
    assert config["spec"] == {"clusters": ["w1", "w2"], "quotaManagement": "Manual"}
    clusters = {b["metadata"]["name"]: b["spec"] for b in of(fleet, "mgr", "MultiKueueCluster")}
    assert clusters == {
        w: {"clusterSource": {"kubeConfig": {"locationType": "Secret", "location": f"{w}-kubeconfig"}}}
        for w in ("w1", "w2")
    }
    for name in fleet.clusters:  # never a kubeconfig in Git
        assert not of(fleet, name, "Secret")
        assert b"kubeconfig:" not in b"".join(fleet.clusters[name].tree.values())
    for name in ("w1", "w2"):
        assert not {"AdmissionCheck", "MultiKueueConfig", "MultiKueueCluster"} & {
            str(o.body["kind"]) for o in fleet.clusters[name].objects
        }


def test_each_worker_has_the_service_account_and_rbac_the_managers_credential_uses(
    fleet: engine.Result,
) -> None:
    for name in ("w1", "w2"):
        (sa,) = of(fleet, name, "ServiceAccount")
        (role,) = of(fleet, name, "ClusterRole")
        (binding,) = of(fleet, name, "ClusterRoleBinding")
        assert sa["metadata"] == {**sa["metadata"], "name": "multikueue-mgr", "namespace": "kueue-system"}
        assert binding["roleRef"]["name"] == role["metadata"]["name"] == "multikueue-mgr"
        assert binding["subjects"] == [
            {"kind": "ServiceAccount", "name": "multikueue-mgr", "namespace": "kueue-system"}
        ]
        granted = {
            (g, r): set(rule["verbs"])
            for rule in role["rules"]
            for g in rule["apiGroups"]
            for r in rule["resources"]
        }
        assert {"create", "delete", "get", "list", "watch"} <= granted[
            ("batch", "jobs")
        ]  # the base frameworks
        assert {"update", "patch"} <= granted[("kueue.x-k8s.io", "workloads/status")]
        assert {"get", "list", "watch"} <= granted[("kueue.x-k8s.io", "localqueues")]
    assert not of(fleet, "mgr", "ServiceAccount") and not of(fleet, "mgr", "ClusterRole")


def test_manager_queues_carry_exactly_one_multikueue_check_and_worker_queues_none(
    fleet: engine.Result,
) -> None:
    for cq in of(fleet, "mgr", "ClusterQueue"):
        assert cq["spec"]["admissionChecksStrategy"] == {"admissionChecks": [{"name": "multikueue"}]}
    for name in ("w1", "w2"):
        for cq in of(fleet, name, "ClusterQueue"):
            assert "admissionChecksStrategy" not in cq["spec"]


def test_sync_waves_put_the_check_before_the_queues_and_those_before_local_queues(
    fleet: engine.Result,
) -> None:
    def wave(kind: str) -> set[int]:
        return {int(b["metadata"]["annotations"][WAVE]) for b in of(fleet, "mgr", kind)}

    first = wave("AdmissionCheck") | wave("MultiKueueConfig") | wave("MultiKueueCluster")
    assert max(first) < min(wave("ClusterQueue")) and max(wave("ClusterQueue")) < min(wave("LocalQueue"))


def test_every_manager_local_queue_has_its_twin_on_every_worker(fleet: engine.Result) -> None:
    manager = keys(of(fleet, "mgr", "LocalQueue"))
    assert manager == {("nlp-train", "nlp"), ("nlp-serve", "nlp"), ("speech-ns", "speech")}
    for name in ("w1", "w2"):
        assert manager <= keys(of(fleet, name, "LocalQueue"))


def test_every_claim_template_offered_is_on_every_worker_same_class_and_count(fleet: engine.Result) -> None:
    manager = {
        (k, exactly(b)["deviceClassName"], exactly(b)["count"]): b
        for b in of(fleet, "mgr", "ResourceClaimTemplate")
        for k in keys([b])
    }
    assert manager
    for name in ("w1", "w2"):
        theirs = {
            (k, exactly(b)["deviceClassName"], exactly(b)["count"])
            for b in of(fleet, name, "ResourceClaimTemplate")
            for k in keys([b])
        }
        assert set(manager) <= theirs
        for b in of(fleet, name, "ResourceClaimTemplate"):  # the workers keep the selectors
            assert exactly(b)["selectors"] == [{"cel": {"expression": fleetrepo.SELECTOR}}]
    for b in manager.values():  # the manager has no GPU nodes to match a selector against
        assert "selectors" not in exactly(b)


def test_mappings_on_both_sides_and_the_multikueue_section_on_the_manager(fleet: engine.Result) -> None:
    configs = {n: repokit.configuration(o.body for o in fleet.clusters[n].objects) for n in fleet.clusters}
    wanted = [{"name": "nvidia.com/gpu", "deviceClassNames": [fleetrepo.GPU]}]
    for config in configs.values():
        assert config["resources"]["deviceClassMappings"] == wanted
    assert configs["mgr"]["multiKueue"] == {
        "gcInterval": "1m",
        "origin": "mgr",
        "workerLostTimeout": "15m",
        "dispatcherName": "kueue.x-k8s.io/multikueue-dispatcher-all-at-once",
    }
    assert "multiKueue" not in configs["w1"] and "multiKueue" not in configs["w2"]


def test_the_manager_quota_is_the_sum_of_the_workers_quotas(fleet: engine.Result) -> None:
    def gpus(cluster: str, tenant: str) -> dict[str, tuple[str, str | None]]:
        (cq,) = [b for b in of(fleet, cluster, "ClusterQueue") if b["metadata"]["name"] == tenant]
        out = {}
        for flavor in cq["spec"]["resourceGroups"][0]["flavors"]:
            for r in flavor["resources"]:
                if r["name"] == "nvidia.com/gpu":
                    out[flavor["name"]] = (r["nominalQuota"], r.get("borrowingLimit"))
        return out

    assert gpus("w1", "nlp") == {"h100": ("4", "1")}
    assert gpus("w2", "nlp") == {"h200": ("2", "1")}
    assert gpus("mgr", "nlp") == {"h100": ("4", "1"), "h200": ("2", "1")}
    assert gpus("mgr", "speech") == {"h100": ("2", "1"), "h200": ("4", "1")}


def test_the_worker_preference_order_is_kept_not_sorted(tmp_path: Path, shared: Path) -> None:
    root = fleetrepo.write(
        tmp_path,
        clusters=[fleetrepo.manager(workers=["w2", "w1"]), fleetrepo.worker("w1"), fleetrepo.worker("w2")],
    )
    result = run(root, shared)
    (config,) = of(result, "mgr", "MultiKueueConfig")
    assert config["spec"]["clusters"] == ["w2", "w1"]


def test_incremental_dispatch_with_a_step_size_on_v019(tmp_path: Path, shared: Path) -> None:
    root = fleetrepo.write(tmp_path, dispatcher="Incremental", stepSize=2, origin="fleet-a")
    result = run(root, shared)
    assert not result.failed, [f.format() for f in result.findings]
    config = repokit.configuration(o.body for o in result.clusters["mgr"].objects)
    assert config["multiKueue"]["dispatcherName"] == "kueue.x-k8s.io/multikueue-dispatcher-incremental"
    assert config["multiKueue"]["incrementalDispatcherConfig"] == {"stepSize": 2}
    assert config["multiKueue"]["origin"] == "fleet-a"


def test_quota_automation_labels_the_queues_and_argo_cd_leaves_their_quotas_to_kueue(
    tmp_path: Path, shared: Path
) -> None:
    mgr = fleetrepo.manager(quotaManagement="Automated")
    mgr["kueue"]["featureGates"] = {"MultiKueueManagerQuotaAutomation": True}
    h100 = {"w1": "h100", "w2": "h100"}
    one_flavor = (
        fleetrepo.tenant("nlp", {"w1": 4, "w2": 4}, flavor_of=h100),
        fleetrepo.tenant("speech", {"w1": 2, "w2": 2}, flavor_of=h100),
    )
    clusters = [mgr, fleetrepo.worker("w1"), fleetrepo.worker("w2", flavor="h100")]
    root = fleetrepo.write(tmp_path, tenants=one_flavor, clusters=clusters)
    result = run(root, shared)
    assert not result.failed, [f.format() for f in result.findings]
    (config,) = of(result, "mgr", "MultiKueueConfig")
    assert config["spec"]["quotaManagement"] == "Automated"
    for cq in of(result, "mgr", "ClusterQueue"):
        assert cq["metadata"]["labels"]["gputenancy.io/quota-management"] == "Automated"
    for cq in of(result, "w1", "ClusterQueue"):
        assert "gputenancy.io/quota-management" not in cq["metadata"]["labels"]
    spec = spoke(result, "mgr")["spec"]
    assert multikueue.AUTOMATED_QUOTA in spec["ignoreDifferences"]
    assert "RespectIgnoreDifferences=true" in spec["syncPolicy"]["syncOptions"]
    assert multikueue.AUTOMATED_QUOTA not in spoke(result, "w1")["spec"]["ignoreDifferences"]
    # Argo CD applies a jqPathExpression as `del(EXPR)` (gojq); jq gives the same answer on the real queues
    jq = shutil.which("jq")
    if jq is None:  # .ci/run installs it
        (pytest.fail if os.environ.get("CI") else pytest.skip)("jq not installed (Debian's jq)")
    (expression,) = multikueue.AUTOMATED_QUOTA["jqPathExpressions"]
    for cluster, kept in (("mgr", False), ("w1", True)):
        for cq in of(result, cluster, "ClusterQueue"):
            out = subprocess.run(
                [jq, "-c", f"del({expression})"],
                input=json.dumps(cq),
                capture_output=True,
                text=True,
                check=True,
            )
            assert ("resourceGroups" in json.loads(out.stdout)["spec"]) is kept


def test_without_automation_the_hub_applications_are_unchanged(fleet: engine.Result) -> None:
    for name in fleet.clusters:
        spec = spoke(fleet, name)["spec"]
        assert spec["ignoreDifferences"] == [dict(d) for d in hub.IGNORE_DIFFERENCES]
        assert spec["syncPolicy"]["syncOptions"] == list(hub.SYNC_OPTIONS)


# ----------------------------------------------------------------- the new kinds against the upstream CRDs


def _manager_objects(result: engine.Result) -> list[RenderedObject]:
    kinds = {"AdmissionCheck", "MultiKueueConfig", "MultiKueueCluster", "ClusterQueue"}
    return [o for o in result.clusters["mgr"].objects if o.body.get("kind") in kinds]


def _with(o: RenderedObject, change: Any) -> RenderedObject:
    import copy

    body = copy.deepcopy(dict(o.body))
    change(body)
    return RenderedObject(o.cluster, body, o.origin)


@pytest.mark.parametrize(
    ("kind", "change", "rule", "needle"),
    [
        ("MultiKueueConfig", lambda b: b["spec"].update(clusters=["w1", "w1"]), None, "clusters"),
        (
            "MultiKueueCluster",
            lambda b: b["spec"]["clusterSource"].update(clusterProfileRef={"name": "p"}),
            "crd-cel",
            "exactly one",
        ),
        (
            "MultiKueueCluster",
            lambda b: b["spec"]["clusterSource"]["kubeConfig"].update(locationType="File"),
            "crd-schema",
            "File",
        ),
        (
            "AdmissionCheck",
            lambda b: b["spec"]["parameters"].update(name="gpu.fleet"),
            "crd-schema",
            "gpu.fleet",
        ),
        ("MultiKueueConfig", lambda b: b["spec"].update(quotaManagement="Auto"), "crd-schema", "Auto"),
    ],
)
def test_each_version_refuses_a_broken_copy_of_the_new_objects(
    fleet: engine.Result, shared: Path, kind: str, change: Any, rule: str | None, needle: str
) -> None:
    version = fleet.model.clusters["mgr"].kueue_version
    crds = shared / "kueue" / version / "crds"
    objects = _manager_objects(fleet)
    ok = validate_objects(objects, kueue_version=version, kubernetes_version="1.35", crd_dir=crds)
    assert not ok.findings and not ok.skipped
    broken = [_with(o, change) if o.body["kind"] == kind else o for o in objects]
    report = validate_objects(broken, kueue_version=version, kubernetes_version="1.35", crd_dir=crds)
    assert report.findings, f"{kind} not refused on {version}"
    assert {f.message.split(":")[0].split()[0] for f in report.findings} == {kind}
    expected = rule or ("crd-list-duplicate" if version == "v0.18.1" else "crd-cel")  # a set, then CEL unique
    assert all(needle in f.message and f.rule == expected for f in report.findings)
