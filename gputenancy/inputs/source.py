"""The input reader: tenant YAML files turned into plain data with line/column marks, or Findings.

Tenant files come from many teams, so everything here treats the input as hostile. Every problem
becomes a `Finding` (collected in a `PipelineError`), never a traceback.

What is accepted
----------------
* UTF-8 text (a leading byte order mark is stripped) of at most `MAX_FILE_BYTES` bytes, without NUL
  or other control characters (tab, line feed and carriage return excepted), with spaces only in
  indentation, holding exactly one YAML document.
* No anchors (``&a``), aliases (``*a``) or merge keys (``<<``): they are refused before anything
  is built, so alias bombs ("billion laughs") cost nothing.
* No explicit tags at all (``!!python/object``, ``!foo``, ``!!binary``, even ``!!str`` or ``!``):
  nothing is ever constructed from a tag.
* Mapping keys are strings, unique within their mapping; nesting is at most `MAX_DEPTH` levels.

All findings of a file are collected in one pass. Reading stops at a syntax error (text checks of
the whole file still report), at the first node nested too deep, and at a second document.
Syntax messages are those of PyYAML's pure-Python parser (which reads the file again when the
C parser found a problem), so they do not depend on whether libyaml is installed; files over 64 KiB
keep libyaml's wording, to bound the time a hostile file can cost.

How plain (unquoted) scalars become values
------------------------------------------
Quoted and block scalars are always strings. Plain scalars follow PyYAML's YAML 1.1 resolver, with
its sexagesimal and timestamp forms left out, and only these results:

* null: empty, ``~``, ``null``, ``Null``, ``NULL``.
* bool: ``true``/``false``, ``yes``/``no``, ``on``/``off``, each in lower, Capitalised or UPPER
  case (``True``, ``YES``, ``Off``, ...). The ``yes``/``no``/``on``/``off`` spellings give a
  ``source-ambiguous-bool`` warning. ``y``/``n`` (either case) are *not* booleans here and stay
  strings, but they also give that warning because other YAML 1.1 readers treat them as booleans.
* int: decimal (``42``, ``-1_000``), ``0x`` hexadecimal, ``0b`` binary, and octal with a leading
  ``0`` (``010`` is 8). It must fit in a signed 64-bit integer.
* float: digits with a dot (``1.5``, ``1.``, ``.5``; an exponent needs the dot and a sign:
  ``1.0e+3``; ``1e3`` stays a string). ``.inf`` and ``.nan`` are refused (``source-number``).
* everything else is a string, including timestamps (``2024-01-01``) and sexagesimal numbers
  (``1:20``).

Rule ids: source-read, source-not-regular, source-symlink, source-outside-root, source-size,
source-empty, source-multidoc, source-encoding, source-tab, source-syntax, source-duplicate-key,
source-alias, source-tag, source-ambiguous-bool (warning), source-key-type, source-depth,
source-number, source-octal (warning: ``010`` is 8 here, 10 in YAML 1.2).

Loaded files in the cache
-------------------------
Parsing a file with marks costs several times as much as reading the result back from JSON (about
0.4-1 ms against 0.1 ms for a tenant file), so with a cache, `load` keeps each loaded `Document`
(data, marks, key marks, warnings) as a JSON entry of kind ``source``, keyed by a sha256 over the
file's repository-relative path, its bytes and `cachekey.software()` (this package's files and the
versions of Python, PyYAML and libyaml). A hit is the Document a fresh parse gives. Only the parse is
skipped: the path, file type and size checks run first on every load, and a file with errors is
never stored. An entry that does not have exactly the shape written here, or whose values could not
have come from a parse (non-finite floats, nesting deeper than `MAX_DEPTH`, integers outside 64
bits, an error finding), is a miss and counted in `Cache.corrupt`. Entries are JSON, never pickle:
the cache may live inside the repository, and reading it must not run anything. `spec.load_model`
keeps a run's entries in sixteen packs by key (`cache.Packs`).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from types import MappingProxyType

import yaml

from gputenancy.caching import cachekey
from gputenancy.caching.cache import Entries
from gputenancy.common.findings import Origin, PipelineError, Severity
from gputenancy.inputs.doccache import from_entry, to_entry
from gputenancy.inputs.document import (
    MAX_DEPTH,
    MAX_FILE_BYTES,
    MAX_FINDINGS_PER_RULE,
    Document,
    KeyPath,
    Mark,
)
from gputenancy.inputs.files import discover, display, inside, read_bounded, size_finding
from gputenancy.inputs.textcheck import text_checks
from gputenancy.inputs.yamlbuild import Builder, EventSource, run_parser

__all__ = [
    "CACHE_ENTRY",
    "MAX_DEPTH",
    "MAX_FILE_BYTES",
    "MAX_FINDINGS_PER_RULE",
    "Document",
    "KeyPath",
    "Mark",
    "discover",
    "from_entry",
    "load",
    "load_text",
    "to_entry",
]

CACHE_ENTRY = "source"
"""The `Cache` kind of loaded input files."""

_BOM = b"\xef\xbb\xbf"

# Events come from the C parser when PyYAML has it; values are built from events here, never by a
# PyYAML constructor, so no tag can construct anything.
_LOADER: Callable[[str], EventSource] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_PURE_LOADER: Callable[[str], EventSource] = yaml.SafeLoader
# Files up to this many characters are read again by the pure-Python parser to word a syntax error;
# beyond it (never a real tenant file) the C parser's wording is kept, bounding the time spent.
_REWORD_MAX_CHARS = 64 * 1024


def load(
    path: Path,
    root: Path,
    *,
    max_bytes: int = MAX_FILE_BYTES,
    cache: Entries | None = None,
    real_root: Path | None = None,
    real_dir: tuple[Path, Path] | None = None,
) -> Document:
    """Read and check `path` (relative to `root` or absolute); raise PipelineError with all findings.

    Paths returned by `discover` are accepted as they are. Messages name the file by its POSIX
    path relative to `root`. A file that resolves (through symlinks or ``..``) outside `root` is
    refused, as is anything but a regular file. With `cache`, a file loaded before with the same
    path, bytes and software is taken from it instead of being parsed again (module docstring).
    `real_root`: `root` resolved, when the caller loading many files has resolved it once;
    `real_dir`: a directory and its resolution, likewise: a file directly in it that is not a symlink
    resolves to the resolved directory joined with its name, which one `lstat` proves, instead of a
    resolution of every component of its path.
    """
    full = path
    if not path.is_absolute():
        full = root / path
        if not os.path.lexists(full) and root.parts and path.parts[: len(root.parts)] == root.parts:
            full = path  # already includes a relative root, as `discover` returns it
    shown = display(full, root)
    where = Origin(shown)
    try:
        real = _resolved(full, real_dir)
        if real_root is None:
            real_root = root.resolve()
    except (OSError, RuntimeError) as exc:
        raise PipelineError([where.finding("source-symlink", f"cannot resolve path: {exc}")]) from None
    if not inside(real, real_root):
        if full.is_symlink():
            finding = where.finding("source-symlink", "symlink points outside the repository root")
        else:
            finding = where.finding("source-outside-root", "file is outside the repository root")
        raise PipelineError([finding])
    data = read_bounded(real, where, max_bytes)
    if cache is None or len(data) > max_bytes:
        return _load_bytes(data, shown, max_bytes)
    key = cachekey.source(shown, data)
    value = cache.get(CACHE_ENTRY, key)
    if value is not None:
        cached = from_entry(value, shown)
        if cached is not None:
            return cached
        cache.corrupt += 1
    doc = _load_bytes(data, shown, max_bytes)
    entry = to_entry(doc)
    if entry is not None:
        cache.put(CACHE_ENTRY, key, entry)
    return doc


def _resolved(full: Path, real_dir: tuple[Path, Path] | None) -> Path:
    """`full.resolve()`, taken from `real_dir` (directory, resolved) when `full` is a file directly in
    that directory and not a symlink (a missing file resolves to the same path either way)."""
    if (
        real_dir is not None
        and full.name != ".."
        and os.path.dirname(full) == str(real_dir[0])
        and not os.path.islink(full)
    ):
        return real_dir[1] / full.name
    return full.resolve()


def load_text(text: str | bytes, display_path: str, *, max_bytes: int = MAX_FILE_BYTES) -> Document:
    """The checks of `load` on in-memory content; `display_path` names it in messages."""
    data = text if isinstance(text, bytes) else text.encode("utf-8", "surrogatepass")
    return _load_bytes(data, display_path, max_bytes)


def _load_bytes(data: bytes, shown: str, max_bytes: int) -> Document:
    where = Origin(shown)
    if len(data) > max_bytes:
        raise PipelineError([size_finding(where, len(data), max_bytes)])
    offset = 0
    if data.startswith(_BOM):
        offset = len(_BOM)
        data = data[offset:]
    text, findings = text_checks(data, offset, shown)
    builder = Builder(shown, findings)
    syntax = run_parser(_LOADER, text, builder)
    reword = _LOADER is not _PURE_LOADER and len(text) <= _REWORD_MAX_CHARS
    if syntax is not None and syntax.rule == "source-syntax" and reword:
        # Report the pure-Python parser's wording and position, the same with or without libyaml.
        # Its builder stops at MAX_DEPTH too, which keeps that parser's cost linear.
        syntax = run_parser(_PURE_LOADER, text, Builder(shown, [])) or syntax
    if syntax is not None:
        findings.append(syntax)
    elif builder.empty:
        findings.append(where.finding("source-empty", "file has no content (empty, or only comments)"))
    if any(f.severity is Severity.ERROR for f in findings):
        raise PipelineError(findings)
    return Document(
        shown,
        builder.root,
        MappingProxyType(builder.marks),
        MappingProxyType(builder.key_marks),
        tuple(sorted(findings)),
    )
