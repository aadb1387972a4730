"""Rules on queue policy (inputs.queuepolicy) at the line that states it: what Kueue's ClusterQueue CRD
and webhook refuse of preemption, flavorFungibility, stopPolicy and admissionChecks, and the
AdmissionChecks the platform defines."""

from __future__ import annotations

from collections.abc import Iterator

from gputenancy.common.findings import Finding
from gputenancy.common.hints import did_you_mean
from gputenancy.inputs import multikueue, queuepolicy
from gputenancy.inputs.spec import Model
from gputenancy.policy.catalog import Catalog, err
from gputenancy.versions import kueue as kueue_versions


def queue_policy(model: Model, catalog: Catalog) -> Iterator[Finding]:
    """A tenant's queue policy (its own, else base/platform.yaml queueDefaults) is one Kueue accepts:
    `borrowWithinCohort.policy` other than Never needs `reclaimWithinCohort` other than Never (a CRD CEL
    rule); `flavorFungibility.preference` needs both `whenCanBorrow` and `whenCanPreempt` TryNextFlavor
    (a CRD CEL rule; unset fields are the Kueue version's defaults); `stopPolicy` agrees with
    `state: draining` (HoldAndDrain); every `onFlavors` entry is a flavor of the tenant's budget on each
    cluster it is placed on (Kueue's webhook refuses others).

    Passes: preemption: {reclaimWithinCohort: Any, borrowWithinCohort: {policy: LowerPriority,
    maxPriorityThreshold: 100}}.
    Fails: preemption: {borrowWithinCohort: {policy: LowerPriority}} (reclaimWithinCohort Never);
    flavorFungibility: {preference: BorrowingOverPreemption}; admissionChecks: [{name: prov, onFlavors: [t4]}]
    with no t4 budget.
    """
    defaults = model.platform.queue_defaults
    for t in model.tenants:
        policy = queuepolicy.effective(t.policy, defaults)
        p = policy.preemption
        if p is not None and p.reclaim_within_cohort == "Never" and p.borrow_policy != "Never":
            yield err(
                p.origin,
                "queue-policy",
                f"tenant {t.name!r}: borrowWithinCohort.policy {p.borrow_policy} needs reclaimWithinCohort other "
                "than Never (Kueue: reclaimWithinCohort=Never and borrowWithinCohort.Policy!=Never)",
            )
        ff = policy.flavor_fungibility
        if ff is not None and "preference" in ff and policy.fungibility_origin is not None:
            for name in sorted({c for c in model.clusters if t.placed_on(c)}):
                version = model.clusters[name].kueue_version
                merged = {
                    **kueue_versions.for_version(version).object_defaults["ClusterQueue"][
                        "flavorFungibility"
                    ],
                    **ff,
                }
                if (
                    merged.get("whenCanBorrow") != "TryNextFlavor"
                    or merged.get("whenCanPreempt") != "TryNextFlavor"
                ):
                    yield err(
                        policy.fungibility_origin,
                        "queue-policy",
                        f"tenant {t.name!r}: flavorFungibility.preference needs whenCanBorrow and whenCanPreempt "
                        f"both TryNextFlavor (on cluster {name!r}, Kueue {version}: whenCanBorrow "
                        f"{merged.get('whenCanBorrow')}, whenCanPreempt {merged.get('whenCanPreempt')})",
                    )
                    break
        if t.state == "draining" and policy.stop_policy not in (None, "HoldAndDrain") and policy.stop_origin:
            yield err(
                policy.stop_origin,
                "queue-policy",
                f"tenant {t.name!r} is draining (stopPolicy HoldAndDrain) but states stopPolicy "
                f"{policy.stop_policy}: drop one of them",
            )
        for use in policy.admission_checks or ():
            if use.on_flavors is None:
                continue
            for name in sorted(c for c in model.clusters if t.placed_on(c)):
                flavors = {fb.flavor for fb in t.budget_for(name) or ()}
                missing = [f for f in use.on_flavors if f not in flavors]
                if missing:
                    yield err(
                        use.origin,
                        "queue-policy",
                        f"tenant {t.name!r}: admission check {use.name!r} onFlavors {', '.join(missing)}: not a "
                        f"flavor of its budget on cluster {name!r} (Kueue refuses the ClusterQueue)",
                    )
                    break


def admission_check(model: Model, catalog: Catalog) -> Iterator[Finding]:
    """An admission check a queue uses is defined in base/platform.yaml `admissionChecks`, and each one
    defined names its controller (`controllerName`, or `provisioningRequestConfig` for Kueue's
    ProvisioningRequest controller) and is not called like the MultiKueue check the pipeline renders.

    Passes: admissionChecks: [{name: gpu-provisioning, provisioningRequestConfig:
    {provisioningClassName: check-capacity.autoscaling.x-k8s.io, managedResources: [nvidia.com/gpu]}}].
    Fails: a tenant's admissionChecks: [{name: gpu-provisoning}]; a definition with neither
    controllerName nor provisioningRequestConfig.
    """
    defined = model.platform.admission_checks
    for check in defined.values():
        if not check.controller:
            yield err(
                check.origin,
                "admission-check",
                f"admission check {check.name!r} names no controller: set controllerName, or "
                "provisioningRequestConfig for Kueue's ProvisioningRequest controller",
            )
        if check.name == multikueue.CHECK_NAME:
            yield err(
                check.origin,
                "admission-check",
                f"admission check {check.name!r} is the name of the MultiKueue check the pipeline renders on "
                "a manager: choose another",
            )
    uses = [(u, "tenant file") for t in model.tenants for u in t.policy.admission_checks or ()]
    uses += [(u, "queueDefaults") for u in model.platform.queue_defaults.admission_checks or ()]
    for use, where in uses:
        if use.name not in defined:
            known = ", ".join(sorted(defined)) or "none"
            yield err(
                use.origin,
                "admission-check",
                f"admission check {use.name!r} ({where}) is not defined in base/platform.yaml admissionChecks "
                f"(defined: {known})" + did_you_mean(use.name, defined),
            )
