"""The files an adoption writes, as bytes by repository path: new tenant files, budgets added to the
tenant files already there, the platform's new flavors, device classes and cohorts, and the cluster's
overlay. Files that exist are edited with ruamel.yaml's round trip, so their comments and key order stay
as they were; nothing here touches the disk (`command` writes the result atomically)."""

from __future__ import annotations

import io
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.scalarstring import DoubleQuotedScalarString

from gputenancy.adopt.compare import canonical_quantities
from gputenancy.adopt.records import Adoption, Gap, TenantPlan, shown
from gputenancy.cluster.dump import LiveObject
from gputenancy.cluster.normalise import strip_server

TENANT_HEADER = "# yaml-language-server: $schema=../gputenancy/schemas/tenant.schema.json\n"
CLUSTER_HEADER = "# yaml-language-server: $schema=../../gputenancy/schemas/cluster.schema.json\n"


def _yaml() -> YAML:
    y = YAML()  # round trip: comments, key order and quoting of what is already there are kept
    y.preserve_quotes = True
    y.width = 4096
    y.indent(mapping=2, sequence=4, offset=2)
    return y


def _dump(data: Any) -> str:
    out = io.StringIO()
    _yaml().dump(data, out)
    return out.getvalue()


def _plain(value: Any) -> Any:
    """Records -> ruamel's commented containers (so new entries print in block style)."""
    if isinstance(value, Mapping):
        m = CommentedMap()
        for k, v in value.items():
            m[k] = _plain(v)
        return m
    if isinstance(value, (list, tuple)):
        return CommentedSeq([_plain(v) for v in value])
    if isinstance(value, str) and _ambiguous(value):
        return DoubleQuotedScalarString(value)
    return value


def _ambiguous(text: str) -> bool:
    """A string a YAML 1.1 reader (PyYAML, the pipeline's reader) would take for something else:
    `on`, `yes`, `null`, `010`, `1e3`, `1:30`; written quoted."""
    import yaml

    try:
        return not isinstance(yaml.safe_load(text), str)
    except yaml.YAMLError:
        return True


def tenant_files(
    adoption: Adoption, root: Path, owners: Sequence[str], source: str
) -> tuple[dict[str, bytes], list[str]]:
    """tenants/<name>.yaml for each imported queue: a new file, or this cluster's budget added to the
    file already there. Also what each did, for the output."""
    files: dict[str, bytes] = {}
    told: list[str] = []
    for plan in adoption.tenants:
        rel = f"tenants/{plan.name}.yaml"
        path = root / rel
        if path.is_file():
            files[rel] = _add_cluster(path.read_text(encoding="utf-8"), plan, adoption.cluster).encode()
            told.append(f"{rel}: budget for {adoption.cluster} added")
        else:
            files[rel] = _new_tenant(plan, adoption.cluster, owners, source).encode()
            told.append(f"{rel}: new (ClusterQueue {plan.name})")
    return files, told


def _new_tenant(plan: TenantPlan, cluster: str, owners: Sequence[str], source: str) -> str:
    doc = CommentedMap()
    doc["apiVersion"] = "gputenancy.io/v1"
    doc["kind"] = "Tenant"
    doc["name"] = plan.name
    doc["owners"] = CommentedSeq(owners)
    doc["owners"].fa.set_flow_style()
    doc["clusters"] = CommentedSeq([cluster])
    doc["clusters"].fa.set_flow_style()
    for key, value in plan.settings.items():
        doc[key] = _plain(value)
    budgets = CommentedMap()
    budgets["clusters"] = CommentedMap({cluster: _plain(list(plan.budget))})
    doc["budgets"] = budgets
    if plan.claims:
        doc["claimTemplates"] = _plain(list(plan.claims))
    header = f"{TENANT_HEADER}# Imported from ClusterQueue {plan.name} of cluster {cluster} ({source}).\n"
    return header + _dump(doc)


def _add_cluster(text: str, plan: TenantPlan, cluster: str) -> str:
    """The tenant file with `cluster` in `clusters` and its budget under budgets.clusters; the rest of
    the file (comments, order, other clusters) unchanged."""
    y = _yaml()
    doc = y.load(text)
    clusters = doc.get("clusters")
    if isinstance(clusters, list) and cluster not in clusters:
        clusters.append(cluster)
    budgets = doc.setdefault("budgets", CommentedMap())
    per = budgets.get("clusters")
    if per is None:
        per = budgets["clusters"] = CommentedMap()
    per[cluster] = _plain(list(plan.budget))
    templates = doc.get("claimTemplates")
    known = {t.get("name") for t in templates or []}
    for claim in plan.claims:
        if claim["name"] in known:
            continue
        if templates is None:
            templates = doc["claimTemplates"] = CommentedSeq()
        templates.append(_plain({**claim, "clusters": [cluster]}))
    out = io.StringIO()
    y.dump(doc, out)
    return out.getvalue()


def platform_file(text: str, adoption: Adoption) -> tuple[str, list[str]]:
    """base/platform.yaml with the flavors, device classes, cohorts and allowed namespaces it lacks
    appended (those already there by name are kept as they are)."""
    y = _yaml()
    doc = y.load(text)
    told: list[str] = []
    for key, entries in (
        ("deviceClasses", adoption.device_classes),
        ("flavors", adoption.flavors),
        ("cohorts", adoption.cohorts),
    ):
        have = doc.get(key)
        names = {e.get("name") for e in have or []}
        for entry in entries:
            if entry["name"] in names:
                _add_cohort_budget(have, entry, adoption.cluster, told)
                continue
            if have is None:
                have = doc[key] = CommentedSeq()
            have.append(_plain(entry))
            told.append(f"base/platform.yaml: {key} {entry['name']} added")
    if adoption.allowed_namespaces:
        tn = doc.setdefault("tenantNamespaces", CommentedMap())
        allowed = tn.setdefault("allowed", CommentedSeq())
        for ns in adoption.allowed_namespaces:
            if ns not in allowed:
                allowed.append(ns)
                told.append(
                    f"base/platform.yaml: namespace {ns} allowed for tenants (a LocalQueue of the cluster is there)"
                )
    out = io.StringIO()
    y.dump(doc, out)
    return out.getvalue(), told


def _add_cohort_budget(have: Any, entry: Mapping[str, Any], cluster: str, told: list[str]) -> None:
    """An existing cohort holding quota on the imported cluster too: its budgets.clusters.<cluster>."""
    quota = (entry.get("budgets") or {}).get("clusters", {}).get(cluster)
    if quota is None:
        return
    (existing,) = [e for e in have if e.get("name") == entry["name"]]
    budgets = existing.setdefault("budgets", CommentedMap())
    per = budgets.setdefault("clusters", CommentedMap())
    per[cluster] = _plain(quota)
    told.append(f"base/platform.yaml: cohort {entry['name']}: budget for {cluster} added")


def cluster_file(
    adoption: Adoption, config: Mapping[str, Any], gates: Mapping[str, bool], source: str
) -> str:
    settings = dict(adoption.cluster_settings)
    kueue = dict(settings["kueue"])
    if gates:
        kueue["featureGates"] = dict(gates)
    if config:
        kueue["config"] = dict(config)
    doc = CommentedMap()
    doc["apiVersion"] = "gputenancy.io/v1"
    doc["kind"] = "Cluster"
    doc["name"] = adoption.cluster
    doc["kubernetesVersion"] = settings["kubernetesVersion"]
    doc["kueue"] = _plain(kueue)
    if "topologies" in settings:
        doc["topologies"] = _plain(settings["topologies"])
    if "capacity" in settings:
        doc["capacity"] = _plain(settings["capacity"])
    if not adoption.capacity_known and "capacity" in settings:
        doc.yaml_set_comment_before_after_key(
            "capacity",
            before="Capacity unknown: Kueue's objects do not say what the nodes have. List each flavor's\n"
            "devices and resources, then remove `overcommit: true`.",
        )
        doc["overcommit"] = True
    header = f"{CLUSTER_HEADER}# Imported from {source}.\n"
    return header + _dump(doc)


def overlay_kustomization(
    cluster: str,
    common: Mapping[str, Mapping[str, str]],
    carried_files: Sequence[str],
    patches: Sequence[tuple[LiveObject, list[Gap], list[dict[str, Any]] | None]],
) -> str:
    lines = [
        "apiVersion: kustomize.config.k8s.io/v1beta1",
        "kind: Kustomization",
        "resources:",
        "  - ../../base",
        "  - _platform   # filled by the pipeline: DeviceClasses, ResourceFlavors, Cohorts, Kueue config",
        *(
            f"  - {f}   # live objects the input model has no file for, kept as they are"
            for f in carried_files
        ),
    ]
    lines += _common_lines(common)
    lines += _patch_lines(patches)
    return "\n".join(lines) + "\n"


def tenant_component(
    cluster: str,
    common: Mapping[str, Mapping[str, str]],
    patches: Sequence[tuple[LiveObject, list[Gap], list[dict[str, Any]] | None]],
) -> str:
    lines = [
        f"# Transformations for tenant objects on {cluster} (ClusterQueues, LocalQueues, ResourceClaimTemplates).",
        "apiVersion: kustomize.config.k8s.io/v1alpha1",
        "kind: Component",
    ]
    lines += _common_lines(common)
    lines += _patch_lines(patches)
    return "\n".join(lines) + "\n"


def _common_lines(common: Mapping[str, Mapping[str, str]]) -> list[str]:
    """kustomize's labels and commonAnnotations for what every live object of the layer carries."""
    lines: list[str] = []
    if common.get("labels"):
        lines += ["labels:   # most live objects of this layer carry them", "  - pairs:"]
        lines += [f"      {json.dumps(k)}: {json.dumps(v)}" for k, v in common["labels"].items()]
    if common.get("annotations"):
        lines += ["commonAnnotations:   # most live objects of this layer carry them"]
        lines += [f"  {json.dumps(k)}: {json.dumps(v)}" for k, v in common["annotations"].items()]
    return lines


def _patch_lines(patches: Sequence[tuple[LiveObject, list[Gap], list[dict[str, Any]] | None]]) -> list[str]:
    if not patches:
        return []
    lines = ["patches:"]
    for obj, gaps, ops in patches:
        if ops is None:
            lines.append(
                f"  # {shown(obj)}: the model renders it, the cluster has none: removed from the build"
            )
        else:
            lines.append(f"  # {shown(obj)}: as on the cluster, which the input model cannot express:")
        if ops is not None:
            fields = list({g.field: g.why for g in gaps}.items())
            lines += [f"  #   {field}: {why}" for field, why in fields]
        group, _, version = obj.api_version.rpartition("/")
        target = {"group": group, "version": version, "kind": obj.kind, "name": obj.name}
        if obj.namespace:
            target["namespace"] = obj.namespace
        lines.append(f"  - target: {json.dumps(target)}")
        lines.append("    patch: |-")
        if ops is None:
            meta = {"name": obj.name, **({"namespace": obj.namespace} if obj.namespace else {})}
            lines += [
                "      $patch: delete",
                f"      apiVersion: {obj.api_version}",
                f"      kind: {obj.kind}",
                f"      metadata: {json.dumps(meta)}",
            ]
        else:
            lines += [f"      - {json.dumps(op, sort_keys=False)}" for op in ops]
    return lines


def carried_file(objects: Sequence[tuple[LiveObject, str]]) -> str:
    parts = []
    for obj, why in objects:
        body = canonical_quantities(strip_server(obj.body))
        parts.append(f"# {shown(obj)}: {why}\n" + _dump(_plain(body)))
    return "---\n".join(parts)
