"""The negative corpus: tests/negative/<case>.yaml is dropped into tenants/ of a copy of the examples;
`validate`, `render`, `plan` and `publish` must refuse it with exit 1, print every line of <case>.expected, show no
traceback, execute nothing and leave generated/ untouched."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import git
import pytest
import trees
from test_negative_trees import commit_all

from gputenancy.assemble import output
from gputenancy.cli.app import main

CORPUS = Path(__file__).parent / "negative"
CASES = sorted(p for p in CORPUS.iterdir() if p.suffix == ".yaml")
SENTINEL = Path("/tmp/gputenancy-pwned")
HIDDEN = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2066-\u2069]")


def _install(root: Path, case: Path) -> None:
    target = root / "tenants" / case.name
    if case.is_symlink():
        target.symlink_to(case.readlink())
    else:
        shutil.copyfile(case, target)


def _expected(case: Path) -> list[str]:
    return [line for line in case.with_suffix(".expected").read_text().splitlines() if line.strip()]


@pytest.mark.parametrize("case", CASES, ids=[c.stem for c in CASES])
@pytest.mark.parametrize("command", ["validate", "render", "plan", "publish"])
def test_refused(tmp_path: Path, case: Path, command: str, capsys: pytest.CaptureFixture[str]) -> None:
    root = trees.example(tmp_path)
    _install(root, case)
    head = commit_all(root).head.commit.hexsha if command == "publish" else None
    before = output.read_tree(root / "generated")
    before_dirs = sorted(p.name for p in (root / "generated").iterdir())
    SENTINEL.unlink(missing_ok=True)
    assert main(["--root", str(root), command]) == 1
    out = capsys.readouterr()
    text = out.out + out.err
    for line in _expected(case):
        assert line in text, f"expected {line!r} in:\n{text}"
    assert "Traceback" not in text
    assert not HIDDEN.search(text), "control or bidi characters printed raw"
    assert f"tenants/{case.name}" in text
    assert not SENTINEL.exists()
    assert output.read_tree(root / "generated") == before
    assert sorted(p.name for p in (root / "generated").iterdir()) == before_dirs
    if head is not None:
        assert git.Repo(root).head.commit.hexsha == head


def test_every_case_has_an_expectation() -> None:
    for case in CASES:
        assert _expected(case), case.name


def test_oversized_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Generated here rather than committed: 300 KiB of padding in a comment."""
    root = trees.example(tmp_path)
    (root / "tenants" / "big.yaml").write_text("# " + "x" * 300 * 1024 + "\nname: big\n")
    assert main(["--root", str(root), "validate"]) == 1
    out = capsys.readouterr().out
    assert (
        "tenants/big.yaml: error: file is 307213 bytes, over the limit of 262144 bytes (256 KiB) (source-size)"
        in out
    )
