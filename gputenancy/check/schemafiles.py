"""The CRD files of a schema directory (``--schemas``), read with the limits of the input reader.

The directory is given by whoever runs the pipeline, but its files are YAML like any input: a file
that is not a regular file (a FIFO would block the run), larger than `MAX_SCHEMA_BYTES`, not UTF-8,
or that holds anchors, aliases (an alias bomb expands when the schema is walked) or explicit tags
is a finding (`source-not-regular`, `source-size`, `source-encoding`, `source-alias`,
`source-tag`, `source-syntax`) naming the file, never a traceback.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

import yaml
from yaml.events import AliasEvent, CollectionStartEvent, NodeEvent, ScalarEvent

from gputenancy import fastyaml
from gputenancy.findings import Finding, Origin, PipelineError

MAX_SCHEMA_BYTES = 16 * 1024 * 1024
"""Largest CRD file read (16 MiB; Kueue's largest, the Workload CRD, is 1.4 MB)."""
_MAX_SHOWN = 5
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def read_text(path: Path) -> str:
    """The text of a schema file; PipelineError when it is not a bounded regular UTF-8 file."""
    where = Origin(str(path))
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as exc:
        raise PipelineError([where.finding("source-read", f"cannot read: {exc.strerror}")]) from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise PipelineError([where.finding("source-not-regular", "not a regular file")])
        if info.st_size > MAX_SCHEMA_BYTES:
            message = f"file is {info.st_size} bytes; the limit is {MAX_SCHEMA_BYTES}"
            raise PipelineError([where.finding("source-size", message)])
        with os.fdopen(os.dup(fd), "rb") as f:
            data = f.read(MAX_SCHEMA_BYTES + 1)
    finally:
        os.close(fd)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise PipelineError([where.finding("source-encoding", f"not UTF-8: {exc.reason}")]) from None


def _problems(text: str, shown: str) -> list[Finding]:
    found: list[Finding] = []
    try:
        for event in yaml.parse(text, Loader=_LOADER):
            if len(found) >= _MAX_SHOWN:
                break
            if not isinstance(event, NodeEvent):
                continue
            mark = event.start_mark
            where = Origin(shown, mark.line + 1, mark.column + 1) if mark else Origin(shown)
            if isinstance(event, AliasEvent) or event.anchor is not None:
                found.append(where.finding("source-alias", "anchors and aliases are not allowed"))
            elif isinstance(event, ScalarEvent | CollectionStartEvent) and event.tag is not None:
                found.append(where.finding("source-tag", f"explicit tag {event.tag!r} is not allowed"))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = Origin(shown, mark.line + 1, mark.column + 1) if mark else Origin(shown)
        found.append(where.finding("source-syntax", str(getattr(exc, "problem", None) or exc)))
    return found


def load_all(path: Path) -> list[Any]:
    """Every document of a schema file, or PipelineError with the findings (module docstring)."""
    text = read_text(path)
    problems = _problems(text, str(path))
    if problems:
        raise PipelineError(problems)
    return fastyaml.load_all(text)
