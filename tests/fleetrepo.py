"""A small MultiKueue fleet built inside a test: a manager `mgr` without capacity and two workers, `w1`
(H100) and `w2` (H200), with two tenants placed on the manager. Independent of the example content."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import repokit

GPU = repokit.GPU
SELECTOR = "device.attributes['gpu.nvidia.com'].productName != ''"
WORKERS = ("w1", "w2")
FLAVOR_OF = {"w1": "h100", "w2": "h200"}


def manager(
    name: str = "mgr", workers: Iterable[str] = WORKERS, version: str = "v0.19.2", **mk: Any
) -> dict[str, Any]:
    body = repokit.cluster(name, kueue=version)
    del body["capacity"]
    body["multiKueue"] = {"workers": list(workers), **mk}
    return body


def worker(
    name: str, version: str = "v0.19.2", gpus: int = 8, flavor: str | None = None, **fields: Any
) -> dict[str, Any]:
    chosen = flavor or FLAVOR_OF.get(name, "h100")
    capacity = {
        "flavor": chosen,
        "devices": {GPU: gpus},
        # the devices the workers' selectors are judged against (claim-devices)
        "inventory": [{"deviceClass": GPU, "attributes": {"productName": f"NVIDIA {chosen.upper()}"}}],
        "resources": repokit.POD_CAPACITY,
    }
    return repokit.cluster(name, (capacity,), kueue=version, **fields)


def budget(flavor: str, gpus: int, borrowing: int | None = None) -> list[dict[str, Any]]:
    amount: Any = gpus if borrowing is None else {"nominal": gpus, "borrowingLimit": borrowing}
    return [{"flavor": flavor, "devices": {GPU: amount}, "resources": dict(repokit.POD)}]


def tenant(
    name: str,
    gpus: Mapping[str, int],
    *,
    on: Iterable[str] = ("mgr",),
    flavor_of: Mapping[str, str] = FLAVOR_OF,
    **fields: Any,
) -> dict[str, Any]:
    body = repokit.tenant(name, cohort="research", **fields)
    body["clusters"] = list(on)
    body["budgets"] = {
        "clusters": {w: budget(flavor_of.get(w, "h100"), n, borrowing=1) for w, n in gpus.items()}
    }
    body.setdefault(
        "claimTemplates",
        [{"name": "gpu-x2", "deviceClass": GPU, "count": 2, "selectors": [SELECTOR]}],
    )
    return body


ARGOCD = {"repoURL": "https://example.com/fleet.git", "targetRevision": "deploy", "path": "generated"}
TEAMS = (
    tenant("nlp", {"w1": 4, "w2": 2}, namespaces=["nlp-train", "nlp-serve"]),
    tenant("speech", {"w1": 2, "w2": 4}),
)


def write(
    root: Path,
    *,
    version: str = "v0.19.2",
    tenants: Iterable[Mapping[str, Any]] = TEAMS,
    clusters: Iterable[Mapping[str, Any]] | None = None,
    kueue_config: Mapping[str, Any] = repokit.BASE_CONFIG,
    platform_fields: Mapping[str, Any] | None = None,
    **mk: Any,
) -> Path:
    """The fleet under root; `mk` adds settings to the manager's `multiKueue`, `platform_fields` to
    base/platform.yaml."""
    chosen = (
        list(clusters)
        if clusters is not None
        else [manager(version=version, **mk), worker("w1", version), worker("w2", version)]
    )
    platform = repokit.platform(flavors=("h100", "h200"))
    platform["argocd"] = dict(ARGOCD)  # the hub's Applications for every cluster
    platform.update(platform_fields or {})
    return repokit.write(
        root, tenants, chosen, platform_body=platform, kueue_config=kueue_config, component=True
    )
