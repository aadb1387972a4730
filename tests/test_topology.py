"""Topology Aware Scheduling: Topology objects per cluster, flavors bound to them per cluster, Kueue's
requirements checked at the input line, and the plan naming changes Kueue's CRDs refuse in place."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import fleetrepo
import pytest
import trees

from gputenancy import engine
from gputenancy.cli.app import main
from gputenancy.deliver import plan

NVLINK = {
    "name": "h100-nvlink",
    "levels": [{"nodeLabel": "nvidia.com/gpu.clique"}, {"nodeLabel": "kubernetes.io/hostname"}],
}


def _bind(root: Path, cluster: str, *flavors: str, topology: dict[str, Any] = NVLINK) -> None:
    def change(d: dict[str, Any]) -> None:
        d["topologies"] = [topology]
        for cap in d["capacity"]:
            if cap["flavor"] in flavors:
                cap["topologyName"] = topology["name"]

    trees.edit(root, f"overlays/{cluster}/cluster.yaml", change)


def test_a_tas_flavor_renders_with_its_topology_and_every_supported_version_accepts_it(
    tmp_path: Path, shared: Path
) -> None:
    root = trees.example(tmp_path, generated=False)
    _bind(root, "prod", "h100", "a100-mig")  # every flavor of prod's queues: TAS-only queues
    _bind(root, "lab", "t4", topology={"name": "lab", "levels": [{"nodeLabel": "kubernetes.io/hostname"}]})
    result = engine.run(root, schemas=shared)
    # lab's sandbox keeps CPU on default-flavor, which has no nodeLabels and so cannot be bound
    assert [(f.path, f.rule) for f in result.findings] == [("tenants/sandbox.yaml", "topology-mixed-queue")]
    assert not [n for n in result.notes if "skipped" in n]
    prod = {(o.body["kind"], o.body["metadata"]["name"]): o.body for o in result.clusters["prod"].objects}
    assert prod[("Topology", "h100-nvlink")]["spec"] == {
        "levels": [{"nodeLabel": "nvidia.com/gpu.clique"}, {"nodeLabel": "kubernetes.io/hostname"}]
    }
    assert prod[("ResourceFlavor", "h100")]["spec"]["topologyName"] == "h100-nvlink"
    assert prod[("ResourceFlavor", "a100-mig")]["spec"]["topologyName"] == "h100-nvlink"
    lab = {(o.body["kind"], o.body["metadata"]["name"]): o.body for o in result.clusters["lab"].objects}
    assert "topologyName" not in lab.get(("ResourceFlavor", "h100"), {"spec": {}})["spec"]  # per cluster


@pytest.mark.parametrize(
    ("topology", "capacity", "gates", "words"),
    [
        (NVLINK, "h100-nvlinc", {}, "did you mean 'h100-nvlink'"),
        (
            {
                "name": "h100-nvlink",
                "levels": [{"nodeLabel": "kubernetes.io/hostname"}, {"nodeLabel": "rack"}],
            },
            "h100-nvlink",
            {},
            "only be the last",
        ),
        (NVLINK, "h100-nvlink", {"TopologyAwareScheduling": False}, "feature gate is off"),
    ],
)
def test_what_kueue_needs_for_tas_is_checked_at_the_overlay(
    tmp_path: Path, topology: dict[str, Any], capacity: str, gates: dict[str, bool], words: str
) -> None:
    root = trees.example(tmp_path, generated=False)

    def change(d: dict[str, Any]) -> None:
        d["topologies"] = [topology]
        d["capacity"][0]["topologyName"] = capacity
        if gates:
            d["kueue"]["featureGates"] = gates

    trees.edit(root, "overlays/prod/cluster.yaml", change)
    found = [f for f in engine.check_only(root)[1] if f.rule == "topology"]
    assert found and found[0].path == "overlays/prod/cluster.yaml" and words in found[0].message, found


def test_a_queue_mixing_tas_flavors_with_others_is_warned_at_the_tenants_budget(tmp_path: Path) -> None:
    root = trees.example(tmp_path, generated=False)
    _bind(root, "prod", "h100")  # a100-mig stays unbound: nlp, speech and vision hold both on prod
    found = [f for f in engine.check_only(root)[1] if f.rule == "topology-mixed-queue"]
    assert {f.path for f in found} == {"tenants/nlp.yaml", "tenants/speech.yaml", "tenants/vision.yaml"}, (
        found
    )
    (at,) = [f for f in found if f.path == "tenants/nlp.yaml"]
    line = (root / "tenants/nlp.yaml").read_text().splitlines()[at.line - 1]
    assert "- flavor: a100-mig" in line, line
    assert at.severity.name == "WARNING"
    assert 'Flavor "h100" supports only TopologyAwareScheduling' in at.message
    assert "capacity[].topologyName in overlays/prod/cluster.yaml" in at.message

    _bind(root, "prod", "h100", "a100-mig")  # the fix: one Topology for both pools
    assert [f for f in engine.check_only(root)[1] if f.rule == "topology-mixed-queue"] == []


def test_the_plan_names_a_change_kueue_refuses_in_place(tmp_path: Path) -> None:
    root = trees.example(tmp_path, generated=False)
    _bind(root, "prod", "h100", "a100-mig")
    engine_result = engine.run(root)
    assert not engine_result.failed
    assert main(["--root", str(root), "render"]) == 0
    trees.committed(root).close()
    levels = [{"nodeLabel": "example.com/rack"}, {"nodeLabel": "kubernetes.io/hostname"}]
    trees.edit(root, "overlays/prod/cluster.yaml", lambda d: d["topologies"][0].update(levels=levels))
    trees.edit(
        root,
        "base/platform.yaml",
        lambda d: [
            f["nodeLabels"].update({"example.com/pool": "a"}) for f in d["flavors"] if f["name"] == "h100"
        ],
    )
    _, made = plan.make(root, cluster="prod", against=None, schemas=None, allow_delete=False)
    assert made is not None
    found = {r.subject: r.message for r in made.risks if r.risk == "immutable-field"}
    assert set(found) == {"Topology h100-nvlink", "ResourceFlavor h100"}, found
    topo, flavor = found["Topology h100-nvlink"], found["ResourceFlavor h100"]
    assert (
        'Topology h100-nvlink: spec.levels cannot change in place (Kueue\'s CRD: "field is immutable")'
        in topo
    )
    assert "spec.nodeLabels cannot change in place once topologyName is set" in flavor
    for message, wave in ((topo, "-3"), (flavor, "-2")):
        assert f"fails at sync wave {wave}" in message, message
        assert "Replace=true is refused the same way" in message
        assert "hangs on Kueue's kueue.x-k8s.io/resource-in-use finalizer" in message
        assert "workloads already admitted keep running" in message
    assert "while a ClusterQueue names the flavor" in flavor and "a ResourceFlavor is bound to it" in topo


def test_the_plan_notes_a_flavor_becoming_a_tas_flavor(tmp_path: Path) -> None:
    root = trees.example(tmp_path, generated=False)
    assert main(["--root", str(root), "render"]) == 0
    trees.committed(root).close()
    _bind(root, "prod", "h100", "a100-mig")
    _, made = plan.make(root, cluster="prod", against=None, schemas=None, allow_delete=False)
    assert made is not None
    found = {r.subject: r.message for r in made.risks if r.risk == "topology-set"}
    assert set(found) == {"ResourceFlavor h100", "ResourceFlavor a100-mig"}, found
    assert "becomes a TAS flavor (topologyName: h100-nvlink)" in found["ResourceFlavor h100"]
    assert "not by their ResourceClaims' devices" in found["ResourceFlavor h100"]
    assert not [r for r in made.risks if r.risk == "immutable-field"]
    (prod,) = [c for c in made.clusters if c.name == "prod"]
    assert [p for p in prod.prerequisites if "Topology" in p] == [
        "Topology h100-nvlink is new on prod: label the nodes of flavor(s) h100, a100-mig with "
        "nvidia.com/gpu.clique before Argo CD syncs (Kueue places a TAS flavor's pods only on its nodes "
        "that carry every level's label)"
    ]


RACKS = {
    "name": "racks",
    "levels": [{"nodeLabel": "topology.acme.io/rack"}, {"nodeLabel": "kubernetes.io/hostname"}],
}


def _fleet(root: Path, w2_topology: dict[str, Any] | None) -> Path:
    """A fleet whose two workers both offer h100; w1 binds it to racks, w2 to `w2_topology` (None: unbound)."""
    w1 = fleetrepo.worker("w1", flavor="h100", topologies=[RACKS])
    w1["capacity"][0]["topologyName"] = "racks"
    w2 = fleetrepo.worker("w2", flavor="h100")
    if w2_topology is not None:
        w2["topologies"] = [w2_topology]
        w2["capacity"][0]["topologyName"] = w2_topology["name"]
    both = {"w1": "h100", "w2": "h100"}
    teams = [fleetrepo.tenant("nlp", {"w1": 4, "w2": 2}, flavor_of=both, namespaces=["nlp-train"])]
    return fleetrepo.write(root, clusters=[fleetrepo.manager(), w1, w2], tenants=teams)


def test_a_manager_binds_a_flavor_its_workers_bind_alike(tmp_path: Path) -> None:
    """Kueue on the manager assigns flavors first: it needs the TAS flavor too, with the workers' levels."""
    alike = {"name": "rows", "levels": RACKS["levels"]}  # another name, the same levels
    root = _fleet(tmp_path / "alike", alike)
    result = engine.run(root)
    assert [f.format() for f in result.findings if f.rule.startswith("topology")] == []
    mgr = {(o.body["kind"], o.body["metadata"]["name"]): o.body for o in result.clusters["mgr"].objects}
    assert mgr[("ResourceFlavor", "h100")]["spec"]["topologyName"] == "racks"
    assert mgr[("Topology", "racks")]["spec"]["levels"] == RACKS["levels"]


@pytest.mark.parametrize(
    "w2_topology",
    [None, {"name": "racks", "levels": [{"nodeLabel": "kubernetes.io/hostname"}]}],
    ids=["unbound", "other-levels"],
)
def test_a_worker_tas_flavor_the_manager_cannot_bind_is_warned(
    tmp_path: Path, w2_topology: dict[str, Any] | None
) -> None:
    root = _fleet(tmp_path, w2_topology)
    found = [f for f in engine.check_only(root)[1] if f.rule == "topology-fleet"]
    (at,) = [f for f in found if f.path == "overlays/w1/cluster.yaml"]
    line = (root / at.path).read_text().splitlines()[at.line - 1]
    assert "topologyName: racks" in line, line
    assert at.severity.name == "WARNING"
    assert 'Flavor "h100" does not support TopologyAwareScheduling' in at.message
    assert "manager 'mgr'" in at.message
    result = engine.run(root)
    mgr = {(o.body["kind"], o.body["metadata"]["name"]): o.body for o in result.clusters["mgr"].objects}
    assert "topologyName" not in mgr[("ResourceFlavor", "h100")]["spec"]


def test_a_patch_renaming_the_topology_is_refused_after_the_build(tmp_path: Path) -> None:
    root = trees.example(tmp_path, generated=False)
    _bind(root, "prod", "h100", "a100-mig")
    rename = (
        "patches:\n  - target:\n      kind: Topology\n    patch: |-\n"
        "      - op: replace\n        path: /metadata/name\n        value: rows\n"
    )
    trees.replace(root, "overlays/prod/kustomization.yaml", "patches:\n", rename)
    found = [f for f in engine.run(root).findings if f.rule == "built-topology-reference"]
    assert {f.path for f in found} == {"overlays/prod/cluster.yaml"}, [f.format() for f in found]
    lines = (root / "overlays/prod/cluster.yaml").read_text().splitlines()
    assert sorted(f.line for f in found) == [i + 1 for i, t in enumerate(lines) if "topologyName:" in t]
    assert all("built by overlays/prod/kustomization.yaml:9 (patches)" in f.message for f in found), found
    assert {f.message.split("'")[1] for f in found} == {"h100", "a100-mig"}
