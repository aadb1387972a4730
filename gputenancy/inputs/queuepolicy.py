"""Queue policy: what a tenant's ClusterQueue does beyond its quota, in Kueue's own field names, per
tenant (`tenants/<t>.yaml`) and as platform defaults (`queueDefaults` in base/platform.yaml):
`preemption` (a preset name or Kueue's `spec.preemption`), `flavorFungibility`, `queueingStrategy`,
`stopPolicy` (tenants only) and `admissionChecks` (Kueue's `admissionChecksStrategy.admissionChecks`);
and the AdmissionChecks the platform defines (`admissionChecks` in base/platform.yaml), a
ProvisioningRequest check with its ProvisioningRequestConfig included."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from gputenancy.common.findings import Origin
from gputenancy.inputs.document import Document

PRESETS: Mapping[str, Mapping[str, str]] = {
    "none": {"reclaimWithinCohort": "Never", "withinClusterQueue": "Never", "borrowWithinCohort": "Never"},
    "within-queue": {
        "reclaimWithinCohort": "Never",
        "withinClusterQueue": "LowerPriority",
        "borrowWithinCohort": "Never",
    },
    "reclaim": {
        "reclaimWithinCohort": "Any",
        "withinClusterQueue": "LowerPriority",
        "borrowWithinCohort": "Never",
    },
    "borrow": {
        "reclaimWithinCohort": "Any",
        "withinClusterQueue": "LowerPriority",
        "borrowWithinCohort": "LowerPriority",
    },
}
"""The four preemption presets: reclaimWithinCohort, withinClusterQueue and borrowWithinCohort's policy."""

PROVISIONING_CONTROLLER = "kueue.x-k8s.io/provisioning-request"
RETRY_DEFAULTS = {"backoffBaseSeconds": 60, "backoffLimitCount": 3, "backoffMaxSeconds": 1800}
"""ProvisioningRequestConfig spec.retryStrategy as the API server defaults it (the CRD of every
supported Kueue version), written out so Argo CD sees no drift."""


@dataclasses.dataclass(frozen=True)
class Preemption:
    """Kueue's ClusterQueue spec.preemption, every field resolved (a preset, or what the file writes over
    the API server's defaults)."""

    reclaim_within_cohort: str
    within_cluster_queue: str
    borrow_policy: str
    max_priority_threshold: int | None
    origin: Origin

    def body(self) -> dict[str, Any]:
        borrow: dict[str, Any] = {"policy": self.borrow_policy}
        if self.max_priority_threshold is not None:
            borrow["maxPriorityThreshold"] = self.max_priority_threshold
        return {
            "reclaimWithinCohort": self.reclaim_within_cohort,
            "withinClusterQueue": self.within_cluster_queue,
            "borrowWithinCohort": borrow,
        }


@dataclasses.dataclass(frozen=True)
class CheckUse:
    """One entry of admissionChecks: an AdmissionCheck by name, on some flavors (None: all)."""

    name: str
    on_flavors: tuple[str, ...] | None
    origin: Origin


@dataclasses.dataclass(frozen=True)
class QueuePolicy:
    """What a file states of its queues' policy; None where it states nothing (then the platform's
    queueDefaults, then Kueue's defaults, apply)."""

    preemption: Preemption | None = None
    flavor_fungibility: Mapping[str, str] | None = None
    fungibility_origin: Origin | None = None
    queueing_strategy: str | None = None
    stop_policy: str | None = None
    stop_origin: Origin | None = None
    admission_checks: tuple[CheckUse, ...] | None = None


@dataclasses.dataclass(frozen=True)
class AdmissionCheckDef:
    """An AdmissionCheck the platform defines (`admissionChecks[]`): its controller and parameters, and
    for a ProvisioningRequest check the ProvisioningRequestConfig rendered with it (same name)."""

    name: str
    controller: str
    parameters: Mapping[str, str] | None  # {apiGroup, kind, name}
    provisioning: Mapping[str, Any] | None  # ProvisioningRequestConfig spec, defaults filled
    origin: Origin


def build(doc: Document, at: tuple[str | int, ...], raw: Mapping[str, Any], *, tenant: bool) -> QueuePolicy:
    """The policy a tenant file (or the platform's queueDefaults at `at`) states."""
    preemption = None
    if "preemption" in raw:
        preemption = _preemption(doc, (*at, "preemption"), raw["preemption"])
    checks = None
    if "admissionChecks" in raw:
        checks = tuple(
            CheckUse(
                c["name"],
                tuple(c["onFlavors"]) if "onFlavors" in c else None,
                doc.origin(*at, "admissionChecks", i),
            )
            for i, c in enumerate(raw["admissionChecks"])
        )
    ff = raw.get("flavorFungibility")
    return QueuePolicy(
        preemption=preemption,
        flavor_fungibility=dict(ff) if ff is not None else None,
        fungibility_origin=doc.key_origin(*at, "flavorFungibility") if ff is not None else None,
        queueing_strategy=raw.get("queueingStrategy"),
        stop_policy=raw.get("stopPolicy") if tenant else None,
        stop_origin=doc.origin(*at, "stopPolicy") if tenant and "stopPolicy" in raw else None,
        admission_checks=checks,
    )


def _preemption(doc: Document, path: tuple[str | int, ...], raw: Any) -> Preemption:
    origin = doc.key_origin(*path)
    if isinstance(raw, str):
        preset = PRESETS[raw]
        return Preemption(
            preset["reclaimWithinCohort"],
            preset["withinClusterQueue"],
            preset["borrowWithinCohort"],
            None,
            origin,
        )
    borrow = raw.get("borrowWithinCohort") or {}
    threshold = borrow.get("maxPriorityThreshold")
    return Preemption(
        raw.get("reclaimWithinCohort", "Never"),
        raw.get("withinClusterQueue", "Never"),
        borrow.get("policy", "Never"),
        int(threshold) if threshold is not None else None,
        origin,
    )


def build_checks(doc: Document, raw: list[Mapping[str, Any]]) -> tuple[AdmissionCheckDef, ...]:
    out = []
    for i, c in enumerate(raw):
        prc = c.get("provisioningRequestConfig")
        provisioning = None
        parameters = c.get("parameters")
        controller = c.get("controllerName")
        if prc is not None:
            spec = {k: v for k, v in prc.items() if k != "name"}
            provisioning = {**spec, "retryStrategy": {**RETRY_DEFAULTS, **(prc.get("retryStrategy") or {})}}
            parameters = {
                "apiGroup": "kueue.x-k8s.io",
                "kind": "ProvisioningRequestConfig",
                "name": prc.get("name", c["name"]),
            }
            controller = controller or PROVISIONING_CONTROLLER
        out.append(
            AdmissionCheckDef(
                c["name"],
                controller or "",
                dict(parameters) if parameters else None,
                provisioning,
                doc.origin("admissionChecks", i),
            )
        )
    return tuple(out)


def effective(own: QueuePolicy, defaults: QueuePolicy) -> QueuePolicy:
    """A tenant's policy: what its file states, else the platform's queueDefaults (field by field)."""
    return QueuePolicy(
        preemption=own.preemption or defaults.preemption,
        flavor_fungibility=own.flavor_fungibility
        if own.flavor_fungibility is not None
        else defaults.flavor_fungibility,
        fungibility_origin=own.fungibility_origin or defaults.fungibility_origin,
        queueing_strategy=own.queueing_strategy or defaults.queueing_strategy,
        stop_policy=own.stop_policy,
        stop_origin=own.stop_origin,
        admission_checks=own.admission_checks
        if own.admission_checks is not None
        else defaults.admission_checks,
    )
