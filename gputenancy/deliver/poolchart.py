"""The picture in the pull-request comment: for each GPU pool a change touches, who holds what before
and after and what is free, as Mermaid pie charts (GitHub renders ```mermaid blocks natively).

A pool is one quota resource on one flavor of one cluster (deliver/budgets.py). Only device and HAMi
quota resources are drawn (cpu and memory stay in the tables). Slices are the tenants' nominal
budgets and the free capacity; a pool over capacity has no free slice and says so in its title.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
from decimal import Decimal

from gputenancy.deliver.budgetdiff import PoolDiff
from gputenancy.deliver.budgets import Pool
from gputenancy.inputs.hami import human

NOT_GPU = ("cpu", "memory", "pods", "ephemeral-storage")
MAX_CHARTS = 12  # pools drawn in one comment (two pies each); the tables list every pool
_UNSAFE = re.compile(r"[^A-Za-z0-9 ._/()%:+,-]")


@dataclasses.dataclass(frozen=True)
class Pie:
    title: str
    slices: tuple[tuple[str, Decimal], ...]  # (label, value > 0)


def is_gpu(resource: str) -> bool:
    return resource not in NOT_GPU and not resource.startswith("hugepages-")


def _value(q: Decimal, unit: str) -> Decimal:
    return q / 1024 if unit == "MiB" else q  # GiB, as people read HAMi memory


def pie(p: Pool, when: str) -> Pie:
    slices = [(g.tenant, _value(g.nominal.value, p.unit)) for g in p.grants if g.nominal.value > 0]
    where = f"{p.cluster} {p.flavor} {p.resource} {when}"
    unit = " (GiB)" if p.unit == "MiB" else " (percent)" if p.unit == "percent" else ""
    if p.capacity is None:
        return Pie(f"{where}: no capacity declared{unit}", tuple(slices))
    title = f"{where}: {human(p.nominal, p.unit)} of {human(p.capacity, p.unit)}{unit}"
    headroom = p.capacity.value - p.nominal.value
    if headroom > 0:
        slices.append(("free", _value(headroom, p.unit)))
    elif headroom < 0:
        title += f", over capacity by {human(p.nominal - p.capacity, p.unit)}"
    return Pie(title, tuple(slices))


def pies(diffs: Sequence[PoolDiff]) -> list[Pie]:
    """Two pies (before, after) per changed GPU pool, in pool order; a side that does not exist is
    left out."""
    out: list[Pie] = []
    for d in [d for d in diffs if is_gpu(d.resource) and d.changed][:MAX_CHARTS]:
        out += [pie(p, when) for p, when in ((d.before, "before"), (d.after, "after")) if p is not None]
    return [p for p in out if p.slices]


def _number(v: Decimal) -> str:
    text = f"{v.quantize(Decimal('0.001')).normalize():f}"
    return text


def mermaid(p: Pie) -> str:
    """One ```mermaid block. Labels are names (DNS labels, quota names) with anything else dropped."""
    lines = ["```mermaid", f"pie showData title {_UNSAFE.sub('', p.title)}"]
    lines += [f'    "{_UNSAFE.sub("", label)}" : {_number(v)}' for label, v in p.slices]
    return "\n".join([*lines, "```"])


def markdown(diffs: Sequence[PoolDiff]) -> list[str]:
    """The `### Pools` section, or nothing when no GPU pool changes."""
    found = pies(diffs)
    if not found:
        return []
    drawn = sum(1 for d in diffs if is_gpu(d.resource) and d.changed)
    more = (
        [f"_{drawn - MAX_CHARTS} more changed pools are in the tables above._", ""]
        if drawn > MAX_CHARTS
        else []
    )
    out = ["", "### Pools: who holds what, before and after", ""]
    for p in found:
        out += [mermaid(p), ""]
    return out + more
