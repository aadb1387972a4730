"""`pipeline.py report`: one self-contained HTML page with a chart per cluster, flavor and quota resource.

Each chart shows a pool (deliver/budgets.py): a bar per tenant for its nominal share, a lighter bar
behind it for the most it can reach by borrowing, coloured by cohort, and a rule at the capacity. The
charts are Vega-Lite specifications (built with altair) turned into SVG by vl-convert, which runs the
Vega renderer in-process: the page inlines the SVG and needs no script and no network to be viewed.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from decimal import Decimal
from pathlib import Path
from typing import Any

from gputenancy.deliver.budgets import Pool
from gputenancy.inputs.hami import human

_GIB = Decimal(2**30)
_STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em; color: #222; }
h2 { border-bottom: 1px solid #ccc; padding-bottom: .2em; }
figure { display: inline-block; margin: 0 1.5em 1.5em 0; vertical-align: top; }
figcaption { font-size: .9em; color: #444; max-width: 32em; }
table { border-collapse: collapse; margin-bottom: 1em; }
td, th { border: 1px solid #ddd; padding: .2em .6em; text-align: left; }
"""


def _scale(p: Pool) -> tuple[Decimal, str]:
    """The divisor and unit a pool is drawn in: HAMi memory (MiB) and memory (bytes) in GiB."""
    if p.unit == "MiB":
        return Decimal(1024), "GiB"
    if p.unit == "percent":
        return Decimal(1), "percent of a card"
    if p.resource == "memory" or p.resource.endswith("-memory"):
        return _GIB, "GiB"
    return Decimal(1), p.resource


def rows(p: Pool) -> list[dict[str, Any]]:
    """One row per tenant holding a share of the pool: its nominal quota and reach, in drawing units."""
    div, _ = _scale(p)
    return [
        {
            "tenant": g.tenant,
            "nominal": float(g.nominal.value / div),
            "reach": 0.0 if g.draining else float(g.reach.value / div),
            "cohort": g.cohort or NO_COHORT,
        }
        for g in p.grants
    ]


NO_COHORT = "(no cohort)"


def cohorts(found: Sequence[Pool]) -> list[str]:
    """The cohorts of the tenants in these pools: one colour each, the same in every chart."""
    return sorted({g.cohort or NO_COHORT for p in found for g in p.grants})


def spec(p: Pool, palette: Sequence[str] = ()) -> dict[str, Any]:
    """The Vega-Lite specification of one pool's chart: reach bars, nominal bars, a capacity rule;
    `palette`: the cohorts in colour order (default: those of this pool)."""
    import altair as alt

    div, unit = _scale(p)
    data = alt.InlineData(values=rows(p))
    y = alt.Y("tenant:N", title=None, sort=None)
    colour = alt.Color("cohort:N", title="cohort", scale=alt.Scale(domain=list(palette or cohorts([p]))))
    reach = (
        alt.Chart(data)
        .mark_bar(opacity=0.35)
        .encode(
            x=alt.X("reach:Q", title=unit), y=y, color=colour, tooltip=["tenant:N", "reach:Q", "cohort:N"]
        )
    )
    nominal = (
        alt.Chart(data).mark_bar().encode(x="nominal:Q", y=y, color=colour, tooltip=["tenant:N", "nominal:Q"])
    )
    layers: list[Any] = [reach, nominal]
    if p.capacity is not None:
        capacity = alt.InlineData(values=[{"capacity": float(p.capacity.value / div)}])
        layers.append(alt.Chart(capacity).mark_rule(color="#c00", strokeWidth=2).encode(x="capacity:Q"))
    chart = alt.layer(*layers).properties(title=title(p), width=360, height=max(40, 22 * len(p.grants)))
    out: dict[str, Any] = chart.to_dict()
    return out


def title(p: Pool) -> str:
    cap = human(p.capacity, p.unit) if p.capacity is not None else "none declared"
    head = human(p.headroom, p.unit) if p.headroom is not None else "-"
    return (
        f"{p.cluster} {p.flavor} {p.resource}: nominal {human(p.nominal, p.unit)} of {cap}, headroom {head}"
    )


def svg(p: Pool, palette: Sequence[str] = ()) -> str:
    import vl_convert

    text: str = vl_convert.vegalite_to_svg(spec(p, palette))
    return text


def page(found: Sequence[Pool], *, source: str) -> str:
    """The HTML page: per cluster a table of its cohorts and a figure per pool."""
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        "<title>gputenancy: GPU budgets</title>",
        f"<style>{_STYLE}</style></head><body>",
        "<h1>GPU budgets</h1>",
        f"<p>From the inputs of {html.escape(source)}. Per pool (cluster, flavor, quota resource): each "
        "tenant's nominal share (solid), the most it can reach by borrowing (light), coloured by cohort; "
        "the red rule is the capacity.</p>",
    ]
    for cluster in dict.fromkeys(p.cluster for p in found):
        here = [p for p in found if p.cluster == cluster]
        parts.append(f'<section class="cluster" id="cluster-{html.escape(cluster)}">')
        parts.append(f"<h2>{html.escape(cluster)}</h2>")
        parts += _cohorts(here)
        parts += _tree(here)
        palette = cohorts(here)
        for p in here:
            parts.append(
                f'<figure class="pool" data-cluster="{html.escape(p.cluster)}" data-flavor="{html.escape(p.flavor)}" '
                f'data-resource="{html.escape(p.resource)}" data-tenants="{len(p.grants)}" '
                f'data-capacity="{"1" if p.capacity is not None else "0"}">'
            )
            parts.append(svg(p, palette))
            parts.append(f"<figcaption>{html.escape(title(p))}</figcaption></figure>")
        parts.append("</section>")
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def _cohorts(here: Sequence[Pool]) -> list[str]:
    members: dict[str, set[str]] = {}
    for p in here:
        for g in p.grants:
            members.setdefault(g.cohort or NO_COHORT, set()).add(g.tenant)
    if not members:
        return []
    body = "".join(
        f"<tr><td>{html.escape(c)}</td><td>{html.escape(', '.join(sorted(ts)))}</td></tr>"
        for c, ts in sorted(members.items())
    )
    return [f'<table class="cohorts"><tr><th>cohort</th><th>tenants</th></tr>{body}</table>']


def _tree(here: Sequence[Pool]) -> list[str]:
    """The budget tree: each cohort's parent and members, its own quota, what it holds with its
    members and what it reaches, per pool where it holds anything."""
    rows = [c for p in here for c in p.cohorts]
    if not rows:
        return []
    cells = (
        (
            c.cohort,
            c.parent or "-",
            ", ".join(c.members) or "-",
            f"{c.flavor} {c.resource}",
            c.show(c.nominal),
            c.show(c.holds),
            c.show(c.reach) if c.reach is not None else "-",
        )
        for c in rows
    )
    body = "".join("<tr>" + "".join(f"<td>{html.escape(x)}</td>" for x in row) + "</tr>" for row in cells)
    head = "".join(
        f"<th>{h}</th>"
        for h in ("cohort", "parent", "members", "pool", "its own quota", "holds with its members", "reaches")
    )
    return [f'<table class="budget-tree"><tr>{head}</tr>{body}</table>']


def command(root: Path, cluster: str | None, output_file: Path, emit: Any, emit_notes: Any) -> int:
    """`pipeline.py report`: 0 written, 1 the inputs cannot be read or have errors (findings printed;
    nothing written)."""
    from gputenancy import engine
    from gputenancy.common import report
    from gputenancy.common.findings import PipelineError, Severity
    from gputenancy.deliver import budgets

    try:
        model, findings = engine.check_only(root, cluster)
    except PipelineError as exc:
        emit(report.format_findings(exc.findings, report.default_format()))
        return 1
    if any(f.severity is Severity.ERROR for f in findings):
        emit(report.format_findings(findings, report.default_format()))
        return 1
    found = budgets.pools(model, [cluster] if cluster is not None else None)
    text = page(found, source=str(root.name))
    tmp = output_file.with_name(f".{output_file.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(output_file)
    emit(
        f"report written to {output_file}: {len(found)} charts, {len({p.cluster for p in found})} cluster(s)\n"
    )
    if findings:
        emit_notes(report.format_findings(findings, "text"))
    return 0
