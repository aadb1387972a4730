"""YAML parser events to plain data with marks, without recursion: the reader's rules on anchors,
aliases, tags, keys, plain scalars and depth, each problem a finding."""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Callable
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

from gputenancy.common.findings import Finding, Severity
from gputenancy.inputs import yamlwords
from gputenancy.inputs.document import INT_MAX, INT_MIN, MAX_DEPTH, MAX_FINDINGS_PER_RULE, KeyPath, Mark

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


class EventSource(Protocol):
    def get_event(self) -> Event | None: ...

    def dispose(self) -> None: ...


def run_parser(loader_class: Callable[[str], EventSource], text: str, builder: Builder) -> Finding | None:
    """Feed the events of `text` to `builder`; a syntax error becomes the returned finding."""
    shown = builder.shown
    loader = loader_class(text)
    try:
        while True:
            try:
                event = loader.get_event()
            except yaml.MarkedYAMLError as exc:
                return _syntax_finding(shown, exc, text)
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


def _syntax_finding(shown: str, exc: yaml.MarkedYAMLError, text: str) -> Finding:
    mark = exc.problem_mark or exc.context_mark
    if exc.problem and "maximum nesting depth" in exc.problem:
        # libyaml refuses nesting beyond its own limit (far above MAX_DEPTH) before emitting events.
        line, col = (mark.line + 1, mark.column + 1) if mark else (0, 0)
        return Finding(shown, line, col, Severity.ERROR, "source-depth", _DEPTH_MESSAGE)
    line, col = (mark.line + 1, mark.column + 1) if mark else (0, 0)
    context = exc.context_mark if exc.problem else None
    place = yamlwords.Place(
        exc.problem or exc.context,
        line,
        col,
        exc.context if exc.problem else None,
        context.line + 1 if context else 0,
        context.column + 1 if context else 0,
    )
    line, col, message = yamlwords.explain(text, place)
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


class Builder:
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
            if not INT_MIN <= value <= INT_MAX:
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
