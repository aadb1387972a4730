"""A loaded input file (`Document`: data with the line/column mark of every node) and the reader's limits."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from gputenancy.common.findings import Finding, Origin

MAX_FILE_BYTES = 256 * 1024
"""Largest tenant file accepted, in bytes (256 KiB): far above any real tenant file, small enough
that a hostile file cannot make the pipeline slow."""

MAX_DEPTH = 32
"""Deepest nesting of mappings/sequences accepted (the top-level collection is depth 1)."""

MAX_FINDINGS_PER_RULE = 5
"""Findings of one rule shown per file; an alias bomb or a file full of tabs gives five, then a note."""

KeyPath = tuple[str | int, ...]
Mark = tuple[int, int]

INT_MIN = -(2**63)
INT_MAX = 2**63 - 1


@dataclasses.dataclass(frozen=True)
class Document:
    """One loaded input file.

    `data` is plain JSON-like Python (dict with str keys, list, str, int, float, bool, None).
    `marks` maps the key path of every node (``()`` is the top level, ``("spec", "items", 0)``
    a nested one) to the 1-based (line, col) where its value starts; `key_marks` maps the paths of
    mapping entries to where their key starts. `findings` holds the warnings found while loading
    (errors are raised instead).
    """

    path: str
    data: Any
    marks: Mapping[KeyPath, Mark]
    key_marks: Mapping[KeyPath, Mark] = dataclasses.field(default_factory=dict)
    findings: tuple[Finding, ...] = ()

    def origin(self, *path: str | int) -> Origin:
        """Where the value at `path` starts, or that of its longest existing prefix; else (1, 1)."""
        mark = self.marks.get(path)  # the path itself first, without a copy: almost always there
        if mark is not None:
            return Origin(self.path, mark[0], mark[1])
        for end in range(len(path) - 1, -1, -1):
            mark = self.marks.get(path[:end])
            if mark is not None:
                return Origin(self.path, mark[0], mark[1])
        return Origin(self.path, 1, 1)

    def key_origin(self, *path: str | int) -> Origin:
        """Where the key of the mapping entry at `path` starts; falls back to `origin`."""
        mark = self.key_marks.get(path)
        if mark is not None:
            return Origin(self.path, mark[0], mark[1])
        return self.origin(*path)
