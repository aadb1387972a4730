"""Small input repositories built inside a test: one platform, a few clusters and tenants, written as
YAML under tmp_path. Independent of the example content of tenants/ and overlays/."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import yaml

API = "gputenancy.io/v1"
GPU = "gpu.nvidia.com"
MIG = "mig-1g.10gb.nvidia.com"
MIG_SELECTOR = (
    "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'mig' && "
    "device.attributes['gpu.nvidia.com'].profile == '{}'"
)
BASE_CONFIG: dict[str, Any] = {
    "apiVersion": "config.kueue.x-k8s.io/v1beta2",
    "kind": "Configuration",
    "health": {"healthProbeBindAddress": ":8081"},
    "metrics": {"bindAddress": ":8443"},
    "webhook": {"port": 9443},
    "leaderElection": {"leaderElect": True, "resourceName": "c1f6bfd2.kueue.x-k8s.io"},
    "integrations": {"frameworks": ["batch/job"]},
}


def device_class(name: str, resource: str, profile: str | None = None) -> dict[str, Any]:
    entry: dict[str, Any] = {"name": name, "resource": resource}
    if profile is not None:
        entry["selectors"] = [MIG_SELECTOR.format(profile)]
    return entry


POD = {"cpu": 2, "memory": "8Gi"}
"""Room for the least a pod asks for (minimumPodRequests), which every claim template must fit with."""
POD_CAPACITY = {"cpu": 64, "memory": "256Gi"}

CATALOG = [device_class(GPU, "nvidia.com/gpu"), device_class(MIG, "nvidia.com/mig-1g.10gb", "1g.10gb")]


def platform(
    device_classes: Iterable[Mapping[str, Any]] = CATALOG,
    flavors: Iterable[str] = ("h100", "a100"),
    cohorts: Iterable[str] = ("research",),
) -> dict[str, Any]:
    return {
        "apiVersion": API,
        "kind": "Platform",
        "kueueConfig": "kueue-config.yaml",
        "deviceClasses": [dict(d) for d in device_classes],
        "flavors": [{"name": f, "nodeLabels": {"example.com/flavor": f}} for f in flavors],
        "cohorts": [{"name": c} for c in cohorts],
    }


def cluster(
    name: str = "c1",
    capacity: Iterable[Mapping[str, Any]] = ({"flavor": "h100", "devices": {GPU: 8}},),
    *,
    kueue: str = "v0.19.2",
    kubernetes: str = "1.35",
    **fields: Any,
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "apiVersion": API,
        "kind": "Cluster",
        "name": name,
        "kubernetesVersion": kubernetes,
        "kueue": {"version": kueue, "install": "manifests"},
        "capacity": [dict(c) for c in capacity],
    }
    body.update(fields)
    return body


def tenant(
    name: str,
    budgets: Iterable[Mapping[str, Any]] = ({"flavor": "h100", "devices": {GPU: 1}},),
    **fields: Any,
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "apiVersion": API,
        "kind": "Tenant",
        "name": name,
        "owners": [f"@acme/{name}"],
        "namespaces": [f"{name}-ns"],
        "budgets": {"default": [dict(b) for b in budgets]},
    }
    body.update(fields)
    return body


def dump(path: Path, data: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    plain = json.loads(json.dumps(data))  # no shared objects: PyYAML would write them as anchors
    path.write_text(yaml.safe_dump(plain, sort_keys=False))
    return path


def write(
    root: Path,
    tenants: Iterable[Mapping[str, Any]],
    clusters: Iterable[Mapping[str, Any]] = (cluster(),),
    *,
    platform_body: Mapping[str, Any] | None = None,
    kueue_config: Mapping[str, Any] = BASE_CONFIG,
    component: bool = False,
) -> Path:
    """A complete repository root: base/, overlays/<cluster>/ (with a tenant Component when asked),
    tenants/<name>.yaml."""
    dump(root / "base" / "platform.yaml", dict(platform_body or platform()))
    dump(root / "base" / "kueue-config.yaml", dict(kueue_config))
    for c in clusters:
        overlay = root / "overlays" / str(c["name"])
        dump(overlay / "cluster.yaml", dict(c))
        dump(
            overlay / "kustomization.yaml",
            {
                "apiVersion": "kustomize.config.k8s.io/v1beta1",
                "kind": "Kustomization",
                "resources": ["_platform"],
            },
        )
        if component:
            dump(
                overlay / "tenants" / "kustomization.yaml",
                {
                    "apiVersion": "kustomize.config.k8s.io/v1alpha1",
                    "kind": "Component",
                    "labels": [{"pairs": {"example.com/cluster": str(c["name"])}}],
                },
            )
    for t in tenants:
        dump(root / "tenants" / f"{t['name']}.yaml", dict(t))
    return root


def configuration(bodies: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """The Kueue manager Configuration delivered in a cluster's objects: inside the Kueue install
    Application, as the kustomize patch of its ConfigMap (install: manifests) or as Helm values."""
    (app,) = [
        b
        for b in bodies
        if b.get("kind") == "Application" and str(b["metadata"]["name"]).startswith("kueue-")
    ]
    source = app["spec"]["source"]
    if "kustomize" in source:
        (patch,) = [
            yaml.safe_load(p["patch"])
            for p in source["kustomize"]["patches"]
            if p["target"]["kind"] == "ConfigMap"
        ]
        (text,) = patch["data"].values()
    else:
        text = source["helm"]["valuesObject"]["managerConfig"]["controllerManagerConfigYaml"]
    config: dict[str, Any] = yaml.safe_load(text)
    return config


def tree_configuration(tree: Mapping[str, bytes]) -> dict[str, Any]:
    """configuration() of a generated/<cluster>/ tree."""
    return configuration(
        yaml.safe_load(data) for path, data in tree.items() if path.startswith("_hub/application/")
    )
