"""Loaded Documents as JSON cache entries and back (see "Loaded files in the cache" in
`gputenancy.inputs.source`): marks stored flat in document order, and every entry checked to be what a
parse could give before it is used."""

from __future__ import annotations

import math
from collections.abc import Iterable
from types import MappingProxyType
from typing import Any

from gputenancy.common.findings import Finding, Severity
from gputenancy.inputs.document import INT_MAX, INT_MIN, MAX_DEPTH, Document, KeyPath

# Cache entries: their keys, and the severities a loaded file can keep (errors are raised instead).
_ENTRY_KEYS = frozenset({"path", "data", "marks", "key_marks", "findings"})
_CACHED_SEVERITIES = frozenset(s.value for s in Severity if s is not Severity.ERROR)
_INT_TYPE: frozenset[type] = frozenset({int})
_STR_TYPE: frozenset[type] = frozenset({str})


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
        return bool(INT_MIN <= value <= INT_MAX)
    if kind is float:
        return math.isfinite(value)
    return kind is str or kind is bool or value is None
