"""`pipeline.py report`: one self-contained HTML page with a chart per cluster, flavor and quota resource.

Each chart shows a pool (deliver/budgets.py): a bar per tenant for its nominal share, a lighter bar
behind it for the most it can reach by borrowing, coloured by cohort, and a rule at the capacity. The
charts are Vega-Lite specifications (built with altair) turned into SVG by vl-convert, which runs the
Vega renderer in-process: the page inlines the SVG and needs no script and no network to be viewed.

Per cluster the GPU pools (devices, HAMi quotas) come first, apart from CPU and memory. With
`--against REF` (as `plan`), a pool the change moves is drawn twice, before and after, side by side.
The page is titled after the repository Argo CD reads (`argocd.repoURL`; else the git remote) and
its clusters, not after the folder it happens to be checked out in.
"""

from __future__ import annotations

import dataclasses
import html
import re
from collections.abc import Mapping, Sequence
from decimal import Decimal
from pathlib import Path
from typing import Any

from gputenancy.deliver.budgets import Pool, Used
from gputenancy.deliver.poolchart import is_gpu
from gputenancy.inputs.hami import human
from gputenancy.inputs.quantity import ZERO

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


def rows(p: Pool, used: Used | None = None) -> list[dict[str, Any]]:
    """One row per tenant holding a share of the pool: its nominal quota and reach, in drawing units;
    with `used` (`report --from`), what it uses on the cluster."""
    div, _ = _scale(p)
    return [
        {
            "tenant": g.tenant,
            "nominal": float(g.nominal.value / div),
            "reach": 0.0 if g.draining else float(g.reach.value / div),
            "cohort": g.cohort or NO_COHORT,
            **({"used": float(_used(p, g.tenant, used).value / div)} if used is not None else {}),
        }
        for g in p.grants
    ]


def _used(p: Pool, tenant: str, used: Used | None) -> Any:
    return (used or {}).get((p.cluster, tenant, p.flavor, p.resource), (ZERO, ZERO, ZERO))[0]


NO_COHORT = "(no cohort)"


def cohorts(found: Sequence[Pool]) -> list[str]:
    """The cohorts of the tenants in these pools: one colour each, the same in every chart."""
    return sorted({g.cohort or NO_COHORT for p in found for g in p.grants})


def spec(p: Pool, palette: Sequence[str] = (), when: str = "now", used: Used | None = None) -> dict[str, Any]:
    """The Vega-Lite specification of one pool's chart: reach bars, nominal bars, a capacity rule;
    `palette`: the cohorts in colour order (default: those of this pool)."""
    import altair as alt

    div, unit = _scale(p)
    data = alt.InlineData(values=rows(p, used))
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
    if used is not None:  # what each tenant uses on the cluster: a black tick on its bars
        layers.append(
            alt.Chart(data)
            .mark_tick(color="#000", thickness=3)
            .encode(x="used:Q", y=y, tooltip=["tenant:N", "used:Q"])
        )
    chart = alt.layer(*layers).properties(
        title=title(p, when, used), width=360, height=max(40, 22 * len(p.grants))
    )
    out: dict[str, Any] = chart.to_dict()
    return out


def title(p: Pool, when: str = "now", used: Used | None = None) -> str:
    """The chart's title; `when` (before, after) is said for a pool drawn on both sides of a change."""
    cap = human(p.capacity, p.unit) if p.capacity is not None else "none declared"
    head = human(p.headroom, p.unit) if p.headroom is not None else "-"
    side = f" {when}" if when != "now" else ""
    in_use = sum((_used(p, g.tenant, used) for g in p.grants), ZERO) if used is not None else None
    return (
        f"{p.cluster} {p.flavor} {p.resource}{side}: nominal {human(p.nominal, p.unit)} of {cap}, "
        f"headroom {head}" + (f", in use {human(in_use, p.unit)}" if in_use is not None else "")
    )


def svg(p: Pool, palette: Sequence[str] = (), when: str = "now", used: Used | None = None) -> str:
    import vl_convert

    text: str = vl_convert.vegalite_to_svg(spec(p, palette, when, used))
    return text


@dataclasses.dataclass(frozen=True)
class Figure:
    """One chart of the page: a pool now, or before or after the change (`--against`)."""

    pool: Pool
    when: str = "now"  # now | before | after


Key = tuple[str, str, str]


def _key(p: Pool) -> Key:
    return (p.cluster, p.flavor, p.resource)


def figures(found: Sequence[Pool], before: Sequence[Pool] | None = None) -> list[Figure]:
    """The page's charts in order: per cluster its GPU pools, then the others; with `before` (the
    pools at the base of the change) a pool whose capacity or holders differ is drawn before and
    after, one that is gone before only, one that is new after only."""
    from gputenancy.deliver import budgetdiff

    now = {_key(p): p for p in found}
    moved: Mapping[Key, budgetdiff.PoolDiff] = (
        {(d.cluster, d.flavor, d.resource): d for d in budgetdiff.pools(before, found)}
        if before is not None
        else {}
    )
    keys = list(now) + [k for k in moved if k not in now]
    order = {c: i for i, c in enumerate(dict.fromkeys(k[0] for k in keys))}
    out: list[Figure] = []
    for k in sorted(keys, key=lambda k: (order[k[0]], not is_gpu(k[2]))):
        if k not in moved:
            out.append(Figure(now[k]))
            continue
        d = moved[k]
        out += [Figure(p, w) for p, w in ((d.before, "before"), (d.after, "after")) if p is not None]
    return out


def ordered(found: Sequence[Pool]) -> list[Pool]:
    """The pools in the order the page draws them (per cluster GPU pools first)."""
    return [f.pool for f in figures(found)]


def repository_name(url: str) -> str:
    """`owner/name` of a git URL (https, ssh, scp-like), or the URL when it has no such path."""
    path = re.sub(r"^[a-z+]+://[^/]*/|^[^@/]+@[^:/]+:", "", url.strip()).removesuffix(".git").strip("/")
    parts = [x for x in path.split("/") if x]
    return "/".join(parts[-2:]) if parts else url


def page(
    found: Sequence[Pool],
    *,
    source: str,
    before: Sequence[Pool] | None = None,
    against: str = "",
    used: Used | None = None,
) -> str:
    """The HTML page: per cluster a table of its cohorts and a figure per pool, GPU pools apart
    from CPU and memory; `source` names the repository, `before` the pools at `against`."""
    drawn = figures(found, before)
    clusters = list(dict.fromkeys(f.pool.cluster for f in drawn))
    name = html.escape(source)
    change = (
        f" Pools the change since {html.escape(against)} moves are drawn before and after, side by side."
        if before is not None
        else ""
    )
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>GPU budgets of {name}: {html.escape(', '.join(clusters))}</title>",
        f"<style>{_STYLE}</style></head><body>",
        f"<h1>GPU budgets of {name}</h1>",
        f"<p>From the inputs of {name}. Per pool (cluster, flavor, quota resource): each "
        "tenant's nominal share (solid), the most it can reach by borrowing (light), coloured by cohort; "
        "the red rule is the capacity"
        + (", the black tick what each tenant uses on the cluster" if used is not None else "")
        + f".{change}</p>",
    ]
    for cluster in clusters:
        here = [f for f in drawn if f.pool.cluster == cluster]
        parts.append(f'<section class="cluster" id="cluster-{html.escape(cluster)}">')
        parts.append(f"<h2>{html.escape(cluster)}</h2>")
        parts += _cohorts([f.pool for f in here])
        parts += _tree([f.pool for f in here if f.when != "before"])
        palette = cohorts([f.pool for f in here])
        for kind, heading, gpu in (("gpu", "GPUs", True), ("other", "CPU and memory", False)):
            group = [f for f in here if is_gpu(f.pool.resource) is gpu]
            if not group:
                continue
            parts.append(f'<div class="pools {kind}"><h3>{heading}</h3>')
            parts += [_figure(f, palette, used) for f in group]
            parts.append("</div>")
        parts.append("</section>")
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def _figure(f: Figure, palette: Sequence[str], used: Used | None = None) -> str:
    p = f.pool
    return (
        f'<figure class="pool" data-cluster="{html.escape(p.cluster)}" data-flavor="{html.escape(p.flavor)}" '
        f'data-resource="{html.escape(p.resource)}" data-tenants="{len(p.grants)}" '
        f'data-capacity="{"1" if p.capacity is not None else "0"}" data-when="{f.when}">\n'
        f"{svg(p, palette, f.when, used)}\n<figcaption>{html.escape(title(p, f.when, used))}</figcaption></figure>"
    )


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


def _source(root: Path, model: Any) -> str:
    """What the page is titled after: the repository Argo CD reads, else the git remote, else the
    folder."""
    settings = model.platform.argocd
    if settings is not None:
        return repository_name(settings.repo_url)
    from gputenancy.deliver import gitrepo

    repo = gitrepo.open_repo_if_any(root)
    if repo is not None:
        with repo:
            url = gitrepo.source_url(repo)
        if url != str(repo.working_tree_dir):
            return repository_name(url)
    return root.name


def command(
    root: Path,
    cluster: str | None,
    output_file: Path,
    emit: Any,
    emit_notes: Any,
    against: str | None = None,
    source: Path | None = None,
) -> int:
    """`pipeline.py report`: 0 written, 1 the inputs cannot be read or have errors, or `against` is
    not a git ref whose inputs can be read (findings printed; nothing written). `source` (`--from
    FILE`): a cluster dump whose usage the charts add."""
    from gputenancy import engine
    from gputenancy.common import report
    from gputenancy.common.findings import Finding, PipelineError, Severity
    from gputenancy.deliver import baseline, budgets

    try:
        model, findings = engine.check_only(root, cluster)
    except PipelineError as exc:
        emit(report.format_findings(exc.findings, report.default_format()))
        return 1
    if any(f.severity is Severity.ERROR for f in findings):
        emit(report.format_findings(findings, report.default_format()))
        return 1
    used = None
    if source is not None:
        from gputenancy.live import status

        try:
            used, cluster = status.usage_of(source, model, cluster, root)
        except PipelineError as exc:
            emit(report.format_findings(exc.findings, report.default_format()))
            return 1
    only = [cluster] if cluster is not None else None
    found = budgets.pools(model, only)
    before = None
    if against is not None:
        had = baseline.model_at(root, against)
        if had is None:
            refused = Finding(
                str(root),
                0,
                0,
                Severity.ERROR,
                "plan-against",
                f"--against {against!r}: not a git ref of the repository whose inputs can be read",
            )
            emit(report.format_findings([refused], report.default_format()))
            return 1
        before = budgets.pools(had, [c for c in (only or had.clusters) if c in had.clusters])
    text = page(found, source=_source(root, model), before=before, against=against or "", used=used)
    tmp = output_file.with_name(f".{output_file.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(output_file)
    moved = (
        f", {sum(1 for f in figures(found, before) if f.when == 'after')} pool(s) changed since {against}"
        if before is not None
        else ""
    )
    emit(
        f"report written to {output_file}: {len(found)} charts, {len({p.cluster for p in found})} cluster(s){moved}\n"
    )
    if findings:
        emit_notes(report.format_findings(findings, "text"))
    return 0
