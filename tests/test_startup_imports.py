"""What a command imports: GitPython only where a git operation runs, deepdiff without pydantic, and
the same answers as with them."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import git
import pytest

from gputenancy.common.findings import PipelineError
from gputenancy.deliver import gitrepo


def _python(code: str, cwd: Path) -> list[str]:
    """Run code in a fresh interpreter; its stdout lines."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=cwd, env=env, capture_output=True, text=True, check=True
    )
    return out.stdout.split()


def _gitpython_finds(root: Path) -> bool:
    try:
        gitrepo.open_repo(root).close()
    except PipelineError:
        return False
    return True


def _layouts(tmp_path: Path) -> dict[str, Path]:
    plain = tmp_path / "plain" / "a" / "b"
    plain.mkdir(parents=True)
    work = tmp_path / "work"
    git.Repo.init(work).close()
    (work / "sub" / "dir").mkdir(parents=True)
    bare = tmp_path / "bare.git"
    git.Repo.init(bare, bare=True).close()
    linked = tmp_path / "linked"
    linked.mkdir()
    (linked / ".git").write_text(f"gitdir: {work / '.git'}\n")
    stray_head = tmp_path / "stray" / "inside"
    stray_head.mkdir(parents=True)
    (tmp_path / "stray" / "HEAD").write_text("not a repository\n")
    return {
        "plain": plain,
        "work": work,
        "work/sub/dir": work / "sub" / "dir",
        "bare": bare,
        "linked": linked,
        "stray": stray_head,
        "missing": tmp_path / "missing",
    }


def test_outside_repositories_only_where_gitpython_finds_none(tmp_path: Path) -> None:
    layouts = _layouts(tmp_path)
    for name, root in layouts.items():
        outside = gitrepo.outside_repositories(root)
        if outside:
            assert not _gitpython_finds(root), name
        assert (gitrepo.open_repo_if_any(root) is not None) == _gitpython_finds(root), name
    for name in ("work", "work/sub/dir", "bare", "linked", "stray", "missing"):
        assert not gitrepo.outside_repositories(layouts[name]), name
    if not _gitpython_finds(layouts["plain"]):  # no repository above the test's directory
        assert gitrepo.outside_repositories(layouts["plain"])
        assert not gitrepo.outside_repositories(layouts["plain"] / "$HOME")


def test_plan_outside_a_repository_does_not_import_gitpython(tmp_path: Path) -> None:
    if _gitpython_finds(tmp_path):
        pytest.skip("the test's directory is inside a git repository")
    code = (
        "import sys; from pathlib import Path\n"
        "from gputenancy.deliver import authorview, baseline, plan\n"
        f"root = Path({str(tmp_path)!r})\n"
        "print(baseline.local_base(root).inputs_ref, baseline.model_at(root, 'HEAD'))\n"
        "print(authorview.touched_files(root, 'HEAD'), 'git' in sys.modules)\n"
    )
    assert _python(code, tmp_path) == ["None", "None", "None", "False"]
    git.Repo.init(tmp_path).close()
    # no commit yet: GitPython was asked, and answers the same
    assert _python(code, tmp_path) == ["None", "None", "None", "True"]


def test_deepdiff_without_pydantic_gives_the_same_changes(tmp_path: Path) -> None:
    old = {"spec": {"a": [1, 2], "b": {"c": "x"}, "resources": [{"name": "r", "v": 1}]}}
    new = {"spec": {"a": [1, 3], "d": 1, "resources": [{"name": "r", "v": 2}, {"name": "s"}]}}
    code = (
        "import sys\n"
        "from gputenancy.deliver import objectdiff\n"
        f"changes = objectdiff._changes('ClusterQueue', {old!r}, {new!r})\n"
        "print(repr(changes).replace(' ', '_'))\n"
        "print('pydantic' in sys.modules)\n"
    )
    lines = _python(code, tmp_path)
    # the same changes as deepdiff imported the ordinary way (with pydantic, if installed)
    with_pydantic = _python("import pydantic, sys\n" + code, tmp_path) if _has("pydantic") else lines
    assert lines[0] == with_pydantic[0]
    assert "changed" in lines[0] and "added" in lines[0] and "removed" in lines[0]
    assert lines[1] == "False"
    if _has("pydantic"):  # kept out of deepdiff's import only: importable afterwards
        after = _python(code.replace("print('pydantic'", "import pydantic; print('pydantic'"), tmp_path)
        assert after == [lines[0], "True"]


def _has(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is not None
