"""Risks of a change to a MultiKueue fleet, found in the plan's changes on a manager: a worker joining
(a MultiKueueCluster added) or leaving (one removed). Takes the plan's ObjectChange records and returns
(risk, subject, message) triples, like `gputenancy.deliver.risks`.

- `fleet-worker-added`: the worker gets jobs only once its kubeconfig Secret exists on the manager
  (until then its MultiKueueCluster is `BadKubeConfig` and the check `SomeActiveClusters`); its queues,
  claim templates and mappings must be synced before, or dispatched copies wait without a word.
- `fleet-worker-removed`: the manager stops watching the worker: copies and jobs there are no longer
  garbage-collected or mirrored, and workloads admitted there are requeued by the manager after
  `workerLostTimeout` (by inference from how Kueue treats a lost worker) while their pods may still run.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from gputenancy.inputs.multikueue import secret_name


def more(cluster: str, objects: Sequence[Any]) -> list[tuple[str, str, str]]:
    out: list[tuple[str, str, str]] = []
    for o in objects:
        if o.key.kind != "MultiKueueCluster" or o.action not in ("added", "removed"):
            continue
        worker = o.key.name
        subject = o.title.removeprefix(f"{cluster} ")
        if o.action == "added":
            out.append(
                (
                    "fleet-worker-added",
                    subject,
                    f"worker {worker} joins the fleet of {cluster}: create the Secret {secret_name(worker)} "
                    f"(key kubeconfig) in Kueue's namespace on {cluster} from outside Git, and let {worker}'s "
                    "queues, claim templates and Kueue Configuration sync first; the manager's quota grows "
                    "by the worker's",
                )
            )
        else:
            out.append(
                (
                    "fleet-worker-removed",
                    subject,
                    f"worker {worker} leaves the fleet of {cluster}: drain it first; workloads admitted there "
                    f"lose their manager (requeued after workerLostTimeout while their pods may still run), "
                    f"their copies are no longer garbage-collected, and the manager's quota shrinks by the "
                    f"worker's; delete the Secret {secret_name(worker)} afterwards",
                )
            )
    return out
