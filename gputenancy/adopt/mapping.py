"""Live objects -> the repository's inputs: each ClusterQueue a tenant (its namespaces from the
LocalQueues that point to it), ResourceFlavors, the device class catalog and cohorts for the platform,
versions, capacity and the Configuration for the cluster's overlay.

Each shape of a live object the input model knows is read by one small function below (`_preemption`,
`_namespaces`, `_budget`, ...): a shape the model cannot express yet is left out of the inputs and
named as a `Gap`, and the round trip (`proof`) carries it as a patch. Objects the pipeline does not own
(Namespaces, ResourceSlices, Workloads, ...) are not imported."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from gputenancy.adopt import grouping, platform
from gputenancy.adopt.quota import budget
from gputenancy.adopt.records import (
    CARRIED_KINDS,
    IMPORTED,
    KUEUE,
    KUEUE_VERSIONS,
    NOT_OWNED,
    RULE,
    SELECTOR_KEY,
    Adoption,
    Gap,
    TenantPlan,
    amount_value,
    shown,
)
from gputenancy.cluster.dump import Dump, LiveObject
from gputenancy.common.findings import Finding, PipelineError
from gputenancy.render.manifests import PREEMPTION


def check_dump(dump: Dump, cluster: str) -> list[Finding]:
    """What makes a dump unfit to import: not Kueue objects, a Kueue API version the pipeline does not
    know, objects of two clusters mixed."""
    findings: list[Finding] = []
    kueue = [o for o in dump.objects if o.group == KUEUE]
    if not any(o.kind == "ClusterQueue" for o in kueue) and not any(o.kind == "Cohort" for o in kueue):
        findings.append(
            _at(dump.objects[0] if dump.objects else None, dump.path).finding(
                RULE,
                "the dump holds no ClusterQueue or Cohort (kueue.x-k8s.io): not a dump of a cluster "
                "running Kueue; produce it with the kubectl line in `python pipeline.py import --help`",
            )
        )
    for o in kueue:
        version = o.api_version.rpartition("/")[2]
        if version not in KUEUE_VERSIONS:
            findings.append(
                o.origin.finding(
                    RULE,
                    f"{shown(o)} is {o.api_version}: the pipeline reads {', '.join(KUEUE_VERSIONS)} of "
                    f"{KUEUE} (the versions Kueue v0.18 and v0.19 serve)",
                )
            )
    labelled: dict[str, LiveObject] = {}
    for o in dump.objects:
        labels = (o.body.get("metadata") or {}).get("labels") or {}
        value = labels.get("gputenancy.io/cluster") if isinstance(labels, dict) else None
        if isinstance(value, str):
            labelled.setdefault(value, o)
    if len(labelled) > 1:
        which = ", ".join(f"{c} ({shown(o)}, line {o.line})" for c, o in sorted(labelled.items()))
        first = min(labelled.values(), key=lambda o: o.line)
        findings.append(
            first.origin.finding(
                RULE,
                f"objects of several clusters are mixed in one dump: {which}; dump one cluster at a time",
            )
        )
    if labelled and cluster not in labelled:
        (other,) = labelled.items() if len(labelled) == 1 else (next(iter(labelled.items())),)
        findings.append(
            other[1].origin.finding(
                RULE,
                f"the objects are labelled gputenancy.io/cluster: {other[0]}, not {cluster}: import them "
                f"as --cluster {other[0]}",
            )
        )
    return findings


def _at(obj: LiveObject | None, path: str) -> Any:
    from gputenancy.common.findings import Origin

    return obj.origin if obj is not None else Origin(path)


def adopt(
    dump: Dump,
    cluster: str,
    *,
    catalog: Mapping[str, str],
    kueue_version: str,
    kubernetes_version: str,
    versions_told: Sequence[str] = (),
    groups: Mapping[str, tuple[str, ...]] | None = None,
    judged: bool = True,
) -> Adoption:
    # judged: map the shapes the model's rules judge across objects (namespaces by label, topologies);
    # False maps them as patches or kept objects instead
    """The inputs that render `dump`'s objects on `cluster`. `catalog`: device class -> quota resource
    already in the repository (the live mappings are added); `groups`: team -> the queues that become
    its one tenant (`grouping`). Raises PipelineError when a group cannot be one tenant."""
    gaps: list[Gap] = []
    notes = list(versions_told)
    carried: list[tuple[LiveObject, str]] = []
    skipped: list[tuple[LiveObject, str]] = []
    for o in dump.objects:
        if o.kind == "ConfigMap" and o.key == ("ConfigMap", "kueue-system", "kueue-manager-config"):
            continue  # compared as the Configuration
        if o.kind == "Deployment" and o.namespace == "kueue-system":
            skipped.append(
                (o, "the Kueue manager: installed by the kueue-<cluster> Application, its version read")
            )
        elif o.kind in NOT_OWNED:
            skipped.append((o, "not rendered by the pipeline (the cluster or its workloads own it)"))
        elif o.kind in CARRIED_KINDS and o.kind != "Topology":
            carried.append((o, f"the input model has no file for {o.kind} objects"))
        elif o.kind not in IMPORTED:
            skipped.append((o, f"{o.kind} is not a kind the pipeline renders"))
    config = dump.kueue_config()
    classes = dict(catalog)
    candidates = platform.device_classes(dump, config, classes)
    named = {e["name"] for e in candidates if e.get("named")}
    by_resource = {resource: cls for cls, resource in sorted(classes.items()) if cls not in named}
    queues = dump.of_kind("ClusterQueue")
    locals_of: dict[str, list[LiveObject]] = {}
    for lq in dump.of_kind("LocalQueue"):
        target = (lq.body.get("spec") or {}).get("clusterQueue")
        if isinstance(target, str) and dump.get("ClusterQueue", target) is not None:
            locals_of.setdefault(target, []).append(lq)
        else:
            carried.append((lq, f"its ClusterQueue {target!r} is not in the dump"))
    claims = dump.of_kind("ResourceClaimTemplate")
    tenants: list[TenantPlan] = []
    allowed: set[str] = set()
    cohort_names: set[str] = set()
    owned: set[str] = set()
    fungibility = _fungibility_default(kueue_version)
    for cq in queues:
        plan = _tenant(
            cq, locals_of.get(cq.name, []), claims, by_resource, gaps, carried, owned, fungibility, judged
        )
        if plan is None:
            continue
        tenants.append(plan)
        allowed.update(ns for ns in plan.settings["namespaces"] if _reserved(ns))
        if "cohort" in plan.settings:
            cohort_names.add(plan.settings["cohort"])
    if groups:
        tenants, refused = grouping.merge(tenants, groups)
        if refused:
            raise PipelineError(refused)
    claimed = {
        (c["name"], ns)
        for t in tenants
        for c in t.claims
        for ns in c.get("namespaces", t.settings["namespaces"])
    }
    for rct in claims:
        if (rct.name, rct.namespace) not in claimed:
            carried.append((rct, "no tenant's claim templates can express it (see the notes)"))
    device_classes = platform.classes_kept(dump, candidates, tenants, gaps, carried, skipped)
    cohorts = platform.cohorts(dump, cohort_names, gaps, carried, cluster, by_resource)
    topologies = platform.topologies(dump, carried, judged)
    names = {t["name"] for t in topologies}
    flavors = [platform.flavor(rf, gaps, names) for rf in dump.of_kind("ResourceFlavor")]
    flavors += [{"name": n} for n in platform.missing_flavors(dump)]
    bound = {
        rf.name: str((rf.body.get("spec") or {}).get("topologyName"))
        for rf in dump.of_kind("ResourceFlavor")
        if (rf.body.get("spec") or {}).get("topologyName") in names
    }
    capacity, known = platform.capacity(dump, [f["name"] for f in flavors], notes, bound)
    settings: dict[str, Any] = {
        "kubernetesVersion": kubernetes_version,
        "kueue": {"version": kueue_version, "install": "manifests"},
    }
    if topologies:
        settings["topologies"] = topologies
    if capacity:
        settings["capacity"] = capacity
    if not known:
        settings["overcommit"] = True
    return Adoption(
        cluster,
        tuple(tenants),
        tuple(flavors),
        tuple(device_classes),
        tuple(cohorts),
        tuple(sorted(allowed)),
        settings,
        config,
        tuple(carried),
        tuple(skipped),
        tuple(gaps),
        tuple(notes),
        known,
        platform.common(dump, tenants, carried),
        dict(groups or {}),
    )


_RESERVED_BUILTIN = ("default", "kueue-system")


_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")


def _fungibility_default(kueue_version: str) -> Mapping[str, Any]:
    from gputenancy.versions import kueue

    try:
        found = kueue.for_version(kueue_version).object_defaults["ClusterQueue"]["flavorFungibility"]
    except (kueue.UnsupportedVersion, KeyError):
        return {}
    return dict(found)


def _reserved(namespace: str) -> bool:
    return namespace in _RESERVED_BUILTIN


# ------------------------------------------------------------------------------ the ClusterQueue


def _tenant(
    cq: LiveObject,
    lqs: list[LiveObject],
    claims: list[LiveObject],
    by_resource: Mapping[str, str],
    gaps: list[Gap],
    carried: list[tuple[LiveObject, str]],
    owned: set[str],
    fungibility: Mapping[str, Any],
    judged: bool,
) -> TenantPlan | None:
    spec = cq.body.get("spec") or {}

    def gap(field: str, why: str) -> None:
        gaps.append(Gap(cq.kind, "", cq.name, field, why))

    namespaces, lq_name = _namespaces(cq, lqs, gaps, carried, owned, judged)
    if not namespaces:
        why = "no LocalQueue points to it" if not lqs else "its namespaces belong to other tenants"
        carried.append((cq, f"{why}: a tenant needs a namespace of its own"))
        return None
    if not _LABEL.fullmatch(cq.name) or not _LABEL.fullmatch(lq_name):
        carried.append((cq, "a tenant and its LocalQueues are named by DNS labels (no dots, 63 characters)"))
        carried += [(lq, "its ClusterQueue is kept verbatim") for lq in lqs if lq.namespace in namespaces]
        return None
    owned.update(namespaces)
    settings: dict[str, Any] = {"namespaces": namespaces}
    labels = by_labels(spec.get("namespaceSelector")) if judged else None
    if labels:  # the namespaces carry what the selector asks for (it selects each of them on the cluster)
        settings["namespaceSelector"] = {"matchLabels": labels}
        settings["namespaceLabels"] = dict(labels)
    if lq_name != cq.name:
        settings["localQueueName"] = lq_name
    cohort = spec.get("cohortName") or spec.get("cohort")
    if isinstance(cohort, str) and cohort:
        settings["cohort"] = cohort
    settings.update(_preemption(spec, gap))
    settings.update(_flavor_fungibility(spec, fungibility))
    settings.update(_fair_sharing(spec, gap))
    strategy = spec.get("queueingStrategy")
    if strategy == "StrictFIFO":
        settings["queueingStrategy"] = "StrictFIFO"
    settings.update(_stop(spec, gap))
    _unexpressed_queue_fields(spec, gap)
    quota = budget(spec.get("resourceGroups") or [], by_resource)
    mine = [c for c in claims if c.namespace in namespaces]
    templates = [
        t for t in _claim_templates(mine, namespaces, gaps) if t["deviceClass"] in by_resource.values()
    ]
    return TenantPlan(cq.name, settings, tuple(quota), tuple(templates), cq)


def _namespaces(
    cq: LiveObject,
    lqs: list[LiveObject],
    gaps: list[Gap],
    carried: list[tuple[LiveObject, str]],
    owned: set[str],
    judged: bool,
) -> tuple[list[str], str]:
    """The tenant's namespaces (those of the LocalQueues pointing to `cq`) and the LocalQueue name they
    share; a LocalQueue with another name is carried verbatim (the model names them all alike)."""
    if not lqs:
        return [], cq.name
    names: dict[str, int] = {}
    for lq in lqs:
        names[lq.name] = names.get(lq.name, 0) + 1
    common = max(sorted(names), key=lambda n: names[n])
    namespaces: list[str] = []
    for lq in sorted(lqs, key=lambda o: o.namespace):
        if lq.namespace in owned:
            carried.append(
                (lq, f"namespace {lq.namespace} belongs to another tenant (a namespace has one tenant)")
            )
            continue
        if lq.name != common or lq.namespace in namespaces:
            carried.append((lq, f"the tenant's LocalQueues are all named {common!r}"))
            continue
        namespaces.append(lq.namespace)
    selector = (cq.body.get("spec") or {}).get("namespaceSelector")
    by_name = {"matchExpressions": [{"key": SELECTOR_KEY, "operator": "In", "values": sorted(namespaces)}]}
    if selector != by_name and not (judged and by_labels(selector)):
        gaps.append(
            Gap(
                cq.kind,
                "",
                cq.name,
                "spec.namespaceSelector",
                "the model selects exactly the tenant's namespaces by name",
            )
        )
    return namespaces, common


def by_labels(selector: Any) -> dict[str, str] | None:
    """The labels of a selector by `matchLabels` only (the model's `namespaceSelector`), else None."""
    if not isinstance(selector, dict) or set(selector) != {"matchLabels"}:
        return None
    labels = selector["matchLabels"]
    if not isinstance(labels, dict) or not labels or not all(isinstance(v, str) for v in labels.values()):
        return None
    return {str(k): v for k, v in labels.items()}


def _preemption(spec: Mapping[str, Any], gap: Any) -> dict[str, Any]:
    """A preset where the live policy is one; Kueue's own fields otherwise (`preemption` as an object)."""
    live = spec.get("preemption") or {}
    borrow = live.get("borrowWithinCohort") or {}
    shape = {
        "reclaimWithinCohort": live.get("reclaimWithinCohort", "Never"),
        "withinClusterQueue": live.get("withinClusterQueue", "Never"),
        "borrowWithinCohort": borrow.get("policy", "Never"),
    }
    if set(borrow) <= {"policy"}:
        for preset, values in PREEMPTION.items():
            if values == shape:
                return {} if preset == "none" else {"preemption": preset}
    if set(live) - {"reclaimWithinCohort", "withinClusterQueue", "borrowWithinCohort"} or set(borrow) - {
        "policy",
        "maxPriorityThreshold",
    }:
        gap("spec.preemption", "fields the model's preemption has no key for")
        return {}
    written: dict[str, Any] = {k: shape[k] for k in ("reclaimWithinCohort", "withinClusterQueue")}
    written["borrowWithinCohort"] = {"policy": shape["borrowWithinCohort"]}
    if "maxPriorityThreshold" in borrow:
        written["borrowWithinCohort"]["maxPriorityThreshold"] = borrow["maxPriorityThreshold"]
    return {"preemption": written}


def _flavor_fungibility(spec: Mapping[str, Any], default: Mapping[str, Any]) -> dict[str, Any]:
    """Kueue's flavorFungibility where it is not the version's default."""
    live = spec.get("flavorFungibility")
    if not isinstance(live, dict) or {**default, **live} == dict(default):
        return {}
    return {"flavorFungibility": dict(live)}


def _fair_sharing(spec: Mapping[str, Any], gap: Any) -> dict[str, Any]:
    fs = spec.get("fairSharing")
    if not isinstance(fs, dict) or "weight" not in fs:
        return {}
    if set(fs) != {"weight"}:
        gap("spec.fairSharing", "the model holds only fairSharing.weight")
    return {"fairSharingWeight": amount_value(fs["weight"])}


def _stop(spec: Mapping[str, Any], gap: Any) -> dict[str, Any]:
    stop = spec.get("stopPolicy", "None")
    if stop == "HoldAndDrain":
        return {"state": "draining"}
    if stop == "Hold":
        return {"stopPolicy": "Hold"}
    if stop != "None":
        gap("spec.stopPolicy", f"stopPolicy {stop}")
    return {}


def _unexpressed_queue_fields(spec: Mapping[str, Any], gap: Any) -> None:
    """Fields of a ClusterQueue spec the model has no key for (the round trip carries them as patches)."""
    for field in (
        "admissionChecks",
        "admissionChecksStrategy",
        "admissionScope",
        "concurrentAdmissionPolicy",
    ):
        if field in spec:
            gap(f"spec.{field}", "the model has no key for it")
    for gi, group in enumerate(spec.get("resourceGroups") or []):
        covered = list(group.get("coveredResources") or []) if isinstance(group, dict) else []
        if covered != sorted(covered, key=_resource_order):
            gap(
                f"spec.resourceGroups[{gi}]",
                "the model orders covered resources cpu, memory, ephemeral-storage, pods, then by name",
            )


def _resource_order(name: str) -> tuple[int, str]:
    core = ("cpu", "memory", "ephemeral-storage", "pods")
    return (core.index(name) if name in core else len(core), name)


def _claim_templates(rcts: list[LiveObject], namespaces: list[str], gaps: list[Gap]) -> list[dict[str, Any]]:
    """ResourceClaimTemplates of the shape the model renders (one request of ExactCount devices of one
    class, CEL selectors, capacity requests), grouped by name over the tenant's namespaces."""
    by_name: dict[str, tuple[dict[str, Any], list[str]]] = {}
    for rct in rcts:
        shape = _claim_shape(rct.body)
        if shape is None:
            continue
        found = by_name.get(rct.name)
        if found is None:
            by_name[rct.name] = (shape, [rct.namespace])
        elif found[0] == shape:
            found[1].append(rct.namespace)
    out = []
    for name, (shape, where) in by_name.items():
        entry = {"name": name, **shape}
        if sorted(where) != sorted(namespaces):
            entry["namespaces"] = sorted(where)
        out.append(entry)
    return out


def _claim_shape(body: Mapping[str, Any]) -> dict[str, Any] | None:
    spec = (body.get("spec") or {}).get("spec") or {}
    requests = (spec.get("devices") or {}).get("requests") or []
    if set(spec) != {"devices"} or set(spec["devices"]) != {"requests"} or len(requests) != 1:
        return None
    request = requests[0]
    exactly = request.get("exactly") or {}
    if set(request) != {"name", "exactly"} or request.get("name") != "gpu":
        return None
    if exactly.get("allocationMode", "ExactCount") != "ExactCount":
        return None
    if set(exactly) - {"deviceClassName", "allocationMode", "count", "selectors", "capacity"}:
        return None
    out: dict[str, Any] = {"deviceClass": exactly.get("deviceClassName")}
    count = exactly.get("count", 1)
    if count != 1:
        out["count"] = count
    selectors = exactly.get("selectors") or []
    if any(set(s) != {"cel"} or set(s["cel"]) != {"expression"} for s in selectors):
        return None
    if selectors:
        out["selectors"] = [s["cel"]["expression"] for s in selectors]
    capacity = (exactly.get("capacity") or {}).get("requests")
    if exactly.get("capacity") is not None:
        if set(exactly["capacity"]) != {"requests"} or not isinstance(capacity, dict):
            return None
        out["capacity"] = {k: amount_value(v) for k, v in capacity.items()}
    return out
