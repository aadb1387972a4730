"""Rules of the trust boundary: documented with a passing and a failing example, and the model rules
(cohort cycles, reserved namespaces) run through the command line on trees built here."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import trees

from gputenancy.cli import app as cli
from gputenancy.cli.app import main
from gputenancy.policy import boundary, rules

PACKAGE = Path(cli.__file__).parent.parent
NEW = ["cohort-cycle", "namespace-reserved"]


def test_every_boundary_rule_is_documented_with_examples(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["rules"]) == 0
    out = capsys.readouterr().out
    documented = set(re.findall(r"^  ([a-z0-9-]+)  ", out, flags=re.M))  # the listing: one id a line
    emitted: set[str] = set()
    for module in ("inputs/confine.py", "inputs/kustomizations.py", "inputs/amounts.py", "assemble/swap.py"):
        text = (PACKAGE / module).read_text()
        emitted |= set(
            re.findall(r'"((?:source|kustomize|generated|device|quantity|cluster)-[a-z-]+)"', text)
        )
    emitted |= set(NEW)
    assert (
        emitted - {"source-read", "source-encoding", "source-alias", "source-tag", "source-syntax"}
        <= documented
    )
    for rule_id, doc in cli.boundary_docs().items():
        assert "Passes:" in doc and "Fails" in doc, rule_id
    for rule_id in NEW:
        assert rule_id in rules.RULES
        assert "Passes:" in (rules.RULES[rule_id].__doc__ or "")
    rules_page = (PACKAGE.parent / "docs" / "rules.md").read_text()
    for rule_id in set(cli.boundary_docs()) | set(NEW):
        assert f"`{rule_id}`" in rules_page, rule_id


def _cohorts(root: Path, cohorts: list[dict[str, Any]]) -> None:
    def change(data: dict[str, Any]) -> None:
        data["cohorts"] = cohorts

    trees.edit(root, "base/platform.yaml", change)


@pytest.mark.parametrize(
    ("cohorts", "cycles"),
    [
        ([{"name": "a", "parent": "a"}], ["a -> a"]),
        ([{"name": "b", "parent": "a"}, {"name": "a", "parent": "b"}], ["a -> b -> a"]),
        (
            [
                {"name": "top"},
                {"name": "x", "parent": "z"},
                {"name": "y", "parent": "x"},
                {"name": "z", "parent": "y"},
                {"name": "leaf", "parent": "x"},
            ],
            ["x -> z -> y -> x"],
        ),
        ([{"name": "org"}, {"name": "research", "parent": "org"}], []),
    ],
)
def test_cohort_cycles(
    tmp_path: Path, cohorts: list[dict[str, Any]], cycles: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    root = trees.example(tmp_path, generated=False)
    used = {
        t.get("cohort") for t in (trees.read(root, f"tenants/{p.name}") for p in (root / "tenants").iterdir())
    }
    _cohorts(root, cohorts + [{"name": n} for n in sorted(used - {None} - {c["name"] for c in cohorts})])
    rc = main(["--root", str(root), "--no-cache", "validate"])
    out = capsys.readouterr().out
    found = re.findall(r"cohorts form a cycle \(([^)]*)\)", out)
    assert found == cycles
    assert (rc == 1) == bool(cycles)
    assert out.count("(cohort-cycle)") == len(cycles)


def test_reserved_namespaces_and_the_platform_allow_list(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = trees.example(tmp_path, generated=False)
    capacity = trees.read(root, "overlays/prod/cluster.yaml")["capacity"][0]
    budget = {"default": [{"flavor": capacity["flavor"], "devices": {next(iter(capacity["devices"])): 0}}]}
    namespaces = ["kube-public", "kube-node-lease", "default", "argocd", "kueue-system", "team-infra", "fine"]
    trees.write(root, "tenants/claims.yaml", trees.tenant("claims", namespaces=namespaces, budgets=budget))
    assert main(["--root", str(root), "--no-cache", "validate"]) == 1
    out = capsys.readouterr().out
    refused = re.findall(r"namespace '([a-z-]+)' is .* \(namespace-reserved\)", out)
    assert refused == ["kube-public", "kube-node-lease", "default", "argocd", "kueue-system"]

    def adjust(data: dict[str, Any]) -> None:
        data["tenantNamespaces"] = {"reserved": ["team-*"], "allowed": ["default", "kube-public"]}

    trees.edit(root, "base/platform.yaml", adjust)
    assert main(["--root", str(root), "--no-cache", "validate"]) == 1
    out = capsys.readouterr().out
    refused = re.findall(r"namespace '([a-z-]+)' is .* \(namespace-reserved\)", out)
    assert refused == ["kube-node-lease", "argocd", "kueue-system", "team-infra"]
    assert "reserved by base/platform.yaml tenantNamespaces.reserved" in out


def test_cohort_cycles_function_is_usable_alone() -> None:
    from gputenancy.common.findings import Origin
    from gputenancy.inputs.spec import Cohort

    def co(name: str, parent: str | None) -> Cohort:
        return Cohort(name, parent, None, Origin("base/platform.yaml"))

    cohorts = {c.name: c for c in (co("a", "b"), co("b", "c"), co("c", "a"), co("d", "a"), co("e", None))}
    assert boundary.cohort_cycles(cohorts) == [["a", "b", "c"]]
