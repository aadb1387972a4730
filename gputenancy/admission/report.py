"""The verdicts as text, Markdown or JSON."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from gputenancy.admission.charge import PodSetCharge
from gputenancy.admission.judge import Verdict

FORMATS = ("text", "markdown", "json")
SCHEMA = "gputenancy.admit/v1"
_WORD = {
    "admitted": "ADMITTED",
    "pending": "PENDING (waits for quota)",
    "inadmissible": "INADMISSIBLE",
    "never": "NEVER (no flavor can ever hold it)",
}


def _where(v: Verdict) -> str:
    o = v.workload.origin()
    return f"{o.path}:{o.line}:{max(o.col, 1)}"


def _flavors(v: Verdict) -> str:
    parts = []
    for ps, pairs in v.flavors:
        names = sorted({f for _, f in pairs})
        if names:
            parts.append(f"{ps} -> {', '.join(names)}")
    return "; ".join(parts)


def _charge_lines(c: PodSetCharge) -> list[str]:
    per_pod = ", ".join(f"{x.resource} {x.amount.canonical()} ({x.why})" for x in c.per_pod) or "nothing"
    total = ", ".join(f"{r} {q.canonical()}" for r, q in sorted(c.total().items())) or "nothing"
    return [f"pod set {c.name}: {c.count} pod(s), each charged {per_pod}", f"  total: {total}"]


def as_dict(v: Verdict) -> dict[str, Any]:
    o = v.workload.origin()
    return {
        "file": o.path,
        "line": o.line,
        "kind": v.workload.kind,
        "namespace": v.workload.namespace,
        "name": v.workload.name,
        "localQueue": v.local_queue,
        "clusterQueue": v.cluster_queue,
        "outcome": v.outcome,
        "flavors": {ps: dict(pairs) for ps, pairs in v.flavors},
        "podSets": [
            {
                "name": c.name,
                "count": c.count,
                "perPod": {x.resource: x.amount.canonical() for x in c.per_pod},
                "total": {r: q.canonical() for r, q in sorted(c.total().items())},
                "why": {x.resource: f"{x.why} at {x.origin.path}:{x.origin.line}" for x in c.per_pod},
            }
            for c in v.charges
        ],
        "kueueMessage": v.message,
        "why": v.why,
        "decidedAt": f"{v.origin.path}:{v.origin.line}" if v.origin.line else v.origin.path,
        "fix": v.fix,
        "borrowing": list(v.borrowing),
        "behind": list(v.behind),
        "notes": list(v.notes),
    }


def render(verdicts: Sequence[Verdict], fmt: str, source: str) -> str:
    if fmt == "json":
        document = {"schema": SCHEMA, "against": source, "workloads": [as_dict(v) for v in verdicts]}
        return json.dumps(document, indent=2) + "\n"
    if fmt == "markdown":
        return _markdown(verdicts, source)
    lines = []
    for v in verdicts:
        queue = f"LocalQueue {v.workload.namespace}/{v.local_queue}" + (
            f" -> ClusterQueue {v.cluster_queue}" if v.cluster_queue else ""
        )
        lines.append(f"{_where(v)}: {v.workload.title} -> {queue}: {_WORD[v.outcome]}")
        if _flavors(v):
            lines.append(f"  flavor: {_flavors(v)}")
        for c in v.charges:
            lines.extend(f"  {line}" for line in _charge_lines(c))
        lines.append(f"  {v.why} ({v.origin.path}{':' + str(v.origin.line) if v.origin.line else ''})")
        if v.message:
            lines.append(f"  Kueue: {v.message}")
        for b in v.behind:
            lines.append(f"  behind: {b}")
        if v.fix:
            lines.append(f"  fix: {v.fix}")
        lines.extend(f"  note: {n}" for n in v.notes)
    lines.append(f"(against {source})")
    return "\n".join(lines) + "\n"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _markdown(verdicts: Sequence[Verdict], source: str) -> str:
    out = [
        f"Against `{_cell(source)}`:",
        "",
        "| workload | queue | flavor | verdict | Kueue says | fix |",
        "|---|---|---|---|---|---|",
    ]
    for v in verdicts:
        out.append(
            f"| `{_cell(v.workload.title)}` ({_cell(_where(v))}) | {_cell(v.local_queue)} -> "
            f"{_cell(v.cluster_queue)} | {_cell(_flavors(v))} | {_WORD[v.outcome]}: {_cell(v.why)} | "
            f"{_cell(v.message)} | {_cell(v.fix)} |"
        )
    return "\n".join(out) + "\n"
