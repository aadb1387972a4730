"""Several resource groups per budget (`resourceGroup` on each flavor budget): GPUs with their flavors in
one group, CPU and memory on a node-agnostic flavor in another, rendered as Kueue resource groups and
held to Kueue's group rules at the tenant line."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import trees
import yaml

from gputenancy import engine


def test_the_fixture_sandbox_queue_has_two_groups_accepted_by_kueue_v018(
    tmp_path: Path, shared: Path
) -> None:
    root = trees.example(tmp_path)
    cq = yaml.safe_load((root / "generated/lab/clusterqueue/sandbox.yaml").read_text())
    assert [
        (g["coveredResources"], [f["name"] for f in g["flavors"]]) for g in cq["spec"]["resourceGroups"]
    ] == [
        (["nvidia.com/gpu"], ["t4"]),
        (["cpu", "memory"], ["default-flavor"]),
    ]
    result = engine.run(root, schemas=shared, cluster="lab")  # Kueue v0.18.1's CRDs and webhooks
    assert [f.format() for f in result.findings] == []
    assert not [n for n in result.notes if "skipped" in n]


def _sandbox(root: Path, change: Any) -> None:
    trees.edit(root, "tenants/sandbox.yaml", lambda d: change(d["budgets"]["default"]))


def test_a_resource_in_two_groups_is_refused_at_its_line(tmp_path: Path) -> None:
    root = trees.example(tmp_path, generated=False)
    _sandbox(root, lambda b: b[0].update(resources={"cpu": 1}))
    found = sorted(
        {f for f in engine.run(root, cluster="lab").findings if f.rule == "budget-resource-groups"}
    )
    text = (root / "tenants/sandbox.yaml").read_text().splitlines()
    # at both lines: the cpu added to the GPU flavor and the cpu of the CPU group
    assert [text[f.line - 1].strip() for f in found] == ["cpu: 1", "cpu: 8"]
    assert all(f.path == "tenants/sandbox.yaml" for f in found)
    assert "cpu is budgeted in resource group 'gpu' (flavor 't4') and in 'cpu'" in found[0].message


def test_a_group_named_on_some_flavor_budgets_only_is_refused(tmp_path: Path) -> None:
    root = trees.example(tmp_path, generated=False)
    _sandbox(root, lambda b: b[1].pop("resourceGroup"))
    (finding,) = {f for f in engine.run(root, cluster="lab").findings if f.rule == "budget-resource-groups"}
    assert "names no resourceGroup" in finding.message and "'default-flavor'" in finding.message


def test_more_groups_than_kueue_allows(tmp_path: Path) -> None:
    root = trees.example(tmp_path, generated=False)
    extra = [
        {"flavor": f"extra-{i}", "resourceGroup": f"g{i}", "resources": {f"example.com/r{i}": 1}}
        for i in range(15)
    ]
    _sandbox(root, lambda b: b.extend(extra))
    found = [f for f in engine.run(root, cluster="lab").findings if f.rule == "budget-resource-groups"]
    assert [f.message for f in found if "17 resource groups, Kueue allows at most 16" in f.message]


def test_claim_admissible_judges_each_group_on_its_own(tmp_path: Path) -> None:
    """The GPU group holds the claim's device; the pod's CPU and memory are charged to the other group,
    whose flavor here holds no CPU: Kueue's reason names that flavor."""
    root = trees.example(tmp_path, generated=False)
    _sandbox(root, lambda b: b[1]["resources"].update(cpu=0))
    (finding,) = [f for f in engine.run(root, cluster="lab").findings if f.rule == "claim-admissible"]
    assert "insufficient quota for cpu in flavor default-flavor" in finding.message
    assert "nvidia.com/gpu" not in finding.message.split("Kueue says")[1]


def test_a_cohort_budget_renders_its_groups_too(tmp_path: Path, shared: Path) -> None:
    root = trees.example(tmp_path, generated=False)

    def lab_pool(d: dict[str, Any]) -> None:
        (co,) = [c for c in d["cohorts"] if c["name"] == "lab-pool"]
        co["budgets"]["clusters"]["lab"][0]["resourceGroup"] = "gpu"
        co["budgets"]["clusters"]["lab"].append(
            {"flavor": "default-flavor", "resourceGroup": "cpu", "resources": {"cpu": 0}}
        )

    trees.edit(root, "base/platform.yaml", lab_pool)
    result = engine.run(root, schemas=shared, cluster="lab")
    assert [f.format() for f in result.findings] == []
    (cohort,) = [o.body for o in result.clusters["lab"].objects if o.body["metadata"]["name"] == "lab-pool"]
    assert [g["coveredResources"] for g in cohort["spec"]["resourceGroups"]] == [["nvidia.com/gpu"], ["cpu"]]
