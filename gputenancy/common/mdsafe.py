"""Markdown that tenant strings cannot hijack (the pull-request comment and the job summary).

Every string that comes from an input file goes through one of these before it lands in markdown:

* `code` wraps it in a code span whose backtick fence is longer than any run of backticks inside,
  so it cannot close the span; inside a span nothing is a mention, link, image, emphasis or HTML.
  Pipes are escaped (tables are split before spans are parsed) and line breaks are escaped, so a
  value stays in its table cell.
* `text` is for prose, in markdown or inside HTML (``<summary>``): the punctuation that opens
  markdown or HTML constructs is written as a numeric character reference (``&#91;`` for ``[``),
  which both read as the character and neither as syntax (no links, images, emphasis, code,
  tags, strikethrough, math), and a word joiner
  (U+2060) breaks every ``@``, ``#``, ``://`` and ``www.`` so that no ``@user``, ``@org/team``,
  ``#123`` or bare URL becomes a live mention, reference or link.
* `fence` makes a fenced code block whose fence is longer than any run of backticks inside.

All three make control, bidi and zero-width characters visible first (`safetext.visible`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from gputenancy.common import safetext

_ACTIVE = re.compile(r"[\\`*_\[\]<>!|~&#$\"']")
_TICKS = re.compile(r"`+")
_JOINER = "\u2060"
# Mentions (@user, @org/team), references (#123) and autolinks (https://..., www.) broken by a
# word joiner, which renders as nothing.
_INERT = (
    ("@", "@" + _JOINER),
    ("#", "#" + _JOINER),
    ("://", ":" + _JOINER + "//"),
    ("www.", "www" + _JOINER + "."),
)


def _longest(text: str) -> int:
    return max((len(m.group()) for m in _TICKS.finditer(text)), default=0)


def text(value: str, limit: int = safetext.MAX_MESSAGE) -> str:
    """`value` as inert markdown prose (module docstring)."""
    shown = safetext.line(value, limit)
    for plain, inert in _INERT:
        shown = shown.replace(plain, inert)
    shown = _ACTIVE.sub(lambda m: f"&#{ord(m.group())};", shown)
    return shown


def code(value: str, limit: int = safetext.MAX_MESSAGE) -> str:
    """`value` as a code span that it cannot close (module docstring)."""
    shown = safetext.line(value, limit).replace("|", "\\|")
    if not shown:
        return "` `"
    ticks = "`" * (_longest(shown) + 1)
    pad = " " if shown.startswith("`") or shown.endswith("`") or ticks != "`" else ""
    return f"{ticks}{pad}{shown}{pad}{ticks}"


def fence(lines: Iterable[str]) -> str:
    """A fenced code block of `lines` (each made visible) that no line can close."""
    body = [safetext.visible(line) for line in lines]
    ticks = "`" * max(3, max((_longest(line) for line in body), default=0) + 1)
    return "\n".join([ticks, *body, ticks])
