"""A YAML syntax error in plain words, at the line the author must change.

The parser says where it gave up (`mapping values are not allowed here`, `expected <block end>, but
found '<block mapping start>'`), which is often the line after the mistake and always in its own
terms. This module looks at the text around that place and names the mistake instead: a key indented
unlike the keys beside it, a missing space after ':', a bracket or quote never closed, a line that is
neither `key: value` nor a list item. What it cannot recognise keeps the parser's message, with its
token names replaced by words.
"""

from __future__ import annotations

import dataclasses
import re

_KEY_NO_SPACE = re.compile(r"^(\s*(?:-\s+)*)([A-Za-z0-9_][A-Za-z0-9_./-]*):(?=[^\s:/])(\S*)")
_KEY = re.compile(r"""^\s*(?:-\s+)*(?:"[^"]*"|'[^']*'|[^\s:#][^:#]*?)\s*:(?:\s|$)""")
_TOKENS = {
    "<block mapping start>": "a key",
    "<block sequence start>": "a list item ('- ')",
    "<block end>": "the end of the indented block",
    "<block entry>": "a list item ('- ')",
    "<scalar>": "a value",
    "<stream end>": "the end of the file",
    "<document start>": "'---'",
    "<document end>": "'...'",
    "<flow mapping start>": "'{'",
    "<flow mapping end>": "'}'",
    "<flow sequence start>": "'['",
    "<flow sequence end>": "']'",
    "<flow entry>": "','",
    "<key>": "a key",
    "<value>": "':'",
    "<alias>": "an alias ('*')",
    "<anchor>": "an anchor ('&')",
    "<tag>": "a tag ('!')",
}
_CLOSERS = {"flow mapping": ("{", "}"), "flow sequence": ("[", "]")}


@dataclasses.dataclass(frozen=True)
class Place:
    """Where the parser stopped (1-based line and column; 0 when unknown), and what it said."""

    problem: str | None
    line: int
    col: int
    context: str | None = None
    context_line: int = 0
    context_col: int = 0


@dataclasses.dataclass(frozen=True)
class _Line:
    number: int  # 1-based
    text: str

    @property
    def indent(self) -> int:
        return len(self.text) - len(self.text.lstrip(" "))

    @property
    def key_col(self) -> int:
        """Column (0-based) of the line's first key or value, after any list dashes."""
        m = re.match(r"\s*(?:-\s+)*", self.text)
        return m.end() if m else 0

    @property
    def opens_block(self) -> bool:
        return re.search(r":\s*(?:#.*)?$", self.text) is not None

    @property
    def word(self) -> str:
        return self.text.strip().split(":", 1)[0].strip().removeprefix("- ").strip()

    @property
    def is_item(self) -> bool:
        return self.text.lstrip().startswith("- ") or self.text.strip() == "-"


def explain(text: str, place: Place) -> tuple[int, int, str]:
    """(line, column, message) for a syntax error the parser reported at `place`."""
    lines = text.splitlines()
    for found in (_missing_space, _flow_unclosed, _quote_unclosed, _no_colon, _indentation, _second_colon):
        said = found(lines, place)
        if said is not None:
            return said
    return place.line, place.col, _plain(place)


def _content(lines: list[str], number: int) -> _Line | None:
    if 1 <= number <= len(lines):
        stripped = lines[number - 1].strip()
        if stripped and not stripped.startswith("#"):
            return _Line(number, lines[number - 1])
    return None


def _previous(lines: list[str], number: int) -> _Line | None:
    for n in range(number - 1, 0, -1):
        line = _content(lines, n)
        if line is not None:
            return line
    return None


def _missing_space(lines: list[str], place: Place) -> tuple[int, int, str] | None:
    if place.problem not in ("mapping values are not allowed here", "could not find expected ':'"):
        return None
    candidates = [place.context_line] if place.context_line else []
    prev = _previous(lines, place.line)
    candidates += [prev.number] if prev is not None else []
    candidates.append(place.line)
    for number in candidates:
        line = _content(lines, number)
        m = _KEY_NO_SPACE.match(line.text) if line is not None else None
        if m is not None:
            key, rest = m.group(2), m.group(3)
            return (
                number,
                m.end(2) + 1,
                f"missing space after ':' in `{key}:{rest}`: write `{key}: {rest}` (YAML needs a space "
                "between a key's ':' and its value)",
            )
    return None


def _flow_unclosed(lines: list[str], place: Place) -> tuple[int, int, str] | None:
    kind = next((k for k in _CLOSERS if place.context and k in place.context), None)
    if kind is None or not place.problem or not place.problem.startswith("expected ','"):
        return None
    opener, closer = _CLOSERS[kind]
    here, opened = _content(lines, place.line), _content(lines, place.context_line)
    starts_anew = here is not None and opened is not None and here.indent <= opened.indent
    if place.context_line and place.line > place.context_line and starts_anew:
        return (
            place.context_line,
            place.context_col,
            f"the '{opener}' here is never closed: add '{closer}' where its items end (line "
            f"{place.line} already starts something new)",
        )
    at = f" on line {place.context_line}" if place.context_line != place.line else ""
    return (
        place.line,
        place.col,
        f"missing ',' between two items, or '{closer}' to close the '{opener}'{at}",
    )


def _quote_unclosed(lines: list[str], place: Place) -> tuple[int, int, str] | None:
    if not place.context or "quoted scalar" not in place.context or not place.context_line:
        return None
    return (
        place.context_line,
        place.context_col,
        "this quoted text is never closed: add the closing quote (a quote inside it is written twice in "
        '\'single quotes\', or as \\" in "double quotes")',
    )


def _no_colon(lines: list[str], place: Place) -> tuple[int, int, str] | None:
    if place.problem != "could not find expected ':'" or not place.context_line:
        return None
    line = _content(lines, place.context_line)
    if line is None:
        return None
    return (
        line.number,
        line.key_col + 1,
        f"`{line.text.strip()}` is neither `key: value` nor a list item ('- '): add ':' after the key, "
        "or join it to the line above",
    )


def _indentation(lines: list[str], place: Place) -> tuple[int, int, str] | None:
    """A key or list item indented unlike its siblings: the lines between it and the nearest line
    above it that is less indented (its parent, or a plain `key: value` it was pushed under)."""
    problem = place.problem or ""
    if problem != "mapping values are not allowed here" and not problem.startswith("expected <block end>"):
        return None
    here = _content(lines, place.line)
    if here is None:
        return None
    if problem.startswith("mapping") and here.text.find(":") != place.col - 1:
        return None  # the ':' is further along the line: not an indentation problem
    item = here.is_item and problem.startswith("expected")

    def measure(line: _Line) -> int:
        return line.indent if item else line.key_col

    between: list[_Line] = []
    parent = _previous(lines, here.number)
    while parent is not None and measure(parent) >= measure(here) and parent.key_col >= measure(here):
        between.append(parent)
        parent = _previous(lines, parent.number)
    if not between:
        if parent is None or parent.opens_block:
            return None
        between = [parent]  # pushed under a plain `key: value`: its siblings are that line's
    want = min(measure(line) for line in between)
    if want == measure(here):
        return None
    beside = next(line for line in between if measure(line) == want)
    if item:
        return (
            here.number,
            here.indent + 1,
            f"this list item is indented {_spaces(here.indent)}; the items above it use {want} "
            f"(line {beside.number})",
        )
    what = f"`{here.word}`" if here.word else "this line"
    return (
        here.number,
        here.key_col + 1,
        f"{what} is indented {_spaces(here.key_col)}; the keys beside it use {want} "
        f"(`{beside.word}` on line {beside.number})",
    )


def _second_colon(lines: list[str], place: Place) -> tuple[int, int, str] | None:
    if place.problem != "mapping values are not allowed here":
        return None
    here = _content(lines, place.line)
    if here is None or _KEY.match(here.text) is None:
        return None
    key = here.word
    value = here.text.split(":", 1)[1].strip()
    return (
        place.line,
        place.col,
        f"a second ': ' on this line: quote the value (`{key}: \"{value}\"`) or put the nested key on a "
        "line of its own, indented",
    )


def _spaces(n: int) -> str:
    return f"{n} space" if n == 1 else f"{n} spaces"


def _plain(place: Place) -> str:
    """The parser's message with its token names in words."""
    message = place.problem or place.context or "invalid YAML"
    for token, words in _TOKENS.items():
        message = message.replace(f"'{token}'", words).replace(token, words)
    message = message.replace("but got", "but found")
    if message.startswith("found character '\\t' that cannot start any token"):
        return "a tab character where YAML expects spaces"
    if place.problem and place.context:
        context = place.context.removeprefix("while ")
        for token, words in _TOKENS.items():
            context = context.replace(token, words)
        at = f" that starts on line {place.context_line}" if place.context_line not in (0, place.line) else ""
        message = (
            f"{message} ({context.replace('parsing a ', 'in the ').replace('scanning ', 'reading ')}{at})"
        )
    return message
