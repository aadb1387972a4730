"""`files.inside` and the lexical part of `files.display` compare strings and parts instead of building
Path objects (they run for every input file of every run): the answers are those of the Path
operations they stand for, for any shape of path (relative, absolute, `..`, `.`, a leading `//`)."""

from __future__ import annotations

import itertools
import os
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from gputenancy.inputs import files

PIECES = ["", "a", "b", "..", ".", "a/b", "/", "//", "///", "/a", "//a", "a/", "/a/b/", "x/../a", "ab", "a b"]


def _shapes() -> list[tuple[str, str]]:
    out = []
    for x, y in itertools.product(PIECES, repeat=2):
        out += [(x, y), (f"{x}/{y}", x), (y, f"{x}/{y}"), (f"/{x}", f"/{y}"), (f"/{x}/{y}", f"/{x}")]
        out += [(f"//{x}/{y}", f"/{x}"), (f"/{x}/{y}", f"//{x}"), (f"//{x}/{y}", f"//{x}")]
    return [(f or ".", r or ".") for f, r in out]


def _lexical(full: Path, root: Path) -> str | None:
    """What display answered before it looked at the file system, through Path."""
    try:
        return Path(os.path.abspath(full)).relative_to(os.path.abspath(root)).as_posix()
    except ValueError:
        return None


def _check(full: Path, root: Path) -> None:
    assert files.inside(full, root) == (full == root or root in full.parents)
    expected = _lexical(full, root)
    if expected is not None:
        assert files.display(full, root) == expected


def test_inside_and_display_answer_as_path_does() -> None:
    for full, root in _shapes():
        _check(Path(full), Path(root))


@settings(max_examples=300)
@given(st.lists(st.sampled_from(["a", "b", "..", ".", "", "/", "//"]), max_size=6), st.integers(0, 6))
def test_any_path_and_prefix(pieces: list[str], cut: int) -> None:
    full = "/".join(pieces) or "."
    _check(Path(full), Path("/".join(pieces[:cut]) or "."))
    _check(Path("/" + full), Path("/" + "/".join(pieces[:cut])))
