"""The `multiKueue:` section of a cluster overlay: the cluster is a MultiKueue manager for a set of worker
clusters (ordinary overlays). A leaf of the inputs stage: the record and its builder only; what a fleet
means for tenants and budgets is `gputenancy.inputs.fleet`."""

from __future__ import annotations

import dataclasses
from typing import Any

from gputenancy.common.findings import Origin
from gputenancy.inputs.document import Document

CONTROLLER = "kueue.x-k8s.io/multikueue"
CHECK_NAME = "multikueue"
DISPATCHERS = {
    "AllAtOnce": "kueue.x-k8s.io/multikueue-dispatcher-all-at-once",
    "Incremental": "kueue.x-k8s.io/multikueue-dispatcher-incremental",
}
QUOTA_GATE = "MultiKueueManagerQuotaAutomation"


@dataclasses.dataclass(frozen=True)
class MultiKueue:
    """A manager's fleet: its workers in preference order and the manager's `multiKueue` settings."""

    # the MultiKueueConfig, named like the manager (a DNS label, as AdmissionCheck parameters need)
    config_name: str
    workers: tuple[tuple[str, Origin], ...]
    origin_label: str
    quota_management: str  # Manual | Automated
    dispatcher: str  # AllAtOnce | Incremental
    step_size: int | None
    worker_lost_timeout: str
    gc_interval: str
    origin: Origin  # of the `multiKueue` key
    document: Document = dataclasses.field(repr=False, compare=False)

    @property
    def worker_names(self) -> tuple[str, ...]:
        return tuple(w for w, _ in self.workers)

    def at(self, *path: str | int) -> Origin:
        return self.document.origin("multiKueue", *path)


def secret_name(worker: str) -> str:
    """The kubeconfig Secret a worker's MultiKueueCluster reads (in Kueue's namespace, outside Git)."""
    return f"{worker}-kubeconfig"


def build(doc: Document, data: Any) -> MultiKueue | None:
    """The record of a schema-valid `multiKueue` section (None without one)."""
    if not isinstance(data, dict):
        return None
    workers = tuple((str(w), doc.origin("multiKueue", "workers", i)) for i, w in enumerate(data["workers"]))
    return MultiKueue(
        config_name=str(doc.data["name"]),
        workers=workers,
        origin_label=str(data.get("origin", doc.data["name"])),
        quota_management=str(data.get("quotaManagement", "Manual")),
        dispatcher=str(data.get("dispatcher", "AllAtOnce")),
        step_size=int(data["stepSize"]) if "stepSize" in data else None,
        worker_lost_timeout=str(data.get("workerLostTimeout", "15m")),
        gc_interval=str(data.get("gcInterval", "1m")),
        origin=doc.key_origin("multiKueue"),
        document=doc,
    )
