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


# ------------------------------------------------------------------ a did-you-mean is likely, or absent

from gputenancy.common.hints import closest  # noqa: E402


@pytest.mark.parametrize(
    ("word", "candidates", "expected"),
    [
        # typos: a transposition, a dropped, doubled or extra letter, a case slip, a long key shortened
        ("prdo", ["prod", "lab"], "prod"),
        ("stagng", ["staging"], "staging"),
        ("h10", ["h100", "h200"], "h100"),
        ("cohrt", ["cohort", "namespaces"], "cohort"),
        ("repoUrl", ["repoURL"], "repoURL"),
        ("borrowLimit", ["borrowingLimit", "lendingLimit"], "borrowingLimit"),
        ("gpu.nvidia.co", ["gpu.nvidia.com", "mig-1g.10gb.nvidia.com"], "gpu.nvidia.com"),
        (
            "mig-1g.10gb.nvidia.co",
            ["mig-1g.10gb.nvidia.com", "mig-3g.40gb.nvidia.com"],
            "mig-1g.10gb.nvidia.com",
        ),
        ("memroy", ["cpu", "memory"], "memory"),
        # two distinct names that only look alike: another word in one place, a numbered sibling
        ("mig.nvidia.com", ["gpu.nvidia.com"], None),
        ("gpu.example.com", ["gpu.nvidia.com"], None),
        ("gpu-east", ["gpu-west"], None),
        ("prod-us", ["prod-eu"], None),
        ("lab2", ["lab"], None),
        ("worker-2", ["worker-1"], None),
        ("h300", ["h100", "h200"], None),
        ("mig-2g.20gb.nvidia.com", ["mig-1g.10gb.nvidia.com"], None),
        ("stage", ["staging"], None),
        ("prod", ["prod-eu"], None),
    ],
)
def test_a_suggestion_is_a_likely_typo_or_none(
    word: str, candidates: list[str], expected: str | None
) -> None:
    assert closest(word, candidates) == expected


def test_a_device_class_of_another_kind_gets_no_suggestion(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`mig.nvidia.com` is not a typo of `gpu.nvidia.com`: the finding lists the classes instead."""
    from gputenancy.cli.app import main

    root = trees.example(tmp_path, generated=False)
    vision = root / "tenants/vision.yaml"
    vision.write_text(
        vision.read_text().replace("gpu.nvidia.com: {nominal: 8", "mig.nvidia.com: {nominal: 8")
    )
    assert main(["--root", str(root), "validate"]) == 1
    out = capsys.readouterr().out
    (line,) = [x for x in out.splitlines() if "(device-class-unknown)" in x]
    assert "mig.nvidia.com" in line and "did you mean" not in line, line


def test_a_new_cluster_not_registered_in_the_hub_gets_no_similar_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A new cluster whose name resembles a registered one (staging2 beside staging) is not a typo of
    it: the finding says to register the new one. A typo of a registered name that no other cluster
    uses still gets its suggestion; one already another cluster's destination does not."""
    import shutil

    from gputenancy.cli.app import main

    root = trees.example(tmp_path)
    for name in ("staging", "staging2"):
        shutil.copytree(root / "overlays/lab", root / f"overlays/{name}")
        trees.edit(
            root, f"overlays/{name}/cluster.yaml", lambda d, n=name: d.update(name=n, argocd={"name": n})
        )
    trees.edit(root, "base/platform.yaml", lambda d: d["argocd"].update(clusters=["staging", "prod"]))
    assert main(["--root", str(root), "validate"]) == 1
    out = capsys.readouterr().out
    (line,) = [x for x in out.splitlines() if "(argocd-destination-unknown)" in x]
    assert "'staging2'" in line and "did you mean" not in line, line
    assert "argocd cluster add" in line and "argocd.clusters" in line, line
    trees.edit(root, "overlays/staging2/cluster.yaml", lambda d: d.update(argocd={"name": "stagng"}))
    assert main(["--root", str(root), "validate"]) == 1
    (line,) = [x for x in capsys.readouterr().out.splitlines() if "(argocd-destination-unknown)" in x]
    assert "did you mean" not in line, "staging is already the destination of cluster staging"
