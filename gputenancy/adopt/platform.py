"""The platform and the overlay of an adoption: device class catalog, ResourceFlavors, cohorts, capacity,
and the labels and annotations a layer's transformers put on every object."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gputenancy.adopt.quota import budget
from gputenancy.adopt.records import IMPORTED, Gap, TenantPlan, amount_value
from gputenancy.cluster.dump import Dump, LiveObject


def device_classes(
    dump: Dump, config: Mapping[str, Any] | None, classes: dict[str, str]
) -> list[dict[str, Any]]:
    """Catalog candidates from the Configuration's deviceClassMappings (class -> quota resource) of the
    shape the catalog renders (a name and its classes), with the CEL selectors of the DeviceClass
    objects the dump holds (the pipeline renders those). Mappings of another shape (counters, sources)
    stay in the Configuration."""
    mappings = ((config or {}).get("resources") or {}).get("deviceClassMappings") or []
    out: list[dict[str, Any]] = []
    for m in mappings:
        if not isinstance(m, dict) or set(m) != {"name", "deviceClassNames"}:
            # charged another way (counters, sources): the mapping stays in the Configuration; the
            # catalog names its classes (as the driver's), so claims for them are known
            out += [
                {"name": c, "resource": m.get("name"), "named": True}
                for c in (m.get("deviceClassNames") or [])
                if isinstance(m, dict) and c not in classes
            ]
            continue
        for cls in m.get("deviceClassNames") or []:
            if cls in classes:
                continue
            classes[cls] = m["name"]
            entry: dict[str, Any] = {"name": cls, "resource": m["name"]}
            live = dump.get("DeviceClass", cls)
            selectors = class_selectors(live) if live is not None else None
            if selectors:
                entry["selectors"] = selectors
            out.append(entry)
    return out


def classes_kept(
    dump: Dump,
    entries: list[dict[str, Any]],
    tenants: list[TenantPlan],
    gaps: list[Gap],
    carried: list[tuple[LiveObject, str]],
    skipped: list[tuple[LiveObject, str]],
) -> list[dict[str, Any]]:
    """The catalog entries a tenant uses (the pipeline maps only those); what becomes of each
    DeviceClass object: rendered from the catalog (fields besides the selectors are gaps), the
    driver's (no selectors in the catalog), or kept verbatim."""
    used = {k for t in tenants for fb in t.budget for k in fb.get("devices") or {}}
    used |= {c["deviceClass"] for t in tenants for c in t.claims}
    kept = [e for e in entries if e["name"] in used and not e.get("named")]
    kept += [{"name": e["name"], "resource": e["resource"]} for e in entries if e.get("named")]
    rendered = {e["name"] for e in kept if "selectors" in e}
    named = {e["name"] for e in kept}
    for dc in dump.of_kind("DeviceClass"):
        if dc.name in rendered:
            for key in sorted(set(dc.body.get("spec") or {}) - {"selectors"}):
                gaps.append(
                    Gap(
                        dc.kind,
                        "",
                        dc.name,
                        f"spec.{key}",
                        "the catalog renders a DeviceClass's CEL selectors only",
                    )
                )
        elif dc.name in named:
            skipped.append(
                (dc, "the driver's DeviceClass (the catalog names it; the pipeline does not render it)")
            )
        else:
            carried.append(
                (dc, "Kueue maps no quota resource to it in the catalog's form (no selectors, or counters)")
            )
    return kept


def class_selectors(dc: LiveObject) -> list[str] | None:
    spec = dc.body.get("spec") or {}
    selectors = spec.get("selectors") or []
    if not selectors:
        return None
    if any(set(s) != {"cel"} or set(s["cel"]) != {"expression"} for s in selectors):
        return None
    return [s["cel"]["expression"] for s in selectors]


def flavor(rf: LiveObject, gaps: list[Gap], topologies: set[str]) -> dict[str, Any]:
    """A platform flavor; its `topologyName` (when bound to a topology imported for the cluster) goes to
    the cluster's capacity entry, so it is not part of the returned flavor."""
    spec = rf.body.get("spec") or {}
    out: dict[str, Any] = {"name": rf.name}
    for key in ("nodeLabels", "nodeTaints", "tolerations"):
        if spec.get(key):
            out[key] = spec[key]
    known = {"nodeLabels", "nodeTaints", "tolerations"}
    if spec.get("topologyName") in topologies:
        known.add("topologyName")
    for key in sorted(set(spec) - known):
        gaps.append(
            Gap(
                rf.kind,
                "",
                rf.name,
                f"spec.{key}",
                "the model's flavors hold nodeLabels, nodeTaints, tolerations",
            )
        )
    return out


def missing_flavors(dump: Dump) -> list[str]:
    """Flavors the queues and cohorts name that have no ResourceFlavor object: the model lists them
    (a budget names a flavor of the platform); the round trip removes the object the pipeline would
    render, since the cluster has none."""
    have = {o.name for o in dump.of_kind("ResourceFlavor")}
    out: list[str] = []
    for o in dump.of_kind("ClusterQueue", "Cohort"):
        for group in (o.body.get("spec") or {}).get("resourceGroups") or []:
            for flavor in group.get("flavors") or [] if isinstance(group, dict) else []:
                name = flavor.get("name") if isinstance(flavor, dict) else None
                if isinstance(name, str) and name not in have and name not in out:
                    out.append(name)
    return out


def cohorts(
    dump: Dump,
    used: set[str],
    gaps: list[Gap],
    carried: list[tuple[LiveObject, str]],
    cluster: str,
    by_resource: Mapping[str, str],
) -> list[dict[str, Any]]:
    """Platform cohorts: those the queues name and those holding quota of their own (`budgets` on this
    cluster, from the Cohort's resourceGroups), with their parents; from their Cohort objects when the
    dump holds them. A Cohort neither reaches is carried (the pipeline renders cohorts in use)."""
    live = {o.name: o for o in dump.of_kind("Cohort")}
    holding = {n for n, o in live.items() if (o.body.get("spec") or {}).get("resourceGroups")}
    reached: set[str] = set()
    todo = sorted(used | holding)
    while todo:
        name = todo.pop()
        if name in reached:
            continue
        reached.add(name)
        parent = (live[name].body.get("spec") or {}).get("parentName") if name in live else None
        if isinstance(parent, str) and parent:
            todo.append(parent)
    out = []
    for name in sorted(reached):
        entry: dict[str, Any] = {"name": name}
        obj = live.get(name)
        if obj is not None:
            spec = obj.body.get("spec") or {}
            if spec.get("parentName"):
                entry["parent"] = spec["parentName"]
            weight = (spec.get("fairSharing") or {}).get("weight")
            if weight is not None:
                entry["fairSharingWeight"] = amount_value(weight)
            groups = spec.get("resourceGroups")
            if groups:
                entry["budgets"] = {"clusters": {cluster: budget(groups, by_resource)}}
            for key in sorted(set(spec) - {"parentName", "fairSharing", "resourceGroups"}):
                gaps.append(
                    Gap(
                        "Cohort",
                        "",
                        name,
                        f"spec.{key}",
                        "the model's cohorts hold parent, fairSharingWeight and budgets",
                    )
                )
        out.append(entry)
    for name, obj in sorted(live.items()):
        if name not in reached:
            carried.append(
                (
                    obj,
                    "no imported ClusterQueue is in it, and it holds no quota (the pipeline renders cohorts in use)",
                )
            )
    return out


def topologies(dump: Dump, carried: list[tuple[LiveObject, str]], tas: bool) -> list[dict[str, Any]]:
    """The cluster's Topology objects as `topologies` of its overlay (levels by node label only)."""
    out: list[dict[str, Any]] = []
    for t in dump.of_kind("Topology"):
        levels = (t.body.get("spec") or {}).get("levels")
        if not isinstance(levels, list):
            levels = []
        simple = bool(levels) and all(isinstance(x, dict) and set(x) == {"nodeLabel"} for x in levels)
        if tas and simple and set(t.body.get("spec") or {}) == {"levels"}:
            out.append({"name": t.name, "levels": [{"nodeLabel": x["nodeLabel"]} for x in levels]})
        else:
            carried.append((t, "the cluster's topologies hold levels by node label only"))
    return out


def capacity(
    dump: Dump, flavors: list[str], notes: list[str], bound: Mapping[str, str] | None = None
) -> tuple[list[dict[str, Any]], bool]:
    """One capacity entry per flavor. The objects Kueue holds do not say what the nodes have: capacity
    is declared unknown (empty entries, overcommit on) and said so; ResourceSlices, where the dump holds
    them, are counted in the note (which flavor a node belongs to needs the Nodes' labels)."""
    slices = dump.of_kind("ResourceSlice")
    if slices:
        devices: dict[str, int] = {}
        for s in slices:
            spec = s.body.get("spec") or {}
            devices[str(spec.get("driver"))] = devices.get(str(spec.get("driver")), 0) + len(
                spec.get("devices") or []
            )
        counted = ", ".join(f"{n} devices of driver {d}" for d, n in sorted(devices.items()))
        notes.append(
            f"capacity: the dump's ResourceSlices publish {counted}; which flavor each node belongs to "
            "needs the Nodes' labels: fill in capacity[] of the overlay"
        )
    else:
        notes.append(
            "capacity: the dump holds no ResourceSlices and Kueue's objects do not say what the nodes "
            "have: capacity is declared unknown (overcommit: true); fill in capacity[] of the overlay"
        )
    entries: list[dict[str, Any]] = [{"flavor": f} for f in flavors]
    for entry in entries:
        if bound and entry["flavor"] in bound:
            entry["topologyName"] = bound[entry["flavor"]]
    return entries, False


def common(
    dump: Dump, tenants: list[TenantPlan], carried: list[tuple[LiveObject, str]]
) -> dict[str, dict[str, dict[str, str]]]:
    """Labels and annotations most live objects of a layer carry with the same value (a transformer of
    the layer put them there): the tenant layer (the imported queues, their LocalQueues and claim
    templates, built through the tenant Component) and the overlay (the platform objects and those
    kept verbatim). The objects without one get a patch removing it. The pipeline's own bookkeeping
    is left out (it renders that itself)."""
    from gputenancy.adopt.compare import PIPELINE_ANNOTATIONS, PIPELINE_LABELS

    namespaces = {ns for t in tenants for ns in t.settings["namespaces"]}
    queues = {t.name for t in tenants}
    kept = {o.key for o, _ in carried}
    layers: dict[str, list[LiveObject]] = {"tenant": [], "platform": []}
    for o in dump.objects:
        if o.kind not in IMPORTED:
            continue
        if o.key in kept or o.kind not in ("ClusterQueue", "LocalQueue", "ResourceClaimTemplate"):
            layers["platform"].append(o)
        elif (o.kind == "ClusterQueue" and o.name in queues) or o.namespace in namespaces:
            layers["tenant"].append(o)
    out: dict[str, dict[str, dict[str, str]]] = {}
    for layer, objects in layers.items():
        out[layer] = {}
        for key, own in (("labels", PIPELINE_LABELS), ("annotations", PIPELINE_ANNOTATIONS)):
            counts: dict[tuple[str, str], int] = {}
            for o in objects:
                found = (o.body.get("metadata") or {}).get(key) or {}
                for item in found.items() if isinstance(found, dict) else ():
                    if isinstance(item[1], str):
                        counts[item] = counts.get(item, 0) + 1
            shared = {k: v for (k, v), n in counts.items() if n * 2 > len(objects)}
            out[layer][key] = {
                k: v
                for k, v in sorted(shared.items())
                if isinstance(v, str) and (k not in own or k == "gputenancy.io/cluster")
            }
    return out
