"""The negative corpus beyond tenant files: tests/negative/trees/<case>/ changes base/, overlays/ and
their kustomizations of a copy of the examples, and `validate`, `render`, `plan` and `publish` must
each refuse it: exit 1, every line of <case>/expected printed, no traceback, no raw control
characters, nothing read outside the repository, nothing fetched or executed, and the working
tree (generated/ included) byte-for-byte as before.

A case holds `repo/` (files copied over the tree; a file named `X.append` is appended to X),
`links` (lines `path -> target`: symlinks made in the tree, kept out of this repository so that
no tool walking it meets a loop or a device) and `expected`.
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import git
import pytest
import trees

from gputenancy.cli.app import main

CORPUS = Path(__file__).parent / "negative" / "trees"
CASES = sorted(p for p in CORPUS.iterdir() if p.is_dir())
SENTINEL = Path("/tmp/gputenancy-pwned")
MARKER = "gputenancy-environ-marker-5d41402a"
HIDDEN = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2066-\u2069]")


def install(root: Path, case: Path) -> None:
    source = case / "repo"
    for path in sorted(source.rglob("*")) if source.is_dir() else ():
        if path.is_dir():
            continue
        rel = path.relative_to(source)
        if rel.suffix == ".append":
            target = root / rel.with_suffix("")
            target.write_bytes(target.read_bytes() + path.read_bytes())
        else:
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, root / rel)
    links = case / "links"
    for line in links.read_text().splitlines() if links.exists() else ():
        rel, target = (part.strip() for part in line.split("->"))
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        os.symlink(target, root / rel)


def snapshot(root: Path) -> dict[str, tuple[str, bytes]]:
    """Every entry under root without following a link: kind and bytes (or link target)."""
    out: dict[str, tuple[str, bytes]] = {}
    for directory, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d not in (".git", ".gputenancy-cache")]
        for name in [*dirs, *files]:
            path = os.path.join(directory, name)
            rel = os.path.relpath(path, root)
            if os.path.islink(path):
                out[rel] = ("link", os.readlink(path).encode())
            elif os.path.isdir(path):
                out[rel] = ("dir", b"")
            else:
                with open(path, "rb") as f:
                    out[rel] = ("file", f.read())
    return out


def commit_all(root: Path) -> git.Repo:
    repo = git.Repo.init(root, initial_branch="main")
    repo.git.add(A=True)
    repo.git.commit(
        m="inputs",
        author="t <t@example.com>",
        env={"GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com"},
    )
    return repo


def expected(case: Path) -> list[str]:
    return [line for line in (case / "expected").read_text().splitlines() if line.strip()]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
@pytest.mark.parametrize("command", ["validate", "render", "plan", "publish"])
def test_refused(
    tmp_path: Path,
    case: Path,
    command: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("GPUTENANCY_TEST_MARKER", MARKER)  # in /proc/self/environ of this process
    root = trees.example(tmp_path)
    install(root, case)
    repo = commit_all(root) if command == "publish" else None
    if repo is None:
        git.Repo.init(root, initial_branch="main")  # a checkout: .git/ is there to be pointed at
    head = repo.head.commit.hexsha if repo is not None else None
    before = snapshot(root)
    SENTINEL.unlink(missing_ok=True)
    assert main(["--root", str(root), "--no-cache", command]) == 1
    out = capsys.readouterr()
    text = out.out + out.err
    for line in expected(case):
        assert line in text, f"expected {line!r} in:\n{text}"
    assert "Traceback" not in text
    assert not HIDDEN.search(text), "control characters printed raw"
    assert MARKER not in text
    assert not SENTINEL.exists()
    assert snapshot(root) == before
    if repo is not None:
        assert repo.head.commit.hexsha == head


def test_every_case_has_an_expectation() -> None:
    assert len(CASES) >= 15
    for case in CASES:
        assert expected(case), case.name
