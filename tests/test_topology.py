"""Topology Aware Scheduling: Topology objects per cluster, flavors bound to them per cluster, Kueue's
requirements checked at the input line, and the plan naming changes Kueue's CRDs refuse in place."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import trees

from gputenancy import engine
from gputenancy.cli.app import main
from gputenancy.deliver import plan

NVLINK = {
    "name": "h100-nvlink",
    "levels": [{"nodeLabel": "nvidia.com/gpu.clique"}, {"nodeLabel": "kubernetes.io/hostname"}],
}


def _bind(root: Path, cluster: str, flavor: str, topology: dict[str, Any] = NVLINK) -> None:
    def change(d: dict[str, Any]) -> None:
        d["topologies"] = [topology]
        (cap,) = [c for c in d["capacity"] if c["flavor"] == flavor]
        cap["topologyName"] = topology["name"]

    trees.edit(root, f"overlays/{cluster}/cluster.yaml", change)


def test_a_tas_flavor_renders_with_its_topology_and_every_supported_version_accepts_it(
    tmp_path: Path, shared: Path
) -> None:
    root = trees.example(tmp_path, generated=False)
    _bind(root, "prod", "h100")
    _bind(root, "lab", "t4", {"name": "lab", "levels": [{"nodeLabel": "kubernetes.io/hostname"}]})  # v0.18
    result = engine.run(root, schemas=shared)
    assert [f.format() for f in result.findings] == []
    assert not [n for n in result.notes if "skipped" in n]
    prod = {(o.body["kind"], o.body["metadata"]["name"]): o.body for o in result.clusters["prod"].objects}
    assert prod[("Topology", "h100-nvlink")]["spec"] == {
        "levels": [{"nodeLabel": "nvidia.com/gpu.clique"}, {"nodeLabel": "kubernetes.io/hostname"}]
    }
    assert prod[("ResourceFlavor", "h100")]["spec"]["topologyName"] == "h100-nvlink"
    assert "topologyName" not in prod[("ResourceFlavor", "a100-mig")]["spec"]  # bound per cluster and flavor


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


def test_the_plan_names_a_change_kueue_refuses_in_place(tmp_path: Path) -> None:
    root = trees.example(tmp_path, generated=False)
    _bind(root, "prod", "h100")
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
    assert "spec.levels is immutable" in found["Topology h100-nvlink"]
    assert "spec.nodeLabels is immutable once topologyName is set" in found["ResourceFlavor h100"]
    assert (
        "resource-in-use finalizer" in found["ResourceFlavor h100"]
        and "Argo CD" in found["ResourceFlavor h100"]
    )
