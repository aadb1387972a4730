"""What the repository already holds, as an import needs it: the versions of the cluster, the tenants a
queue would collide with, the base Configuration the cluster's is merged onto."""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from gputenancy.adopt import records
from gputenancy.cluster.dump import Dump
from gputenancy.common.findings import Finding

RULE = records.RULE
DEFAULT_KUEUE = "v0.19.2"
DEFAULT_KUBERNETES = "1.36"
_IMAGE_TAG = re.compile(r"/kueue:(v[0-9]+\.[0-9]+\.[0-9]+)$")


def versions(dump: Dump, kueue: str | None, kubernetes: str | None) -> tuple[str, str, list[str]]:
    told = []
    if kueue is None:
        for d in dump.of_kind("Deployment"):
            for c in (
                (((d.body.get("spec") or {}).get("template") or {}).get("spec") or {}).get("containers")
            ) or []:
                m = _IMAGE_TAG.search(str(c.get("image", "")))
                if m and kueue is None:
                    kueue = m.group(1)
                    told.append(f"Kueue {kueue}: from the image of Deployment {d.namespace}/{d.name}")
    if kueue is None:
        kueue = DEFAULT_KUEUE
        told.append(
            f"Kueue version: assumed {kueue} (the dump holds no Kueue Deployment; --kueue-version sets it)"
        )
    if kubernetes is None:
        kubernetes = DEFAULT_KUBERNETES
        told.append(f"Kubernetes version: assumed {kubernetes} (--kubernetes-version sets it)")
    return kueue, kubernetes, told


SETTINGS = (
    "namespaces",
    "localQueueName",
    "cohort",
    "preemption",
    "flavorFungibility",
    "fairSharingWeight",
    "queueingStrategy",
    "state",
    "stopPolicy",
)
"""What a tenant file states for every cluster alike: a queue imported into an existing tenant must agree."""


def collisions(adoption: records.Adoption, model: Any, root: Path) -> list[Finding]:
    """Queues that would collide with what the repository holds: a tenant of the same name with other
    settings (as its file writes them), a namespace another tenant owns."""
    out: list[Finding] = []
    tenants = {t.name: t for t in model.tenants}
    owner = {ns: t.name for t in model.tenants for ns, _ in t.namespaces}
    for plan_ in adoption.tenants:
        here = plan_.queue.origin
        existing = tenants.get(plan_.name)
        if existing is not None:
            doc = yaml.safe_load((root / existing.path).read_text(encoding="utf-8")) or {}
            theirs = {k: _plain_setting(k, doc.get(k)) for k in SETTINGS}
            mine = {k: _plain_setting(k, plan_.settings.get(k)) for k in SETTINGS}
            differ = [k for k in SETTINGS if theirs[k] != mine[k]]
            if differ:
                out.append(
                    here.finding(
                        RULE,
                        f"ClusterQueue {plan_.name} collides with {existing.path}: "
                        + ", ".join(f"{k} {mine[k]!r} here, {theirs[k]!r} there" for k in differ)
                        + " (a tenant renders the same queue on every cluster; rename one in the repository first)",
                    )
                )
            elif adoption.cluster in existing.cluster_budgets:
                out.append(
                    here.finding(
                        RULE, f"{existing.path} already holds a budget for cluster {adoption.cluster}"
                    )
                )
            continue
        for ns in plan_.settings["namespaces"]:
            if ns in owner:
                out.append(
                    here.finding(
                        RULE,
                        f"namespace {ns} of ClusterQueue {plan_.name} belongs to tenant {owner[ns]} (tenants/{owner[ns]}.yaml)",
                    )
                )
    return out


def _plain_setting(key: str, value: Any) -> Any:
    """A tenant setting compared as it means: namespaces as a set, defaults as absent, weights canonical."""
    if key == "namespaces":
        return sorted(value or [])
    if value in (None, "none", "active", "BestEffortFIFO", "None"):
        return None
    if key == "fairSharingWeight":
        return records.amount_value(value)
    return value


def config_over_base(
    live: Mapping[str, Any] | None,
    base: Mapping[str, Any],
    catalog: Mapping[str, str],
    adoption: records.Adoption,
) -> tuple[dict[str, Any], dict[str, bool]]:
    """kueue.config of the overlay (what the live Configuration has that the base does not) and
    kueue.featureGates; the deviceClassMappings of classes the catalog holds are the pipeline's own."""
    if live is None:
        return {}, {}
    body = {k: v for k, v in live.items() if k not in ("apiVersion", "kind")}
    gates = body.pop("featureGates", None) or {}
    mapped = {*catalog, *(e["name"] for e in adoption.device_classes)}
    resources = dict(body.get("resources") or {})
    if "deviceClassMappings" in resources:
        kept = [
            m
            for m in resources["deviceClassMappings"]
            if set(m) != {"name", "deviceClassNames"} or not set(m.get("deviceClassNames") or []) <= mapped
        ]
        if kept:
            resources["deviceClassMappings"] = kept
        else:
            resources.pop("deviceClassMappings")
        if resources:
            body["resources"] = resources
        else:
            body.pop("resources")
    return _over(body, base), {str(k): bool(v) for k, v in gates.items()}


def _over(live: Mapping[str, Any], base: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in live.items():
        have = base.get(key)
        if isinstance(value, dict) and isinstance(have, dict):
            sub = _over(value, have)
            if sub:
                out[key] = sub
        elif value != have:
            out[key] = value
    return out
