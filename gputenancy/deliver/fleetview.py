"""The fleet section of `budgets`: per MultiKueue manager and tenant, the manager's quota and each
worker's (`gputenancy.policy.fleetquota`), after the per-cluster pools in every format."""

from __future__ import annotations

import json
from collections.abc import Iterable

from gputenancy.deliver import mdsafe
from gputenancy.inputs.spec import Model
from gputenancy.policy import fleetquota
from gputenancy.policy.catalog import effective_catalog


def extend(text: str, model: Model, clusters: Iterable[str] | None, fmt: str) -> str:
    """`budgets` output with the fleets among `clusters` added (unchanged without fleets)."""
    rows = fleetquota.quotas(model, effective_catalog(model), clusters)
    if not rows:
        return text
    if fmt == "json":
        data = json.loads(text)
        data["fleets"] = [
            {
                "manager": q.manager,
                "tenant": q.tenant,
                "resource": q.resource,
                "managerQuota": q.manager_quota.canonical(),
                "source": q.source,
                "workers": [{"cluster": w, "quota": n.canonical()} for w, n in q.workers],
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
                f"| tenant | resource | {mdsafe.text(manager)} | {' | '.join(map(mdsafe.text, workers))} | manager quota |"
            ]
            lines += ["| --- | --- | ---: | " + " | ".join("---:" for _ in workers) + " | --- |"]
            lines += [
                f"| {mdsafe.text(q.tenant)} | {mdsafe.text(q.resource)} | {q.manager_quota.canonical()} | "
                + " | ".join(n.canonical() for _, n in q.workers)
                + f" | {q.described} |"
                for q in mine
            ]
            lines.append("")
        else:
            lines.append(f"fleet {manager} (MultiKueue manager of {', '.join(workers)}):")
            for tenant in dict.fromkeys(q.tenant for q in mine):
                theirs = [q for q in mine if q.tenant == tenant]
                lines.append(f"  {tenant} (manager quota: {theirs[0].described}):")
                lines += [f"    {q.text().removeprefix(f'{tenant} ')}" for q in theirs]
    return text + "\n".join(lines) + "\n"
