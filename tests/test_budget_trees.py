"""Budget trees: cohorts that hold quota themselves (a department's budget shared by its teams), rendered as
Kueue Cohorts with `spec.resourceGroups` and `parentName`, counted by every check that sums budgets
(capacity, claim-admissible through the tree, `budgets`, `plan`) as Kueue's scheduler computes it."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import fleetrepo
import pytest
import trees
import yaml

from gputenancy import engine
from gputenancy.check.chain import admissible
from gputenancy.cli.app import main
from gputenancy.policy import quotatree

D = Decimal


def _tree(
    parents: dict[str, str],
    own: dict[str, tuple[int, int | None, int | None]],
    lent: dict[str, int],
) -> quotatree.Tree:
    key = ("f", "gpu")

    def q(v: int | None) -> Decimal | None:
        return D(v) if v is not None else None

    return quotatree.Tree(
        parents,
        {name: {key: (D(n), q(b), q(lend))} for name, (n, b, lend) in own.items()},
        {name: {key: D(v)} for name, v in lent.items()},
    )


KEY = ("f", "gpu")


def test_a_flat_cohort_reaches_what_the_others_lend() -> None:
    """Without cohort quota the tree is the flat cohort: nominal + what the others lend, under the
    queue's borrowingLimit."""
    tree = _tree({}, {}, {"c": 4 + 2 + 2})  # three queues lend 4, 2 and 2
    assert tree.reach("c", (D(8), D(4), D(4)), KEY) == D(12)  # 8 + min(4, 2 + 2 + ... ) : local 4 + 8
    assert tree.reach("c", (D(2), None, None), KEY) == D(8)  # lends all: 0 + 8
    assert tree.reach(None, (D(2), D(9), None), KEY) == D(2)  # no cohort: its nominal


def test_a_department_lends_its_own_quota_to_its_teams_and_keeps_what_its_lending_limit_keeps() -> None:
    # org <- dept (holds 4, lendingLimit 2) <- two teams lending 4 and 2; org <- a team lending 2
    tree = _tree({"dept": "org"}, {"dept": (4, None, 2)}, {"dept": 6, "org": 2})
    assert tree.subtree("dept", KEY) == D(10)
    assert tree.local("dept", KEY) == D(8)  # 10 - lendingLimit 2 stays in the department
    assert tree.subtree("org", KEY) == D(4)  # 2 from the team at the top + 2 the department lends
    assert tree.potential("dept", KEY) == D(12)
    # a team of the department: nominal 4, borrowingLimit 4, lends all 4
    assert tree.reach("dept", (D(4), D(4), D(4)), KEY) == D(8)
    # the team at the top: nominal 6, borrowingLimit 8, lendingLimit 2 keeps 4 to itself
    assert tree.reach("org", (D(6), D(8), D(2)), KEY) == D(8)


def test_a_cohort_borrowing_limit_bounds_its_whole_subtree() -> None:
    tree = _tree({"dept": "org"}, {"dept": (0, 1, None)}, {"dept": 2, "org": 10})
    assert tree.potential("dept", KEY) == D(3)  # its subtree 2 + borrowingLimit 1
    assert tree.reach("dept", (D(2), None, None), KEY) == D(3)


def test_three_levels_and_a_cycle() -> None:
    tree = _tree({"team": "dept", "dept": "org", "a": "b", "b": "a", "c": "a"}, {"org": (8, None, None)}, {})
    assert tree.potential("team", KEY) == D(8)  # the organisation's quota reaches the leaves
    assert tree.root("team") == "org" and tree.members("org") == ["org", "dept", "team"]
    assert tree.potential("a", KEY) is None and tree.potential("c", KEY) is None
    assert tree.reach("c", (D(1), None, None), KEY) is None


def _department(root: Path, *, lending: int | None = 2, vision_cohort: str = "perception") -> None:
    """perception (parent research) holds 4 H100s on prod; vision (8 -> 4) and speech join it."""
    gpus: dict[str, Any] = {"nominal": 4, **({"lendingLimit": lending} if lending is not None else {})}
    trees.edit(
        root,
        "base/platform.yaml",
        lambda d: d["cohorts"].append(
            {
                "name": "perception",
                "parent": "research",
                "budgets": {"clusters": {"prod": [{"flavor": "h100", "devices": {"gpu.nvidia.com": gpus}}]}},
            }
        ),
    )

    def vision(d: dict[str, Any]) -> None:
        d["cohort"] = vision_cohort
        d["budgets"]["default"][0]["devices"]["gpu.nvidia.com"]["nominal"] = 4

    trees.edit(root, "tenants/vision.yaml", vision)
    trees.edit(root, "tenants/speech.yaml", lambda d: d.update(cohort="perception"))


def test_a_department_renders_as_a_cohort_with_resource_groups_accepted_by_the_crds(
    tmp_path: Path, shared: Path
) -> None:
    root = trees.example(tmp_path, generated=False)
    _department(root)
    result = engine.run(root, schemas=shared)
    assert [f.format() for f in result.findings] == []
    assert not [n for n in result.notes if "skipped" in n]
    (cohort,) = [
        o.body
        for o in result.clusters["prod"].objects
        if o.body["kind"] == "Cohort" and o.body["metadata"]["name"] == "perception"
    ]
    assert cohort["spec"] == {
        "parentName": "research",
        "resourceGroups": [
            {
                "coveredResources": ["nvidia.com/gpu"],
                "flavors": [
                    {
                        "name": "h100",
                        "resources": [{"name": "nvidia.com/gpu", "nominalQuota": "4", "lendingLimit": "2"}],
                    }
                ],
            }
        ],
    }
    # the fixture's lab-pool on lab runs Kueue v0.18: the same shape passes its CRDs too
    (lab,) = [o.body for o in result.clusters["lab"].objects if o.body["metadata"]["name"] == "lab-pool"]
    assert lab["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["lendingLimit"] == "0"


def test_budgets_shows_the_tree_and_reach_as_kueue_computes_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = trees.example(tmp_path, generated=False)
    _department(root)
    assert main(["--root", str(root), "budgets", "--cluster", "prod", "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    (gpus,) = [p for p in doc["pools"] if (p["flavor"], p["resource"]) == ("h100", "nvidia.com/gpu")]
    assert gpus["nominal"] == "16"  # 6 + 2 + 4 of the teams and the department's own 4
    reach = {g["tenant"]: g["reach"] for g in gpus["grants"]}
    # vision 4 + borrowingLimit 4; nlp keeps 4 (lendingLimit 2) and reaches 4 more: 2 it lends and the 2
    # the department lends research; speech 2 + borrowingLimit 2
    assert reach == {"vision": "8", "nlp": "8", "speech": "4"}
    cohorts = {c["cohort"]: c for c in gpus["cohorts"]}
    assert cohorts["perception"] == {
        "cohort": "perception",
        "parent": "research",
        "members": ["speech", "vision"],
        "nominal": "4",
        "borrowingLimit": None,
        "lendingLimit": "2",
        "holds": "10",
        "reach": "12",
    }
    assert cohorts["research"]["members"] == ["cohort perception", "nlp"]
    assert main(["--root", str(root), "budgets", "--cluster", "prod"]) == 0
    text = capsys.readouterr().out
    assert (
        "    cohort perception (in research; speech, vision): nominal 4, lending 2; holds 10 with its members;"
        " reaches 12" in text
    )
    assert main(["--root", str(root), "budgets", "--cluster", "prod", "--format", "markdown"]) == 0
    assert "| perception | research | speech, vision | h100 | nvidia.com/gpu | 4 | - | 2 | 10 | 12 |" in (
        capsys.readouterr().out
    )


def test_capacity_counts_the_quota_a_cohort_holds(tmp_path: Path) -> None:
    root = trees.example(tmp_path, generated=False)
    _department(root)
    trees.edit(
        root,
        "tenants/vision.yaml",
        lambda d: d["budgets"]["default"][0]["devices"]["gpu.nvidia.com"].update(nominal=8),
    )
    result = engine.run(root, cluster="prod")
    found = [f for f in result.findings if f.rule == "capacity"]
    at_cohort = [f for f in found if f.path == "base/platform.yaml"]
    assert at_cohort and "cohort perception's nominal 4 nvidia.com/gpu" in at_cohort[0].message
    (at_capacity,) = [f for f in found if f.path == "overlays/prod/cluster.yaml"]
    assert "20 exceeds capacity 16" in at_capacity.message and "cohort perception 4" in at_capacity.message


def test_claim_admissible_follows_the_tree(tmp_path: Path) -> None:
    """vision's 8-GPU template: vision (4, borrowingLimit 4) sits in research; a department beside it
    keeps its quota (lendingLimit 0), so research holds only 6 and Kueue's maximum capacity is 6.
    Letting the department lend 4 makes it 8."""
    root = trees.example(tmp_path, generated=False)
    _department(root, lending=0, vision_cohort="research")
    result = engine.run(root, cluster="prod")
    (finding,) = [f for f in result.findings if f.rule == "claim-admissible"]
    assert "h100-x8" in finding.message and "maximum capacity (6)" in finding.message
    trees.edit(
        root,
        "base/platform.yaml",
        lambda d: d["cohorts"][-1]["budgets"]["clusters"]["prod"][0]["devices"].update(
            {"gpu.nvidia.com": {"nominal": 4, "lendingLimit": 4}}
        ),
    )
    result = engine.run(root, cluster="prod")
    assert [f.format() for f in result.findings if f.rule == "claim-admissible"] == []


@pytest.mark.parametrize(
    ("budget", "rule", "words"),
    [
        ({"staging": [{"flavor": "h100", "devices": {"gpu.nvidia.com": 1}}]}, "cohort-budget", "no overlay"),
        ({"lab": [{"flavor": "h100", "devices": {"gpu.nvidia.com": 1}}]}, "cohort-budget", "does not offer"),
        ({"prod": [{"flavor": "h10", "devices": {"gpu.nvidia.com": 1}}]}, "cohort-budget", "not defined"),
        (
            {"prod": [{"flavor": "h100", "devices": {"gpu.nvidia.co": 1}}]},
            "cohort-budget",
            "not in the catalog",
        ),
        (
            {
                "prod": [
                    {"flavor": "h100", "devices": {"gpu.nvidia.com": 1}, "resources": {"nvidia.com/gpu": 1}}
                ]
            },
            "cohort-budget",
            "already budgeted",
        ),
        (
            {"prod": [{"flavor": "h100", "devices": {"gpu.nvidia.com": {"nominal": 0, "lendingLimit": 0}}}]},
            "cohort-limits",
            "needs a parent",
        ),
    ],
)
def test_a_cohort_budget_is_checked_at_its_line(
    tmp_path: Path, budget: dict[str, Any], rule: str, words: str
) -> None:
    root = trees.example(tmp_path, generated=False)
    trees.edit(
        root,
        "base/platform.yaml",
        lambda d: d["cohorts"].append({"name": "dept", "budgets": {"clusters": budget}}),
    )
    findings = [f for f in engine.run(root).findings if f.rule == rule]
    assert findings and all(f.path == "base/platform.yaml" for f in findings), findings
    assert words in findings[0].message
    text = (root / "base/platform.yaml").read_text().splitlines()
    assert findings[0].line > 0 and text[findings[0].line - 1].strip()


def test_the_plan_shows_the_tree_and_the_teams_it_affects(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = trees.example(tmp_path, generated=False)
    _department(root)
    assert main(["--root", str(root), "render"]) == 0
    trees.committed(root).close()
    trees.edit(
        root,
        "base/platform.yaml",
        lambda d: d["cohorts"][-1]["budgets"]["clusters"]["prod"][0]["devices"].update(
            {"gpu.nvidia.com": {"nominal": 4, "lendingLimit": 4}}
        ),
    )
    capsys.readouterr()
    main(["--root", str(root), "plan"])
    out = capsys.readouterr().out
    assert "budget tree on prod" in out
    assert "cohort research h100 nvidia.com/gpu: nominal 0, holds 4 → 6, reaches 4 → 6" in out
    # nlp's file is untouched: it reaches 2 more through the tree
    assert "nlp h100 nvidia.com/gpu" in out.split("affected on prod")[1]


def test_the_fixture_department_on_lab(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = trees.example(tmp_path)
    cohort = yaml.safe_load((root / "generated/lab/cohort/lab-pool.yaml").read_text())
    assert cohort["spec"]["parentName"] == "research"
    assert main(["--root", str(root), "budgets", "--cluster", "lab", "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    (gpus,) = [p for p in doc["pools"] if p["resource"] == "nvidia.com/gpu"]
    assert (gpus["nominal"], gpus["capacity"]) == ("2", "2")
    assert [g["reach"] for g in gpus["grants"]] == ["2"]


@pytest.mark.parametrize("lending", [None, 0, 2, 9])
def test_the_built_objects_and_budgets_reach_the_same(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], lending: int | None
) -> None:
    """claim-admissible reads the built Cohorts and ClusterQueues, budgets the inputs: for every grant
    both give the same reach (one model of Kueue's tree, two sources)."""
    root = trees.example(tmp_path, generated=False)
    _department(root, lending=lending)
    result = engine.run(root, cluster="prod")
    built = [
        SimpleNamespace(name=o.body["metadata"]["name"], body=o.body) for o in result.clusters["prod"].objects
    ]
    queues = {b.name: b for b in built if b.body["kind"] == "ClusterQueue"}
    pool = admissible.Pool(
        [b for b in built if b.body["kind"] == "Cohort"],
        (admissible.lent(q.body["spec"]) for q in queues.values()),
    )
    assert main(["--root", str(root), "budgets", "--cluster", "prod", "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    compared = 0
    for p in doc["pools"]:
        for g in p["grants"]:
            cap = pool.max_capacity(queues[g["tenant"]], p["flavor"], p["resource"])  # type: ignore[arg-type]
            assert cap is not None and cap.canonical() == g["reach"], (g, cap)
            compared += 1
    assert compared > 20


def test_the_report_page_shows_the_tree(tmp_path: Path) -> None:
    root = trees.example(tmp_path, generated=False)
    _department(root)
    out = tmp_path / "report.html"
    assert main(["--root", str(root), "report", "--cluster", "prod", "--output", str(out)]) == 0
    page = out.read_text()
    tree = page.split('<table class="budget-tree">', 1)[1].split("</table>", 1)[0]
    assert "<td>perception</td><td>research</td><td>speech, vision</td><td>h100 nvidia.com/gpu</td>" in tree
    assert "<td>4</td><td>10</td><td>12</td>" in tree


def test_a_cohort_holding_quota_on_workers_holds_their_sum_on_the_manager(tmp_path: Path) -> None:
    """A MultiKueue manager admits against its own Cohort: the workers' cohort quota is summed there,
    as each tenant's queue is."""
    root = fleetrepo.write(tmp_path / "repo")
    held = [{"flavor": "h100", "devices": {fleetrepo.GPU: 2}}]
    trees.edit(
        root,
        "base/platform.yaml",
        lambda d: d["cohorts"][0].update(budgets={"clusters": {"w1": held}}),
    )
    result = engine.run(root)
    assert [f.format() for f in result.findings if f.severity.name == "ERROR"] == []
    quotas = {}
    for name in ("mgr", "w1"):
        (cohort,) = [o.body for o in result.clusters[name].objects if o.body["kind"] == "Cohort"]
        quotas[name] = cohort["spec"]["resourceGroups"][0]["flavors"]
    assert (
        quotas["mgr"]
        == quotas["w1"]
        == [{"name": "h100", "resources": [{"name": "nvidia.com/gpu", "nominalQuota": "2"}]}]
    )
