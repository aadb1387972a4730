"""Checks across the clusters of a MultiKueue fleet, on the BUILT objects of the manager and of each
worker together (what kustomize hands to Argo CD, overlay patches included). A missing link is not
reported by the clusters themselves: a worker without the LocalQueue leaves the copy without any
condition, a worker without the claim template never admits it while the manager holds the quota.

Each rule is documented by its docstring (`python pipeline.py rules ID`); findings sit on the input line
behind the manager's object.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from gputenancy.check.chain.builtview import (
    DRA,
    KUEUE,
    Built,
    View,
    build_view,
    kueue_configuration,
    mappings,
    spec_of,
)
from gputenancy.common.findings import Finding
from gputenancy.common.objects import RenderedObject
from gputenancy.inputs import fleet
from gputenancy.inputs import frameworks as installed_frameworks
from gputenancy.inputs.multikueue import CONTROLLER
from gputenancy.inputs.spec import Model
from gputenancy.policy.catalog import Catalog
from gputenancy.render import kueueconfig

PROVISIONING = "kueue.x-k8s.io/provisioning-request"
FleetRule = Callable[[View, Sequence[View]], Iterator[Finding]]
RULES: dict[str, FleetRule] = {}


def _rule(rule_id: str) -> Callable[[FleetRule], FleetRule]:
    def register(fn: FleetRule) -> FleetRule:
        RULES[rule_id] = fn
        return fn

    return register


def check(
    model: Model,
    catalog: Catalog,
    objects: Mapping[str, Sequence[RenderedObject]],
    *,
    kustomized: bool,
) -> list[Finding]:
    """Every fleet rule over each manager whose cluster and workers were all built in this run."""
    found: list[Finding] = []
    views: dict[str, View] = {}

    def view(name: str) -> View:
        if name not in views:
            views[name] = build_view(
                model, model.clusters[name], catalog, objects[name], kustomized=kustomized
            )
        return views[name]

    for manager in fleet.managers(model):
        workers = [w.name for w in fleet.workers_of(model, manager)]
        if manager.name not in objects or any(w not in objects for w in workers):
            continue
        for fn in RULES.values():
            found.extend(fn(view(manager.name), [view(w) for w in workers]))
    return sorted(set(found))


def documentation() -> str:
    return "\n".join(f"### `{i}`\n\n{inspect.cleandoc(fn.__doc__ or '')}\n" for i, fn in RULES.items())


@_rule("fleet-queue-twin")
def queue_twin(manager: View, workers: Sequence[View]) -> Iterator[Finding]:
    """Every LocalQueue on a MultiKueue manager has its twin on every worker: the same namespace and the
    same name (Kueue creates the copy of a job in the namespace and queue it was submitted to; without
    the queue the copy gets no condition at all and the job waits forever).

    Passes: LocalQueue nlp-train/nlp on the manager and on each worker.
    Fails: a worker overlay whose patch renames the LocalQueue, or moves it to another namespace.
    """
    for lq, w, twin in _twins(manager, workers, KUEUE, "LocalQueue"):
        if twin is None:
            yield lq.origin.finding(
                "fleet-queue-twin",
                f"LocalQueue {lq.namespace}/{lq.name} on manager {manager.cluster.name!r} has no twin on "
                f"worker {w.cluster.name!r} (same namespace and name): jobs dispatched there are never admitted",
            )


@_rule("fleet-claim-twin")
def claim_twin(manager: View, workers: Sequence[View]) -> Iterator[Finding]:
    """Every ResourceClaimTemplate on a MultiKueue manager exists on every worker with the same namespace,
    name, device class and count (Kueue does not copy claim templates, and each cluster charges its own
    template: different counts charge the manager and the worker differently), but on the workers the
    tenant excludes for it with a reason (`excludedWorkers`).

    Passes: template nlp-train/gpu-x4 (gpu.nvidia.com, 4) on the manager and each worker.
    Fails: the worker's copy missing, or asking for 2 devices while the manager's asks for 4.
    """
    for rct, w, twin in _twins(manager, workers, DRA, "ResourceClaimTemplate"):
        if twin is None and _excluded(rct, w.cluster.name):
            continue
        if twin is None:
            problem = "is missing"
        elif _request(twin) != _request(rct):
            problem = f"asks for {_describe(_request(twin))} while the manager's asks for {_describe(_request(rct))}"
        else:
            continue
        yield rct.origin.finding(
            "fleet-claim-twin",
            f"ResourceClaimTemplate {rct.namespace}/{rct.name} of manager {manager.cluster.name!r} {problem} "
            f"on worker {w.cluster.name!r}: make the templates identical on the whole fleet",
        )


@_rule("fleet-mappings")
def mappings_both_sides(manager: View, workers: Sequence[View]) -> Iterator[Finding]:
    """The `deviceClassMappings` a MultiKueue manager's claim templates need are on every worker they
    are dispatched to, with the same quota names (unmapped on the manager: never dispatched; unmapped on
    a worker: the copy is Inadmissible there while the manager holds the quota). A worker the tenant
    excludes for a template (`excludedWorkers`: a fleet of mixed hardware, MIG on one worker only) needs
    no mapping for it. The finding sits in the worker's file, where the fix is.

    Passes: nvidia.com/gpu <- gpu.nvidia.com on the manager and each worker; a MIG mapping on the manager
    and one worker, its templates excluded on the other.
    Fails: a worker whose kueue.config replaces resources.deviceClassMappings without gpu.nvidia.com.
    """
    wanted = mappings(kueue_configuration(manager)[0])
    templates = manager.of(DRA, "ResourceClaimTemplate")
    for w in workers:
        needed = {_request(rct)[0] for rct in templates if not _excluded(rct, w.cluster.name)}
        config, holder = kueue_configuration(w)
        theirs = mappings(config)
        missing = sorted(
            f"{cls} -> {res}" for cls, res in wanted.items() if cls in needed and theirs.get(cls) != res
        )
        if not missing:
            continue
        overrides = (w.cluster.config_overrides.get("resources") or {}).get("deviceClassMappings")
        if overrides is not None:
            origin = w.cluster.document.origin("kueue", "config", "resources", "deviceClassMappings")
            fix = "add them to the deviceClassMappings its kueue.config writes, or remove that list"
        else:
            origin = holder.origin if holder is not None else w.cluster.document.key_origin("kueue")
            fix = "keep its Configuration's deviceClassMappings as rendered"
        yield origin.finding(
            "fleet-mappings",
            f"worker {w.cluster.name!r} of manager {manager.cluster.name!r} lacks the deviceClassMappings "
            f"{', '.join(missing)}, which claim templates dispatched to it need (a copy would be Inadmissible "
            f"there while the manager holds the quota): {fix}; or, if {w.cluster.name!r} has no such devices, "
            "exclude it for those templates (excludedWorkers)",
        )


@_rule("fleet-admission-check")
def one_check(manager: View, workers: Sequence[View]) -> Iterator[Finding]:
    """Every ClusterQueue on a MultiKueue manager has exactly one admission check, the MultiKueue one, on
    all its flavors, and no ProvisioningRequest check beside it; worker ClusterQueues have no MultiKueue
    check. Kueue accepts the others but leaves the queue inactive (MultipleMultiKueueAdmissionChecks,
    MultiKueueAdmissionCheckAppliedPerFlavor, MultiKueueWithProvisioningRequest), and a Job created while
    its queue lacks the check is never managed by MultiKueue.

    Passes: `admissionChecksStrategy: {admissionChecks: [{name: multikueue}]}` on the manager's queues.
    Fails: an overlay patch adding a second check, or `onFlavors: [h100]` on the MultiKueue check.
    """
    checks = {b.name: b for b in manager.of(KUEUE, "AdmissionCheck")}
    controllers = {n: spec_of(b).get("controllerName") for n, b in checks.items()}
    for cq in manager.of(KUEUE, "ClusterQueue"):
        entries = _checks_of(cq)
        kinds = [controllers.get(str(e.get("name"))) for e in entries]
        problem = ""
        if kinds.count(CONTROLLER) != 1:
            problem = f"has {kinds.count(CONTROLLER)} MultiKueue admission checks (exactly one is needed)"
        elif PROVISIONING in kinds:
            problem = "has a ProvisioningRequest admission check beside the MultiKueue one"
        elif any(e.get("onFlavors") for e in entries if controllers.get(str(e.get("name"))) == CONTROLLER):
            problem = "limits its MultiKueue admission check to some flavors (it must apply to all)"
        if problem:
            yield cq.at(("spec", "admissionChecksStrategy")).finding(
                "fleet-admission-check",
                f"ClusterQueue {cq.name!r} on manager {manager.cluster.name!r} {problem}; Kueue leaves it inactive",
            )
    for w in workers:
        for cq in w.of(KUEUE, "ClusterQueue"):
            if any(str(e.get("name")) in checks for e in _checks_of(cq)):
                yield cq.at(("spec", "admissionChecksStrategy")).finding(
                    "fleet-admission-check",
                    f"ClusterQueue {cq.name!r} on worker {w.cluster.name!r} names the manager's admission check; "
                    "worker queues admit dispatched jobs without one (the check would leave the queue inactive)",
                )


@_rule("fleet-frameworks")
def frameworks_on_workers(manager: View, workers: Sequence[View]) -> Iterator[Finding]:
    """Every job framework a MultiKueue manager's Configuration enables (`integrations.frameworks`) is
    installed on every worker (`frameworks:` of the worker's overlay, else of base/platform.yaml): the
    manager watches the kind of each enabled framework on each worker, and a worker without one CRD
    fails its connection for all kinds (MultiKueueCluster `ClientConnectionFailed`, `no matches for kind
    "RayCluster" in version "ray.io/v1"`); with no worker connected the AdmissionCheck is
    `NoUsableClusters` and every manager queue inactive. Kinds built into Kubernetes (`batch/job`,
    `pod`, `deployment`, `statefulset`) are always there. The finding sits at the line that enables the
    framework for the manager.

    Passes: the manager enables `batch/job` and `jobset.x-k8s.io/jobset`, each worker declares
    `frameworks: [batch/job, jobset.x-k8s.io/jobset]`.
    Fails: base/kueue-config.yaml enables `ray.io/raycluster` for the manager and a worker's
    `frameworks` lacks it, or a worker declares no frameworks at all.
    """
    config, holder = kueue_configuration(manager)
    enabled = ((config or {}).get("integrations") or {}).get("frameworks") or []
    rendered, _ = kueueconfig.build(manager.model, manager.cluster, manager.catalog)
    for name in dict.fromkeys(f for f in enabled if isinstance(f, str)):
        if not installed_frameworks.needs_crd(name):
            continue
        lacking: list[str] = []
        for w in workers:
            have = installed_frameworks.installed(w.model.platform, w.cluster)
            if have is None:
                lacking.append(f"{w.cluster.name} (declares no frameworks: add them to {w.cluster.path})")
            elif not have.has(name):
                lacking.append(f"{w.cluster.name} ({have.where})")
        if not lacking:
            continue
        where = kueueconfig.framework_origin(rendered, name)
        if where is None:
            where = holder.origin if holder is not None else manager.cluster.document.key_origin("kueue")
        yield where.finding(
            "fleet-frameworks",
            f"MultiKueue manager {manager.cluster.name!r} enables {name!r}, which is not installed on its "
            f"worker(s) {', '.join(lacking)}: the manager could not connect to them (ClientConnectionFailed, "
            "no matches for that kind) and its queues would admit nothing; install it on those workers and "
            "add it to their frameworks, or leave it out of the manager's Configuration "
            f"(kueue.config.integrations.frameworks in {manager.cluster.path}, or the manager's frameworks)",
        )


def _excluded(rct: Built, worker: str) -> bool:
    """The tenant states why this template is left out on `worker` (`excludedWorkers`)."""
    templates = rct.tenant.claim_templates if rct.tenant is not None else ()
    return any(
        worker in {w for w, _, _ in ct.excluded_workers} for ct in templates if ct.name == rct.original_name
    )


def _twins(
    manager: View, workers: Sequence[View], group: str, kind: str
) -> Iterator[tuple[Built, View, Built | None]]:
    """(manager object, worker, the worker's object of that kind with the same namespace and name, or
    None) for every object of that kind on the manager and every worker."""
    for b in manager.of(group, kind):
        for w in workers:
            twin = next(
                (t for t in w.of(group, kind) if (t.namespace, t.name) == (b.namespace, b.name)), None
            )
            yield b, w, twin


def _checks_of(cq: Built) -> list[Mapping[str, Any]]:
    strategy = spec_of(cq).get("admissionChecksStrategy") or {}
    entries = strategy.get("admissionChecks") if isinstance(strategy, dict) else None
    names = spec_of(cq).get("admissionChecks")  # v1beta1 spelling, if a patch wrote it
    out: list[Mapping[str, Any]] = [e for e in entries or [] if isinstance(e, dict)]
    out += [{"name": n} for n in names or [] if isinstance(n, str)]
    return out


def _request(b: Built) -> tuple[str, Any]:
    requests = (((spec_of(b).get("spec") or {}).get("devices") or {}).get("requests")) or []
    exactly = (requests[0].get("exactly") or {}) if requests and isinstance(requests[0], dict) else {}
    return str(exactly.get("deviceClassName")), exactly.get("count", 1)


def _describe(request: tuple[str, Any]) -> str:
    return f"{request[1]} x {request[0]}"
