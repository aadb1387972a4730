"""Findings as text, GitHub workflow commands or JSON (plans are formatted in deliver/planview.py)."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence

from gputenancy.common import safetext
from gputenancy.common.findings import Finding, Severity, ordered

FORMATS = ("text", "github", "json")
FINDINGS_SCHEMA = "gputenancy.common.findings/v1"
"""The schema id of the JSON findings document (validate, render, check, schemas fetch --format json;
plan --format json when the render fails)."""


def default_format() -> str:
    return "github" if os.environ.get("GITHUB_ACTIONS") == "true" else "text"


def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_prop(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def summary(findings: Sequence[Finding]) -> str:
    errors = sum(f.severity is Severity.ERROR for f in findings)
    warnings = sum(f.severity is Severity.WARNING for f in findings)
    return f"{errors} error{'s' if errors != 1 else ''}, {warnings} warning{'s' if warnings != 1 else ''}"


MAX_PER_RULE = 50
"""Findings of one rule printed per run; the rest are counted in one note. Whatever the size of
the input, the output stays bounded (messages and paths are clipped too: `safetext`)."""


def bounded(findings: Sequence[Finding]) -> tuple[list[Finding], list[str]]:
    """Findings with visible, clipped paths and messages, at most MAX_PER_RULE per rule, root causes
    first (`findings.ordered`); and notes for those left out."""
    shown: list[Finding] = []
    left_out: dict[str, int] = {}
    count: dict[str, int] = {}
    for f in ordered(findings):
        count[f.rule] = count.get(f.rule, 0) + 1
        if count[f.rule] > MAX_PER_RULE:
            left_out[f.rule] = left_out.get(f.rule, 0) + 1
            continue
        shown.append(
            Finding(
                safetext.line(f.path, safetext.MAX_PATH),
                f.line,
                f.col,
                f.severity,
                safetext.line(f.rule, 80),
                safetext.line(f.message),
            )
        )
    notes = [
        f"{n} more {rule} finding{'s' if n != 1 else ''} not shown (at most {MAX_PER_RULE} per rule)"
        for rule, n in sorted(left_out.items())
    ]
    return shown, notes


_PAINT = {"error": "\033[1;31m", "warning": "\033[33m", "note": "\033[36m"}


def _painted(f: Finding) -> str:
    """`path:line:col` bold, the severity in its colour, the rule dim."""
    where = f.path + (f":{f.line}:{max(f.col, 1)}" if f.line else "")
    sev = f.severity.value
    return f"\033[1m{where}\033[0m: {_PAINT.get(sev, '')}{sev}\033[0m: {f.message} \033[2m({f.rule})\033[0m"


def format_findings(
    findings: Sequence[Finding], fmt: str, notes: Sequence[str] = (), *, color: bool = False
) -> str:
    total = list(findings)
    in_order, capped = bounded(total)
    notes = [*(safetext.line(n) for n in notes), *capped]
    if fmt == "json":
        return (
            json.dumps(
                {
                    "schema": FINDINGS_SCHEMA,
                    "findings": [
                        {
                            "path": f.path,
                            "line": f.line,
                            "col": f.col,
                            "severity": f.severity.value,
                            "rule": f.rule,
                            "message": f.message,
                        }
                        for f in in_order
                    ],
                    "notes": list(notes),
                    "summary": summary(total),
                },
                indent=2,
            )
            + "\n"
        )
    lines = []
    for f in in_order:
        if fmt == "github":
            level = {"error": "error", "warning": "warning"}.get(f.severity.value, "notice")
            props = [f"file={_escape_prop(f.path)}"]
            if f.line:
                props += [f"line={f.line}", f"col={max(f.col, 1)}"]
            props.append(f"title={_escape_prop(f.rule)}")
            lines.append(f"::{level} {','.join(props)}::{_escape_data(f.message)}")
        else:
            lines.append(_painted(f) if color else f.format())
    lines.extend(f"note: {n}" for n in notes)
    if in_order:
        lines.append(summary(total))
    return "\n".join(lines) + ("\n" if lines else "")
