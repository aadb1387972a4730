"""`--group TEAM=QUEUE,QUEUE`: several ClusterQueues of one team become one tenant.

The model renders one ClusterQueue per tenant, named after it: grouped queues are replaced by the
team's queue (namespaces together, quotas summed per flavor and resource). That is a change on the
cluster, not an adoption: the round trip reports the team's queue as new, the grouped ones as no longer
rendered and their LocalQueues as pointing elsewhere, and `import` writes it only with --allow-partial."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from gputenancy.adopt.records import RULE, TenantPlan
from gputenancy.common.findings import Finding, Origin
from gputenancy.inputs import quantity

_GROUP = re.compile(r"^([a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?)=([a-z0-9.,-]+)$")
SHARED = ("localQueueName", "cohort", "preemption", "fairSharingWeight", "queueingStrategy", "state")


def parse(values: Sequence[str]) -> tuple[dict[str, tuple[str, ...]], list[Finding]]:
    """`TEAM=QUEUE,QUEUE` arguments -> team -> queues; a queue in two groups is a finding."""
    out: dict[str, tuple[str, ...]] = {}
    findings: list[Finding] = []
    seen: dict[str, str] = {}
    for value in values:
        m = _GROUP.fullmatch(value)
        if m is None:
            findings.append(
                Origin("--group").finding(RULE, f"{value!r}: expected TEAM=QUEUE,QUEUE (TEAM a DNS label)")
            )
            continue
        team, queues = m.group(1), tuple(q for q in m.group(3).split(",") if q)
        for q in queues:
            if q in seen:
                findings.append(
                    Origin("--group").finding(RULE, f"queue {q} is in groups {seen[q]} and {team}")
                )
            seen[q] = team
        out[team] = queues
    return out, findings


def merge(
    plans: Sequence[TenantPlan], groups: Mapping[str, Sequence[str]]
) -> tuple[list[TenantPlan], list[Finding]]:
    """The plans with each group's queues merged into one tenant named after the team."""
    by_name = {p.name: p for p in plans}
    findings: list[Finding] = []
    grouped = {q for qs in groups.values() for q in qs}
    out = [p for p in plans if p.name not in grouped]
    for team, queues in groups.items():
        members = [by_name[q] for q in queues if q in by_name]
        missing = [q for q in queues if q not in by_name]
        if missing:
            findings.append(
                Origin("--group").finding(
                    RULE, f"{team}: no imported ClusterQueue {', '.join(missing)} in the dump"
                )
            )
            continue
        first = members[0]
        for key in SHARED:
            values = {repr(m.settings.get(key)) for m in members}
            if len(values) > 1:
                findings.append(
                    first.queue.origin.finding(
                        RULE,
                        f"the queues grouped as {team} differ in {key} ({', '.join(sorted(values))}): one tenant has one",
                    )
                )
        settings: dict[str, Any] = {k: v for k, v in first.settings.items() if k != "namespaces"}
        settings = {
            "namespaces": sorted({ns for m in members for ns in m.settings["namespaces"]}),
            **settings,
        }
        if "localQueueName" not in settings and len({m.name for m in members}) > 1:
            settings["localQueueName"] = first.name
        claims = {c["name"]: c for m in members for c in m.claims}
        out.append(
            TenantPlan(
                team,
                settings,
                tuple(_summed([m.budget for m in members])),
                tuple(claims.values()),
                first.queue,
            )
        )
    return out, findings


def _summed(budgets: Sequence[Sequence[Mapping[str, Any]]]) -> list[dict[str, Any]]:
    order: list[str] = []
    total: dict[str, dict[str, dict[str, list[Any]]]] = {}
    for budget in budgets:
        for fb in budget:
            flavor = str(fb["flavor"])
            if flavor not in total:
                order.append(flavor)
                total[flavor] = {}
            for section in ("devices", "resources"):
                for name, amount in (fb.get(section) or {}).items():
                    total[flavor].setdefault(section, {}).setdefault(name, []).append(amount)
    out = []
    for flavor in order:
        entry: dict[str, Any] = {"flavor": flavor}
        for section, amounts in total[flavor].items():
            entry[section] = {name: _sum(values, len(budgets)) for name, values in amounts.items()}
        out.append(entry)
    return out


def _sum(values: Sequence[Any], members: int) -> Any:
    parts = [v if isinstance(v, dict) else {"nominal": v} for v in values]

    def add(key: str) -> Any:
        if any(key not in p for p in parts) or (len(parts) < members and key != "nominal"):
            return None
        total = quantity.parse(0)
        for p in parts:
            total = total + quantity.parse(p[key])
        text = total.canonical()
        return int(text) if text.isdigit() else text

    nominal, borrowing, lending = add("nominal"), add("borrowingLimit"), add("lendingLimit")
    if borrowing is None and lending is None:
        return nominal
    out = {"nominal": nominal}
    if borrowing is not None:
        out["borrowingLimit"] = borrowing
    if lending is not None:
        out["lendingLimit"] = lending
    return out
