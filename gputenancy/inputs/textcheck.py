"""Text checks of an input file before YAML parsing: UTF-8, disallowed characters, tabs in indentation."""

from __future__ import annotations

import bisect
import codecs
import re
from collections.abc import Callable, Iterable

from gputenancy.common.findings import Finding, Severity
from gputenancy.inputs.document import Mark

# Line breaks as PyYAML and libyaml count them (YAML 1.1), so text checks and parser marks agree.
_BREAK = re.compile("\r\n|[\r\n\x85\u2028\u2029]")
_LEADING_TAB = re.compile(r" *\t")
_ESCAPED = re.compile("[\udc80-\udcff]")
# Characters the YAML reader refuses, plus U+FEFF anywhere but at the start.
_DISALLOWED = re.compile("[^\t\n\r\x20-\x7e\x85\xa0-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]|\ufeff")


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


def text_checks(data: bytes, offset: int, shown: str) -> tuple[str, list[Finding]]:
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
