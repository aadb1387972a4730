"""What a change does to budgets, for everyone it touches: the pools (capacity, the sum of nominal
budgets, headroom) and the grants (nominal, borrowing, lending, reach) before and after.

Before is the model of the inputs at the base of the change (deliver/baseline.py), after the model
being planned. A tenant the change touches shows every grant row, old and new values side by side
with the changed cells marked; a tenant it does not touch shows only the rows whose reach changes
through its cohort (another member borrows, lends, joins or leaves), as "affected".
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence

from gputenancy.common import mdsafe
from gputenancy.deliver import budgets
from gputenancy.deliver.budgets import Grant, Pool
from gputenancy.inputs.hami import human
from gputenancy.inputs.quantity import ZERO, Quantity

CELLS = ("nominal", "borrowing", "lending", "reach")
_MARK = "**"  # a changed cell in markdown


@dataclasses.dataclass(frozen=True)
class GrantDiff:
    cluster: str
    tenant: str
    flavor: str
    resource: str
    before: Grant | None  # None: the tenant had no budget for this resource there
    after: Grant | None  # None: the budget is gone (the tenant left the cluster, or was removed)
    affected: bool  # the change does not touch this tenant; its reach changes through its cohort

    def cell(self, name: str) -> tuple[str, str]:
        return _text(self.before, name), _text(self.after, name)

    @property
    def changed(self) -> tuple[str, ...]:
        return tuple(n for n in CELLS if self.cell(n)[0] != self.cell(n)[1])


@dataclasses.dataclass(frozen=True)
class PoolDiff:
    """One pool (cluster, flavor, quota resource) before and after; either side None when absent."""

    cluster: str
    flavor: str
    resource: str
    before: Pool | None
    after: Pool | None

    @property
    def unit(self) -> str:
        return (self.after or self.before or _EMPTY).unit

    @property
    def changed(self) -> bool:
        return (
            _holders(self.before) != _holders(self.after)
            or _cap(self.before) != _cap(self.after)
            or bool(tree_lines(self))
        )


_EMPTY = Pool("", "", "", None, ZERO, ())


def _cap(p: Pool | None) -> str | None:
    return p.capacity.canonical() if p is not None and p.capacity is not None else None


def _holders(p: Pool | None) -> tuple[tuple[str, str], ...]:
    if p is None:
        return ()
    cohorts = tuple((f"cohort {c.cohort}", c.nominal.canonical()) for c in p.cohorts if c.nominal.value)
    return tuple((g.tenant, g.nominal.canonical()) for g in p.grants) + cohorts


def tree_lines(d: PoolDiff) -> list[str]:
    """The cohorts of a pool whose own quota, holdings or reach the change moves:
    `cohort perception h100 nvidia.com/gpu: nominal 4 → 6, holds 10 → 12, reaches 12 → 14`."""
    old = {c.cohort: c for c in (d.before.cohorts if d.before is not None else ())}
    new = {c.cohort: c for c in (d.after.cohorts if d.after is not None else ())}
    out = []
    for name in [*new, *(n for n in old if n not in new)]:
        a, b = old.get(name), new.get(name)
        pairs = [
            (w, _tree_cell(a, w, d.unit), _tree_cell(b, w, d.unit)) for w in ("nominal", "holds", "reach")
        ]
        cells = [f"{'reaches' if w == 'reach' else w} {_arrow(x, y)}" for w, x, y in pairs]
        if any(x != y for _, x, y in pairs):
            out.append(f"cohort {name} {d.flavor} {d.resource}: {', '.join(cells)}")
    return out


def _tree_cell(c: budgets.CohortGrant | None, what: str, unit: str) -> str:
    q = None if c is None else c.nominal if what == "nominal" else c.holds if what == "holds" else c.reach
    return human(q, unit) if q is not None else "-"


def _text(g: Grant | None, name: str) -> str:
    if g is None:
        return "-"
    if name == "nominal":
        return g.show(g.nominal)
    if name == "borrowing":
        return g.borrowing_text()
    if name == "lending":
        return g.lending_text()
    return g.reach_text()


def _by_key(found: Iterable[Pool]) -> dict[tuple[str, str, str], Pool]:
    return {(p.cluster, p.flavor, p.resource): p for p in found}


def pools(before: Sequence[Pool] | None, after: Sequence[Pool]) -> tuple[PoolDiff, ...]:
    """The pools (`budgets.pools` of the same clusters in the model before and after) whose capacity
    or holders change (all of them when before is None: nothing to compare with, so nothing is
    known to be unchanged)."""
    new = _by_key(after)
    old = _by_key(before) if before is not None else {}
    diffs = [PoolDiff(*k, old.get(k), new.get(k)) for k in sorted(old.keys() | new.keys())]
    return tuple(d for d in diffs if before is None or d.changed)


def grants(
    before: Sequence[Pool] | None, after: Sequence[Pool], touched: Mapping[str, Sequence[str]]
) -> tuple[GrantDiff, ...]:
    """Every grant row of the touched tenants ({cluster: tenants}), and the rows of other tenants on
    those clusters whose grant changes (reach, through the cohort); the pools as for `pools`."""
    new = _rows(after)
    old = _rows(before) if before is not None else {}
    out = []
    for key in sorted(old.keys() | new.keys()):
        cluster, tenant = key[0], key[1]
        a, b = old.get(key), new.get(key)
        diff = GrantDiff(*key, a, b, tenant not in touched.get(cluster, ()))
        if not diff.affected or (before is not None and not _same(a, b) and diff.changed):
            out.append(diff)
    return tuple(out)


def _rows(found: Iterable[Pool]) -> dict[tuple[str, str, str, str], Grant]:
    return {(g.cluster, g.tenant, g.flavor, g.resource): g for p in found for g in p.grants}


def _same(a: Grant | None, b: Grant | None) -> bool:
    """Grants every cell shows alike: the same fields and each quantity the same Decimal in the same
    format (most of a cluster's grants, which a change leaves as they were)."""
    return a is b or (
        a is not None
        and b is not None
        and (a.cohort, a.unit, a.draining) == (b.cohort, b.unit, b.draining)
        and all(_exact(x) == _exact(y) for x, y in _quantities(a, b))
    )


def _quantities(a: Grant, b: Grant) -> zip[tuple[Quantity | None, Quantity | None]]:
    return zip(
        (a.nominal, a.borrowing, a.lending, a.reach),
        (b.nominal, b.borrowing, b.lending, b.reach),
        strict=True,
    )


def _exact(q: Quantity | None) -> tuple[object, ...] | None:
    return None if q is None else (q.value.as_tuple(), q.format)


# ------------------------------------------------------------------------------------------ views


def _arrow(old: str, new: str) -> str:
    return new if old == new else f"{old} → {new}"


def grant_line(d: GrantDiff) -> str:
    """`nlp h100 nvidia.com/gpu: nominal 6, borrowing 8, lending 2; reaches 12 → 14 (changed: reach)`"""
    cells = {n: _arrow(*d.cell(n)) for n in CELLS}
    verb = "admits" if d.after is not None and d.after.draining else "reaches"
    state = " (added)" if d.before is None else " (removed)" if d.after is None else ""
    marked = f" (changed: {', '.join(d.changed)})" if d.changed and not state else ""
    return (
        f"{d.tenant} {d.flavor} {d.resource}{state}: nominal {cells['nominal']}, borrowing "
        f"{cells['borrowing']}, lending {cells['lending']}; {verb} {cells['reach']}{marked}"
    )


GRANT_HEADER = (
    "| tenant | flavor | resource | nominal | borrowing limit | lending limit | most it can reach |",
    "| --- | --- | --- | ---: | --- | --- | ---: |",
)


def grant_row(d: GrantDiff) -> str:
    """A markdown row: changed cells as `old → new`, in bold."""

    def cell(name: str) -> str:
        old, new = d.cell(name)
        shown = mdsafe.text(_arrow(old, new))
        return (
            f"{_MARK}{shown}{_MARK}" if old != new and d.before is not None and d.after is not None else shown
        )

    state = " (added)" if d.before is None else " (removed)" if d.after is None else ""
    return (
        f"| {mdsafe.text(d.tenant)}{state} | {mdsafe.text(d.flavor)} | {mdsafe.text(d.resource)} | "
        + " | ".join(cell(n) for n in CELLS)
        + " |"
    )


def pool_line(d: PoolDiff) -> str:
    """`h100 nvidia.com/gpu: capacity 24 → 240, nominal 16, headroom 8 → 224`"""

    def show(p: Pool | None, what: str) -> str:
        q = (
            None
            if p is None
            else p.capacity
            if what == "capacity"
            else p.nominal
            if what == "nominal"
            else p.headroom
        )
        return human(q, d.unit) if q is not None else "-"

    parts = [
        f"{w} {_arrow(show(d.before, w), show(d.after, w))}" for w in ("capacity", "nominal", "headroom")
    ]
    return f"{d.flavor} {d.resource}: {', '.join(parts)}"


def to_json(d: GrantDiff) -> dict[str, object]:
    return {
        "tenant": d.tenant,
        "flavor": d.flavor,
        "resource": d.resource,
        "affected": d.affected,
        "before": budgets.grant_json(d.before) if d.before is not None else None,
        "after": budgets.grant_json(d.after) if d.after is not None else None,
        "changed": list(d.changed),
    }
