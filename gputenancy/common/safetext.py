"""Text that cannot take over a terminal, a CI log or a review (a leaf module).

Input files are written by pull-request authors, and their strings reach the output: paths,
names, values in messages. `visible` writes every control character (line breaks included),
bidirectional override and isolate, and zero-width or invisible format character as a ``\\uXXXX``
escape, so a message is one line that reads as it is stored: it cannot start a fake finding or a
GitHub workflow command (``::add-mask::``) on a new line, move the cursor, recolour the terminal or
reorder what a reviewer sees ("Trojan Source"). `clip` bounds a string's length.
"""

from __future__ import annotations

import re

MAX_MESSAGE = 600
"""Characters of a finding message shown; the rest is cut with a note of how much."""
MAX_PATH = 240
"""Characters of a path shown."""

# C0 and C1 controls, DEL, bidi embeddings/overrides/isolates and marks, zero-width and other
# invisible format characters, line and paragraph separators.
_HIDDEN = re.compile(
    "[\x00-\x1f\x7f-\x9f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2069\u206a-\u206f\ufeff\ufff9-\ufffb]"
)


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def visible(text: str) -> str:
    """`text` with hidden and control characters (newlines too) as backslash escapes."""
    return _HIDDEN.sub(_escape, text)


def clip(text: str, limit: int) -> str:
    """`text` cut to about `limit` characters, saying how many were left out."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… ({len(text) - limit} more characters)"


def line(text: str, limit: int = MAX_MESSAGE) -> str:
    """One visible line of at most about `limit` characters."""
    return clip(visible(text), limit)
