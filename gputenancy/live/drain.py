"""Whether a ClusterQueue on the cluster still holds workloads: what makes the removal of a draining
tenant safe. Workloads are counted from the Workload objects (admitted, reserving quota or pending: by
`status.admission.clusterQueue`, else through their LocalQueue) and from the ClusterQueue's own status
counters, whichever says more (a dump read without Workloads still has the counters)."""

from __future__ import annotations

import dataclasses

from gputenancy.cluster.dump import Dump
from gputenancy.live import teams


@dataclasses.dataclass(frozen=True)
class Held:
    queue: str
    admitted: tuple[str, ...]  # namespace/name, admitted or reserving quota
    pending: tuple[str, ...]
    counted: int  # by the ClusterQueue's status (admitted + reserving + pending, the larger)
    on_cluster: bool  # the ClusterQueue exists on the cluster

    @property
    def total(self) -> int:
        return max(len(self.admitted) + len(self.pending), self.counted)

    @property
    def empty(self) -> bool:
        return self.total == 0

    def describe(self, source: str) -> str:
        if not self.on_cluster:
            return f"ClusterQueue {self.queue} is not on the cluster ({source})"
        if self.empty:
            return f"the cluster ({source}) shows ClusterQueue {self.queue} empty: no admitted or pending workload"
        named = [*self.admitted, *self.pending]
        listed = ", ".join(named[:5]) + (f" and {len(named) - 5} more" if len(named) > 5 else "")
        return (
            f"the cluster ({source}) shows ClusterQueue {self.queue} still holding {self.total} workload(s) "
            f"({len(self.admitted)} admitted, {len(self.pending)} pending{': ' + listed if listed else ''})"
        )


def held(dump: Dump, queue: str) -> Held:
    cq = dump.get("ClusterQueue", queue)
    states = teams.by_queue(dump).get(queue, {})
    status = (cq.body.get("status") or {}) if cq is not None else {}
    admitted = int(status.get("admittedWorkloads") or 0)
    reserving = int(status.get("reservingWorkloads") or 0)
    pending = int(status.get("pendingWorkloads") or 0)
    return Held(
        queue,
        tuple(sorted([*states.get("admitted", []), *states.get("reserved", [])])),
        tuple(sorted(states.get("pending", []))),
        max(admitted, reserving) + pending,
        cq is not None,
    )
