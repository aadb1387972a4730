"""kustomize: the overlay builds on base/ and the rendered cluster layer; tenant objects go through the
overlay's tenant Component in shards, built in parallel.

Staging tree (a temporary directory, removed afterwards):

    base/                      copy of base/
    overlays/<cluster>/        copy of the overlay; its kustomization.yaml lists `_platform`
    overlays/<cluster>/_platform/   rendered DeviceClasses, ResourceFlavors, Cohorts, Kueue config
    shards/<n>/                tenant objects + `components: [../../overlays/<cluster>/tenants]`

kustomize's build time grows quadratically with the number of objects, so tenant objects never go
through one build: they are split into shards of SHARD_SIZE objects. When the overlay has no tenant
Component there is nothing to transform and tenant objects skip kustomize altogether; the output is
the same bytes either way, because every object is re-serialised by `objects.to_yaml`.
"""

from __future__ import annotations

import concurrent.futures
import os
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from gputenancy import proc
from gputenancy.findings import Finding, Origin, PipelineError, Severity
from gputenancy.objects import ObjectKey, RenderedObject, key_of, to_yaml

PLATFORM_DIR = "_platform"
TENANT_COMPONENT = "tenants"
SHARD_SIZE = 400
_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _write_layer(directory: Path, objects: Sequence[RenderedObject], components: Sequence[str] = ()) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "objects.yaml").write_text("---\n".join(to_yaml(o.body) for o in objects), encoding="utf-8")
    kustomization: dict[str, Any] = {
        "apiVersion": "kustomize.config.k8s.io/v1beta1",
        "kind": "Kustomization",
        "resources": ["objects.yaml"] if objects else [],
    }
    if components:
        kustomization["components"] = list(components)
    (directory / "kustomization.yaml").write_text(
        yaml.safe_dump(kustomization, sort_keys=False), encoding="utf-8"
    )


def _kustomize(directory: Path, stage: Path, blame: str) -> list[dict[str, Any]]:
    try:
        result = proc.run([*proc.kustomize_command(), str(directory)])
    except PipelineError as exc:
        raise PipelineError(
            Finding(blame, 0, 0, f.severity, "kustomize", f.message.replace(f"{stage}/", "").replace(str(stage), "."))
            for f in exc.findings
        ) from None
    docs = [d for d in yaml.load_all(result.out, Loader=_Loader) if d is not None]  # noqa: S506 - safe loader
    return [d for d in docs if isinstance(d, dict)]


def _check_overlay(root: Path, cluster: str) -> list[Finding]:
    path = root / "overlays" / cluster / "kustomization.yaml"
    rel = path.relative_to(root).as_posix()
    if not path.is_file():
        return [
            Finding(
                rel,
                0,
                0,
                Severity.ERROR,
                "cluster-kustomization",
                f"{rel} is required (resources: [../../base, {PLATFORM_DIR}])",
            )
        ]
    data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    listed = [str(r).rstrip("/") for r in (data.get("resources") or [])] if isinstance(data, dict) else []
    if PLATFORM_DIR not in listed:
        return [
            Finding(
                rel,
                1,
                1,
                Severity.ERROR,
                "cluster-kustomization",
                f"{rel} must list {PLATFORM_DIR!r} in resources: it is where the pipeline puts the rendered cluster layer",
            )
        ]
    return []


def build(
    root: Path,
    cluster: str,
    platform: Sequence[RenderedObject],
    tenants: Sequence[RenderedObject],
    *,
    shard_size: int = SHARD_SIZE,
    workers: int | None = None,
) -> list[RenderedObject]:
    """Run kustomize for one cluster and return the built objects with provenance re-attached."""
    problems = _check_overlay(root, cluster)
    if problems:
        raise PipelineError(problems)
    overlay_origin = Origin(f"overlays/{cluster}/kustomization.yaml")
    component = root / "overlays" / cluster / TENANT_COMPONENT / "kustomization.yaml"
    with tempfile.TemporaryDirectory(prefix="gputenancy-") as tmp:
        stage = Path(tmp)
        shutil.copytree(root / "base", stage / "base", symlinks=False)
        overlay = stage / "overlays" / cluster
        shutil.copytree(root / "overlays" / cluster, overlay, symlinks=False)
        _write_layer(overlay / PLATFORM_DIR, platform)
        jobs = [overlay]
        if component.is_file() and tenants:
            for n, start in enumerate(range(0, len(tenants), shard_size)):
                shard = stage / "shards" / str(n)
                _write_layer(
                    shard,
                    tenants[start : start + shard_size],
                    [f"../../overlays/{cluster}/{TENANT_COMPONENT}"],
                )
                jobs.append(shard)
        with concurrent.futures.ThreadPoolExecutor(max_workers=workers or os.cpu_count() or 2) as pool:
            blame = f"overlays/{cluster}/kustomization.yaml"
            built = list(pool.map(lambda job: _kustomize(job, stage, blame), jobs))
    bodies = [b for part in built for b in part]
    if not (component.is_file() and tenants):
        bodies.extend(dict(o.body) for o in tenants)
    return _reattach(cluster, bodies, [*platform, *tenants], overlay_origin)


def _reattach(
    cluster: str, bodies: Sequence[Mapping[str, Any]], rendered: Sequence[RenderedObject], fallback: Origin
) -> list[RenderedObject]:
    by_key: dict[ObjectKey, RenderedObject] = {o.key: o for o in rendered}
    out = []
    seen: dict[ObjectKey, int] = {}
    findings = []
    for body in bodies:
        key = key_of(body)
        if key in seen:
            findings.append(
                fallback.finding("duplicate-object", f"{key} is produced twice on cluster {cluster!r}")
            )
            continue
        seen[key] = 1
        source = by_key.get(key)
        if source is None:
            out.append(RenderedObject(cluster, body, fallback))
        else:
            out.append(RenderedObject(cluster, body, source.origin, source.field_origins))
    if findings:
        raise PipelineError(findings)
    return out
