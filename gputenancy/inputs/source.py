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
file's repository-relative path, its bytes and `cache.software()` (this package's code and the
versions of PyYAML and libyaml). A hit is the Document a fresh parse gives. Only the parse is
skipped: the path, file type and size checks run first on every load, and a file with errors is
never stored. An entry that does not have exactly the shape written here, or whose values could not
have come from a parse (non-finite floats, nesting deeper than `MAX_DEPTH`, integers outside 64
bits, an error finding), is a miss and counted in `Cache.corrupt`. Entries are JSON, never pickle:
the cache may live inside the repository, and reading it must not run anything. `spec.load_model`
keeps a run's entries in one `cache.Pack`.
"""

from __future__ import annotations

import bisect
import codecs
import dataclasses
import math
import os
import re
import stat
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any, Protocol

import yaml
from yaml.events import (
    AliasEvent,
    CollectionEndEvent,
    CollectionStartEvent,
    DocumentStartEvent,
    Event,
    MappingStartEvent,
    NodeEvent,
    ScalarEvent,
    StreamEndEvent,
)

from gputenancy.cache import Entries, digest, software
from gputenancy.findings import Finding, Origin, PipelineError, Severity

MAX_FILE_BYTES = 256 * 1024
"""Largest tenant file accepted, in bytes (256 KiB): far above any real tenant file, small enough
that a hostile file cannot make the pipeline slow."""

MAX_DEPTH = 32
"""Deepest nesting of mappings/sequences accepted (the top-level collection is depth 1)."""

MAX_FINDINGS_PER_RULE = 5
"""Findings of one rule shown per file; an alias bomb or a file full of tabs gives five, then a note."""

CACHE_ENTRY = "source"
"""The `Cache` kind of loaded input files."""

KeyPath = tuple[str | int, ...]
Mark = tuple[int, int]

_INT_MIN = -(2**63)
_INT_MAX = 2**63 - 1
_BOM = b"\xef\xbb\xbf"

# Line breaks as PyYAML and libyaml count them (YAML 1.1), so text checks and parser marks agree.
_BREAK = re.compile("\r\n|[\r\n\x85\u2028\u2029]")
_LEADING_TAB = re.compile(r" *\t")
_ESCAPED = re.compile("[\udc80-\udcff]")
# Characters the YAML reader refuses, plus U+FEFF anywhere but at the start.
_DISALLOWED = re.compile("[^\t\n\r\x20-\x7e\x85\xa0-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]|\ufeff")

# PyYAML's YAML 1.1 implicit resolvers (yaml/resolver.py) without the sexagesimal alternatives.
_NULL = re.compile(r"~|null|Null|NULL|")
_BOOL = re.compile(r"yes|Yes|YES|no|No|NO|true|True|TRUE|false|False|FALSE|on|On|ON|off|Off|OFF")
_FLOAT = re.compile(
    r"""[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+][0-9]+)?
    |\.[0-9][0-9_]*(?:[eE][-+][0-9]+)?
    |[-+]?\.(?:inf|Inf|INF)
    |\.(?:nan|NaN|NAN)""",
    re.X,
)
_INT = re.compile(
    r"""[-+]?0b[0-1_]+
    |[-+]?0[0-7_]+
    |[-+]?(?:0|[1-9][0-9_]*)
    |[-+]?0x[0-9a-fA-F_]+""",
    re.X,
)
_OCTAL = re.compile(r"[-+]?0[0-7_]*[0-7][0-7_]*")
_AMBIGUOUS_BOOLS = frozenset({"yes", "no", "on", "off"})
_YAML11_ONLY_BOOLS = frozenset({"y", "Y", "n", "N"})
_TAG_PREFIX = "tag:yaml.org,2002:"
_DEPTH_MESSAGE = f"nesting deeper than {MAX_DEPTH} levels"
# Cache entries: their keys, and the severities a loaded file can keep (errors are raised instead).
_ENTRY_KEYS = frozenset({"path", "data", "marks", "key_marks", "findings"})
_CACHED_SEVERITIES = frozenset(s.value for s in Severity if s is not Severity.ERROR)
_INT_TYPE: frozenset[type] = frozenset({int})
_STR_TYPE: frozenset[type] = frozenset({str})


class _EventSource(Protocol):
    def get_event(self) -> Event | None: ...

    def dispose(self) -> None: ...


# Events come from the C parser when PyYAML has it; values are built from events here, never by a
# PyYAML constructor, so no tag can construct anything.
_LOADER: Callable[[str], _EventSource] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_PURE_LOADER: Callable[[str], _EventSource] = yaml.SafeLoader
# Files up to this many characters are read again by the pure-Python parser to word a syntax error;
# beyond it (never a real tenant file) the C parser's wording is kept, bounding the time spent.
_REWORD_MAX_CHARS = 64 * 1024


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
        for end in range(len(path), -1, -1):
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


# --------------------------------------------------------------------------------------------------
# Public entry points


def load(
    path: Path, root: Path, *, max_bytes: int = MAX_FILE_BYTES, cache: Entries | None = None
) -> Document:
    """Read and check `path` (relative to `root` or absolute); raise PipelineError with all findings.

    Paths returned by `discover` are accepted as they are. Messages name the file by its POSIX
    path relative to `root`. A file that resolves (through symlinks or ``..``) outside `root` is
    refused, as is anything but a regular file. With `cache`, a file loaded before with the same
    path, bytes and software is taken from it instead of being parsed again (module docstring).
    """
    full = path
    if not path.is_absolute():
        full = root / path
        if not os.path.lexists(full) and root.parts and path.parts[: len(root.parts)] == root.parts:
            full = path  # already includes a relative root, as `discover` returns it
    shown = _display(full, root)
    where = Origin(shown)
    try:
        real = full.resolve()
        real_root = root.resolve()
    except (OSError, RuntimeError) as exc:
        raise PipelineError([where.finding("source-symlink", f"cannot resolve path: {exc}")]) from None
    if not _inside(real, real_root):
        if full.is_symlink():
            finding = where.finding("source-symlink", "symlink points outside the repository root")
        else:
            finding = where.finding("source-outside-root", "file is outside the repository root")
        raise PipelineError([finding])
    data = _read_bounded(real, where, max_bytes)
    if cache is None or len(data) > max_bytes:
        return _load_bytes(data, shown, max_bytes)
    key = digest(CACHE_ENTRY, software(), shown, data)
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


def load_text(text: str | bytes, display_path: str, *, max_bytes: int = MAX_FILE_BYTES) -> Document:
    """The checks of `load` on in-memory content; `display_path` names it in messages."""
    data = text if isinstance(text, bytes) else text.encode("utf-8", "surrogatepass")
    return _load_bytes(data, display_path, max_bytes)


def discover(
    root: Path, subdir: str, suffixes: Iterable[str] = (".yaml", ".yml")
) -> tuple[list[Path], list[Finding]]:
    """Files directly in ``root/subdir`` whose name ends with one of `suffixes`, sorted by name.

    Hidden names (leading ``.``) are ignored. Symlinks resolving outside `root` (``source-symlink``)
    and anything that is not a regular file (``source-not-regular``) are reported and skipped. A
    missing directory gives no files and no findings.
    """
    ends = (suffixes,) if isinstance(suffixes, str) else tuple(suffixes)
    directory = root / subdir
    shown_dir = _display(directory, root)
    files: list[Path] = []
    findings: list[Finding] = []
    if not os.path.lexists(directory):
        return files, findings
    try:
        real_root = root.resolve()
        real_dir = directory.resolve()
    except (OSError, RuntimeError) as exc:
        return files, [Origin(shown_dir).finding("source-symlink", f"cannot resolve directory: {exc}")]
    if not _inside(real_dir, real_root):
        message = "directory resolves outside the repository root"
        return files, [Origin(shown_dir).finding("source-symlink", message)]
    try:
        names = sorted(entry.name for entry in os.scandir(directory))
    except OSError as exc:
        return files, [Origin(shown_dir).finding("source-read", f"cannot list directory: {exc.strerror}")]
    for name in names:
        if name.startswith(".") or not name.endswith(ends):
            continue
        candidate = directory / name
        where = Origin(f"{shown_dir}/{name}" if shown_dir != "." else name)
        if candidate.is_symlink():
            try:
                target = candidate.resolve()
            except (OSError, RuntimeError) as exc:
                findings.append(where.finding("source-symlink", f"cannot resolve symlink: {exc}"))
                continue
            if not _inside(target, real_root):
                findings.append(where.finding("source-symlink", "symlink points outside the repository root"))
                continue
        try:
            mode = candidate.stat().st_mode
        except OSError as exc:
            findings.append(where.finding("source-read", f"cannot read file: {exc.strerror}"))
            continue
        if not stat.S_ISREG(mode):
            findings.append(where.finding("source-not-regular", f"not a regular file ({_kind(mode)})"))
            continue
        files.append(candidate)
    return files, findings


# --------------------------------------------------------------------------------------------------
# Cache entries


def to_entry(doc: Document) -> dict[str, Any] | None:
    """`doc` as plain JSON data for the cache; None when `from_entry` would not give it back equal.

    The marks are not stored with their paths: the paths of a parsed file are those of every node of
    its data in document order (`_layout`), so an entry holds the data and the (line, col) numbers in
    that order, flat, and key marks likewise for every node inside a mapping."""
    paths: list[KeyPath] = []
    keyed: list[KeyPath] = []
    if not _layout(doc.data, paths, keyed):
        return None
    if paths != list(doc.marks) or keyed != list(doc.key_marks):
        return None
    return {
        "path": doc.path,
        "data": doc.data,
        "marks": [n for mark in doc.marks.values() for n in mark],
        "key_marks": [n for mark in doc.key_marks.values() for n in mark],
        "findings": [[f.path, f.line, f.col, f.severity.value, f.rule, f.message] for f in doc.findings],
    }


def from_entry(value: Any, shown: str) -> Document | None:
    """The Document of a cache entry written by `to_entry` for the file `shown`; None when the entry
    has another shape or holds what no parse gives (the module docstring lists the checks)."""
    if type(value) is not dict or value.keys() != _ENTRY_KEYS or value["path"] != shown:
        return None
    data, flat, keyed_flat, raw = value["data"], value["marks"], value["key_marks"], value["findings"]
    if not (type(flat) is list and type(keyed_flat) is list and type(raw) is list):
        return None
    paths: list[KeyPath] = []
    keyed: list[KeyPath] = []
    if not _layout(data, paths, keyed):
        return None
    if len(flat) != 2 * len(paths) or len(keyed_flat) != 2 * len(keyed):
        return None
    if not (_counts(flat) and _counts(keyed_flat)):
        return None
    marks = dict(zip(paths, zip(flat[0::2], flat[1::2], strict=True), strict=True))
    key_marks = dict(zip(keyed, zip(keyed_flat[0::2], keyed_flat[1::2], strict=True), strict=True))
    findings: list[Finding] = []
    for item in raw:
        if not (type(item) is list and len(item) == 6 and item[0] == shown):
            return None
        _, line, col, severity, rule, message = item
        if not (_counts([line, col]) and type(rule) is str and type(message) is str):
            return None
        if severity not in _CACHED_SEVERITIES:
            return None
        findings.append(Finding(shown, line, col, Severity(severity), rule, message))
    return Document(shown, data, MappingProxyType(marks), MappingProxyType(key_marks), tuple(findings))


def _counts(values: list[Any]) -> bool:
    """Line and column numbers: non-negative ints, not bools."""
    return not values or (set(map(type, values)) <= _INT_TYPE and min(values) >= 0)


def _layout(data: Any, paths: list[KeyPath], keyed: list[KeyPath]) -> bool:
    """Append the path of every node of `data` to `paths` in document order (a collection before its
    items), and those of mapping entries to `keyed`, as the parser records marks. False when `data`
    is not something a parse gives: JSON types with string keys, finite floats, integers within 64
    bits, at most MAX_DEPTH levels of mappings and sequences."""
    paths.append(())
    kind = type(data)
    if kind is dict or kind is list:
        return _layout_items(data, (), 0, paths, keyed)
    return _parsed_scalar(data)


def _layout_items(
    value: dict[str, Any] | list[Any], path: KeyPath, depth: int, paths: list[KeyPath], keyed: list[KeyPath]
) -> bool:
    if depth >= MAX_DEPTH:
        return False
    items: Iterable[tuple[str | int, Any]]
    if type(value) is dict:
        if not set(map(type, value)) <= _STR_TYPE:
            return False
        items = value.items()
    else:
        items = enumerate(value)
    for key, item in items:
        child = (*path, key)
        paths.append(child)
        if type(key) is str:
            keyed.append(child)
        kind = type(item)
        if kind is dict or kind is list:
            if not _layout_items(item, child, depth + 1, paths, keyed):
                return False
        elif not (kind is str or kind is bool or item is None or _parsed_scalar(item)):
            return False
    return True


def _parsed_scalar(value: Any) -> bool:
    kind = type(value)
    if kind is int:
        return bool(_INT_MIN <= value <= _INT_MAX)
    if kind is float:
        return math.isfinite(value)
    return kind is str or kind is bool or value is None


# --------------------------------------------------------------------------------------------------
# Files and paths


def _inside(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def _display(full: Path, root: Path) -> str:
    """`full` relative to `root` as a POSIX path, lexically first, then through symlinks."""
    try:
        return Path(os.path.abspath(full)).relative_to(os.path.abspath(root)).as_posix()
    except ValueError:
        pass
    try:
        return full.resolve().relative_to(root.resolve()).as_posix()
    except (ValueError, OSError, RuntimeError):
        return full.as_posix()


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a named pipe"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "not a plain file"


def _size_finding(where: Origin, size: int, max_bytes: int) -> Finding:
    return where.finding(
        "source-size", f"file is {size} bytes, over the limit of {max_bytes} bytes ({max_bytes / 1024:g} KiB)"
    )


def _read_bounded(real: Path, where: Origin, max_bytes: int) -> bytes:
    """At most max_bytes + 1 bytes of a regular file; never blocks on a pipe or device."""
    flags = (
        os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)
    )
    try:
        fd = os.open(real, flags)
    except OSError as exc:
        raise PipelineError([where.finding("source-read", f"cannot read file: {exc.strerror}")]) from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise PipelineError(
                [where.finding("source-not-regular", f"not a regular file ({_kind(info.st_mode)})")]
            )
        if info.st_size > max_bytes:
            raise PipelineError([_size_finding(where, info.st_size, max_bytes)])
        chunks: list[bytes] = []
        remaining = max_bytes + 1
        while remaining > 0:
            chunk = os.read(fd, min(remaining, 1 << 16))
            if not chunk:
                break
            chunks.append(chunk)
            remaining -= len(chunk)
    except OSError as exc:
        raise PipelineError([where.finding("source-read", f"cannot read file: {exc.strerror}")]) from None
    finally:
        os.close(fd)
    return b"".join(chunks)


# --------------------------------------------------------------------------------------------------
# Text checks


class _Lines:
    """Offsets of line starts in a text, for 1-based (line, col) of a character offset."""

    def __init__(self, text: str) -> None:
        self.starts = [0, *(m.end() for m in _BREAK.finditer(text))]

    def at(self, offset: int) -> Mark:
        index = bisect.bisect_right(self.starts, offset) - 1
        return index + 1, offset - self.starts[index] + 1


def _decode(data: bytes) -> tuple[str, list[tuple[int, int]]]:
    """UTF-8 text with U+FFFD for each invalid byte, and those bytes as (byte offset, char offset)."""
    # surrogateescape turns each invalid byte (and only those) into one lone surrogate.
    text = data.decode("utf-8", "surrogateescape")
    errors: list[tuple[int, int]] = []
    byte_offset = char_offset = 0
    for match in _ESCAPED.finditer(text):
        byte_offset += len(text[char_offset : match.start()].encode("utf-8"))
        errors.append((byte_offset, match.start()))
        byte_offset += 1
        char_offset = match.end()
    return (_ESCAPED.sub("\ufffd", text) if errors else text), errors


def _utf8_problem(data: bytes, byte_offset: int) -> str:
    """Why the byte at `byte_offset` does not decode, in the words of Python's UTF-8 codec."""
    try:
        codecs.utf_8_decode(data[byte_offset : byte_offset + 4], "strict", True)
    except UnicodeDecodeError as exc:
        if exc.start == 0:
            return f"{exc.reason} 0x{data[byte_offset]:02x}"
    return f"invalid byte 0x{data[byte_offset]:02x}"


def _text_checks(data: bytes, offset: int, shown: str) -> tuple[str, list[Finding]]:
    """Decode and check the text; returns it with bad characters replaced by U+FFFD, and findings.

    `offset` is the number of bytes (a byte order mark) already removed from the start of `data`.
    Encoding problems are reported once per line (the first one, with a count of the others).
    """
    text, errors = _decode(data)
    lines = _Lines(text)
    findings: list[Finding] = []

    def per_line(places: Iterable[tuple[int, int]], describe: Callable[[int], str]) -> None:
        """`places` are (char offset, detail) pairs; `describe(detail)` words the first of a line."""
        first: dict[int, tuple[int, int, int]] = {}
        for char_offset, detail in places:
            line, col = lines.at(char_offset)
            known = first.get(line)
            first[line] = (col, detail, 1) if known is None else (known[0], known[1], known[2] + 1)
        for line, (col, detail, count) in first.items():
            more = f"; {count - 1} more on this line" if count > 1 else ""
            message = describe(detail) + more
            findings.append(Finding(shown, line, col, Severity.ERROR, "source-encoding", message))

    def bad_byte(byte_offset: int) -> str:
        message = f"not valid UTF-8: {_utf8_problem(data, byte_offset)} at byte offset {byte_offset + offset}"
        if byte_offset == 0 and data[:2] in (b"\xff\xfe", b"\xfe\xff"):
            message += " (the file looks like UTF-16; save it as UTF-8)"
        return message

    per_line(((char_offset, byte_offset) for byte_offset, char_offset in errors), bad_byte)

    bad = [(match.start(), ord(match.group())) for match in _DISALLOWED.finditer(text)]
    per_line(bad, _describe)
    if bad:
        text = _DISALLOWED.sub("\ufffd", text)

    for line_index, start in enumerate(lines.starts):
        match = _LEADING_TAB.match(text, start)
        if match:
            findings.append(
                Finding(
                    shown,
                    line_index + 1,
                    match.end() - start,
                    Severity.ERROR,
                    "source-tab",
                    "tab character in indentation; YAML indentation must use spaces",
                )
            )
    return text, findings


def _describe(code: int) -> str:
    if code == 0xFEFF:
        return "byte order mark U+FEFF is only allowed at the start of the file"
    if code < 0x20 or 0x7F <= code <= 0x9F:
        name = " (NUL)" if code == 0 else " (DEL)" if code == 0x7F else ""
        return f"control character U+{code:04X}{name} is not allowed"
    return f"character U+{code:04X} is not allowed in YAML"


# --------------------------------------------------------------------------------------------------
# Loading


def _load_bytes(data: bytes, shown: str, max_bytes: int) -> Document:
    where = Origin(shown)
    if len(data) > max_bytes:
        raise PipelineError([_size_finding(where, len(data), max_bytes)])
    offset = 0
    if data.startswith(_BOM):
        offset = len(_BOM)
        data = data[offset:]
    text, findings = _text_checks(data, offset, shown)
    builder = _Builder(shown, findings)
    syntax = _run_parser(_LOADER, text, builder)
    reword = _LOADER is not _PURE_LOADER and len(text) <= _REWORD_MAX_CHARS
    if syntax is not None and syntax.rule == "source-syntax" and reword:
        # Report the pure-Python parser's wording and position, the same with or without libyaml.
        # Its builder stops at MAX_DEPTH too, which keeps that parser's cost linear.
        syntax = _run_parser(_PURE_LOADER, text, _Builder(shown, [])) or syntax
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


def _run_parser(loader_class: Callable[[str], _EventSource], text: str, builder: _Builder) -> Finding | None:
    """Feed the events of `text` to `builder`; a syntax error becomes the returned finding."""
    shown = builder.shown
    loader = loader_class(text)
    try:
        while True:
            try:
                event = loader.get_event()
            except yaml.MarkedYAMLError as exc:
                return _syntax_finding(shown, exc)
            except yaml.YAMLError as exc:
                return Finding(shown, 0, 0, Severity.ERROR, "source-syntax", str(exc))
            except Exception as exc:  # the parser's own failures on hostile input are findings too
                return Finding(shown, 0, 0, Severity.ERROR, "source-syntax", f"cannot parse: {exc!r}")
            if event is None:
                return None
            if builder.feed(event):
                return None
    finally:
        loader.dispose()


def _syntax_finding(shown: str, exc: yaml.MarkedYAMLError) -> Finding:
    mark = exc.problem_mark or exc.context_mark
    if exc.problem and "maximum nesting depth" in exc.problem:
        # libyaml refuses nesting beyond its own limit (far above MAX_DEPTH) before emitting events.
        line, col = (mark.line + 1, mark.column + 1) if mark else (0, 0)
        return Finding(shown, line, col, Severity.ERROR, "source-depth", _DEPTH_MESSAGE)
    message = exc.problem or exc.context or "invalid YAML"
    if exc.problem and exc.context:
        context_mark = exc.context_mark
        at = ""
        if context_mark and mark and (context_mark.line, context_mark.column) != (mark.line, mark.column):
            at = f" at line {context_mark.line + 1}"
        message = f"{message} ({exc.context}{at})"
    line, col = (mark.line + 1, mark.column + 1) if mark else (0, 0)
    return Finding(shown, line, col, Severity.ERROR, "source-syntax", message)


def _mark(event: Event) -> Mark:
    mark = event.start_mark
    return (mark.line + 1, mark.column + 1) if mark is not None else (0, 0)


def _short_tag(tag: str) -> str:
    return "!!" + tag[len(_TAG_PREFIX) :] if tag.startswith(_TAG_PREFIX) else tag


def _clip(text: str, limit: int = 40) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _resolve_plain(text: str) -> Any:
    """The value of an untagged plain scalar (see the module docstring)."""
    if _NULL.fullmatch(text):
        return None
    if _BOOL.fullmatch(text):
        return text.lower() in ("yes", "true", "on")
    if _FLOAT.fullmatch(text):
        value = text.replace("_", "").lower()
        sign = -1.0 if value.startswith("-") else 1.0
        value = value.lstrip("+-")
        if value == ".inf":
            return sign * math.inf
        if value == ".nan":
            return math.nan
        return sign * float(value)
    if _INT.fullmatch(text):
        value = text.replace("_", "")
        sign = -1 if value.startswith("-") else 1
        value = value.lstrip("+-")
        if value in ("0b", "0x"):
            return text  # "0b_", "0x_": no digits at all
        if value.startswith("0b"):
            return sign * int(value[2:], 2)
        if value.startswith("0x"):
            return sign * int(value[2:], 16)
        if value.startswith("0"):
            return sign * int(value, 8)
        try:
            return sign * int(value)
        except ValueError:  # more digits than int() converts: far outside any range checked
            return sign * 2**64
    return text


@dataclasses.dataclass
class _Frame:
    """An open mapping or sequence. `path` is None when the node is not part of the result."""

    container: dict[str, Any] | list[Any]
    path: KeyPath | None
    depth: int
    as_key: bool
    want_key: bool = True
    key: str | None = None
    key_mark: Mark = (0, 0)
    seen: dict[str, int] = dataclasses.field(default_factory=dict)


class _Builder:
    """Builds plain data and marks from parser events, without recursion, and collects findings."""

    def __init__(self, shown: str, findings: list[Finding]) -> None:
        self.shown = shown
        self.findings = findings
        self.root: Any = None
        self.marks: dict[KeyPath, Mark] = {}
        self.key_marks: dict[KeyPath, Mark] = {}
        self.stack: list[_Frame] = []
        self.documents = 0
        self.empty = True
        self.stopped = False

    def report(self, mark: Mark, rule: str, message: str, severity: Severity = Severity.ERROR) -> None:
        same = sum(1 for f in self.findings if f.rule == rule)
        if same < MAX_FINDINGS_PER_RULE:
            self.findings.append(Finding(self.shown, mark[0], mark[1], severity, rule, message))
        elif same == MAX_FINDINGS_PER_RULE:
            self.findings.append(
                Finding(
                    self.shown,
                    mark[0],
                    mark[1],
                    severity,
                    rule,
                    f"{message}; further {rule} findings in this file are not shown",
                )
            )

    def feed(self, event: Event) -> bool:
        """Take one event; True when the rest of the stream is of no interest."""
        if isinstance(event, StreamEndEvent):
            return True
        if isinstance(event, DocumentStartEvent):
            self.documents += 1
            if self.documents > 1:
                self.report(_mark(event), "source-multidoc", "more than one YAML document in the file")
                return True
            return False
        if isinstance(event, CollectionEndEvent):
            self._end()
        elif isinstance(event, NodeEvent):
            self._node(event)
        return self.stopped

    # Node events --------------------------------------------------------------------------------

    def _node(self, event: NodeEvent) -> None:
        parent = self.stack[-1] if self.stack else None
        mark = _mark(event)
        as_key = parent is not None and isinstance(parent.container, dict) and parent.want_key
        path = None if as_key else self._child_path(parent)
        if parent is None and not (isinstance(event, ScalarEvent) and _is_empty(event)):
            self.empty = False

        if isinstance(event, AliasEvent):
            self.report(
                mark, "source-alias", f"alias '*{event.anchor}' is not allowed (no anchors or aliases)"
            )
            self._finish(parent, as_key, path, None)
            return
        tagged = self._check_properties(event, mark)

        if isinstance(event, ScalarEvent):
            if as_key:
                assert parent is not None
                self._key(parent, event, mark, tagged)
                return
            self._record(parent, path, mark)
            value = event.value if tagged else self._value(event, mark)
            self._finish(parent, False, path, value)
            return

        assert isinstance(event, CollectionStartEvent)
        depth = (parent.depth if parent else 0) + 1
        if depth > MAX_DEPTH:
            # Parsing stops here: deep flow nesting makes the pure-Python scanner quadratic.
            self.report(mark, "source-depth", _DEPTH_MESSAGE)
            self.stopped = True
            return
        if as_key:
            kind = "mapping" if isinstance(event, MappingStartEvent) else "sequence"
            self.report(mark, "source-key-type", f"mapping key is a {kind}; keys must be strings")
        else:
            self._record(parent, path, mark)
        container: dict[str, Any] | list[Any] = {} if isinstance(event, MappingStartEvent) else []
        self.stack.append(_Frame(container, path, depth, as_key))

    def _end(self) -> None:
        frame = self.stack.pop()
        parent = self.stack[-1] if self.stack else None
        self._finish(parent, frame.as_key, frame.path, frame.container)

    def _child_path(self, parent: _Frame | None) -> KeyPath | None:
        if parent is None:
            return ()
        if parent.path is None:
            return None
        if isinstance(parent.container, dict):
            return None if parent.key is None else (*parent.path, parent.key)
        return (*parent.path, len(parent.container))

    def _record(self, parent: _Frame | None, path: KeyPath | None, mark: Mark) -> None:
        if path is None:
            return
        self.marks[path] = mark
        if parent is not None and isinstance(parent.container, dict):
            self.key_marks[path] = parent.key_mark

    def _finish(self, parent: _Frame | None, as_key: bool, path: KeyPath | None, value: Any) -> None:
        """A node is complete: attach it to its parent (or make it the root)."""
        if parent is None:
            self.root = value
            return
        if isinstance(parent.container, dict):
            if as_key:
                parent.want_key = False
                parent.key = None
                return
            if parent.key is not None and path is not None:
                parent.container[parent.key] = value
            parent.want_key = True
            parent.key = None
        else:
            parent.container.append(value)

    def _check_properties(self, event: NodeEvent, mark: Mark) -> bool:
        """Report anchors and tags on a node; True when the node has an explicit tag."""
        if event.anchor is not None:
            self.report(
                mark, "source-alias", f"anchor '&{event.anchor}' is not allowed (no anchors or aliases)"
            )
        tag: str | None = getattr(event, "tag", None)
        if tag is None:
            return False
        self.report(
            mark, "source-tag", f"explicit tag '{_short_tag(tag)}' is not allowed; write a plain value"
        )
        return True

    # Scalars ------------------------------------------------------------------------------------

    def _key(self, parent: _Frame, event: ScalarEvent, mark: Mark, tagged: bool) -> None:
        parent.want_key = False
        parent.key = None
        if tagged:
            return
        text = event.value
        plain = event.implicit[0]
        if plain and text == "<<":
            self.report(mark, "source-alias", "merge key '<<' is not allowed (no anchors or aliases)")
            return
        value = _resolve_plain(text) if plain else text
        if not isinstance(value, str):
            kind = "null" if value is None else type(value).__name__
            if isinstance(value, bool):
                kind = f"boolean {str(value).lower()}"
            self.report(
                mark,
                "source-key-type",
                f"mapping key '{_clip(text)}' is read as {kind}; keys must be strings (quote it)",
            )
            return
        first = parent.seen.get(value)
        if first is not None:
            self.report(
                mark,
                "source-duplicate-key",
                f"duplicate key '{_clip(value)}' (first defined on line {first})",
            )
            return
        parent.seen[value] = mark[0]
        parent.key = value
        parent.key_mark = mark

    def _value(self, event: ScalarEvent, mark: Mark) -> Any:
        text = event.value
        if not event.implicit[0]:
            return text
        value = _resolve_plain(text)
        if isinstance(value, bool):
            if text.lower() in _AMBIGUOUS_BOOLS:
                self.report(
                    mark,
                    "source-ambiguous-bool",
                    f"'{text}' is read as boolean {str(value).lower()}; write {str(value).lower()}"
                    f" for a boolean or quote it for a string",
                    Severity.WARNING,
                )
        elif isinstance(value, int):
            if not _INT_MIN <= value <= _INT_MAX:
                self.report(
                    mark, "source-number", f"integer {_clip(text)} is outside the signed 64-bit range"
                )
            elif _OCTAL.fullmatch(text):
                self.report(
                    mark,
                    "source-octal",
                    f"'{_clip(text)}' is read as octal {value} here but as decimal by YAML 1.2 readers;"
                    " drop the leading zero or quote it",
                    Severity.WARNING,
                )
        elif isinstance(value, float):
            if not math.isfinite(value):
                self.report(
                    mark,
                    "source-number",
                    f"number {_clip(text)} is not finite (NaN and infinity are refused)",
                )
        elif text in _YAML11_ONLY_BOOLS:
            self.report(
                mark,
                "source-ambiguous-bool",
                f"'{text}' is read as the string '{text}' here but as a boolean by other YAML 1.1 readers;"
                f" write true/false or quote it",
                Severity.WARNING,
            )
        return value


def _is_empty(event: ScalarEvent) -> bool:
    return event.tag is None and event.implicit[0] and event.value == ""
