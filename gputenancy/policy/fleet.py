"""Rules of a MultiKueue fleet on the inputs: a manager's workers are ordinary overlays, managers sharing
a worker have distinct origins, the versions of a manager and its workers go together, version-gated
settings exist in the manager's Kueue, quota automation is possible, and every claim template a manager
queue offers exists on every worker it can dispatch to.

The model seen here is the derived one (`gputenancy.inputs.fleet`): tenants on a manager are placed on
its workers and hold the summed budget there. The same links are checked again on the built objects of
all clusters together (`gputenancy.check.chain.fleet`).
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from gputenancy.common.findings import Finding, Severity
from gputenancy.inputs import fleet
from gputenancy.inputs.multikueue import QUOTA_GATE
from gputenancy.inputs.spec import Cluster, Model
from gputenancy.policy.catalog import Catalog, claims_on, err
from gputenancy.versions import kueue as kueue_versions
from gputenancy.versions.multikueue import support

_LABEL_VALUE = re.compile(r"^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?$")
_ZERO_DURATION = re.compile(r"^(0+(\.0+)?(ns|us|ms|s|m|h))+$")
KUBERNETES_SKEW = 1  # minor versions between a manager and a worker


def fleet_worker(model: Model, catalog: Catalog) -> Iterator[Finding]:
    """Each worker of a MultiKueue manager (`multiKueue.workers`) is an ordinary overlay: it exists, it is
    not the manager itself nor another manager, and it is listed once.

    Passes: `multiKueue: {workers: [gpu-west, gpu-east]}` with overlays/gpu-west and overlays/gpu-east.
    Fails: `workers: [gpu-west, gpu-wets]` (no overlay gpu-wets); `workers: [gpu-fleet]` on gpu-fleet itself.
    """
    for manager in fleet.managers(model):
        assert manager.multikueue is not None
        seen: set[str] = set()
        for name, origin in manager.multikueue.workers:
            other = model.clusters.get(name)
            if name in seen:
                problem = "is listed twice"
            elif name == manager.name:
                problem = "is the manager itself (a manager cannot be its own worker)"
            elif other is None:
                problem = f"has no overlay (known: {', '.join(sorted(model.clusters))})"
            elif other.multikueue is not None:
                problem = "is itself a MultiKueue manager (workers are ordinary clusters)"
            else:
                problem = ""
            seen.add(name)
            if problem:
                yield err(origin, "fleet-worker", f"worker {name!r} of manager {manager.name!r} {problem}")


def fleet_capacity(model: Model, catalog: Catalog) -> Iterator[Finding]:
    """A MultiKueue manager declares no capacity: it runs no jobs of the fleet, and its capacity is the sum
    of its workers' (what `budgets` and the capacity rule use).

    Passes: a manager's cluster.yaml with `multiKueue` and no `capacity`.
    Fails: a manager's cluster.yaml with both `multiKueue` and `capacity`.
    """
    for manager in fleet.managers(model):
        if "capacity" in manager.document.data:
            yield err(
                manager.document.key_origin("capacity"),
                "fleet-capacity",
                f"manager {manager.name!r} declares capacity, but a manager's capacity is the sum of its "
                "workers' (multiKueue.workers); remove it and declare capacity on the workers",
            )


def fleet_origin(model: Model, catalog: Catalog) -> Iterator[Finding]:
    """`multiKueue.origin` is a label value (Kueue labels each worker copy with it), and managers that
    share a worker use distinct origins: each manager's garbage collector deletes the copies labelled with
    its origin whose Workload it does not have, so a shared origin deletes the other manager's jobs.

    Passes: managers fleet-a and fleet-b share worker gpu-west with origins fleet-a and fleet-b.
    Fails: managers fleet-a and fleet-b both list gpu-west with `origin: fleet`.
    """
    for manager in fleet.managers(model):
        mk = manager.multikueue
        assert mk is not None
        if len(mk.origin_label) > 63 or not _LABEL_VALUE.match(mk.origin_label) or not mk.origin_label:
            yield err(
                mk.at("origin"),
                "fleet-origin",
                f"origin {mk.origin_label!r} of manager {manager.name!r} is not a label value (at most 63 "
                "letters, digits, '-', '_' or '.', starting and ending with a letter or digit)",
            )
        for worker in mk.worker_names:
            for other in fleet.fleets_of(model, worker):
                shared = other.multikueue is not None and other.multikueue.origin_label == mk.origin_label
                if other.name < manager.name and shared:
                    yield err(
                        mk.at("origin"),
                        "fleet-origin",
                        f"managers {other.name!r} and {manager.name!r} both dispatch to {worker!r} with "
                        f"origin {mk.origin_label!r}: each would garbage-collect the other's jobs there; "
                        "set distinct multiKueue.origin values",
                    )


def fleet_versions(model: Model, catalog: Catalog) -> Iterator[Finding]:
    """A manager and its workers run the same Kueue minor (the manager copies its Workloads to the workers
    and reads their status), and Kubernetes minors at most one apart.

    Passes: manager and workers on Kueue v0.19.2, Kubernetes 1.35 and 1.36.
    Fails: a v0.19.2 manager with a v0.18.1 worker; Kubernetes 1.34 beside 1.36.
    """
    for manager in fleet.managers(model):
        for worker in fleet.workers_of(model, manager):
            origin = dict(manager.multikueue.workers)[worker.name] if manager.multikueue else manager.origin
            if _minor(manager.kueue_version) != _minor(worker.kueue_version):
                yield err(
                    origin,
                    "fleet-versions",
                    f"worker {worker.name!r} runs Kueue {worker.kueue_version} ({worker.path}), manager "
                    f"{manager.name!r} runs {manager.kueue_version}: run the same Kueue minor on a manager "
                    "and its workers",
                )
            skew = _k8s_skew(manager, worker)
            if skew is not None and skew > KUBERNETES_SKEW:
                yield err(
                    origin,
                    "fleet-versions",
                    f"worker {worker.name!r} runs Kubernetes {worker.kubernetes_version}, manager "
                    f"{manager.name!r} {manager.kubernetes_version}: keep them at most {KUBERNETES_SKEW} "
                    "minor version apart",
                )


def fleet_version_fields(model: Model, catalog: Catalog) -> Iterator[Finding]:
    """The manager's MultiKueue settings exist in its Kueue version and keep MultiKueue working:
    `stepSize` only with `dispatcher: Incremental` and only from Kueue v0.19
    (`incrementalDispatcherConfig` is unknown to v0.18.1 and stops its manager), `gcInterval` not 0
    (that disables the removal of orphaned worker copies), and the `MultiKueue` gate not turned off.

    Passes: `dispatcher: Incremental, stepSize: 2` on Kueue v0.19.2.
    Fails: `stepSize: 2` on Kueue v0.18.1; `gcInterval: 0s`; `featureGates: {MultiKueue: false}`.
    """
    for manager in fleet.managers(model):
        mk = manager.multikueue
        assert mk is not None
        if mk.step_size is not None and not support(manager.kueue_version).incremental_step_size:
            yield err(
                mk.at("stepSize"),
                "fleet-version-fields",
                f"stepSize needs Kueue v0.19 or later (multiKueue.incrementalDispatcherConfig); "
                f"{manager.name!r} runs {manager.kueue_version}: remove it",
            )
        elif mk.step_size is not None and mk.dispatcher != "Incremental":
            yield err(
                mk.at("stepSize"),
                "fleet-version-fields",
                "stepSize applies to the incremental dispatcher only: set dispatcher: Incremental or remove it",
            )
        if _ZERO_DURATION.match(mk.gc_interval):
            yield err(
                mk.at("gcInterval"),
                "fleet-version-fields",
                "gcInterval 0 turns off the removal of orphaned worker copies; leave it unset (1m) or set a duration",
            )
        if manager.feature_gates.get("MultiKueue") is False:
            yield err(
                manager.document.origin("kueue", "featureGates", "MultiKueue"),
                "fleet-version-fields",
                f"{manager.name!r} is a MultiKueue manager but turns the MultiKueue feature gate off",
            )


def fleet_quota_automation(model: Model, catalog: Catalog) -> Iterator[Finding]:
    """`quotaManagement: Automated` needs the manager's gate `MultiKueueManagerQuotaAutomation` (alpha, off
    by default) and, for every tenant on the fleet, a manager ClusterQueue with exactly one flavor (Kueue
    rewrites the quotas of the first flavor only and reports UnsupportedConfiguration otherwise).

    Passes: `quotaManagement: Automated` with `featureGates: {MultiKueueManagerQuotaAutomation: true}`,
    every fleet tenant budgeting one flavor on the workers.
    Fails: `quotaManagement: Automated` without the gate; a tenant with h100 on one worker and h200 on another.
    """
    for manager in fleet.managers(model):
        mk = manager.multikueue
        assert mk is not None
        if mk.quota_management != "Automated":
            continue
        if manager.feature_gates.get(QUOTA_GATE) is not True:
            yield err(
                mk.at("quotaManagement"),
                "fleet-quota-automation",
                f"quotaManagement: Automated needs kueue.featureGates.{QUOTA_GATE}: true on {manager.name!r} "
                "(alpha, off by default); without it the manager quota stays as rendered",
            )
        for t in model.tenants_on(manager.name):
            flavors = [fb.flavor for fb in t.budget_for(manager.name) or ()]
            if len(flavors) != 1:
                yield err(
                    t.origin,
                    "fleet-quota-automation",
                    f"tenant {t.name!r} on fleet {manager.name!r} has {len(flavors)} flavors there "
                    f"({', '.join(flavors) or 'none'}); quota automation supports one flavor per ClusterQueue: "
                    "budget one flavor on every worker or use quotaManagement: Manual",
                )


def fleet_claim_template(model: Model, catalog: Catalog) -> Iterator[Finding]:
    """A claim template a tenant's queue offers on a MultiKueue manager exists on every worker of that
    manager: Kueue copies jobs, not their claim templates, and a worker without it never admits the copy
    while the manager holds the quota. A worker may be left out on purpose with a reason
    (`excludedWorkers: {gpu-east: <why>}`: its copies wait there, another worker must admit them); an
    exclusion names a worker of a manager the template is offered on, and one the template is not on.

    At least one worker is not excluded: a template no worker offers would hold the manager's quota.

    Passes: `clusters: [gpu-fleet, gpu-west, gpu-east]` (or no `clusters`) on a fleet tenant's template;
    `clusters: [gpu-fleet, gpu-west]` with `excludedWorkers: {gpu-east: no H100 there}`.
    Fails: `clusters: [gpu-fleet, gpu-west]` while gpu-fleet also dispatches to gpu-east; every worker
    excluded.
    """
    for t in model.tenants:
        for ct in t.claim_templates:
            excluded = {w: o for w, _, o in ct.excluded_workers}
            workers: set[str] = set()
            for manager in fleet.managers(model):
                if not t.placed_on(manager.name) or ct not in claims_on(t, manager.name):
                    continue
                names = [w.name for w in fleet.workers_of(model, manager)]
                workers.update(names)
                missing = [w for w in names if ct not in claims_on(t, w) and w not in excluded]
                if names and all(w in excluded for w in names):
                    yield err(
                        ct.origin,
                        "fleet-claim-template",
                        f"claim template {ct.name!r} of {t.name!r} is offered on manager {manager.name!r} but "
                        f"excluded on every one of its workers ({', '.join(names)}): a job using it would hold "
                        "the manager's quota and never run; offer it on a worker or remove the manager from "
                        "its clusters",
                    )
                    continue
                if missing:
                    yield err(
                        ct.origin,
                        "fleet-claim-template",
                        f"claim template {ct.name!r} of {t.name!r} is offered on manager {manager.name!r} but "
                        f"not on its worker(s) {', '.join(missing)}, where a dispatched job would never be "
                        f"admitted: add {', '.join(missing)} to its clusters, remove {manager.name!r}, or "
                        "state why under excludedWorkers",
                    )
            for w, origin in excluded.items():
                if w not in workers:
                    problem = "is not a worker of a MultiKueue manager this template is offered on"
                elif ct in claims_on(t, w):
                    problem = "is excluded but the template is offered there (its clusters)"
                else:
                    continue
                yield err(origin, "fleet-claim-template", f"excludedWorkers: {w!r} {problem}")


def fleet_budget(model: Model, catalog: Catalog) -> Iterator[Finding]:
    """A tenant on a fleet budgets no classic HAMi vGPUs on its workers: a manager has no HAMi nodes to
    translate vGPU requests, so they are never dispatched.

    Passes: a fleet tenant budgeting DRA devices on the workers.
    Fails: a fleet tenant with `hami:` in a worker's budget.
    """
    for manager in fleet.managers(model):
        for t in model.tenants_on(manager.name):
            for w in fleet.workers_of(model, manager):
                for fb in t.budget_for(w.name) or ():
                    if fb.hami is not None:
                        yield err(
                            fb.hami.origin,
                            "fleet-budget",
                            f"tenant {t.name!r} budgets HAMi vGPUs on {w.name!r}, a worker of MultiKueue "
                            f"manager {manager.name!r}; HAMi vGPUs are not dispatched across a fleet",
                        )


def _minor(version: str) -> str:
    try:
        return kueue_versions.minor_of(version)
    except kueue_versions.UnsupportedVersion:
        return version


def _k8s_skew(a: Cluster, b: Cluster) -> int | None:
    pa, pb = (
        kueue_versions.parse_kubernetes(a.kubernetes_version),
        kueue_versions.parse_kubernetes(b.kubernetes_version),
    )
    if pa is None or pb is None:
        return None
    return abs(pa[1] - pb[1]) if pa[0] == pb[0] else 99


def fleet_quota_unclaimed(model: Model, catalog: Catalog) -> Iterator[Finding]:
    """(warning) A tenant with device quota on a MultiKueue manager offers a claim template there that
    uses it: a job asks for DRA devices through a claim template in its namespace, so without one on the
    manager no job submitted to the fleet can use the tenant's fleet quota (it is held for nothing).

    Passes: a fleet tenant budgeting gpu.nvidia.com with a template of that class on the manager.
    Fails: a fleet tenant whose templates all say `clusters: [prod]`.
    """
    for manager in fleet.managers(model):
        for t in model.tenants_on(manager.name):
            budgeted = {
                entry.resource: name
                for fb in t.budget_for(manager.name) or ()
                for name, _ in fb.devices
                if (entry := catalog.classes.get(name)) is not None
            }
            claimed = {
                entry.resource
                for ct in claims_on(t, manager.name)
                if (entry := catalog.classes.get(ct.device_class)) is not None
            }
            unused = sorted(r for r in budgeted if r not in claimed)
            if not unused:
                continue
            where = t.origin
            if t.clusters is not None and manager.name in t.clusters:
                where = dict(zip(t.clusters, t.cluster_origins, strict=False)).get(manager.name, t.origin)
            yield where.finding(
                "fleet-quota-unclaimed",
                f"tenant {t.name!r} has {', '.join(unused)} quota on MultiKueue manager {manager.name!r} but no "
                f"claim template offered there uses it, so no job submitted to the fleet can ask for those "
                f"devices: offer a template of {', '.join(sorted({budgeted[r] for r in unused}))} on "
                f"{manager.name!r} and its workers (claimTemplates[].clusters), or budget no such devices there",
                Severity.WARNING,
            )
