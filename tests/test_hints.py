"""Hints name the fix that works: following the words of a `claim-coverage` finding makes it go away;
publish's refusals are located at the checkout to change and name the git command (a stale publish,
naming `git pull`: tests/test_publish.py)."""

from __future__ import annotations

from pathlib import Path

import git
import pytest
import trees
from test_publish import run, source
from test_rules import findings_for


def test_claim_coverage_names_the_fix_and_the_fix_works(tmp_path: Path) -> None:
    root = trees.example(tmp_path, generated=False)
    mig = "mig-1g.10gb.nvidia.com"
    trees.edit(root, "tenants/vision.yaml", lambda d: d["budgets"]["default"][1]["devices"].pop(mig))
    found = [f for f in findings_for(root) if f.rule == "claim-coverage"]
    assert found, "no claim-coverage finding"
    for f in found:
        assert f.path == "tenants/vision.yaml"
        assert (
            f"which tenant 'vision' has no budget for on cluster 'prod': add `devices: {{{mig}: N}}` to a "
            "flavor of its budgets (budgets.clusters.prod or budgets.default), or take 'prod' out of the "
            "template's `clusters`"
        ) in f.message
    trees.edit(root, "tenants/vision.yaml", lambda d: d["budgets"]["default"][1]["devices"].update({mig: 1}))
    assert [f for f in findings_for(root) if f.severity == "error"] == []


def test_publish_refusals_are_located_at_the_checkout_and_name_the_git_command(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = source(tmp_path)
    with git.Repo(root) as repo:
        repo.git.checkout("-q", "--detach")
    assert run(root) == 1
    out = capsys.readouterr().out
    assert out.startswith(f"{root}: error: HEAD is detached: check out the branch to commit on (`git switch")
    empty = trees.example(tmp_path / "empty")
    git.Repo.init(empty, initial_branch="main").close()
    assert run(empty, "--dry-run") == 1  # --dry-run: uncommitted inputs are not refused first
    out = capsys.readouterr().out
    assert out.startswith(
        f"{empty}: error: the repository has no commit yet: commit tenants/, base/ and overlays/"
    )
