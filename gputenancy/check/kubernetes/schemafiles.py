"""The CRD files of a schema directory (``--schemas``), read with the limits of the input reader.

The directory is given by whoever runs the pipeline, but its files are YAML like any input: a file
that is not a regular file (a FIFO would block the run), larger than `MAX_SCHEMA_BYTES`, not UTF-8,
or that holds anchors, aliases (an alias bomb expands when the schema is walked) or explicit tags
is a finding (`source-not-regular`, `source-size`, `source-encoding`, `source-alias`,
`source-tag`, `source-duplicate-key`, `source-depth`, `source-syntax`) naming the file, never a
traceback; so is a CRD the pipeline could not walk (`schemas-release`: `spec.versions` not a list,
...). The reading and the refusals are those of every release file (`versions/releasedata.py`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gputenancy.versions import releasedata

MAX_SCHEMA_BYTES = 16 * 1024 * 1024
"""Largest CRD file read (16 MiB; Kueue's largest, the Workload CRD, is 1.4 MB)."""


def read_text(path: Path) -> str:
    """The text of a schema file; PipelineError when it is not a bounded regular UTF-8 file."""
    return releasedata.decode(releasedata.read_bytes(path, MAX_SCHEMA_BYTES), str(path))


def load_all(path: Path) -> list[Any]:
    """Every document of a schema file, or PipelineError with the findings (module docstring)."""
    return releasedata.load_text(read_text(path), str(path))
