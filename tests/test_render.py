"""Rendering and building with the real kustomize: the golden tree, the Kueue chain (determinism across
processes: test_determinism.py)."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest
import trees
import yaml

from gputenancy import engine
from gputenancy.assemble import kustomize as build
from gputenancy.assemble import output
from gputenancy.common.findings import PipelineError
from gputenancy.inputs.spec import load_model
from gputenancy.policy import rules
from gputenancy.render import manifests as render

REPO = trees.FIXTURE


def docs(tree: dict[str, bytes], prefix: str) -> list[dict[str, Any]]:
    return [yaml.safe_load(v) for k, v in tree.items() if k.startswith(prefix)]


@pytest.fixture(scope="module")
def result() -> engine.Result:
    return engine.run(REPO)


def test_golden_tree_matches_committed_generated(result: engine.Result) -> None:
    """The fixture's generated/ is the golden tree; regenerate it with
    `python pipeline.py --root tests/fixtures/repo render`."""
    assert not result.failed, [f.format() for f in result.findings]
    for name, cluster in result.clusters.items():
        differences = output.diff_paths(dict(cluster.tree), output.read_tree(REPO / "generated" / name))
        assert differences == [], (
            f"tests/fixtures/repo/generated/{name} differs; run `python pipeline.py --root tests/fixtures/repo render`: {differences}"
        )


def test_sharded_build_is_identical_to_one_build(tmp_path: Path) -> None:
    root = trees.example(tmp_path, generated=False)
    model, _ = load_model(root)
    catalog = rules.effective_catalog(model)
    cluster = model.clusters["prod"]
    platform, _, _ = render.render_platform(model, cluster, catalog)
    tenants = [o for t in model.tenants_on("prod") for o in render.render_tenant(t, cluster, catalog)]
    one = output.tree_of(build.build(root, "prod", platform, tenants, shard_size=10_000))
    sharded = output.tree_of(build.build(root, "prod", platform, tenants, shard_size=3))
    assert one == sharded
    assert len(tenants) > 3 * 2  # really several shards


def test_tenant_component_applies_to_tenant_objects(result: engine.Result) -> None:
    tree = dict(result.clusters["prod"].tree)
    for doc in (
        docs(tree, "clusterqueue/") + docs(tree, "resourceclaimtemplate/") + docs(tree, "resourceflavor/")
    ):
        assert doc["metadata"]["labels"]["gputenancy.io/cluster"] == "prod"
    flavor = yaml.safe_load(tree["resourceflavor/h100.yaml"])
    assert flavor["spec"]["nodeLabels"]["cloud.google.com/gke-nodepool"] == "h100-pool"  # overlay patch


def test_lab_cluster_reference_setup(result: engine.Result) -> None:
    tree = dict(result.clusters["lab"].tree)
    (cq,) = docs(tree, "clusterqueue/")
    # two resource groups: the GPU on t4, CPU and memory on the node-agnostic default-flavor
    assert [g["coveredResources"] for g in cq["spec"]["resourceGroups"]] == [
        ["nvidia.com/gpu"],
        ["cpu", "memory"],
    ]
    gpu = [
        r for r in cq["spec"]["resourceGroups"][0]["flavors"][0]["resources"] if r["name"] == "nvidia.com/gpu"
    ]
    assert gpu == [{"name": "nvidia.com/gpu", "nominalQuota": "1"}]
    rct = yaml.safe_load(tree["resourceclaimtemplate/sandbox/single-gpu.yaml"])
    exactly = rct["spec"]["spec"]["devices"]["requests"][0]["exactly"]
    assert exactly == {"allocationMode": "ExactCount", "count": 1, "deviceClassName": "gpu.nvidia.com"}
    app = yaml.safe_load(tree["_hub/application/argocd/kueue-lab.yaml"])
    assert app["spec"]["source"]["targetRevision"] == "0.18.1"
    config = yaml.safe_load(
        app["spec"]["source"]["helm"]["valuesObject"]["managerConfig"]["controllerManagerConfigYaml"]
    )
    assert config["resources"]["deviceClassMappings"] == [
        {"name": "nvidia.com/gpu", "deviceClassNames": ["gpu.nvidia.com"]}
    ]
    assert config["waitForPodsReady"]["timeout"] == "10m"
    assert "featureGates" not in config


def test_chain_claim_template_to_mapping_to_cluster_queue(result: engine.Result) -> None:
    """Every RCT's DeviceClass is mapped, and the mapped resource is covered by the ClusterQueue that
    the LocalQueue of the RCT's namespace points to (clusters that share GPUs through classic HAMi
    have no claim templates)."""
    seen = 0
    for name, cluster in result.clusters.items():
        tree = dict(cluster.tree)
        config = _config(tree)
        mapped = {
            c: m["name"]
            for m in config["resources"].get("deviceClassMappings", [])
            for c in m["deviceClassNames"]
        }
        queues = {d["metadata"]["namespace"]: d["spec"]["clusterQueue"] for d in docs(tree, "localqueue/")}
        covered = {
            d["metadata"]["name"]: {r for g in d["spec"]["resourceGroups"] for r in g["coveredResources"]}
            for d in docs(tree, "clusterqueue/")
        }
        rcts = docs(tree, "resourceclaimtemplate/")
        seen += len(rcts)
        for rct in rcts:
            cls = rct["spec"]["spec"]["devices"]["requests"][0]["exactly"]["deviceClassName"]
            assert cls in mapped, (name, cls)
            assert mapped[cls] in covered[queues[rct["metadata"]["namespace"]]], (name, rct["metadata"])
    assert seen


def _config(tree: dict[str, bytes]) -> dict[str, Any]:
    (app,) = [
        yaml.safe_load(d) for p, d in tree.items() if p.startswith("_hub/application/") and "/kueue-" in p
    ]
    if "kustomize" in app["spec"]["source"]:  # install: manifests
        patch = yaml.safe_load(app["spec"]["source"]["kustomize"]["patches"][0]["patch"])
        loaded: dict[str, Any] = yaml.safe_load(patch["data"]["controller_manager_config.yaml"])
        return loaded
    loaded = yaml.safe_load(
        app["spec"]["source"]["helm"]["valuesObject"]["managerConfig"]["controllerManagerConfigYaml"]
    )
    return loaded


def test_prod_budgets_add_up_to_capacity(result: engine.Result) -> None:
    tree = dict(result.clusters["prod"].tree)
    totals: dict[tuple[str, str], int] = {}
    for cq in docs(tree, "clusterqueue/"):
        for flavor in cq["spec"]["resourceGroups"][0]["flavors"]:
            for r in flavor["resources"]:
                if r["name"].startswith("nvidia.com/"):
                    key = (flavor["name"], r["name"])
                    totals[key] = totals.get(key, 0) + int(r["nominalQuota"])
    assert totals[("h100", "nvidia.com/gpu")] == 16
    assert totals[("a100-mig", "nvidia.com/mig-1g.10gb")] == 28
    assert totals[("a100-mig", "nvidia.com/mig-3g.40gb")] == 8
    cohorts = {cq["spec"].get("cohortName") for cq in docs(tree, "clusterqueue/")}
    assert cohorts == {"research"}


def test_config_change_rolls_the_deployment_and_nothing_else_does(tmp_path: Path) -> None:
    root = trees.example(tmp_path, generated=False)

    def checksum() -> str:
        tree = dict(engine.run(root).clusters["prod"].tree)
        app = yaml.safe_load(tree["_hub/application/argocd/kueue-prod.yaml"])
        cm, dep = (yaml.safe_load(p["patch"]) for p in app["spec"]["source"]["kustomize"]["patches"])
        value: str = dep["spec"]["template"]["metadata"]["annotations"]["gputenancy.io/kueue-config-checksum"]
        assert value == hashlib.sha256(cm["data"]["controller_manager_config.yaml"].encode()).hexdigest()
        return value

    before = checksum()
    trees.edit(
        root,
        "tenants/speech.yaml",
        lambda d: d["budgets"]["default"][0]["devices"].update({"gpu.nvidia.com": 1}),
    )
    assert checksum() == before  # a budget change is not a configuration change
    trees.edit(
        root, "overlays/prod/cluster.yaml", lambda d: d["kueue"]["config"]["clientConnection"].update(qps=200)
    )
    assert checksum() != before


def test_claim_template_selectors_cannot_inject_yaml(tmp_path: Path) -> None:
    root = trees.example(tmp_path, generated=False)
    hostile = "x'\n  injected: true\nspec: {}\n# \"}"
    trees.edit(root, "tenants/speech.yaml", lambda d: d["claimTemplates"][0].update(selectors=[hostile]))
    model, _ = load_model(root)
    catalog = rules.effective_catalog(model)
    objects = render.render_tenant(
        next(t for t in model.tenants if t.name == "speech"), model.clusters["prod"], catalog
    )
    rct = next(o for o in objects if o.key.kind == "ResourceClaimTemplate" and o.key.name == "gpu")
    exactly = rct.body["spec"]["spec"]["devices"]["requests"][0]["exactly"]
    assert exactly["selectors"] == [{"cel": {"expression": hostile}}]
    assert set(rct.body) == {"apiVersion", "kind", "metadata", "spec"}


def test_missing_platform_layer_reference_is_a_clear_error(tmp_path: Path) -> None:
    root = trees.example(tmp_path, generated=False)
    (root / "overlays/lab/kustomization.yaml").write_text("resources:\n  - ../../base\n")
    with pytest.raises(PipelineError) as exc:
        model, _ = load_model(root)
        catalog = rules.effective_catalog(model)
        platform, _, _ = render.render_platform(model, model.clusters["lab"], catalog)
        build.build(root, "lab", platform, [])
    assert exc.value.findings[0].rule == "cluster-kustomization"


def test_kustomize_failure_shows_command_and_stderr(tmp_path: Path) -> None:
    root = trees.example(tmp_path, generated=False)
    (root / "overlays/lab/kustomization.yaml").write_text(
        "resources:\n  - ../../base\n  - _platform\n  - missing.yaml\n"
    )
    result = engine.run(root, cluster="lab")
    assert result.failed
    (finding,) = [f for f in result.findings if f.rule == "kustomize"]
    assert finding.path == "overlays/lab/kustomization.yaml"
    assert "kustomize overlays/lab" in finding.message and "missing.yaml" in finding.message
    assert "/tmp" not in finding.message


def test_examples_validate_against_upstream_schemas_with_zero_findings(shared: Path) -> None:
    """The committed examples against the Kueue CRDs (schema + CEL) of each cluster's Kueue version,
    Kueue's webhook and configuration rules and Kubernetes' resource.k8s.io/v1 schemas."""
    result = engine.run(REPO, schemas=shared)
    assert [f.format() for f in result.findings] == []
    assert not [n for n in result.notes if "skipped" in n]


def test_rendered_object_findings_point_back_to_the_tenant_line(tmp_path: Path, shared: Path) -> None:
    root = trees.example(tmp_path, generated=False)
    trees.edit(
        root,
        "tenants/speech.yaml",
        lambda d: d["claimTemplates"][0].update(selectors=["device.attributes[ == "]),
    )
    result = engine.run(root, schemas=shared, cluster="prod")
    (finding,) = [f for f in result.findings if f.rule == "dra-cel-selector"]
    assert finding.path == "tenants/speech.yaml"
    lines = (root / "tenants/speech.yaml").read_text().splitlines()
    assert "device.attributes[ == " in lines[finding.line - 1]


def test_mapping_in_the_configuration_conflicting_with_the_catalog(tmp_path: Path) -> None:
    root = trees.example(tmp_path, generated=False)
    trees.edit(
        root,
        "overlays/prod/cluster.yaml",
        lambda d: d["kueue"]["config"].update(
            resources={
                "deviceClassMappings": [{"name": "example.com/gpu", "deviceClassNames": ["gpu.nvidia.com"]}]
            }
        ),
    )
    result = engine.run(root, cluster="prod")
    (finding,) = [f for f in result.findings if f.rule == "mapping-conflict"]
    assert finding.path == "overlays/prod/cluster.yaml" and finding.line > 0
    assert (
        "base/platform.yaml:" in finding.message
        and "'example.com/gpu'" in finding.message
        and "'nvidia.com/gpu'" in finding.message
    )


def test_a_base_mapping_duplicating_the_catalogs_under_the_same_quota_name_is_reported(
    tmp_path: Path,
) -> None:
    """base/kueue-config.yaml maps gpu.nvidia.com to nvidia.com/gpu, exactly as the catalog does: the
    class would be mapped twice, so it is reported at the base file; a mapping of a class no tenant on
    the cluster uses is left alone."""
    root = trees.example(tmp_path, generated=False)

    def mapped(*classes: str) -> None:
        trees.edit(
            root,
            "base/kueue-config.yaml",
            lambda d: d.update(
                resources={
                    "deviceClassMappings": [{"name": "nvidia.com/gpu", "deviceClassNames": list(classes)}]
                }
            ),
        )

    mapped("gpu.nvidia.com")
    result = engine.run(root, cluster="prod", kustomize=False, cache=None)
    (finding,) = [f for f in result.findings if f.rule == "mapping-conflict"]
    assert finding.path == "base/kueue-config.yaml" and finding.line > 0
    assert "'gpu.nvidia.com' is mapped in the Kueue configuration as 'nvidia.com/gpu'" in finding.message
    assert "base/platform.yaml:" in finding.message and "as 'nvidia.com/gpu';" in finding.message
    mapped("other.example.com")
    result = engine.run(root, cluster="prod", kustomize=False, cache=None)
    assert [f for f in result.findings if f.rule == "mapping-conflict"] == []


def test_unknown_feature_gate_for_the_clusters_kueue_version(tmp_path: Path) -> None:
    root = trees.example(tmp_path, generated=False)
    trees.edit(
        root,
        "overlays/prod/cluster.yaml",
        lambda d: d["kueue"].update(featureGates={"DynamicResourceAllocation": True}),
    )
    result = engine.run(root, cluster="prod")
    (finding,) = [f for f in result.findings if f.rule == "kueue-feature-gate-unknown"]
    assert finding.path == "overlays/prod/cluster.yaml"
    lines = (root / "overlays/prod/cluster.yaml").read_text().splitlines()
    assert "DynamicResourceAllocation" in lines[finding.line - 1]
