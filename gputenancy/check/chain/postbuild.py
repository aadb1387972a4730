"""Checks on the BUILT objects of a cluster: the last word on what will be applied.

The model rules (`gputenancy.policy.rules`) check the inputs before anything is rendered, with precise
messages; kustomize may still rename, move or patch the objects afterwards (the overlay's transformers,
the tenant Component's). These rules run on the view rebuilt from kustomize's output
(`gputenancy.check.chain.builtview`): the chain claim template -> DeviceClass -> deviceClassMappings ->
ClusterQueue coverage -> LocalQueue -> namespace, the references Kueue resolves by name, the Kueue
Configuration as it will be applied, the request shapes Kueue counts, canonical quantities, and whether
each claim template can ever be admitted (`gputenancy.check.chain.admissible`). Findings sit on the input line that caused the object and name the
kustomization that built it.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from gputenancy.check.chain import admissible, builtlimits, inventory
from gputenancy.check.chain.builtview import (
    ARGO,
    DRA,
    KUEUE,
    Built,
    View,
    build_view,
    covered,
    kueue_configuration,
    mappings,
    queue_of_namespace,
    spec_of,
)
from gputenancy.check.config import configcheck
from gputenancy.common.findings import Finding
from gputenancy.common.objects import FieldPath, RenderedObject
from gputenancy.inputs.quantity import QuantityError, parse
from gputenancy.inputs.spec import Cluster, Model
from gputenancy.policy.catalog import Catalog
from gputenancy.render import kueueconfig

BuiltRule = Callable[[View], Iterator[Finding]]
RULES: dict[str, BuiltRule] = {}
_NAME_KEYS = ("namePrefix", "nameSuffix", "namespace", "patches", "replacements", "transformers")
_FIELD_KEYS = ("patches", "patchesStrategicMerge", "patchesJson6902", "replacements", "transformers")
NAMESPACE_LABEL = "kubernetes.io/metadata.name"


def rule(rule_id: str) -> Callable[[BuiltRule], BuiltRule]:
    def register(fn: BuiltRule) -> BuiltRule:
        RULES[rule_id] = fn
        return fn

    return register


def check(
    model: Model,
    cluster: Cluster,
    catalog: Catalog,
    objects: Sequence[RenderedObject],
    *,
    kustomized: bool,
) -> list[Finding]:
    """Every built-object rule over one cluster's objects."""
    view = build_view(model, cluster, catalog, objects, kustomized=kustomized)
    return sorted(run(view))


def run(view: View, *, skip: Sequence[str] = ()) -> set[Finding]:
    """The findings of the rules (but `skip`) on a view."""
    found: set[Finding] = set()
    for rule_id, fn in RULES.items():
        if rule_id not in skip:
            found.update(fn(view))
    return found


def documentation() -> str:
    return "\n".join(
        f"### `{rule_id}`\n\n{inspect.cleandoc(fn.__doc__ or '')}\n" for rule_id, fn in RULES.items()
    )


def _was(b: Built) -> str:
    if b.original_namespace != b.namespace and b.original_name != b.name:
        return f" (rendered as {b.original_namespace}/{b.original_name})"
    if b.original_namespace != b.namespace:
        return f" (rendered in namespace {b.original_namespace!r})"
    if b.original_name != b.name:
        return f" (rendered as {b.original_name!r})"
    return ""


# ---------------------------------------------------------------------------------------- renames


@rule("built-renamed")
def renamed(view: View) -> Iterator[Finding]:
    """Names that teams' pods, Kueue or Argo CD use are not renamed or moved by kustomize: LocalQueues
    (pods name them in `kueue.x-k8s.io/queue-name`), ResourceClaimTemplates (pods name them in
    `resourceClaims`), the Kueue ConfigMap and Deployment (Kueue reads `kueue-manager-config` in its own
    namespace) and the Kueue install Applications (Argo CD reads Applications in its namespace). Renaming
    ClusterQueues, ResourceFlavors, Cohorts and DeviceClasses is allowed when every reference moves with
    them (the other `built-*` rules check that).

    Passes: a Component that adds labels.
    Fails: `namePrefix: team-` in overlays/prod/tenants/kustomization.yaml; `namespace: other` in the overlay.
    """
    contract = {
        (KUEUE, "LocalQueue"): "pods select it by name (label kueue.x-k8s.io/queue-name)",
        (DRA, "ResourceClaimTemplate"): "pods name it in spec.resourceClaims[].resourceClaimTemplateName",
        ("", "ConfigMap"): f"Kueue reads only {kueueconfig.CONFIGMAP_NAME} in its namespace",
        ("apps", "Deployment"): "the rollout checksum must land on Kueue's own Deployment",
        (ARGO, "Application"): "Argo CD reads Applications only in its own namespace",
    }
    for b in view.objects:
        reason = contract.get((b.key.group, b.key.kind))
        if reason is None or not b.moved:
            continue
        yield b.origin.finding(
            "built-renamed",
            f"{b.key.kind} {_qualified(b)} on cluster {view.cluster.name!r}{_was(b)} was renamed or "
            f"moved by kustomize{b.changed_by(*_NAME_KEYS)}: {reason}; leave its name and namespace alone",
        )


def _qualified(b: Built) -> str:
    return f"{b.namespace}/{b.name}" if b.namespace else b.name


# ---------------------------------------------------------------------------------------- queues


def _selector_admits(selector: Any, namespace: str, known: Mapping[str, str] | None = None) -> bool | None:
    """Whether a ClusterQueue namespaceSelector admits `namespace`; None when it depends on labels the
    pipeline cannot know (anything but kubernetes.io/metadata.name and the labels `known` to the inputs:
    the owning tenant's namespaceLabels)."""
    if selector is None:
        return False  # Kueue: a null namespaceSelector admits no namespace
    if not isinstance(selector, dict):
        return None
    labels = {**(known or {}), NAMESPACE_LABEL: namespace}
    unknown = False
    for key, value in (selector.get("matchLabels") or {}).items():
        if key not in labels:
            unknown = True
        elif value != labels[key]:
            return False
    for req in selector.get("matchExpressions") or []:
        if not isinstance(req, dict):
            return None
        key, op, values = req.get("key"), req.get("operator"), list(req.get("values") or [])
        if key not in labels:
            unknown = True
            continue
        present = key in labels
        if (
            (op == "In" and labels[key] not in values)
            or (op == "NotIn" and labels[key] in values)
            or (op == "DoesNotExist" and present)
        ):
            return False
    return None if unknown else True


@rule("built-queue-reference")
def queue_reference(view: View) -> Iterator[Finding]:
    """After kustomize, each LocalQueue points at a ClusterQueue that exists, that belongs to the
    namespace's tenant, and whose namespaceSelector admits the LocalQueue's namespace (a ClusterQueue
    without namespaceSelector admits nothing).

    Passes: LocalQueue vision-train/vision -> ClusterQueue vision selecting vision-train.
    Fails: a patch that removes spec.namespaceSelector; a LocalQueue patched to another tenant's queue.
    """
    queues = view.named(KUEUE, "ClusterQueue")
    for lq in view.of(KUEUE, "LocalQueue"):
        target = spec_of(lq).get("clusterQueue")
        where = lq.at(("spec", "clusterQueue"))
        cq = queues.get(target) if isinstance(target, str) else None
        if cq is None:
            renamed = [q.name for q in queues.values() if q.tenant is not None and q.tenant is lq.tenant]
            hint = f"; the tenant's ClusterQueue is now named {renamed[0]!r}" if renamed else ""
            yield where.finding(
                "built-queue-reference",
                f"LocalQueue {_qualified(lq)} on cluster {view.cluster.name!r} points at ClusterQueue "
                f"{target!r}, which the build does not contain{hint}{lq.changed_by(*_NAME_KEYS)}: every "
                "workload in the namespace stays pending",
            )
            continue
        owner = view.tenant_of_namespace(lq.namespace)
        if owner is not None and cq.tenant is not None and cq.tenant.name != owner.name:
            yield where.finding(
                "built-queue-reference",
                f"LocalQueue {_qualified(lq)} on cluster {view.cluster.name!r} points at ClusterQueue "
                f"{cq.name!r} of tenant {cq.tenant.name!r}, but namespace {lq.namespace!r} belongs to tenant "
                f"{owner.name!r}{lq.changed_by(*_FIELD_KEYS)}",
            )
        spec = spec_of(cq)
        known = owner.namespace_labels if owner is not None else None
        admits = _selector_admits(spec.get("namespaceSelector"), lq.namespace, known)
        if admits is False:
            what = (
                "has no namespaceSelector (Kueue admits no namespace)"
                if spec.get("namespaceSelector") is None
                else f"has a namespaceSelector that does not select namespace {lq.namespace!r}"
            )
            yield cq.at(("spec", "namespaceSelector")).finding(
                "built-queue-reference",
                f"ClusterQueue {cq.name!r} on cluster {view.cluster.name!r} {what}{cq.changed_by(*_FIELD_KEYS)}: "
                f"workloads from LocalQueue {_qualified(lq)} are never admitted",
            )


@rule("built-flavor-reference")
def flavor_reference(view: View) -> Iterator[Finding]:
    """After kustomize, every flavor a ClusterQueue names is a ResourceFlavor of the build (Kueue keeps a
    ClusterQueue with a missing flavor inactive), and its cohort is a Cohort of the build when the
    platform defines that cohort.

    Passes: ResourceFlavor h100 and a ClusterQueue quota on flavor h100.
    Fails: `namePrefix: prod-` in the overlay (ResourceFlavor prod-h100, quota still on h100).
    """
    flavors = view.named(KUEUE, "ResourceFlavor")
    cohorts = view.named(KUEUE, "Cohort")
    for cq in view.of(KUEUE, "ClusterQueue"):
        spec = spec_of(cq)
        for gi, group in enumerate(spec.get("resourceGroups") or []):
            if not isinstance(group, dict):
                continue
            for fi, flavor in enumerate(group.get("flavors") or []):
                name = flavor.get("name") if isinstance(flavor, dict) else None
                if isinstance(name, str) and name not in flavors:
                    moved = [f for f in flavors.values() if f.original_name == name and f.moved]
                    # renamed past recognition: a built flavor that no platform flavor names
                    strays = [
                        f for f in flavors.values() if f.original_name not in view.model.platform.flavors
                    ]
                    via = (
                        moved[0].changed_by(*_NAME_KEYS)
                        if moved
                        else cq.changed_by(*_FIELD_KEYS)
                        or (strays[0].changed_by(*_NAME_KEYS) if strays else "")
                    )
                    now = (
                        f" (the ResourceFlavor is now named {moved[0].name!r})"
                        if moved
                        else f" (the build has ResourceFlavor {strays[0].name!r}, which base/platform.yaml does "
                        "not define)"
                        if strays
                        else ""
                    )
                    yield cq.at(("spec", "resourceGroups", gi, "flavors", fi)).finding(
                        "built-flavor-reference",
                        f"ClusterQueue {cq.name!r} on cluster {view.cluster.name!r} has quota on flavor {name!r}, "
                        f"which is not a ResourceFlavor of the build{now}{via}: Kueue keeps the queue inactive",
                    )
        cohort = spec.get("cohortName")
        if isinstance(cohort, str) and cohort not in cohorts:
            moved = [c for c in cohorts.values() if c.original_name == cohort and c.moved]
            if moved:
                yield cq.at(("spec", "cohortName")).finding(
                    "built-flavor-reference",
                    f"ClusterQueue {cq.name!r} on cluster {view.cluster.name!r} is in cohort {cohort!r}, but the "
                    f"Cohort was renamed to {moved[0].name!r}{moved[0].changed_by(*_NAME_KEYS)}: the queue "
                    "joins an implicit cohort without the platform's settings",
                )


# ---------------------------------------------------------------------------------------- claims


def _requests(b: Built) -> Iterator[tuple[FieldPath, Mapping[str, Any]]]:
    devices = ((spec_of(b).get("spec") or {}).get("devices")) or {}
    for i, req in enumerate(devices.get("requests") or [] if isinstance(devices, dict) else []):
        if isinstance(req, dict):
            yield ("spec", "spec", "devices", "requests", i), req


@rule("built-claim-chain")
def claim_chain(view: View) -> Iterator[Finding]:
    """After kustomize, each claim template's DeviceClass exists (rendered, or installed by the driver
    per the catalog), the built Kueue Configuration maps it to a quota resource, and the ClusterQueue
    behind the namespace's LocalQueue covers that resource; every mapped DeviceClass exists.

    Passes: template gpu.nvidia.com -> mapping nvidia.com/gpu -> ClusterQueue covering nvidia.com/gpu.
    Fails: a patch that sets deviceClassName to a class no mapping names; `namePrefix:` on DeviceClasses.
    """
    config, _ = kueue_configuration(view)
    mapped = mappings(config)
    classes = view.named(DRA, "DeviceClass")
    installed = {n for n, e in view.catalog.classes.items() if not e.rendered}
    ignored = admissible.undeclared_ignored(config, view)
    for rct in view.of(DRA, "ResourceClaimTemplate"):
        cq = queue_of_namespace(view, rct.namespace)
        for path, req in _requests(rct):
            exactly = req.get("exactly")
            cls = exactly.get("deviceClassName") if isinstance(exactly, dict) else None
            if not isinstance(cls, str):
                continue
            where = rct.at((*path, "exactly", "deviceClassName"))
            subject = f"ResourceClaimTemplate {_qualified(rct)} on cluster {view.cluster.name!r}"
            if cls not in classes and cls not in installed:
                yield where.finding(
                    "built-claim-chain",
                    f"{subject} asks for DeviceClass {cls!r}, which neither the build nor the catalog's "
                    f"driver-installed classes contain{rct.changed_by(*_FIELD_KEYS)}: its claims are never allocated",
                )
            resource = mapped.get(cls)
            if resource is None:
                yield where.finding(
                    "built-claim-chain",
                    f"{subject}: DeviceClass {cls!r} is not in the Kueue Configuration's deviceClassMappings"
                    f'{rct.changed_by(*_FIELD_KEYS)}: Kueue marks its workloads Inadmissible ("DeviceClass '
                    f'{cls} is not mapped in DRA configuration")',
                )
            elif cq is None:
                yield where.finding(
                    "built-claim-chain",
                    f"{subject}: namespace {rct.namespace!r} has no LocalQueue pointing at a ClusterQueue of the "
                    "build, so nothing admits its workloads",
                )
            elif resource not in covered(cq) and not ignored:
                yield where.finding(
                    "built-claim-chain",
                    f"{subject}: ClusterQueue {cq.name!r} does not cover {resource!r} (DeviceClass {cls!r})"
                    f'{cq.changed_by(*_FIELD_KEYS)}: workloads wait with "resource {resource} unavailable '
                    'in ClusterQueue"',
                )
    for cls in sorted(mapped):
        if cls not in classes and cls not in installed:
            moved = [c for c in classes.values() if c.original_name == cls and c.moved]
            if moved:
                yield moved[0].origin.finding(
                    "built-claim-chain",
                    f"DeviceClass {cls!r} on cluster {view.cluster.name!r} was renamed to {moved[0].name!r}"
                    f"{moved[0].changed_by(*_NAME_KEYS)}, but deviceClassMappings and the claim templates "
                    "still name it",
                )


@rule("built-claim-kueue-support")
def claim_kueue_support(view: View) -> Iterator[Finding]:
    """After kustomize, every device request of a claim template has a shape Kueue counts: `exactly`
    with allocationMode ExactCount, no firstAvailable and no adminAccess (Kueue makes the workload
    Inadmissible otherwise).

    Passes: exactly {deviceClassName: gpu.nvidia.com, allocationMode: ExactCount, count: 2}.
    Fails: a patch that sets allocationMode: All.
    """
    for rct in view.of(DRA, "ResourceClaimTemplate"):
        for path, req in _requests(rct):
            exactly = req.get("exactly")
            problem, at = None, path
            if req.get("firstAvailable") is not None:
                problem, at = "FirstAvailable device selection is not supported", (*path, "firstAvailable")
            elif not isinstance(exactly, dict):
                problem = "Exactly must be set if FirstAvailable is nil"
            elif exactly.get("adminAccess") is True:
                problem, at = "AdminAccess is not supported", (*path, "exactly", "adminAccess")
            else:
                mode = exactly.get("allocationMode", "ExactCount")
                if mode == "All":
                    problem = "AllocationMode 'All' is not supported"
                elif mode != "ExactCount":
                    problem = f"unsupported allocation mode: {mode}"
                at = (*path, "exactly", "allocationMode")
            if problem is not None:
                yield rct.at(at).finding(
                    "built-claim-kueue-support",
                    f"ResourceClaimTemplate {_qualified(rct)} on cluster {view.cluster.name!r}: Kueue refuses "
                    f'it: "ResourceClaimTemplate {rct.name}: {problem}"{rct.changed_by(*_FIELD_KEYS)}; '
                    "Kueue counts only exactly + ExactCount requests",
                )


# ---------------------------------------------------------------------------------------- Kueue Configuration


@rule("built-kueue-config")
def built_kueue_config(view: View) -> Iterator[Finding]:
    """After kustomize, the Kueue Configuration that will be applied (the ConfigMap's data, the helm
    Application's managerConfig, or the ConfigMap patch of the install Application) exists and, when a patch changed it, still passes Kueue's start-up
    checks (the `kueue-config-*` and `kueue-feature-gate-*` rules, on the built text).

    Passes: a patch that adds a label to the ConfigMap.
    Fails: a patch that deletes the ConfigMap, or rewrites its data with an unknown feature gate.
    """
    built, holder = kueue_configuration(view)
    where = view.cluster.document.key_origin("kueue")
    if holder is None:
        yield where.finding(
            "built-kueue-config",
            f"the build of cluster {view.cluster.name!r} holds no Kueue Configuration (ConfigMap "
            f"{kueueconfig.CONFIGMAP_NAME}, the helm Application's managerConfig or the install Application's "
            "patch): Kueue would run without "
            "deviceClassMappings",
        )
        return
    rendered, _ = kueueconfig.build(view.model, view.cluster, view.catalog)
    if built is not None and dict(built) == dict(rendered.body):
        return
    if built is None:
        yield holder.origin.finding(
            "built-kueue-config",
            f"the built Kueue Configuration of cluster {view.cluster.name!r} is not a YAML mapping"
            f"{holder.changed_by(*_FIELD_KEYS)}: Kueue would not start",
        )
        return
    for f in configcheck.check_configuration(
        built, view.cluster.kueue_version, origin_of=lambda _: holder.origin
    ):
        yield holder.origin.finding(
            "built-kueue-config",
            f"the built Kueue Configuration of cluster {view.cluster.name!r}{holder.changed_by(*_FIELD_KEYS)}: "
            f"{f.message} ({f.rule})",
            f.severity,
        )


# ---------------------------------------------------------------------------------------- quantities


def _quota_fields(b: Built) -> Iterator[tuple[FieldPath, Any]]:
    spec = spec_of(b)
    for gi, group in enumerate(spec.get("resourceGroups") or []):
        for fi, flavor in enumerate((group.get("flavors") or []) if isinstance(group, dict) else []):
            for ri, res in enumerate((flavor.get("resources") or []) if isinstance(flavor, dict) else []):
                if isinstance(res, dict):
                    for key in ("nominalQuota", "borrowingLimit", "lendingLimit"):
                        if key in res:
                            yield (
                                ("spec", "resourceGroups", gi, "flavors", fi, "resources", ri, key),
                                res[key],
                            )
    weight = (
        (spec.get("fairSharing") or {}).get("weight") if isinstance(spec.get("fairSharing"), dict) else None
    )
    if weight is not None:
        yield ("spec", "fairSharing", "weight"), weight


@rule("built-quantity-canonical")
def quantity_canonical(view: View) -> Iterator[Finding]:
    """After kustomize, every quota quantity of ClusterQueues and Cohorts is a string in the canonical
    form the API server stores (otherwise Argo CD compares `32000m` with the stored `32` forever).

    Passes: nominalQuota: "32".
    Fails: a patch writing nominalQuota: "32000m", or 30e9 unquoted (read as a number, stored as 30G).
    """
    for b in (*view.of(KUEUE, "ClusterQueue"), *view.of(KUEUE, "Cohort")):
        for path, value in _quota_fields(b):
            problem = _canonical_problem(value)
            if problem is not None:
                yield b.at(path).finding(
                    "built-quantity-canonical",
                    f"{b.key.kind} {b.name!r} on cluster {view.cluster.name!r}: {path[-1]} {problem}"
                    f"{b.changed_by(*_FIELD_KEYS)}",
                )


def _canonical_problem(value: Any) -> str | None:
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        return None  # the CRD schema reports wrong types
    return _canonical_problem_of(type(value).__name__, value)


@functools.lru_cache(maxsize=4096)
def _canonical_problem_of(kind: str, value: str | int | float) -> str | None:
    """`kind` keeps 1 and 1.0 (equal keys) apart."""
    try:
        stored = parse(value).canonical()
    except QuantityError:
        return None  # the CRD schema reports it
    if isinstance(value, str):
        if stored == value:
            return None
        return (
            f"{value!r} is stored by the API server as {stored!r}: Argo CD would show a difference forever; "
            f"write {stored!r}"
        )
    return (
        f"is the number {value!r} (a YAML reader took it for a number), which the API server stores as "
        f"{stored!r}: write the quoted string {stored!r}"
    )


RULES.update(admissible.RULES)
RULES.update(inventory.RULES)
RULES.update(builtlimits.RULES)
