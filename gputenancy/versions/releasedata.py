"""Kueue release files as hostile input: a downloaded `manifests.yaml`, the CRDs cut from it and the
copies in a schemas directory are read here, with the refusals of the input reader, and their shape
is checked before anything walks them.

- Regular files only (a FIFO is refused at once, never opened for a blocking read), at most
  `MAX_RELEASE_BYTES`, UTF-8.
- No anchors or aliases (an alias bomb is refused before anything is built), no explicit tags, no
  duplicate keys, nesting at most `MAX_RELEASE_DEPTH` (Kueue's deepest CRD nests 34 levels; inputs
  stop at 32, so release files get their own bound).
- Shape: every CustomResourceDefinition has a `metadata.name`, `spec.group`, `spec.names.kind` and
  a list `spec.versions` of mappings with a `name`; every Deployment's containers are a list of
  mappings with a `name`. A file that breaks one of these gives a finding naming it (rule
  `schemas-release`), never a `TypeError` or `KeyError` further on.

`canonical_sha256` is the digest `schemas.lock` records: a sha256 over the parsed documents in a
canonical JSON form (sorted keys, no whitespace), so formatting, key order, quoting and comments do
not change it, while any change of a value, key or document does.
"""

from __future__ import annotations

import datetime
import hashlib
import json
import os
import stat
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml
from yaml.events import (
    AliasEvent,
    CollectionEndEvent,
    CollectionStartEvent,
    DocumentStartEvent,
    MappingStartEvent,
    NodeEvent,
    ScalarEvent,
)

from gputenancy.common import fastyaml
from gputenancy.common.findings import Finding, Origin, PipelineError

MAX_RELEASE_BYTES = 64 * 1024 * 1024
"""Largest release file read or downloaded (Kueue's manifests.yaml is 1.7 MB)."""
MAX_RELEASE_DEPTH = 64
RULE = "schemas-release"
DOCS = {
    RULE: """A Kueue release file (a downloaded manifests.yaml, a CRD of the schemas directory) has the
shape the pipeline walks: every CustomResourceDefinition a metadata.name, spec.group, spec.names.kind
and a list spec.versions of mappings with a name; every Deployment a list of named containers. Such
a release is never locked or written by `schemas fetch`, and `validate` and `plan` name the file
instead of failing.

Passes: the release manifests of Kueue v0.19.2 as published.
Fails: a CRD with `versions: served`; a CRD without spec.versions.
""",
}
_MAX_SHOWN = 5
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def read_bytes(path: Path, limit: int = MAX_RELEASE_BYTES) -> bytes:
    """The bytes of a bounded regular file; PipelineError naming it otherwise (a FIFO, a device or a
    directory is refused without blocking)."""
    where = Origin(str(path))
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as exc:
        raise PipelineError([where.finding("source-read", f"cannot read: {exc.strerror}")]) from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise PipelineError([where.finding("source-not-regular", "not a regular file")])
        if info.st_size > limit:
            message = f"file is {info.st_size} bytes; the limit is {limit}"
            raise PipelineError([where.finding("source-size", message)])
        with os.fdopen(os.dup(fd), "rb") as f:
            data = f.read(limit + 1)
    finally:
        os.close(fd)
    if len(data) > limit:
        raise PipelineError([where.finding("source-size", f"file is over the limit of {limit} bytes")])
    return data


def decode(data: bytes, shown: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise PipelineError([Origin(shown).finding("source-encoding", f"not UTF-8: {exc.reason}")]) from None


class _Frame:
    __slots__ = ("expect_key", "keys", "mapping")

    def __init__(self, mapping: bool) -> None:
        self.mapping = mapping
        self.expect_key = True
        self.keys: set[str] = set()


def problems(
    text: str, shown: str, max_depth: int = MAX_RELEASE_DEPTH, starts: list[int] | None = None
) -> list[Finding]:
    """Anchors, aliases, tags, duplicate keys, nesting deeper than `max_depth` and syntax errors in
    `text` (several documents allowed), at most a few, each at its line and column of `shown`.
    `starts` receives the line each document starts on."""
    found: list[Finding] = []
    stack: list[_Frame] = []
    try:
        for event in yaml.parse(text, Loader=_LOADER):
            if len(found) >= _MAX_SHOWN:
                break
            if starts is not None and isinstance(event, DocumentStartEvent):
                starts.append(event.start_mark.line + 1 if event.start_mark else 0)
            if isinstance(event, CollectionEndEvent):
                stack.pop()
                continue
            if not isinstance(event, NodeEvent):
                continue
            mark = event.start_mark
            where = Origin(shown, mark.line + 1, mark.column + 1) if mark else Origin(shown)
            if isinstance(event, AliasEvent) or event.anchor is not None:
                found.append(where.finding("source-alias", "anchors and aliases are not allowed"))
                break  # whatever follows an alias is not read
            if isinstance(event, ScalarEvent | CollectionStartEvent) and event.tag is not None:
                found.append(where.finding("source-tag", f"explicit tag {event.tag!r} is not allowed"))
            parent = stack[-1] if stack else None
            if parent is not None and parent.mapping:
                if parent.expect_key and isinstance(event, ScalarEvent):
                    if event.value in parent.keys:
                        found.append(where.finding("source-duplicate-key", f"duplicate key {event.value!r}"))
                    parent.keys.add(event.value)
                parent.expect_key = not parent.expect_key
            if isinstance(event, CollectionStartEvent):
                stack.append(_Frame(isinstance(event, MappingStartEvent)))
                if len(stack) > max_depth:
                    found.append(where.finding("source-depth", f"nested deeper than {max_depth} levels"))
                    break
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = Origin(shown, mark.line + 1, mark.column + 1) if mark else Origin(shown)
        found.append(where.finding("source-syntax", str(getattr(exc, "problem", None) or exc)))
    return found


def load_text(text: str, shown: str) -> list[Any]:
    """The documents of a release file's text, or PipelineError: the refusals above, then its shape."""
    starts: list[int] = []
    found = problems(text, shown, starts=starts)
    if found:
        raise PipelineError(found)
    docs = fastyaml.load_all(text)
    shape = shape_problems(docs, shown, starts)
    if shape:
        raise PipelineError(shape)
    return [d for d in docs if d is not None]


def load(path: Path) -> list[Any]:
    """The documents of a release file on disk (a manifests.yaml or a CRD), or PipelineError."""
    return load_text(decode(read_bytes(path), str(path)), str(path))


def _is_str(value: Any) -> bool:
    return isinstance(value, str) and bool(value)


def _named_list(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, dict) and _is_str(v.get("name")) for v in value)


def _doc_problem(doc: Any) -> str | None:
    if not isinstance(doc, dict):
        return None
    kind, meta = doc.get("kind"), doc.get("metadata")
    if kind not in ("CustomResourceDefinition", "Deployment"):
        return None
    name = meta.get("name") if isinstance(meta, dict) else None
    if not _is_str(name):
        return f"a {kind} without a string metadata.name"
    spec = doc.get("spec")
    if not isinstance(spec, dict):
        return f"{kind} {name}: spec is not a mapping"
    if kind == "CustomResourceDefinition":
        names = spec.get("names")
        if not _is_str(spec.get("group")) or not isinstance(names, dict) or not _is_str(names.get("kind")):
            return f"CustomResourceDefinition {name}: spec.group and spec.names.kind must be strings"
        if not _named_list(spec.get("versions")):
            return (
                f"CustomResourceDefinition {name}: spec.versions must be a list of versions, each with a name"
            )
        return None
    template = spec.get("template")
    pod = template.get("spec") if isinstance(template, dict) else None
    if not isinstance(pod, dict) or not _named_list(pod.get("containers")):
        return (
            f"Deployment {name}: spec.template.spec.containers must be a list of containers, each with a name"
        )
    return None


def shape_problems(docs: Sequence[Any], shown: str, starts: Sequence[int] = ()) -> list[Finding]:
    """Findings for the CRDs and Deployments of `docs` that the pipeline could not walk (module doc),
    each at the line its document starts on when `starts` (one per document) gives it."""
    found = []
    for i, doc in enumerate(docs):
        problem = _doc_problem(doc)
        if problem is not None:
            line = starts[i] if len(starts) == len(docs) else 0
            found.append(Origin(shown, line, 1 if line else 0).finding(RULE, f"document {i + 1}: {problem}"))
    return found[:_MAX_SHOWN]


def _plain(value: Any) -> Any:
    if isinstance(value, datetime.date | datetime.datetime):
        return value.isoformat()
    if isinstance(value, bytes):
        return value.hex()
    raise TypeError(type(value).__name__)


def canonical_sha256(docs: Sequence[Any]) -> str:
    """sha256 of the documents as canonical JSON (module docstring)."""
    body = json.dumps(list(docs), sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=_plain)
    return hashlib.sha256(body.encode("utf-8")).hexdigest()
