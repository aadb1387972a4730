"""The fleet section of `budgets` and the plan's fleet notes: per MultiKueue manager and tenant, the
manager's quota and each worker's (`gputenancy.policy.fleetquota`), and the largest job the tenant can
run on the fleet: what one worker reaches (a job is admitted on the manager, then on ONE worker), never
more than the manager admits. The fleet quota is a sum; a job larger than any one worker's reach is
admitted by the manager, holds its quota there and never runs."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable, Sequence

from gputenancy.common import mdsafe
from gputenancy.deliver import budgets
from gputenancy.inputs.quantity import ZERO, Quantity
from gputenancy.inputs.spec import Model
from gputenancy.policy import fleetquota
from gputenancy.policy.catalog import Catalog, effective_catalog


@dataclasses.dataclass(frozen=True)
class Largest:
    """The most of one quota resource a single job of `tenant` can ask for and run on the fleet."""

    manager: str
    tenant: str
    resource: str
    size: Quantity  # min(manager_reach, the largest worker reach)
    manager_reach: Quantity  # on one flavor of the manager's ClusterQueue, borrowing included
    workers: tuple[tuple[str, Quantity], ...]  # each worker's reach on its best flavor

    def text(self) -> str:
        """`largest job 12 (one worker's reach: w1 12, w2 8)`"""
        limit = (
            f"the manager admits at most {self.manager_reach.canonical()}"
            if self.manager_reach < max((q for _, q in self.workers), default=ZERO)
            else "one worker's reach: " + ", ".join(f"{w} {q.canonical()}" for w, q in self.workers)
        )
        return f"largest job {self.size.canonical()} ({limit})"


def largest(model: Model, catalog: Catalog, clusters: Iterable[str] | None = None) -> list[Largest]:
    """Every (manager, tenant, resource) of `fleetquota.quotas`, with the largest single job."""
    rows = fleetquota.quotas(model, catalog, clusters)
    out: list[Largest] = []
    for manager in dict.fromkeys(q.manager for q in rows):
        mine = [q for q in rows if q.manager == manager]
        workers = [w for w, _ in mine[0].workers]
        tenants = sorted({q.tenant for q in mine})
        reach = _reach(model, [manager, *workers], tenants)
        for q in mine:
            on_manager = reach.get((manager, q.tenant, q.resource), ZERO)
            theirs = tuple((w, reach.get((w, q.tenant, q.resource), ZERO)) for w in workers)
            best = max((r for _, r in theirs), default=ZERO)
            out.append(Largest(manager, q.tenant, q.resource, min(on_manager, best), on_manager, theirs))
    return out


def _reach(
    model: Model, clusters: Sequence[str], tenants: Sequence[str]
) -> dict[tuple[str, str, str], Quantity]:
    """(cluster, tenant, resource) -> the most one job can hold there: the best flavor's reach (one
    podset takes one flavor), nothing for a draining tenant."""
    out: dict[tuple[str, str, str], Quantity] = {}
    wanted = {c: list(tenants) for c in clusters if c in model.clusters}
    for g in budgets.grants_for(model, wanted):
        held = ZERO if g.draining else g.reach
        key = (g.cluster, g.tenant, g.resource)
        out[key] = max(out.get(key, ZERO), held)
    return out


def notes(model: Model, clusters: Iterable[str] | None = None) -> list[str]:
    """The plan's fleet notes: the quotas (`fleetquota.notes`) and the largest job of each tenant."""
    catalog = effective_catalog(model)
    wanted = list(clusters) if clusters is not None else None
    out = fleetquota.notes(model, catalog, wanted)
    rows = largest(model, catalog, wanted)
    for key in dict.fromkeys((r.manager, r.tenant) for r in rows):
        mine = [r for r in rows if (r.manager, r.tenant) == key]
        body = ", ".join(f"{r.resource} {r.size.canonical()}" for r in mine)
        out.append(
            f"{key[0]}: the largest job {key[1]} can run on the fleet: {body} (the most one worker reaches; a "
            "larger one is admitted by the manager, holds its quota and never runs)"
        )
    return out


def extend(text: str, model: Model, clusters: Iterable[str] | None, fmt: str) -> str:
    """`budgets` output with the fleets among `clusters` added (unchanged without fleets)."""
    catalog = effective_catalog(model)
    rows = fleetquota.quotas(model, catalog, clusters)
    if not rows:
        return text
    jobs = {(r.manager, r.tenant, r.resource): r for r in largest(model, catalog, clusters)}
    if fmt == "json":
        data = json.loads(text)
        data["fleets"] = [
            {
                "manager": q.manager,
                "tenant": q.tenant,
                "resource": q.resource,
                "managerQuota": q.manager_quota.canonical(),
                "source": q.source,
                "workers": [
                    {"cluster": w, "quota": n.canonical(), "reach": r.canonical()}
                    for (w, n), (_, r) in zip(q.workers, _job(jobs, q).workers, strict=True)
                ],
                "largestJob": _job(jobs, q).size.canonical(),
            }
            for q in rows
        ]
        return json.dumps(data, indent=2) + "\n"
    lines: list[str] = []
    for manager in dict.fromkeys(q.manager for q in rows):
        mine = [q for q in rows if q.manager == manager]
        workers = [w for w, _ in mine[0].workers]
        if fmt == "markdown":
            lines += [f"### Fleet {mdsafe.text(manager)} (MultiKueue manager)", ""]
            lines += [
                f"| tenant | resource | {mdsafe.text(manager)} | {' | '.join(map(mdsafe.text, workers))} "
                "| manager quota | largest job |"
            ]
            lines += ["| --- | --- | ---: | " + " | ".join("---:" for _ in workers) + " | --- | ---: |"]
            lines += [
                f"| {mdsafe.text(q.tenant)} | {mdsafe.text(q.resource)} | {q.manager_quota.canonical()} | "
                + " | ".join(n.canonical() for _, n in q.workers)
                + f" | {q.described} | {_job(jobs, q).size.canonical()} |"
                for q in mine
            ]
            lines += ["", _LARGEST, ""]
        else:
            lines.append(f"fleet {manager} (MultiKueue manager of {', '.join(workers)}):")
            for tenant in dict.fromkeys(q.tenant for q in mine):
                theirs = [q for q in mine if q.tenant == tenant]
                lines.append(f"  {tenant} (manager quota: {theirs[0].described}):")
                lines += [
                    f"    {q.text().removeprefix(f'{tenant} ')}; {_job(jobs, q).text()}" for q in theirs
                ]
            lines.append(f"  ({_LARGEST})")
    return text + "\n".join(lines) + "\n"


_LARGEST = (
    "The largest job is what one worker reaches, borrowing included (each job runs on one worker), not the "
    "fleet's sum: a larger one is admitted by the manager, holds its quota there and never runs."
)


def _job(jobs: dict[tuple[str, str, str], Largest], q: fleetquota.FleetQuota) -> Largest:
    return jobs.get(
        (q.manager, q.tenant, q.resource),
        Largest(q.manager, q.tenant, q.resource, ZERO, ZERO, tuple((w, ZERO) for w, _ in q.workers)),
    )
