"""A small repository of classic HAMi vGPU tenancy built under tmp_path (independent of the example
content): one cluster `site` with two T4s shared through HAMi (flavor t4-hami), an H100 flavor without
HAMi, two tenants in one cohort. Tests change it through `trees.edit`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import trees

KUEUE_CONFIG = {
    "apiVersion": "config.kueue.x-k8s.io/v1beta2",
    "kind": "Configuration",
    "integrations": {"frameworks": ["batch/job"]},
}


def platform() -> dict[str, Any]:
    return {
        "apiVersion": "gputenancy.io/v1",
        "kind": "Platform",
        "kueueConfig": "kueue-config.yaml",
        "deviceClasses": [{"name": "gpu.nvidia.com", "resource": "nvidia.com/gpu"}],
        "hami": [{"name": "hami"}],
        "flavors": [
            {"name": "t4-hami", "nodeLabels": {"gpu": "on"}},
            {"name": "h100", "nodeLabels": {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}},
        ],
        "cohorts": [{"name": "share"}],
    }


def cluster(name: str = "site", version: str = "v0.19.2") -> dict[str, Any]:
    return {
        "apiVersion": "gputenancy.io/v1",
        "kind": "Cluster",
        "name": name,
        "kubernetesVersion": "1.35",
        "kueue": {"version": version, "install": "manifests"},
        "capacity": [
            {
                "flavor": "t4-hami",
                "hami": {"cards": 2, "memoryPerCard": "15Gi", "splitCount": 4},
                "resources": {"cpu": 32, "memory": "128Gi"},
            },
            {"flavor": "h100", "resources": {"cpu": 64, "memory": "512Gi"}},
        ],
    }


def tenant(name: str, hami: dict[str, Any], **fields: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "apiVersion": "gputenancy.io/v1",
        "kind": "Tenant",
        "name": name,
        "owners": [f"@acme/{name}"],
        "clusters": ["site"],
        "namespaces": [name],
        "cohort": "share",
        "budgets": {
            "default": [{"flavor": "t4-hami", "hami": hami, "resources": {"cpu": 8, "memory": "32Gi"}}]
        },
    }
    body.update(fields)
    return body


def build(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    trees.write(root, "base/platform.yaml", platform())
    trees.write(root, "base/kueue-config.yaml", KUEUE_CONFIG)
    trees.write(root, "overlays/site/cluster.yaml", cluster())
    trees.write(
        root,
        "overlays/site/kustomization.yaml",
        {
            "apiVersion": "kustomize.config.k8s.io/v1beta1",
            "kind": "Kustomization",
            "resources": ["_platform"],
        },
    )
    trees.write(
        root,
        "tenants/notebooks.yaml",
        tenant(
            "notebooks",
            {"vgpus": {"nominal": 4, "borrowingLimit": 2}, "memory": "16000Mi", "cores": 150},
            vgpuTemplates=[{"name": "notebook", "vgpus": 1, "memory": "3Gi", "cores": 25}],
        ),
    )
    trees.write(
        root,
        "tenants/serving.yaml",
        tenant(
            "serving",
            {"vgpus": 4, "memory": "12Gi", "cores": {"nominal": 50, "lendingLimit": 25}},
            vgpuTemplates=[{"name": "server", "vgpus": 2, "memory": "6Gi", "cores": 25}],
        ),
    )
    return root
