"""The deviceClassMappings merge and the claim chain, cluster by cluster, as input -> output or finding.

The Kueue Configuration's mappings come from two places (base/kueue-config.yaml and the device-class
catalog): a name both use is refused as Kueue refuses it, and the merged list is in name order
whatever each place lists. A tenant's budgets may differ between clusters: each cluster's ClusterQueue
covers that cluster's budget, and a claim is refused on the cluster whose budget does not cover it.
After kustomize, a claim whose ClusterQueue does not cover its resource is refused. Small
repositories under tmp_path, the real kustomize.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import repokit as s
import smallrepo
import yaml
from test_postbuild import refused, validate

from gputenancy import engine

MIG_RESOURCE = "nvidia.com/mig-1g.10gb"


def _with_mappings(*mappings: dict[str, Any]) -> dict[str, Any]:
    config = dict(s.BASE_CONFIG)
    config["resources"] = {"deviceClassMappings": [dict(m) for m in mappings]}
    return config


def _built(result: engine.Result, cluster: str) -> list[dict[str, Any]]:
    return [yaml.safe_load(data) for data in result.clusters[cluster].tree.values()]


def test_a_mapping_name_used_by_the_base_configuration_and_the_catalog_is_refused(tmp_path: Path) -> None:
    """base/kueue-config.yaml maps another class under nvidia.com/gpu, the quota resource the catalog
    maps gpu.nvidia.com to: the merged Configuration would name nvidia.com/gpu twice, which Kueue
    refuses at start-up."""
    config = _with_mappings({"name": "nvidia.com/gpu", "deviceClassNames": ["other.example.com"]})
    root = s.write(tmp_path, [s.tenant("a")], kueue_config=config)
    result = engine.run(root, cache=None)
    assert result.failed
    assert [f.message for f in result.findings if "Duplicate value" in f.message] == [
        "resources.deviceClassMappings[1].name: Duplicate value: 'nvidia.com/gpu'"
    ]


@pytest.mark.parametrize("base_order", [("aaa", "zzz"), ("zzz", "aaa")])
def test_merged_mappings_are_in_name_order_whatever_their_source(
    tmp_path: Path, base_order: tuple[str, str]
) -> None:
    """Mappings of the base Configuration before and after the catalog's (nvidia.com/gpu) by name, listed
    in either order there: the delivered Configuration lists all three by name."""
    config = _with_mappings(
        *({"name": f"{n}.example.com/x", "deviceClassNames": [f"{n}.example.com"]} for n in base_order)
    )
    root = s.write(tmp_path, [s.tenant("a")], kueue_config=config)
    result = engine.run(root, cache=None)
    assert not result.failed, [f.format() for f in result.findings]
    mappings = s.configuration(_built(result, "c1"))["resources"]["deviceClassMappings"]
    assert [(m["name"], m["deviceClassNames"]) for m in mappings] == [
        ("aaa.example.com/x", ["aaa.example.com"]),
        ("nvidia.com/gpu", [s.GPU]),
        ("zzz.example.com/x", ["zzz.example.com"]),
    ]


def _two_clusters(tmp_path: Path, tenant: dict[str, Any]) -> Path:
    capacity = [{"flavor": "h100", "devices": {s.GPU: 8, s.MIG: 8}, "resources": s.POD_CAPACITY}]
    return s.write(tmp_path, [tenant], [s.cluster("c1", capacity), s.cluster("c2", capacity)])


def _budget(devices: dict[str, int]) -> list[dict[str, Any]]:
    return [{"flavor": "h100", "devices": devices, "resources": s.POD}]


def test_each_cluster_queue_covers_that_cluster_s_budget(tmp_path: Path) -> None:
    """Default budget: GPUs only; on c2: GPUs and MIG slices. c2's ClusterQueue covers and quotas the
    slices, c1's does not, and a claim on GPUs reaches a covered quota on both."""
    tenant = s.tenant(
        "a",
        _budget({s.GPU: 1}),
        clusters=["c1", "c2"],
        claimTemplates=[{"name": "one", "deviceClass": s.GPU}],
    )
    tenant["budgets"]["clusters"] = {"c2": _budget({s.GPU: 1, s.MIG: 2})}
    result = engine.run(_two_clusters(tmp_path, tenant), cache=None)
    assert not result.failed, [f.format() for f in result.findings]

    def quotas(cluster: str) -> dict[str, Any]:
        (cq,) = [b for b in _built(result, cluster) if b["kind"] == "ClusterQueue"]
        return {
            r["name"]: r["nominalQuota"]
            for g in cq["spec"]["resourceGroups"]
            for f in g["flavors"]
            for r in f["resources"]
        }

    assert MIG_RESOURCE not in quotas("c1") and quotas("c1")["nvidia.com/gpu"] == "1"
    assert quotas("c2")[MIG_RESOURCE] == "2" and quotas("c2")["nvidia.com/gpu"] == "1"


@pytest.mark.parametrize(("default", "override", "refused_on"), [("gpu", "mig", "c2"), ("mig", "gpu", "c1")])
def test_a_claim_is_refused_on_the_cluster_whose_budget_does_not_cover_it(
    tmp_path: Path, default: str, override: str, refused_on: str
) -> None:
    """A claim on GPUs, a budget of GPUs on one cluster and of MIG slices only on the other: refused by
    claim-coverage on the second, and only there."""
    classes = {"gpu": s.GPU, "mig": s.MIG}
    tenant = s.tenant(
        "a",
        _budget({classes[default]: 1}),
        clusters=["c1", "c2"],
        claimTemplates=[{"name": "one", "deviceClass": s.GPU}],
    )
    tenant["budgets"]["clusters"] = {"c2": _budget({classes[override]: 1})}
    result = engine.run(_two_clusters(tmp_path, tenant), cache=None)
    refused = [f.message for f in result.findings if f.rule == "claim-coverage"]
    assert len(refused) == 1 and refused[0].startswith(
        f"claim template 'one' consumes nvidia.com/gpu (device class {s.GPU}), which tenant 'a' has no"
        f" budget for on cluster {refused_on!r}"
    ), refused


def test_a_built_cluster_queue_that_does_not_cover_the_claimed_resource_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Tenant a budgets GPUs only (b uses slices, so they are mapped and their DeviceClass rendered); the
    tenant Component turns a's GPU claim into a slice claim: every link holds but the last, a's
    ClusterQueue covering the resource."""
    a = smallrepo.TENANT.format(name="a").replace("        slice.example.com: 2\n", "")
    a = a[: a.index("  - name: slice-x1")]
    tenants = {"a": a, "b": smallrepo.TENANT.format(name="b")}
    root = smallrepo.make(
        tmp_path,
        tenants=tenants,
        component="""\
        patches:
          - target: {kind: ResourceClaimTemplate, name: gpu-x2, namespace: a-ns}
            patch: |-
              - op: replace
                path: /spec/spec/devices/requests/0/exactly/deviceClassName
                value: slice.example.com
        """,
    )
    hit = refused(root, capsys, "built-claim-chain", "tenants/a.yaml", "deviceClass: gpu.example.com")
    assert hit.message.startswith("ResourceClaimTemplate a-ns/gpu-x2 on cluster 'c1': ClusterQueue 'a'")
    assert "does not cover 'example.com/slice' (DeviceClass 'slice.example.com')" in hit.message
    chain = [f for f in validate(root, capsys)[1] if f.rule == "built-claim-chain"]
    assert len(chain) == 1  # the class exists and is mapped: only the coverage link is broken
