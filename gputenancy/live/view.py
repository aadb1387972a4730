"""`status` as text, Markdown and JSON; the command itself (`command`): 0 the cluster runs what Git
says, 2 it differs, 1 errors. The report goes to stdout, findings and notes to stderr (in the JSON
document when the format is JSON)."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from gputenancy.cluster.compare import MISSING
from gputenancy.common import mdsafe, report, safetext
from gputenancy.common.findings import PipelineError
from gputenancy.inputs.quantity import Quantity
from gputenancy.live import status as live_status
from gputenancy.live.drift import FieldChange, ObjectState
from gputenancy.live.status import Status
from gputenancy.live.teams import Usage

FORMATS = ("text", "markdown", "json")
_MARK = {"changed": "~", "missing": "+", "extra": "?", "adopted": "!", "in-sync": "="}


def _value(value: Any) -> str:
    if value is MISSING:
        return "(absent)"
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str)
    return safetext.line(text.replace("\n", "↵"), 120)


def _q(q: Quantity | None, none: str = "-") -> str:
    return q.canonical() if q is not None else none


def _change(c: FieldChange) -> str:
    since = "; Git changed since Argo CD applied it" if c.managers and not c.by_hand else ""
    return (
        f"{c.path}: {_value(c.live)} -> {_value(c.git)} (live value set by {c.by}{since}; "
        f"Git: {c.origin.path}:{c.origin.line})"
    )


def _object(o: ObjectState) -> list[str]:
    head = {
        "changed": f"{o.title}: Argo CD {o.argocd}",
        "missing": f"{o.title}: missing on the cluster; Argo CD {o.argocd}",
        "extra": f"{o.title}: not in Git; Argo CD {o.argocd}",
        "adopted": f"{o.title}: Argo CD {o.argocd}",
    }[o.state]
    return [f"  {_MARK[o.state]} {head}", *(f"      {_change(c)}" for c in o.changes)]


def _usage_rows(s: Status) -> list[Usage]:
    return [u for u in s.usage if any(q.value for q in (u.nominal, u.used, u.reserved, u.borrowed))]


def summary(s: Status) -> str:
    if not s.differs:
        return f"cluster {s.cluster} runs what Git says"
    parts = []
    if s.drifted:
        parts.append(f"{len(s.drifted)} object(s)")
    if s.manager and s.manager.differs:
        parts.append("the Kueue manager's Configuration")
    if s.short_devices:
        parts.append(f"{sum(r.short for r in s.short_devices)} device(s) fewer than declared")
    return f"cluster {s.cluster} differs from Git: {', '.join(parts)}"


def text(s: Status) -> str:
    out = [f"status of cluster {s.cluster}: {s.source} against {s.git}/ (what Argo CD syncs)", ""]
    synced = sum(not o.differs for o in s.objects)
    out.append(f"Objects: {len(s.drifted)} differ, {synced} in sync")
    for o in s.drifted:
        out += _object(o)
    out.append("")
    out.append("Kueue manager:")
    if s.manager is None:
        out.append("  Git delivers no Configuration to this cluster")
    else:
        out += [f"  ~ {s.manager.config_map} {_change(c)}" for c in s.manager.changes]
        if s.manager.restart:
            out.append(f"  ! {s.manager.restart}")
        if not s.manager.differs:
            out.append(
                "  the ConfigMap holds Git's Configuration"
                + (" and the manager runs it" if s.manager.marker else "")
            )
    out += ["", "Devices (published by the DRA drivers / declared in capacity):"]
    for r in s.devices:
        nodes = ", ".join(f"{n}: {c}" for n, c in r.nodes) or "none"
        flag = "  fewer than declared" if r.short > 0 else "  more than declared" if r.short < 0 else ""
        out.append(f"  {r.flavor} {r.device_class}: {r.published}/{r.declared} ({nodes}){flag}")
    if not s.devices:
        out.append("  no devices declared")
    out += ["", "Teams (ClusterQueue spec and status):"]
    out += _table(
        (
            "tenant",
            "queue",
            "flavor",
            "resource",
            "nominal",
            "borrow limit",
            "lend limit",
            "used",
            "reserved",
            "borrowed",
        ),
        [
            (
                u.tenant or "(not in Git)",
                u.queue,
                u.flavor,
                u.resource,
                _q(u.nominal),
                _q(u.borrowing_limit, "none"),
                _q(u.lending_limit, "none"),
                _q(u.used),
                _q(u.reserved),
                _q(u.borrowed),
            )
            for u in _usage_rows(s)
        ],
    )
    for c in s.cohorts:
        out.append(
            f"  cohort {c.cohort} {c.flavor} {c.resource}: nominal {_q(c.live)} on the cluster, {_q(c.git)} in Git; "
            f"{_q(c.used)} in use"
        )
    w = s.workloads
    out.append(
        f"  workloads: {w.get('admitted', 0)} admitted, {w.get('reserved', 0)} reserving quota, {w.get('pending', 0)} pending"
    )
    for q in s.queues:
        if q.kind == "ClusterQueue":
            out.append(f"  {q.name}: {q.admitted} admitted, {q.pending} pending")
    for q in s.inactive:
        where = f"{q.namespace}/{q.name}" if q.namespace else q.name
        out.append(f"  ! {q.kind} {where} is not Active: {q.reason}: {safetext.line(q.message, 200)}")
    if s.waiting:
        out += ["", "Pending workloads (Kueue's reason):"]
        for g in s.waiting:
            out.append(f"  {g.reason} on {g.queue} ({len(g.workloads)}): {', '.join(g.workloads)}")
            out.append(f"      {safetext.line(g.message, 300)}")
            if g.link:
                out.append(f"      missing link: {g.link}")
    out += ["", summary(s)]
    # names and messages come from the cluster (field managers, Kueue's reasons): one visible line each
    return "\n".join(safetext.visible(line) for line in out) + "\n"


def _table(head: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    if not rows:
        return ["  no quota on this cluster"]
    widths = [max(len(str(x)) for x in col) for col in zip(head, *rows, strict=False)]
    return [
        "  " + "  ".join(str(x).ljust(w) for x, w in zip(r, widths, strict=True)).rstrip()
        for r in (head, *rows)
    ]


def markdown(s: Status) -> str:
    out = [
        f"## gputenancy status: {mdsafe.code(s.cluster)}",
        "",
        f"**{summary(s)}** ({mdsafe.code(s.source)} against {mdsafe.code(s.git + '/')})",
        "",
    ]
    if s.drifted:
        out += [
            "### What Argo CD would change",
            "",
            "| | object | field | live → Git | live value set by | Argo CD |",
            "| --- | --- | --- | --- | --- | --- |",
        ]
        for o in s.drifted:
            changes: tuple[FieldChange | None, ...] = o.changes or (None,)
            for c in changes:
                out.append(
                    f"| {_MARK[o.state]} | {mdsafe.code(o.title)} | {mdsafe.code(c.path) if c else ''} | "
                    f"{mdsafe.code(_value(c.live) + ' → ' + _value(c.git)) if c else o.state} | {mdsafe.code(c.by) if c else ''} | "
                    f"{mdsafe.code(o.argocd)} |"
                )
        out.append("")
    if s.manager is not None and s.manager.differs:
        out += ["### Kueue manager", ""]
        out += [
            f"- {mdsafe.code(c.path)}: {mdsafe.code(_value(c.live))} → {mdsafe.code(_value(c.git))} (by {mdsafe.code(c.by)})"
            for c in s.manager.changes
        ]
        out += [f"- **restart**: {mdsafe.code(s.manager.restart)}"] if s.manager.restart else []
        out.append("")
    if s.devices:
        out += [
            "### Devices",
            "",
            "| flavor | DeviceClass | published | declared | nodes |",
            "| --- | --- | ---: | ---: | --- |",
        ]
        for r in s.devices:
            nodes = ", ".join(f"{n}: {c}" for n, c in r.nodes) or "none"
            out.append(
                f"| {mdsafe.code(r.flavor)} | {mdsafe.code(r.device_class)} | {r.published} | {r.declared} | {mdsafe.code(nodes)} |"
            )
        out.append("")
    rows = _usage_rows(s)
    if rows:
        out += [
            "### Teams",
            "",
            "| tenant | queue | flavor | resource | nominal | used | reserved | borrowed |",
            "| --- | --- | --- | --- | ---: | ---: | ---: | ---: |",
        ]
        for u in rows:
            out.append(
                f"| {mdsafe.code(u.tenant or '(not in Git)')} | {mdsafe.code(u.queue)} | {mdsafe.code(u.flavor)} | {mdsafe.code(u.resource)} | "
                f"{_q(u.nominal)} | {_q(u.used)} | {_q(u.reserved)} | {_q(u.borrowed)} |"
            )
        out.append("")
    for row in s.cohorts:
        out.append(
            f"- cohort {mdsafe.code(row.cohort)} {mdsafe.code(row.flavor)} {mdsafe.code(row.resource)}: nominal {_q(row.live)} on "
            f"the cluster, {_q(row.git)} in Git; {_q(row.used)} in use"
        )
    out += [""] if s.cohorts else []
    if s.waiting:
        out += ["### Pending workloads", ""]
        for g in s.waiting:
            link = f"; missing link: {mdsafe.code(g.link)}" if g.link else ""
            out.append(
                f"- {mdsafe.code(g.reason)} on {mdsafe.code(g.queue)}: {', '.join(mdsafe.code(n) for n in g.workloads)}: {mdsafe.code(g.message)}{link}"
            )
        out.append("")
    return "\n".join(out) + "\n"


def _plain(value: Any) -> Any:
    if value is MISSING:
        return None
    if isinstance(value, Quantity):
        return value.canonical()
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def as_json(s: Status) -> str:
    doc = {
        "schema": "gputenancy.status/v1",
        "cluster": s.cluster,
        "source": s.source,
        "git": s.git,
        "differs": s.differs,
        "summary": summary(s),
        "objects": [_plain(o) for o in s.drifted],
        "in_sync": sum(not o.differs for o in s.objects),
        "manager": _plain(s.manager),
        "devices": _plain(s.devices),
        "usage": _plain(s.usage),
        "queues": _plain(s.queues),
        "pending": _plain(s.waiting),
        "workloads": dict(s.workloads),
        "cohorts": _plain(s.cohorts),
        "findings": [dataclasses.asdict(f) | {"severity": f.severity.value} for f in s.findings],
        "notes": list(s.notes),
    }
    return json.dumps(doc, indent=2, sort_keys=False, default=str) + "\n"


def render(s: Status, fmt: str) -> str:
    return {"text": text, "markdown": markdown, "json": as_json}[fmt](s)


def command(
    root: Path,
    *,
    source: Path | None,
    context: str | None,
    cluster: str | None,
    schemas: Path | None,
    fmt: str,
    findings_format: str,
    emit: Callable[[str], Any],
    emit_notes: Callable[[str], Any],
) -> int:
    """`pipeline.py status`: 0 the cluster runs what Git says, 2 it differs, 1 errors."""
    try:
        dump = live_status.read(source, context)
        found = live_status.build(root, dump, cluster=cluster, schemas=schemas)
    except PipelineError as exc:
        emit(report.format_findings(list(exc.findings), "json" if fmt == "json" else findings_format))
        return 1
    emit(render(found, fmt))
    if fmt != "json":
        emit_notes(report.format_findings(list(found.findings), findings_format, found.notes))
    return 2 if found.differs else 0
