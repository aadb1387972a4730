"""Every team's queues as Kueue runs them: per ClusterQueue and flavor the nominal quota, borrowing and
lending limits (spec), what it uses and reserves and what of it is borrowed (status.flavorsUsage,
status.flavorsReservation), its admitted and pending workloads; queues that are not Active with Kueue's
reason; pending workloads grouped by Kueue's reason (quota, or inadmissible: the link that is missing)."""

from __future__ import annotations

import dataclasses
import re
from collections import defaultdict
from collections.abc import Mapping
from typing import Any

from gputenancy.cluster.dump import Dump, LiveObject
from gputenancy.inputs.quantity import ZERO, Quantity, QuantityError, parse
from gputenancy.policy.catalog import Catalog

TENANT_LABEL = "gputenancy.io/tenant"


@dataclasses.dataclass(frozen=True)
class Usage:
    tenant: str  # "" for a ClusterQueue Git does not hold
    queue: str
    flavor: str
    resource: str
    nominal: Quantity
    borrowing_limit: Quantity | None  # None: no limit
    lending_limit: Quantity | None
    used: Quantity
    reserved: Quantity
    borrowed: Quantity


@dataclasses.dataclass(frozen=True)
class QueueState:
    kind: str  # ClusterQueue | LocalQueue
    namespace: str
    name: str
    tenant: str
    active: bool
    reason: str
    message: str
    admitted: int
    pending: int
    reserving: int


@dataclasses.dataclass(frozen=True)
class Waiting:
    """Pending workloads of one queue with one reason."""

    queue: str  # the ClusterQueue (or `<namespace>/<LocalQueue>` when it has none)
    reason: str  # quota | inadmissible | other Kueue reasons
    message: str  # Kueue's message of the first
    link: str  # what is missing, for an inadmissible workload ("" otherwise)
    workloads: tuple[str, ...]  # namespace/name


def _q(value: Any) -> Quantity | None:
    if value is None:
        return None
    try:
        return parse(value)
    except (QuantityError, TypeError):
        return None


def _active(obj: LiveObject) -> tuple[bool, str, str]:
    for c in (obj.body.get("status") or {}).get("conditions") or []:
        if isinstance(c, Mapping) and c.get("type") == "Active":
            return c.get("status") == "True", str(c.get("reason", "")), str(c.get("message", ""))
    return False, "NoStatus", "Kueue has not reported on it (no Active condition)"


def tenant_of(obj: LiveObject) -> str:
    return str(((obj.body.get("metadata") or {}).get("labels") or {}).get(TENANT_LABEL, ""))


def usage(dump: Dump) -> list[Usage]:
    out: list[Usage] = []
    for cq in dump.of_kind("ClusterQueue"):
        status = cq.body.get("status") or {}
        got: dict[str, dict[tuple[str, str], tuple[Quantity, Quantity]]] = {}
        for field in ("flavorsUsage", "flavorsReservation"):
            table = got.setdefault(field, {})
            for f in status.get(field) or []:
                for r in (f or {}).get("resources") or []:
                    table[(str(f.get("name")), str(r.get("name")))] = (
                        _q(r.get("total")) or ZERO,
                        _q(r.get("borrowed")) or ZERO,
                    )
        for group in (cq.body.get("spec") or {}).get("resourceGroups") or []:
            for f in (group or {}).get("flavors") or []:
                for r in (f or {}).get("resources") or []:
                    key = (str(f.get("name")), str(r.get("name")))
                    used, borrowed = got["flavorsUsage"].get(key, (ZERO, ZERO))
                    reserved, _ = got["flavorsReservation"].get(key, (ZERO, ZERO))
                    out.append(
                        Usage(
                            tenant_of(cq),
                            cq.name,
                            *key,
                            _q(r.get("nominalQuota")) or ZERO,
                            _q(r.get("borrowingLimit")),
                            _q(r.get("lendingLimit")),
                            used,
                            reserved,
                            borrowed,
                        )
                    )
    return out


def queues(dump: Dump) -> list[QueueState]:
    out = []
    for obj in [*dump.of_kind("ClusterQueue"), *dump.of_kind("LocalQueue")]:
        active, reason, message = _active(obj)
        status = obj.body.get("status") or {}
        tenant = tenant_of(obj)
        out.append(
            QueueState(
                obj.kind,
                obj.namespace,
                obj.name,
                tenant,
                active,
                reason,
                message,
                int(status.get("admittedWorkloads") or 0),
                int(status.get("pendingWorkloads") or 0),
                int(status.get("reservingWorkloads") or 0),
            )
        )
    return out


def _conditions(wl: LiveObject) -> dict[str, Mapping[str, Any]]:
    return {
        str(c.get("type")): c
        for c in (wl.body.get("status") or {}).get("conditions") or []
        if isinstance(c, Mapping)
    }


def workload_state(wl: LiveObject) -> str:
    """admitted | reserved | pending | finished"""
    cs = _conditions(wl)
    if cs.get("Finished", {}).get("status") == "True":
        return "finished"
    if cs.get("Admitted", {}).get("status") == "True":
        return "admitted"
    if cs.get("QuotaReserved", {}).get("status") == "True":
        return "reserved"
    return "pending"


def cluster_queue_of(wl: LiveObject, dump: Dump) -> str:
    admission = (wl.body.get("status") or {}).get("admission") or {}
    if admission.get("clusterQueue"):
        return str(admission["clusterQueue"])
    local = str((wl.body.get("spec") or {}).get("queueName") or "")
    lq = dump.get("LocalQueue", local, wl.namespace) if local else None
    if lq is not None and (lq.body.get("spec") or {}).get("clusterQueue"):
        return str(lq.body["spec"]["clusterQueue"])
    return f"{wl.namespace}/{local}" if local else f"{wl.namespace}/(no queue label)"


_UNMAPPED = re.compile(r"DeviceClass (\S+) is not mapped in DRA configuration")
_NO_LQ = re.compile(r"LocalQueue (\S+) doesn't exist")
_NO_CQ = re.compile(r"ClusterQueue (\S+) doesn't exist")
_INACTIVE = re.compile(r"ClusterQueue (\S+) is inactive")


def missing_link(message: str, catalog: Catalog) -> str:
    """The link of the chain tenant -> queue -> claim -> DeviceClass -> mapping that Kueue missed."""
    if m := _UNMAPPED.search(message):
        name = m.group(1)
        if name in catalog.classes:
            return (
                f"DeviceClass {name} is in the catalog but not in the manager's deviceClassMappings: no "
                "tenant on this cluster budgets it, or the manager runs an older Configuration"
            )
        return (
            f"DeviceClass {name} is in no deviceClassMappings entry: it is not in the platform's catalog "
            "(base/platform.yaml), so no budget covers it; add it there and to the tenant's budget"
        )
    if m := _NO_LQ.search(message):
        return (
            f"no LocalQueue {m.group(1)} in the workload's namespace: the job's queue-name label names none"
        )
    if m := _NO_CQ.search(message):
        return f"the LocalQueue points at ClusterQueue {m.group(1)}, which does not exist"
    if m := _INACTIVE.search(message):
        return f"ClusterQueue {m.group(1)} is not Active (see the queues above)"
    return ""


def waiting(dump: Dump, catalog: Catalog) -> list[Waiting]:
    groups: dict[tuple[str, str, str], list[tuple[str, str]]] = defaultdict(list)
    for wl in dump.of_kind("Workload"):
        if workload_state(wl) != "pending":
            continue
        c = _conditions(wl).get("QuotaReserved", {})
        reason = str(c.get("reason") or "Pending")
        message = str(c.get("message") or "")
        kind = "quota" if reason == "Pending" and "quota" in message else reason.lower()
        link = missing_link(message, catalog) if kind == "inadmissible" else ""
        groups[(cluster_queue_of(wl, dump), kind, link)].append((f"{wl.namespace}/{wl.name}", message))
    return [
        Waiting(queue, kind, found[0][1], link, tuple(sorted(n for n, _ in found)))
        for (queue, kind, link), found in sorted(groups.items())
    ]


def counts(dump: Dump) -> dict[str, int]:
    out = {"admitted": 0, "reserved": 0, "pending": 0, "finished": 0}
    for wl in dump.of_kind("Workload"):
        out[workload_state(wl)] += 1
    return out


def by_queue(dump: Dump) -> dict[str, dict[str, list[str]]]:
    """ClusterQueue -> state -> workloads (namespace/name), finished ones left out."""
    out: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    for wl in dump.of_kind("Workload"):
        state = workload_state(wl)
        if state != "finished":
            out[cluster_queue_of(wl, dump)][state].append(f"{wl.namespace}/{wl.name}")
    return {q: dict(v) for q, v in out.items()}


def used(dump: Dump, cluster: str) -> dict[tuple[str, str, str, str], tuple[Quantity, Quantity, Quantity]]:
    """(cluster, tenant, flavor, resource) -> (in use, reserved, borrowed) of the tenants' ClusterQueues
    (the tenant by its `gputenancy.io/tenant` label; a queue Git does not hold is left out)."""
    out: dict[tuple[str, str, str, str], tuple[Quantity, Quantity, Quantity]] = {}
    for u in usage(dump):
        if u.tenant:
            out[(cluster, u.tenant, u.flavor, u.resource)] = (u.used, u.reserved, u.borrowed)
    return out


@dataclasses.dataclass(frozen=True)
class CohortRow:
    """One quota resource of a cohort whose nominal quota on the cluster is not Git's."""

    cohort: str
    flavor: str
    resource: str
    live: Quantity  # sum of the member ClusterQueues' nominalQuota on the cluster
    git: Quantity  # in generated/
    used: Quantity


def _nominal(bodies: list[Mapping[str, Any]]) -> dict[tuple[str, str, str], Quantity]:
    out: dict[tuple[str, str, str], Quantity] = {}
    for body in bodies:
        spec = body.get("spec") or {}
        cohort = spec.get("cohortName")
        if not cohort:
            continue
        for group in spec.get("resourceGroups") or []:
            for f in (group or {}).get("flavors") or []:
                for r in (f or {}).get("resources") or []:
                    key = (str(cohort), str(f.get("name")), str(r.get("name")))
                    out[key] = out.get(key, ZERO) + (_q(r.get("nominalQuota")) or ZERO)
    return out


def cohorts(dump: Dump, git_queues: list[Mapping[str, Any]]) -> list[CohortRow]:
    """Per cohort, flavor and resource where the cluster's members hold other quota than Git's."""
    live_cqs = dump.of_kind("ClusterQueue")
    live, git = _nominal([o.body for o in live_cqs]), _nominal(git_queues)
    cohort_of = {o.name: str((o.body.get("spec") or {}).get("cohortName") or "") for o in live_cqs}
    used: dict[tuple[str, str, str], Quantity] = {}
    for u in usage(dump):
        key = (cohort_of.get(u.queue, ""), u.flavor, u.resource)
        used[key] = used.get(key, ZERO) + u.used
    return [
        CohortRow(*key, live.get(key, ZERO), git.get(key, ZERO), used.get(key, ZERO))
        for key in sorted(live.keys() | git.keys())
        if live.get(key, ZERO) != git.get(key, ZERO)
    ]
