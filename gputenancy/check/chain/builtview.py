"""The cross-object view of one cluster rebuilt from the BUILT objects: what kustomize will hand to Argo CD,
with names, namespaces, selectors, mappings and quotas as they will be applied.

Every object is traced back to the input line that caused it (`Built.origin`): through its own provenance
when kustomize kept its key, or, when a transformer renamed or moved it, through the labels and names the
pipeline wrote (`gputenancy.io/tenant`, the claim template's name inside the new name). `Built.via` names
the kustomization that built it (the tenant Component for tenant objects, the overlay for the rest) and the
transformer lines in it, so a finding can say which kustomization changed the object.
"""

from __future__ import annotations

import dataclasses
import functools
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from gputenancy.common import fastyaml
from gputenancy.common.findings import Origin
from gputenancy.common.objects import FieldPath, ObjectKey, RenderedObject
from gputenancy.inputs.spec import Cluster, Model, Tenant
from gputenancy.policy.catalog import Catalog, claims_on
from gputenancy.render import hub, kueueconfig

KUEUE = "kueue.x-k8s.io"
DRA = "resource.k8s.io"
ARGO = "argoproj.io"
TENANT_LABEL = "gputenancy.io/tenant"
_TRANSFORMERS = (
    "namePrefix",
    "nameSuffix",
    "namespace",
    "patches",
    "patchesStrategicMerge",
    "patchesJson6902",
    "replacements",
    "transformers",
    "components",
    "images",
    "replicas",
)
_TOP_KEY = re.compile(r"^([A-Za-z0-9]+)\s*:")


@dataclasses.dataclass(frozen=True)
class Via:
    """The kustomization that built an object and its transformer keys, each with its line."""

    path: str
    keys: tuple[tuple[str, int], ...]

    def describe(self, *prefer: str) -> str:
        """`overlays/c/tenants/kustomization.yaml:4 (namePrefix)`: the transformer keys among `prefer`
        that the kustomization has, at the line of the first; "" when it has none of them."""
        chosen = [(k, n) for k, n in self.keys if k in prefer]
        if not chosen:
            return ""
        return f"{self.path}:{chosen[0][1]} ({', '.join(k for k, _ in chosen)})"


@dataclasses.dataclass(frozen=True)
class Built:
    """One built object and where it came from."""

    obj: RenderedObject
    key: ObjectKey
    origin: Origin
    original_name: str  # the name the pipeline rendered
    original_namespace: str
    via: Via | None  # None: the object did not go through kustomize
    tenant: Tenant | None

    @property
    def body(self) -> Mapping[str, Any]:
        return self.obj.body

    @property
    def name(self) -> str:
        return self.key.name

    @property
    def namespace(self) -> str:
        return self.key.namespace

    @property
    def moved(self) -> bool:
        return (self.name, self.namespace) != (self.original_name, self.original_namespace)

    def at(self, path: FieldPath) -> Origin:
        """The input line behind a field (the object's own line when kustomize renamed it)."""
        if self.moved or is_fallback(self.obj.origin):
            return self.origin
        return self.obj.origin_for(path)

    def changed_by(self, *prefer: str) -> str:
        """` (built by <kustomization>:<line> (<keys>))` naming the transformers among `prefer` that
        the kustomization which built the object uses, or "" when it uses none of them."""
        described = self.via.describe(*prefer) if self.via is not None else ""
        return f" (built by {described})" if described else ""


@dataclasses.dataclass(frozen=True)
class Around:
    """What a view of part of a cluster (its platform objects and one tenant's) reads from the whole
    cluster, worked out once (`gputenancy.check.chain.slices`): the tenants placed on it by name, the
    owner of each namespace, the kustomizations that built its objects, the Kueue Configuration as
    built, the cohort pool over every ClusterQueue (`admissible.Pool`) and the device inventory
    (`inventory.inventory`)."""

    tenants: Mapping[str, Tenant]
    owners: Mapping[str, Tenant]
    vias: tuple[Via | None, Via | None]
    config: tuple[Mapping[str, Any] | None, Built | None]
    pool: Any
    inventory: Any


@dataclasses.dataclass(frozen=True)
class View:
    cluster: Cluster
    model: Model
    catalog: Catalog
    objects: tuple[Built, ...]
    kustomized: bool
    around: Around | None = None  # set when the view holds only part of the cluster

    @functools.cached_property
    def _by_kind(self) -> dict[tuple[str, str], list[Built]]:
        out: dict[tuple[str, str], list[Built]] = {}
        for b in self.objects:
            out.setdefault((b.key.group, b.key.kind), []).append(b)
        return out

    @functools.cached_property
    def _named(self) -> dict[tuple[str, str], dict[str, Built]]:
        return {kind: {b.name: b for b in built} for kind, built in self._by_kind.items()}

    @functools.cached_property
    def _owners(self) -> Mapping[str, Tenant]:
        if self.around is not None:
            return self.around.owners
        return owners(self.model, self.cluster)

    @functools.cached_property
    def _queue_of_namespace(self) -> dict[str, Built]:
        queues = self.named(KUEUE, "ClusterQueue")
        out: dict[str, Built] = {}
        for lq in self.of(KUEUE, "LocalQueue"):
            target = spec_of(lq).get("clusterQueue")
            if isinstance(target, str) and target in queues:
                out.setdefault(lq.namespace, queues[target])
        return out

    @functools.cached_property
    def _kueue_configuration(self) -> tuple[Mapping[str, Any] | None, Built | None]:
        if self.around is not None:
            return self.around.config
        return _find_kueue_configuration(self)

    def of(self, group: str, kind: str) -> list[Built]:
        return self._by_kind.get((group, kind), [])

    def named(self, group: str, kind: str) -> dict[str, Built]:
        return self._named.get((group, kind), {})

    def tenant_of_namespace(self, namespace: str) -> Tenant | None:
        return self._owners.get(namespace)


def owners(model: Model, cluster: Cluster) -> dict[str, Tenant]:
    """The tenant of each namespace on the cluster (the first that names it)."""
    out: dict[str, Tenant] = {}
    for tenant in model.tenants_on(cluster.name):
        for ns, _ in tenant.namespaces:
            out.setdefault(ns, tenant)
    return out


def is_fallback(origin: Origin) -> bool:
    return (
        origin.line == 0
        and origin.path.startswith("overlays/")
        and origin.path.endswith("kustomization.yaml")
    )


def _via(root: Path, rel: str) -> Via:
    keys: list[tuple[str, int]] = []
    try:
        text = (root / rel).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return Via(rel, ())
    for n, line in enumerate(text.splitlines(), 1):
        match = _TOP_KEY.match(line)
        if match and match.group(1) in _TRANSFORMERS:
            keys.append((match.group(1), n))
    return Via(rel, tuple(keys))


def _longest_inside(name: str, candidates: Sequence[str]) -> str | None:
    inside = [c for c in candidates if c and c in name]
    return max(inside, key=len) if inside else None


def _trace(
    obj: RenderedObject,
    key: ObjectKey,
    model: Model,
    cluster: Cluster,
    catalog: Catalog,
    tenants: Mapping[str, Tenant],
) -> tuple[Origin, str, str, Tenant | None]:
    """(input line, rendered name, rendered namespace, tenant) of a built object."""
    labels = (obj.body.get("metadata") or {}).get("labels") or {}
    tenant_name = labels.get(TENANT_LABEL) if isinstance(labels, dict) else None
    tenant = tenants.get(tenant_name) if isinstance(tenant_name, str) else None
    if not is_fallback(obj.origin):
        # the build matched it to a rendered object by its key: not renamed, its own provenance
        return obj.origin, key.name, key.namespace, tenant
    traced = False
    if tenant is not None:
        if key.kind == "ClusterQueue":
            return (obj.origin if traced else tenant.origin), tenant.name, "", tenant
        namespaces = dict(tenant.namespaces)
        ns_origin = namespaces.get(key.namespace)
        original_ns = key.namespace if ns_origin is not None else next(iter(namespaces), key.namespace)
        if key.kind == "LocalQueue":
            origin = obj.origin if traced else (ns_origin or tenant.origin)
            return origin, tenant.local_queue, original_ns, tenant
        if key.kind == "ResourceClaimTemplate":
            claims = {ct.name: ct for ct in claims_on(tenant, cluster.name)}
            found = key.name if key.name in claims else _longest_inside(key.name, list(claims))
            if found is not None:
                return (obj.origin if traced else claims[found].origin), found, original_ns, tenant
        return (obj.origin if traced else tenant.origin), key.name, key.namespace, tenant
    if traced:
        return obj.origin, key.name, key.namespace, None
    kueue_ns = cluster.kueue_namespace
    if key.kind == "DeviceClass":
        rendered = [n for n, e in catalog.classes.items() if e.rendered]
        found = _longest_inside(key.name, rendered)
        if found is not None:
            return catalog.classes[found].origin, found, "", None
    if key.kind == "ResourceFlavor":
        found = _longest_inside(key.name, list(model.platform.flavors))
        if found is not None:
            return model.platform.flavors[found].origin, found, "", None
    if key.kind == "Topology":
        known = {t.name: t for t in cluster.topologies}
        found = _longest_inside(key.name, list(known))
        if found is not None:
            return known[found].origin, found, "", None
    if key.kind == "Cohort":
        found = _longest_inside(key.name, list(model.platform.cohorts))
        if found is not None:
            return model.platform.cohorts[found].origin, found, "", None
    if key.kind == "ConfigMap" and kueueconfig.CONFIG_KEY in (obj.body.get("data") or {}):
        return cluster.document.key_origin("kueue"), kueueconfig.CONFIGMAP_NAME, kueue_ns, None
    if key.kind == "Deployment" and kueueconfig.DEPLOYMENT_NAME in key.name:
        return cluster.document.key_origin("kueue"), kueueconfig.DEPLOYMENT_NAME, kueue_ns, None
    if key.kind == "Application" and cluster.helm is not None and f"kueue-{cluster.name}" in key.name:
        return (
            cluster.document.key_origin("kueue", "helm"),
            f"kueue-{cluster.name}",
            hub.namespace(model.platform, cluster),
            None,
        )
    if key.kind == "Application" and cluster.manifests is not None and f"kueue-{cluster.name}" in key.name:
        return (
            cluster.document.key_origin("kueue"),
            f"kueue-{cluster.name}",
            hub.namespace(model.platform, cluster),
            None,
        )
    return obj.origin, key.name, key.namespace, None


def build_view(
    model: Model, cluster: Cluster, catalog: Catalog, objects: Sequence[RenderedObject], *, kustomized: bool
) -> View:
    vias = kustomizations(model, cluster, kustomized=kustomized)
    tenants = {t.name: t for t in model.tenants_on(cluster.name)}
    built = traced(model, cluster, catalog, objects, vias, tenants)
    return View(cluster, model, catalog, built, kustomized)


def kustomizations(model: Model, cluster: Cluster, *, kustomized: bool) -> tuple[Via | None, Via | None]:
    """The overlay's and the tenant Component's kustomization (None: not built by it)."""
    overlay = f"overlays/{cluster.name}/kustomization.yaml"
    component = f"overlays/{cluster.name}/tenants/kustomization.yaml"
    root = model.root
    overlay_via = _via(root, overlay) if kustomized else None
    component_via = _via(root, component) if kustomized and (root / component).is_file() else None
    return overlay_via, component_via


def traced(
    model: Model,
    cluster: Cluster,
    catalog: Catalog,
    objects: Sequence[RenderedObject],
    vias: tuple[Via | None, Via | None],
    tenants: Mapping[str, Tenant],
) -> tuple[Built, ...]:
    """Each object traced to its input line, its rendered name and tenant, and the kustomization that built it."""
    overlay_via, component_via = vias
    built = []
    for obj in objects:
        key = obj.key
        origin, name, namespace, tenant = _trace(obj, key, model, cluster, catalog, tenants)
        via = component_via if tenant is not None else overlay_via
        built.append(Built(obj, key, origin, name, namespace, via, tenant))
    return tuple(built)


def part_view(base: View, around: Around, objects: Sequence[RenderedObject]) -> View:
    """`base` (the platform objects) with `objects` of one tenant, reading the rest from `around`."""
    more = traced(base.model, base.cluster, base.catalog, objects, around.vias, around.tenants)
    return View(base.cluster, base.model, base.catalog, base.objects + more, base.kustomized, around)


def kueue_configuration(view: View) -> tuple[Mapping[str, Any] | None, Built | None]:
    """The Kueue Configuration as it will be applied: from the built ConfigMap, the built helm
    Application's values, or the ConfigMap patch of the Kueue install Application (`install:
    manifests`); the object it came from (possibly renamed, which another rule reports). Parsed once
    per view: the rules that read it share the one (read-only) mapping."""
    return view._kueue_configuration


def _find_kueue_configuration(view: View) -> tuple[Mapping[str, Any] | None, Built | None]:
    for b in view.of("", "ConfigMap"):
        text = (b.body.get("data") or {}).get(kueueconfig.CONFIG_KEY)
        if isinstance(text, str):
            return _parse(text), b
    for b in view.of(ARGO, "Application"):
        source = (b.body.get("spec") or {}).get("source") or {}
        values = source.get("helm") or {}
        text = ((values.get("valuesObject") or {}).get("managerConfig") or {}).get(
            "controllerManagerConfigYaml"
        )
        if isinstance(text, str):
            return _parse(text), b
        for entry in (source.get("kustomize") or {}).get("patches") or []:
            patch = (
                _parse(entry["patch"])
                if isinstance(entry, dict) and isinstance(entry.get("patch"), str)
                else None
            )
            text = ((patch or {}).get("data") or {}).get(kueueconfig.CONFIG_KEY) if patch else None
            if patch is not None and patch.get("kind") == "ConfigMap" and isinstance(text, str):
                return _parse(text), b
    return None, None


def _parse(text: str) -> Mapping[str, Any] | None:
    try:
        value = fastyaml.load(text)
    except Exception:
        return None
    return value if isinstance(value, dict) else None


def spec_of(b: Built) -> Mapping[str, Any]:
    spec = b.body.get("spec")
    return spec if isinstance(spec, dict) else {}


def queue_of_namespace(view: View, namespace: str) -> Built | None:
    """The built ClusterQueue that the namespace's LocalQueue points at."""
    return view._queue_of_namespace.get(namespace)


def covered(cq: Built) -> set[str]:
    out: set[str] = set()
    for group in spec_of(cq).get("resourceGroups") or []:
        if isinstance(group, dict):
            out.update(r for r in group.get("coveredResources") or [] if isinstance(r, str))
    return out


def mappings(config: Mapping[str, Any] | None) -> dict[str, str]:
    """DeviceClass -> quota resource name, from the built Configuration."""
    out: dict[str, str] = {}
    resources = (config or {}).get("resources") or {}
    for m in resources.get("deviceClassMappings") or [] if isinstance(resources, dict) else []:
        if isinstance(m, dict) and isinstance(m.get("name"), str):
            for cls in m.get("deviceClassNames") or []:
                if isinstance(cls, str):
                    out.setdefault(cls, m["name"])
    return out
