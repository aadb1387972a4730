"""How a Plan is shown: text (colour on a terminal), markdown for the pull-request comment, json;
and the `plan` command."""

from __future__ import annotations

import dataclasses
import json
import os
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from gputenancy.common import mdsafe, report, safetext
from gputenancy.deliver import authorview, budgetdiff, budgets, poolchart
from gputenancy.deliver.objectdiff import Change, ObjectChange
from gputenancy.deliver.plan import (
    ACTIONS,
    ClusterPlan,
    Plan,
    Risk,
    make,
    show_value,
    value_change,
)
from gputenancy.deliver.plancapacity import CapacityRow
from gputenancy.inputs import hami
from gputenancy.inputs.quantity import Quantity, QuantityError, parse

MAX_COMMENT = 65536
MAX_GRANT_ROWS = 60  # per cluster in the PR comment; `budgets` shows all
_BLOCKS = " ▏▎▍▌▋▊▉█"
_COLOURS = {"+": "\033[32m", "-": "\033[31m", "~": "\033[33m", "!": "\033[1;31m"}
_SIGN = {"added": "+", "removed": "-", "changed": "~"}
_OPS = {"+": "added", "-": "removed", "~": "changed"}


def change_line(o: ObjectChange, c: Change, units: Mapping[str, str] | None = None) -> str:
    """`prod ClusterQueue vision: nvidia.com/gpu nominalQuota on flavor h100: 8 → 6`; HAMi memory and
    cores quotas also in GiB and percent (`12288 → 16k (12Gi → 15.625Gi)`)."""
    return f"{o.title}: {value_change(c)}{_human_change(c, units or {})}"


def _human_change(c: Change, units: Mapping[str, str]) -> str:
    names = [getattr(seg, "name", None) for seg in c.path]
    unit = next((units[n] for n in names if isinstance(n, str) and n in units), "")
    if not unit or not isinstance(c.path[-1], str) or not c.path[-1].endswith(("Quota", "Limit")):
        return ""

    def show(value: Any) -> str:
        try:
            return _human(parse(str(value)), unit) if value is not None else "(unset)"
        except QuantityError:
            return str(value)

    return f" ({show(c.old)} → {show(c.new)})"


def _human(q: Quantity, unit: str) -> str:
    return hami.human(q, unit)


def _bar(used: Quantity | None, cap: Quantity | None, width: int = 10) -> str:
    if used is None or cap is None or cap.value <= 0:
        return ""
    ratio = float(used.value / cap.value)
    eighths = round(min(ratio, 1.0) * width * 8)
    bar = ("█" * (eighths // 8) + (_BLOCKS[eighths % 8] if eighths % 8 else "")).ljust(width)
    return f"{bar} {ratio:.0%}{' over capacity' if ratio > 1 else ''}"


def _q(q: Quantity | None, unit: str = "") -> str:
    return _human(q, unit) if q is not None else "-"


def _budget(row: CapacityRow) -> str:
    if row.before == row.after:
        return _q(row.after, row.unit)
    return f"{_q(row.before, row.unit)} → {_q(row.after, row.unit)}"


def _arrow(old: str, new: str) -> str:
    return new if old == new else f"{old} → {new}"


def _capacity(row: CapacityRow) -> str:
    """`16`, or `24 → 240` when the change sets another capacity."""
    if not row.capacity_changed:
        return _q(row.capacity, row.unit)
    return f"{_q(row.capacity_before, row.unit)} → {_q(row.capacity, row.unit)}"


def _headroom(row: CapacityRow) -> str:
    """`8 → 224`: free capacity before and after (before from the inputs at the base of the change)."""
    after = _q(row.headroom, row.unit)
    return _arrow(_q(row.headroom_before, row.unit), after) if row.known_before else after


def _grant_lines(plan: Plan, cluster: str) -> list[str]:
    if not plan.known_before:
        granted = [g for g in plan.grants if g.cluster == cluster]
        return [f"  what it grants on {cluster} (effective budgets):"] * bool(granted) + [
            f"    {budgets.grant_line(g)}" for g in granted
        ]
    here = [d for d in plan.grant_diffs if d.cluster == cluster]
    own = [budgetdiff.grant_line(d) for d in here if not d.affected]
    affected = [budgetdiff.grant_line(d) for d in here if d.affected]
    lines = [f"  what it grants on {cluster} (before → after):"] * bool(own) + [f"    {x}" for x in own]
    lines += [
        f"  affected on {cluster} (tenants the change does not touch; reach through the cohort):"
    ] * bool(affected)
    lines += [f"    {x}" for x in affected]
    tree = [x for d in plan.pools if d.cluster == cluster for x in budgetdiff.tree_lines(d)]
    lines += [f"  budget tree on {cluster} (cohorts' own quota, what they hold with members, reach):"] * bool(
        tree
    )
    return lines + [f"    {x}" for x in tree]


def summary(plan: Plan) -> str:
    if not plan.changed:
        return "no changes"
    counts = ", ".join(f"{sum(c.count(a) for c in plan.clusters)} {a}" for a in ACTIONS)
    moved = [c.name for c in plan.clusters if c.capacity_changed]
    capacity = f"; capacity changed on {', '.join(moved)}" if moved else ""
    return f"{counts} on {', '.join(c.name for c in plan.clusters if c.changed)}{capacity}; {len(plan.risks)} risk(s)"


def format_text(plan: Plan, *, color: bool = False, max_lines: int | None = None) -> str:
    painted: set[str] = set()

    def paint(sign: str, text: str) -> str:
        shown = safetext.visible(text)
        shown = f"{_COLOURS[sign]}{shown}\033[0m" if color else shown
        painted.add(shown)
        return shown

    lines = [f"plan against {plan.against}"] + ([f"  (compares with {plan.basis})"] if plan.basis else [])
    for c in plan.clusters:
        counts = ", ".join(f"{c.count(a)} {a}" for a in ACTIONS) + (
            f", {len(c.files)} files moved" if c.files else ""
        )
        counts += ", capacity changed" if c.capacity_changed else ""
        tenants = f" (tenants: {', '.join(c.tenants)})" if c.tenants else ""
        if c.renamed_to:  # its objects stay, under the new name (whose plan counts the Applications)
            lines.append(
                f"{c.name}: renamed to {c.renamed_to}: its Applications are removed without cascade, "
                "every object stays"
            )
        else:
            lines.append(f"{c.name}: {counts}{tenants}" if c.changed else f"{c.name}: no changes")
        lines += [f"  destination: {c.destination}"] if c.changed and c.destination else []
        lines += [f"  renamed from {c.renamed_from}"] if c.renamed_from else []
        for o in c.objects:
            s = _SIGN[o.action]
            lines += [paint(s, f"  {s} {change_line(o, ch, c.units)}") for ch in o.changes] or [
                paint(s, f"  {s} {o.title} ({o.action}, {o.path})")
            ]
        lines += [paint(f[0], f"  {f[0]} {c.name} file {f[2:]}") for f in c.files]
        lines += [f"  nominal budget vs capacity on {c.name}:"] if c.changed and c.capacity else []
        for r in c.capacity if c.changed else ():
            row = f"{r.flavor} {r.resource}: {_budget(r)} of {_capacity(r)}"
            row += f", headroom {_headroom(r)}" if r.known_before else ""
            lines.append(f"    {row}  {_bar(r.after, r.capacity)}".rstrip())
        lines += _grant_lines(plan, c.name)
        lines += [f"  before Argo CD syncs {c.name}: {p}" for p in c.prerequisites]
    lines += _upgrade_lines(plan)
    lines += (
        ["risks:", *(paint("!", f"  ! {r.cluster or '*'} {r.risk}: {r.message}") for r in plan.risks)]
        if plan.risks
        else []
    )
    lines.append(summary(plan))
    lines = [line if line in painted else safetext.visible(line) for line in lines]
    if max_lines is not None and len(lines) > max_lines:
        lines = [
            *lines[: max_lines - 1],
            f"… {len(lines) - max_lines + 1} more lines: run `python pipeline.py plan`",
            lines[-1],
        ]
    return "\n".join(lines) + "\n"


_md = mdsafe.text  # every tenant-controlled string goes through one of these two
_code = mdsafe.code


def _details(o: ObjectChange) -> str:
    tenant = f" (tenant {_md(o.tenant)})" if o.tenant else ""
    head = f"<b>{_md(o.cluster)}</b> {_md(o.key.kind)} <code>{_md(o.title.split(' ', 2)[2])}</code>{tenant}"
    if o.action != "changed":
        return f"- **{o.action}** {head} ({_code(o.path)})\n"
    rows = [
        f"| {_md(c.description)} | {_code(show_value(c.old, c.op != 'added'))} | "
        f"{_code(show_value(c.new, c.op != 'removed'))} |"
        for c in o.changes
    ]
    table = "\n".join(["| field | before | after |", "| --- | --- | --- |", *rows])
    return f"<details><summary>changed {head}: {len(o.changes)} field(s)</summary>\n\n{table}\n\n</details>\n"


def _unchanged_note(rows: list[budgetdiff.GrantDiff]) -> list[str]:
    """How many rows of each touched tenant are not shown because they do not change."""
    counts: dict[str, int] = {}
    for d in rows:
        counts[d.tenant] = counts.get(d.tenant, 0) + 1
    return [
        "",
        "unchanged: "
        + "; ".join(f"{n} more row(s) of {_md(t)}" for t, n in sorted(counts.items()))
        + " (`python pipeline.py budgets` lists every grant)",
    ] * bool(counts)


def _grant_markdown(plan: Plan) -> list[str]:
    """Grants before → after (changed cells in bold), then the affected tenants, per cluster. Of a
    touched tenant only the rows that change are listed, the others counted."""
    out: list[str] = []
    for name in dict.fromkeys(d.cluster for d in plan.grant_diffs):
        here = [d for d in plan.grant_diffs if d.cluster == name]
        own = [d for d in here if not d.affected]
        unchanged = [d for d in own if not d.changed]
        for title, rows in (
            (f"### What it grants on {_md(name)} (before → after)", [d for d in own if d.changed]),
            (
                f"### Affected on {_md(name)}: reach changes through the cohort",
                [d for d in here if d.affected],
            ),
        ):
            if rows:
                out += [
                    "",
                    title,
                    "",
                    *budgetdiff.GRANT_HEADER,
                    *map(budgetdiff.grant_row, rows[:MAX_GRANT_ROWS]),
                ]
                if len(rows) > MAX_GRANT_ROWS:
                    out += [
                        "",
                        f"… and {len(rows) - MAX_GRANT_ROWS} more rows: run `python pipeline.py plan`",
                    ]
            if not title.startswith("### Affected") and unchanged:
                out += [] if rows else ["", f"### What it grants on {_md(name)}: no grant changes"]
                out += _unchanged_note(unchanged)
    for name in dict.fromkeys(d.cluster for d in plan.pools):
        tree = [line for d in plan.pools if d.cluster == name for line in budgetdiff.tree_lines(d)]
        if tree:
            out += [
                "",
                f"### Budget tree on {_md(name)} (before → after)",
                "",
                *(f"- {_md(x)}" for x in tree),
            ]
    return out


_CUT = (
    "> **Note:** the details of {} of {} changed objects and files were cut to keep this comment under "
    "GitHub's 65,536-character limit; run `python pipeline.py plan --format text` for all of them.\n\n"
)


_ABSOLUTE = re.compile(r"(?<![\w.~/])/[^\s,;()'\"]+")


def _unrooted(note: str) -> str:
    """A note without the paths of the machine that ran the plan (a runner's workspace, /tmp): a
    schemas directory's file as `<schemas>/kueue/<version>/...`, any other path by its last part."""

    def short(m: re.Match[str]) -> str:
        path = m.group()
        if "/kueue/" in path:
            return "<schemas>/kueue/" + path.rsplit("/kueue/", 1)[1]
        return "…/" + path.rstrip("/").rsplit("/", 1)[-1]

    return _ABSOLUTE.sub(short, note)


def _destinations_md(plan: Plan) -> list[str]:
    """Where the hub delivers each changed cluster (and the renames)."""
    lines = []
    for c in (c for c in plan.clusters if c.changed and c.destination):
        renamed = f" (renamed from {_md(c.renamed_from)})" if c.renamed_from else ""
        renamed += (
            f" (renamed to {_md(c.renamed_to)}: Applications removed without cascade)" if c.renamed_to else ""
        )
        lines.append(f"- Argo CD delivers **{_md(c.name)}** to {_code(c.destination)}{renamed}")
    return ["", *lines] if lines else []


def format_markdown(plan: Plan, *, limit: int = MAX_COMMENT) -> str:
    """The PR comment: summary, risks, capacity and findings first (never cut); per-object details
    after, cut with a note when the comment would exceed `limit` characters."""
    head = ["## gputenancy plan", "", f"Against {_code(plan.against)}: **{_md(summary(plan))}**", ""]
    head += [f"Compares with {_md(plan.basis)}.", ""] if plan.basis else []
    head += ["| cluster | changed | added | removed | tenants |", "| --- | ---: | ---: | ---: | --- |"]
    head += [
        f"| {_md(c.name)} | {' | '.join(str(c.count(a)) for a in ACTIONS)} | {_md(', '.join(c.tenants)) or '-'} |"
        for c in plan.clusters
    ]
    head += _destinations_md(plan)
    if plan.risks:
        head += [
            "",
            "### ⚠️ Risks",
            "",
            *(f"- **{_md(r.cluster or 'all')}** {_code(r.risk)}: {_md(r.message)}" for r in plan.risks),
        ]
    for u in plan.upgrades:
        head += ["", f"### Kueue upgrade on {_md(u.cluster)}: {_md(u.old)} → {_md(u.new)}", ""]
        head += [f"- {_md(c)}" for c in u.changes] or [
            "- the release manifests are the same but for the version"
            if u.compared
            else "- not compared: the release manifests are not in the schemas cache (see Validation)"
        ]
    for c in (c for c in plan.clusters if c.changed and c.capacity):
        head += [
            "",
            f"### Capacity on {_md(c.name)}",
            "",
            "| flavor | resource | nominal budget | capacity | headroom | use |",
        ]
        head += ["| --- | --- | ---: | ---: | ---: | --- |"]
        for r in c.capacity:
            bar = _code(_bar(r.after, r.capacity)) if r.capacity else ""
            cap = _md(_capacity(r))
            head.append(
                f"| {_md(r.flavor)} | {_md(r.resource)} | {_md(_budget(r))} | "
                f"{f'**{cap}**' if r.capacity_changed else cap} | {_md(_headroom(r))} | {bar} |"
            )
    for c in (c for c in plan.clusters if c.prerequisites):
        head += ["", f"### Before Argo CD syncs {_md(c.name)}", "", *(f"- {_md(p)}" for p in c.prerequisites)]
    head += poolchart.markdown(plan.pools) if plan.known_before else []
    head += _grant_markdown(plan)
    for name in dict.fromkeys(g.cluster for g in plan.grants if not plan.known_before):
        granted = [g for g in plan.grants if g.cluster == name]
        head += ["", f"### What it grants on {_md(name)}", "", *budgets.GRANT_HEADER]
        head += [budgets.grant_row(g) for g in granted[:MAX_GRANT_ROWS]]
        if len(granted) > MAX_GRANT_ROWS:
            head += ["", f"… and {len(granted) - MAX_GRANT_ROWS} more rows: run `python pipeline.py budgets`"]
    if plan.findings:
        listed = report.format_findings(list(plan.findings), "text").splitlines()
        head += ["", "### Findings", "", mdsafe.fence(listed)]
    if plan.notes:  # per cluster, whether the Kueue CRD schemas were checked; overcommit
        head += ["", "### Validation", "", mdsafe.fence(_unrooted(n) for n in plan.notes)]
    blocks = [_details(o) for c in plan.clusters for o in c.objects]
    blocks += [
        f"- **{_OPS[f[0]]}** <b>{_md(c.name)}</b> file {_code(f[2:])}\n"
        for c in plan.clusters
        for f in c.files
    ]
    text = "\n".join(head) + "\n" + ("\n### Changes\n\n" if blocks else "")
    budget = limit - len(text) - len(_CUT) - 40
    shown: list[str] = []
    for block in blocks:
        if len(block) + 1 > budget:
            text += _CUT.format(len(blocks) - len(shown), len(blocks))
            break
        shown.append(block)
        budget -= len(block) + 1
    return text + "\n".join(shown)


def _json_fields(fields: list[tuple[str, Any]]) -> Any:
    """dataclasses.asdict's factory: Quantities as canonical strings, Named segments as {name} / {order}."""
    d = dict(fields)
    if d.keys() == {"value", "format"}:
        return Quantity(d["value"], d["format"]).canonical()
    if d.keys() == {"name", "order"}:
        return {"order": True} if d["order"] else {"name": d["name"]}
    return d


def _cluster_json(c: ClusterPlan) -> dict[str, Any]:
    data: dict[str, Any] = dataclasses.asdict(c, dict_factory=_json_fields)
    data["files"] = [{"op": _OPS[f[0]], "path": f[2:]} for f in c.files]
    for row in data["capacity"]:  # "unit" only on HAMi memory ("MiB") and cores ("percent") rows
        if not row["unit"]:
            del row["unit"]
        known, had = row.pop("known_before"), row.pop("capacity_before")
        if known:  # the capacity in the inputs at the base of the change
            row["capacityBefore"] = had
    if not c.units:
        del data["units"]
    return {
        **data,
        "changed": c.changed,
        "counts": {a: c.count(a) for a in ACTIONS},
        "tenants": list(c.tenants),
    }


def to_json(plan: Plan) -> dict[str, Any]:
    """The JSON document (schema `gputenancy.plan/v1`, documented in README.md). Findings are
    bounded as `report.bounded` prints them (at most 50 per rule, clipped, visible)."""
    shown, capped = report.bounded(plan.findings)
    return {
        "schema": "gputenancy.plan/v1",
        "against": plan.against,
        "changed": plan.changed,
        "summary": summary(plan),
        **({"basis": plan.basis} if plan.basis else {}),
        "clusters": [
            {
                **_cluster_json(c),
                "grants": [budgets.grant_json(g) for g in plan.grants if g.cluster == c.name],
                **(
                    {"grantChanges": [budgetdiff.to_json(d) for d in plan.grant_diffs if d.cluster == c.name]}
                    if plan.known_before
                    else {}
                ),
            }
            for c in plan.clusters
        ],
        "risks": [dataclasses.asdict(r) for r in plan.risks],
        "upgrades": [dataclasses.asdict(u) for u in plan.upgrades],
        "findings": [{**dataclasses.asdict(f), "severity": f.severity.value} for f in shown],
        "notes": [*(safetext.line(n) for n in plan.notes), *capped],
    }


def with_upgrades(plan: Plan, model: Any, schemas: Path | None) -> Plan:
    """The plan with its Kueue upgrades (deliver.upgrade): their changes, risks and notes."""
    from gputenancy.deliver import upgrade

    upgrades, risks, notes = upgrade.analyse(plan, model, schemas)
    if not upgrades:
        return plan
    return dataclasses.replace(
        plan,
        upgrades=tuple(upgrades),
        risks=(*plan.risks, *(Risk(r.cluster, r.risk, r.subject, r.message) for r in risks)),
        notes=(*plan.notes, *notes),
    )


def _upgrade_lines(plan: Plan) -> list[str]:
    lines = []
    for u in plan.upgrades:
        lines.append(f"upgrade {u.cluster}: Kueue {u.old} → {u.new}")
        lines += [f"  {c}" for c in u.changes]
        if u.compared and not u.changes:
            lines.append("  the release manifests are the same but for the version")
    return lines


def render(plan: Plan, fmt: str, *, color: bool = False) -> str:
    if fmt == "json":
        return json.dumps(to_json(plan), indent=2, ensure_ascii=False, default=str) + "\n"
    return format_markdown(plan) if fmt == "markdown" else format_text(plan, color=color)


def command(
    root: Path,
    *,
    cluster: str | None,
    against: str | None,
    schemas: Path | None,
    fmt: str,
    output_file: Path | None,
    allow_delete: bool,
    color: bool,
    findings_format: str,
    emit: Callable[[str], Any],
    emit_notes: Callable[[str], Any] | None = None,
    live: Any = None,
) -> int:
    """`pipeline.py plan`: 0 no change, 2 changes, 1 errors (findings printed as for validate).
    The plan goes to `emit` (stdout); findings and notes after it to `emit_notes` (stderr), so
    `plan --format markdown > file` holds the plan alone."""
    result, plan = make(
        root,
        cluster=cluster,
        against=against,
        schemas=schemas,
        allow_delete=allow_delete,
        all_capacity=fmt == "json",  # the JSON view shows every cluster's capacity table
        live=live,  # plan --live: the cluster's workloads decide a drained tenant's removal
    )
    if plan is not None:
        plan = with_upgrades(plan, result.model, schemas)
    if plan is None:
        found = list(result.findings)
        touched = authorview.touched_files(root, authorview.change_base(against, os.environ))
        text = authorview.formatted(
            found, touched, "json" if fmt == "json" else findings_format, result.notes
        )
        if output_file is not None:
            listed = authorview.listing(found, touched)
            failed = f"## gputenancy plan\n\n**validation failed**\n\n{mdsafe.fence(listed.splitlines())}\n"
            output_file.write_text(failed if fmt == "markdown" else text, encoding="utf-8")
        emit(text)
        return 1
    text = render(plan, fmt, color=color and output_file is None)
    if output_file is not None:
        output_file.write_text(text, encoding="utf-8")
    emit(f"plan written to {output_file}: {summary(plan)}\n" if output_file is not None else text)
    if fmt != "json" or output_file is not None:  # findings and notes as validate prints them
        (emit_notes or emit)(report.format_findings(list(plan.findings), findings_format, plan.notes))
    return 1 if plan.failed else 2 if plan.changed else 0
