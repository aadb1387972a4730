"""The merged Kueue manager Configuration of one cluster: base config + overlay changes + feature gates
+ deviceClassMappings built from the device classes that tenants on the cluster use + the resource
transformations of classic HAMi vGPUs (`gputenancy.render.hami`), with `integrations.frameworks` kept to
the job frameworks the cluster has installed (`gputenancy.inputs.frameworks`).
"""

from __future__ import annotations

import copy
import dataclasses
import hashlib
from collections import defaultdict
from collections.abc import Mapping
from typing import Any

import yaml

from gputenancy.common.findings import Finding, Origin, Severity
from gputenancy.common.objects import FieldPath, longest_origin
from gputenancy.inputs import frameworks as installed_frameworks
from gputenancy.inputs.spec import Cluster, Model
from gputenancy.policy.catalog import Catalog, classes_used
from gputenancy.render import hami, multikueue

# The manager ConfigMap as installed, its key (the release data has the names inside Kueue's tree too)
CONFIG_KEY = "controller_manager_config.yaml"
CONFIGMAP_NAME = "kueue-manager-config"
DEPLOYMENT_NAME = "kueue-controller-manager"
CHECKSUM_ANNOTATION = "gputenancy.io/kueue-config-checksum"

_Dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


@dataclasses.dataclass(frozen=True)
class KueueConfig:
    """The merged Configuration with the input place of each field, its text and checksum."""

    cluster: str
    body: Mapping[str, Any]
    field_origins: Mapping[FieldPath, Origin]
    origin: Origin

    @property
    def text(self) -> str:
        return dump(self.body)

    @property
    def checksum(self) -> str:
        return hashlib.sha256(self.text.encode()).hexdigest()

    def origin_of(self, path: FieldPath) -> Origin:
        return longest_origin(self.field_origins, tuple(path), self.origin)


def dump(body: Mapping[str, Any]) -> str:
    text: str = yaml.dump(dict(body), Dumper=_Dumper, sort_keys=False, default_flow_style=False, width=1000)
    return text


def deep_merge(
    base: Mapping[str, Any],
    over: Mapping[str, Any],
    origins: dict[FieldPath, Origin],
    over_origin: Any,
    path: FieldPath = (),
) -> dict[str, Any]:
    """Maps merge key by key, everything else (lists, scalars) replaces; records where each value came from."""
    out = copy.deepcopy(dict(base))
    for key, value in over.items():
        here = (*path, key)
        if isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = deep_merge(out[key], value, origins, over_origin, here)
        else:
            out[key] = copy.deepcopy(value)
            for stale in [k for k in origins if k[: len(here)] == here]:
                del origins[stale]
            origins[here] = over_origin(here)
    return out


def mappings(model: Model, cluster: str, catalog: Catalog) -> tuple[list[dict[str, Any]], dict[str, Origin]]:
    """deviceClassMappings for the classes tenants use on `cluster`, grouped by quota resource, sorted."""
    by_resource: dict[str, list[str]] = defaultdict(list)
    origins: dict[str, Origin] = {}
    for name in sorted(classes_used(model, cluster)):
        entry = catalog.classes.get(name)
        if entry is None:
            continue
        by_resource[entry.resource].append(name)
        origins.setdefault(entry.resource, entry.origin)
    out = []
    for res, names in sorted(by_resource.items()):
        mapping: dict[str, Any] = {"name": res, "deviceClassNames": sorted(names)}
        sources = sorted({c for n in names if (c := catalog.classes[n].capacity) is not None})
        if sources:  # charged by capacity requests (policy.draquota checks version, gate and claims)
            mapping["sources"] = [
                {
                    "capacity": {
                        "name": cap,
                        "driver": driver,
                        "deviceSelector": {"cel": {"expression": f"device.driver == '{driver}'"}},
                    }
                }
                for cap, driver in sources
            ]
        out.append(mapping)
    return out, origins


def build(model: Model, cluster: Cluster, catalog: Catalog) -> tuple[KueueConfig, list[Finding]]:
    findings: list[Finding] = []
    base_doc = model.platform.kueue_config
    origins: dict[FieldPath, Origin] = {}

    def base_origin(path: FieldPath) -> Origin:
        return base_doc.origin(*path)

    def overlay_origin(path: FieldPath) -> Origin:
        return cluster.document.origin("kueue", "config", *path)

    _record_all(base_doc.data, (), origins, base_origin)
    body = deep_merge(base_doc.data, cluster.config_overrides, origins, overlay_origin)
    findings.extend(_installed_only(model, cluster, body, origins, overlay_origin))

    if cluster.feature_gates:
        gates = dict(body.get("featureGates") or {})
        for name, value in sorted(cluster.feature_gates.items()):
            gates[name] = value
            origins[("featureGates", name)] = cluster.document.origin("kueue", "featureGates", name)
        body["featureGates"] = gates

    generated, map_origins = mappings(model, cluster.name, catalog)
    resources = dict(body.get("resources") or {})
    existing = list(resources.get("deviceClassMappings") or [])
    claimed = {c: m.get("name") for m in generated for c in m["deviceClassNames"]}
    for i, m in enumerate(existing):
        for cls in m.get("deviceClassNames") or []:
            if cls in claimed:
                here = longest_origin(origins, ("resources", "deviceClassMappings", i), base_doc.origin())
                cat = catalog.classes[cls].origin
                findings.append(
                    here.finding(
                        "mapping-conflict",
                        f"device class {cls!r} is mapped in the Kueue configuration as {m.get('name')!r} and by the catalog "
                        f"({cat.path}:{cat.line}) as {claimed[cls]!r}; map it in one place only",
                    )
                )
    merged = sorted([*existing, *generated], key=lambda m: str(m.get("name", "")))
    if merged:
        resources["deviceClassMappings"] = merged
        body["resources"] = resources
        for i, m in enumerate(merged):
            o = map_origins.get(str(m.get("name")))
            if o is not None:
                origins[("resources", "deviceClassMappings", i)] = o
    generated_tf = hami.transformations(catalog, cluster.name)
    if generated_tf:
        resources = dict(body.get("resources") or {})
        existing_tf = list(resources.get("transformations") or [])
        resources["transformations"] = [*existing_tf, *(t for t, _ in generated_tf)]
        body["resources"] = resources
        for i, (_, o) in enumerate(generated_tf, len(existing_tf)):
            origins[("resources", "transformations", i)] = o
    fleet = multikueue.config_section(cluster)
    if fleet is not None and cluster.multikueue is not None:  # the manager's own settings win
        body["multiKueue"] = {**dict(body.get("multiKueue") or {}), **fleet}
        for key in fleet:
            origins[("multiKueue", key)] = cluster.multikueue.origin
    config = KueueConfig(cluster.name, body, origins, base_doc.origin())
    return config, findings


FRAMEWORKS: FieldPath = ("integrations", "frameworks")
RULE_NOT_INSTALLED = "framework-not-installed"


def _installed_only(
    model: Model,
    cluster: Cluster,
    body: dict[str, Any],
    origins: dict[FieldPath, Origin],
    overlay_origin: Any,
) -> list[Finding]:
    """Keep in `integrations.frameworks` the frameworks `cluster` has installed (all where it declares
    nothing), renumbering their origins. Each one left out is said at the line that enables it: a note
    when the platform's Configuration enables it for every cluster, a warning when the cluster's own
    `kueue.config` does (the same file says it is missing)."""
    integrations = body.get("integrations")
    enabled = integrations.get("frameworks") if isinstance(integrations, Mapping) else None
    if not isinstance(integrations, Mapping) or not isinstance(enabled, list):
        return []
    from_overlay = FRAMEWORKS in origins and (*FRAMEWORKS, 0) not in origins
    places = [
        overlay_origin((*FRAMEWORKS, i))
        if from_overlay
        else longest_origin(origins, (*FRAMEWORKS, i), Origin(""))
        for i in range(len(enabled))
    ]
    have = installed_frameworks.installed(model.platform, cluster)
    kept = [
        (n, o)
        for n, o in zip(enabled, places, strict=True)
        if have is None or not isinstance(n, str) or have.has(n)
    ]
    body["integrations"] = {**dict(integrations), "frameworks": [name for name, _ in kept]}
    for stale in [k for k in origins if k[: len(FRAMEWORKS)] == FRAMEWORKS and len(k) > len(FRAMEWORKS)]:
        del origins[stale]
    for i, (_, origin) in enumerate(kept):  # each item at its own line, also when an overlay wrote the list
        origins[(*FRAMEWORKS, i)] = origin
    found: list[Finding] = []
    for name, here in zip(enabled, places, strict=True):
        if have is None or not isinstance(name, str) or have.has(name):
            continue
        fix = (
            f"install it there and add {name!r} to that list, or remove it from kueue.config.integrations.frameworks"
            if from_overlay
            else f"install it there and add {name!r} to that list if jobs of that kind should run on {cluster.name!r}"
        )
        found.append(
            here.finding(
                RULE_NOT_INSTALLED,
                f"{name!r} is enabled here but not installed on cluster {cluster.name!r} (frameworks at "
                f"{have.where}): left out of its Kueue Configuration; {fix}",
                Severity.WARNING if from_overlay else Severity.NOTE,
            )
        )
    return found


def framework_origin(config: KueueConfig, framework: str) -> Origin | None:
    """Where `framework` of the Configuration's `integrations.frameworks` is enabled (None: it is not)."""
    enabled = (config.body.get("integrations") or {}).get("frameworks") or []
    if framework not in enabled:
        return None
    return config.origin_of((*FRAMEWORKS, enabled.index(framework)))


def _record_all(data: Any, path: FieldPath, origins: dict[FieldPath, Origin], origin_of: Any) -> None:
    origins[path] = origin_of(path)
    if isinstance(data, Mapping):
        for key, value in data.items():
            _record_all(value, (*path, key), origins, origin_of)
    elif isinstance(data, list):
        for i, value in enumerate(data):
            _record_all(value, (*path, i), origins, origin_of)
