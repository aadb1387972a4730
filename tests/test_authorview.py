"""Findings ordered for the author: the files the change touches first, one headline per full pool
with the per-tenant findings folded under it, a screenful for one mistake."""

from __future__ import annotations

from pathlib import Path

import pytest
import trees

from gputenancy.cli.app import main
from gputenancy.deliver import authorview


def committed_example(tmp_path: Path) -> Path:
    root = trees.example(tmp_path)
    trees.committed(root).close()
    return root


def copy_nlp(root: Path, *, cohort: bool = True) -> None:
    """A tenant copied from another: its namespaces are owned already, and prod is full."""
    text = (root / "tenants/nlp.yaml").read_text().replace("name: nlp\n", "name: nlp2\n", 1)
    if not cohort:
        text = text.replace("cohort: research\n", "", 1)
    (root / "tenants/nlp2.yaml").write_text(text)


def test_a_copied_tenant_reads_as_its_own_mistakes_first_on_one_screen(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = committed_example(tmp_path)
    copy_nlp(root)
    assert main(["--root", str(root), "plan", "--against", "HEAD"]) == 1
    out = capsys.readouterr().out.splitlines()
    assert len(out) <= 24, "\n".join(out)  # a screenful
    findings = [line for line in out if not line.startswith((" ", "note:")) and ": error: " in line]
    mine = [i for i, line in enumerate(findings) if line.startswith("tenants/nlp2.yaml:")]
    assert mine == list(range(len(mine))) and len(mine) == 10  # every finding on the new file first
    assert findings[0].startswith("tenants/nlp2.yaml:8:5: error: namespace 'nlp-pretrain' is also claimed")
    assert (
        "tenants/nlp2.yaml:18:9: error: h100 nvidia.com/gpu on prod is fully allocated: 22 of 16 (vision 8 at "
        "tenants/vision.yaml:16, nlp 6 at tenants/nlp.yaml:18, nlp2 6 at tenants/nlp2.yaml:18, speech 2 at "
        "tenants/speech.yaml:14); lower a budget or set overcommit: true (capacity)"
    ) in out
    folded = out[out.index(next(line for line in out if line.startswith("tenants/nlp2.yaml:18:9:"))) + 1]
    assert folded == (
        "    the same pool, also reported at: overlays/prod/cluster.yaml:25:23, tenants/nlp.yaml:18:9, "
        "tenants/speech.yaml:14:9, tenants/vision.yaml:16:9"
    )
    assert not any(line.startswith("overlays/") for line in out)  # no headline on a platform file
    assert out[-1] == "41 errors, 0 warnings (28 capacity findings folded under 7 full pool(s))"


def test_without_a_cohort_the_real_mistake_still_leads(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = committed_example(tmp_path)
    copy_nlp(root, cohort=False)
    assert main(["--root", str(root), "plan", "--against", "HEAD"]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("tenants/nlp2.yaml:"), out


def test_without_a_base_pools_fold_and_root_causes_lead(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = trees.example(tmp_path)  # no git: the touched files are unknown
    copy_nlp(root)
    assert authorview.touched_files(root, "HEAD") is None
    assert main(["--root", str(root), "plan"]) == 1
    out = capsys.readouterr().out.splitlines()
    assert "namespace-owner" in out[0]
    # each full pool once, by the cluster's own finding on its capacity line, the rest folded under it
    headlines = [line for line in out if "exceeds capacity" in line and not line.startswith(" ")]
    assert len(headlines) == 7 and all(line.startswith("overlays/prod/cluster.yaml:") for line in headlines)
    assert sum(line.startswith("    the same pool, also reported at: tenants/nlp.yaml:") for line in out) == 7


def test_the_base_under_github_actions_is_the_pull_request_base() -> None:
    assert authorview.change_base("main", {}) == "main"
    assert authorview.change_base(None, {}) is None
    assert authorview.change_base(None, {"GITHUB_ACTIONS": "true", "GITHUB_BASE_REF": "main"}) == "HEAD^1"


def test_annotations_are_one_per_full_pool_on_the_touched_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    root = committed_example(tmp_path)
    copy_nlp(root)
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    assert main(["--root", str(root), "plan", "--against", "HEAD"]) == 1
    errors = [line for line in capsys.readouterr().out.splitlines() if line.startswith("::error ")]
    assert len(errors) == 13  # 6 namespace-owner (both files) + 7 pools, not 41
    gpu = next(line for line in errors if "h100 nvidia.com/gpu on prod is fully allocated" in line)
    assert gpu.startswith("::error file=tenants/nlp2.yaml,line=18,col=9,title=capacity::")
    assert "also reported at: overlays/prod/cluster.yaml:25:23" in gpu


def test_validate_on_a_pull_request_shows_the_authors_mistake_first_and_folds_full_pools(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The Validate step of the pull-request workflow: the base is the merge commit's first parent."""
    import subprocess

    root = committed_example(tmp_path)
    copy_nlp(root)
    subprocess.run(["git", "-C", str(root), "add", "-A"], check=True)
    subprocess.run(
        ["git", "-C", str(root), "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "copy nlp"],
        check=True,
    )
    assert main(["--root", str(root), "validate", "--format", "text"]) == 1
    everything = capsys.readouterr().out.splitlines()
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    monkeypatch.setenv("GITHUB_BASE_REF", "main")
    assert main(["--root", str(root), "validate", "--format", "text"]) == 1
    listed = capsys.readouterr().out.splitlines()
    assert listed[0].startswith("tenants/nlp2.yaml:")  # the author's file, not the cluster's
    assert len(listed) <= len(everything) / 2  # one headline per full pool, the rest folded
    assert main(["--root", str(root), "validate"]) == 1  # the workflow's annotations
    errors = [line for line in capsys.readouterr().out.splitlines() if line.startswith("::error ")]
    assert len(errors) == 13  # 6 namespace-owner (both files) + 7 pools, not 41
