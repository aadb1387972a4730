"""kustomize: the overlay builds on base/ and the rendered cluster layer; tenant objects go through the
overlay's tenant Component in shards, built in parallel.

Staging tree (a temporary directory, removed afterwards):

    base/                      copy of base/
    overlays/<cluster>/        copy of the overlay; its kustomization.yaml lists `_platform`
    overlays/<cluster>/_platform/   rendered DeviceClasses, ResourceFlavors, Cohorts, Kueue config
    shards/<n>/                tenant objects (objects.json) and
                               `components: [../../overlays/<cluster>/tenants]`

kustomize's build time grows quadratically with the number of objects, so tenant objects never go
through one build: they are split into shards of about SHARD_SIZE objects, one kustomize process
each, `workers` at a time. Objects come in groups (one tenant's objects); a shard holds whole groups
where it can, and each built object goes back to the group of the object with its key in its shard.
Objects the Component renames or adds (namePrefix, generators) belong to no group: they come back as
`Built.extra` (and the engine does not cache that cluster's tenants). When the overlay has no tenant
Component there is nothing to transform and tenant objects skip kustomize altogether; the output is
the same bytes either way, because every object is re-serialised by `objects.to_yaml`.

Shard files are JSON documents (YAML flow syntax), which Python writes twenty times faster than
block YAML; an object holding a float is written as block YAML instead, since JSON spells some
floats (`1e+20`) in a way a YAML 1.1 reader takes for a string. Shard sizes and GOGC come from
measurements in docs/performance.md.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import hashlib
import json
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from gputenancy import fastyaml, proc
from gputenancy.findings import Finding, Origin, PipelineError, Severity
from gputenancy.objects import ObjectKey, RenderedObject, key_of, to_yaml

PLATFORM_DIR = "_platform"
TENANT_COMPONENT = "tenants"
SHARD_SIZE = 250
"""Objects per kustomize process. Measured on 2 cores (docs/performance.md): a process costs ~55 ms to
start and ~0.8 ms per object, plus a quadratic term that dominates above ~400 objects; 200-350 is
the flat bottom of the curve, and smaller shards spread better over the workers."""
GOGC = "400"
"""Go garbage-collector target for kustomize processes (unless GOGC is set): they live for a fraction
of a second, and collecting less often saves about a fifth of their CPU time."""
KUSTOMIZATION_FILES = ("kustomization.yaml", "kustomization.yml", "Kustomization")
_REMOTE = ("://", "git@", "github.com/", "gitlab.com/", "bitbucket.org/")
Body = dict[str, Any]


def _has_float(value: Any) -> bool:
    if isinstance(value, float):
        return True
    if isinstance(value, dict):
        return any(_has_float(v) for v in value.values())
    if isinstance(value, list):
        return any(_has_float(v) for v in value)
    return False


def _document(body: Mapping[str, Any]) -> str:
    return to_yaml(body) if _has_float(body) else json.dumps(body) + "\n"


def _kustomization(resources: Sequence[str], components: Sequence[str] = ()) -> str:
    kustomization: dict[str, Any] = {
        "apiVersion": "kustomize.config.k8s.io/v1beta1",
        "kind": "Kustomization",
        "resources": list(resources),
    }
    if components:
        kustomization["components"] = list(components)
    return yaml.safe_dump(kustomization, sort_keys=False)


def _write_layer(directory: Path, objects: Sequence[RenderedObject]) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "objects.yaml").write_text("---\n".join(to_yaml(o.body) for o in objects), encoding="utf-8")
    (directory / "kustomization.yaml").write_text(
        _kustomization(["objects.yaml"] if objects else []), encoding="utf-8"
    )


def _command() -> list[str]:
    cmd = proc.kustomize_command()
    return cmd if "GOGC" in os.environ else ["env", f"GOGC={GOGC}", *cmd]


def _kustomize(directory: Path, stage: Path, blame: str) -> list[Body]:
    try:
        result = proc.run([*_command(), str(directory)])
    except PipelineError as exc:
        raise PipelineError(
            Finding(
                blame,
                0,
                0,
                f.severity,
                "kustomize",
                f.message.replace(f"{stage}/", "").replace(str(stage), "."),
            )
            for f in exc.findings
        ) from None
    docs = [d for d in fastyaml.load_all(result.out) if d is not None]
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
                f"{rel} must list {PLATFORM_DIR!r} in resources: "
                "it is where the pipeline puts the rendered cluster layer",
            )
        ]
    return []


def _remote(path: Path) -> bool:
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (yaml.YAMLError, UnicodeDecodeError):
        return False  # kustomize fails on it anyway
    if not isinstance(data, dict):
        return False
    if data.get("helmCharts") or data.get("helmGlobals"):
        return True
    return any(
        isinstance(entry, str) and any(marker in entry for marker in _REMOTE)
        for field in ("resources", "components", "bases")
        for entry in (data.get(field) or [])
    )


def _pack(
    groups: Sequence[Sequence[RenderedObject]], shard_size: int
) -> list[list[tuple[int, Sequence[RenderedObject]]]]:
    """Shards of at most `shard_size` objects; a group is split only where it does not fit."""
    shards: list[list[tuple[int, Sequence[RenderedObject]]]] = []
    current: list[tuple[int, Sequence[RenderedObject]]] = []
    room = shard_size
    for index, group in enumerate(groups):
        start = 0
        while start < len(group):
            if room == 0 or (room < len(group) - start and current and len(group) <= shard_size):
                shards.append(current)
                current, room = [], shard_size
            take = group[start : start + room]
            current.append((index, take))
            room -= len(take)
            start += len(take)
    if current:
        shards.append(current)
    return shards


@dataclasses.dataclass(frozen=True)
class Built:
    """What kustomize returned: the platform layer, the tenant objects per input group, and the objects
    that came out of tenant shards under a key that went in to none of them (renamed or generated)."""

    platform: list[RenderedObject]
    groups: list[list[RenderedObject]]
    extra: list[RenderedObject]
    shards: int
    seconds: float  # summed wall time of the kustomize processes


class Stage:
    """The staging tree of one cluster: base/ and the overlay copied once, so what kustomize reads is
    fixed for the build and can be hashed (`digest`). Use as a context manager."""

    def __init__(self, root: Path, cluster: str) -> None:
        problems = _check_overlay(root, cluster)
        if problems:
            raise PipelineError(problems)
        self.cluster = cluster
        self._tmp = tempfile.TemporaryDirectory(prefix="gputenancy-")
        self.path = Path(self._tmp.name)
        try:
            shutil.copytree(root / "base", self.path / "base", symlinks=False)
            shutil.copytree(root / "overlays" / cluster, self.overlay, symlinks=False)
        except BaseException:
            self._tmp.cleanup()
            raise
        self.component = (self.overlay / TENANT_COMPONENT / "kustomization.yaml").is_file()

    @property
    def overlay(self) -> Path:
        return self.path / "overlays" / self.cluster

    def __enter__(self) -> Stage:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._tmp.cleanup()

    def hermetic(self) -> bool:
        """False when a kustomization names something outside the staged files (a remote base or
        component: a URL or a git address), whose changes `digest` cannot see."""
        return not any(
            _remote(path)
            for path in self.path.rglob("*")
            if path.name in KUSTOMIZATION_FILES and path.is_file()
        )

    def digest(self) -> str:
        """sha256 over every staged file (relative path and bytes): all that kustomize can read."""
        h = hashlib.sha256()
        for path in sorted(p for p in self.path.rglob("*") if p.is_file()):
            rel = path.relative_to(self.path).as_posix().encode()
            data = path.read_bytes()
            h.update(b"%d:%s%d:" % (len(rel), rel, len(data)))
            h.update(data)
        return h.hexdigest()

    def start(
        self,
        platform: Sequence[RenderedObject],
        groups: Sequence[Sequence[RenderedObject]],
        pool: concurrent.futures.Executor,
        *,
        shard_size: int = SHARD_SIZE,
    ) -> Callable[[], Built]:
        """Write the layers and submit the kustomize processes; returns the function that waits for
        them and re-attaches provenance (raises PipelineError on kustomize or duplicate problems)."""
        stage, cluster = self.path, self.cluster
        blame = f"overlays/{cluster}/kustomization.yaml"
        _write_layer(self.overlay / PLATFORM_DIR, platform)

        def job(directory: Path) -> tuple[list[Body], float]:
            started = time.perf_counter()
            bodies = _kustomize(directory, stage, blame)
            return bodies, time.perf_counter() - started

        platform_job = pool.submit(job, self.overlay)
        shard_jobs = []
        owners: list[dict[ObjectKey, int]] = []
        if self.component:
            for n, shard in enumerate(_pack(groups, max(1, shard_size))):
                directory = stage / "shards" / str(n)
                directory.mkdir(parents=True)
                (directory / "objects.json").write_text(
                    "---\n".join(_document(o.body) for _, objects in shard for o in objects), encoding="utf-8"
                )
                (directory / "kustomization.yaml").write_text(
                    _kustomization(["objects.json"], [f"../../overlays/{cluster}/{TENANT_COMPONENT}"]),
                    encoding="utf-8",
                )
                owners.append({o.key: index for index, objects in shard for o in objects})
                shard_jobs.append(pool.submit(job, directory))

        def wait() -> Built:
            fallback = Origin(blame)
            try:
                bodies, seconds = platform_job.result()
                outputs = [j.result() for j in shard_jobs]
            finally:
                for j in shard_jobs:
                    j.cancel()
            built_platform = _reattach(cluster, bodies, platform, fallback)
            per_group: list[list[Body]] = [[] for _ in groups]
            extra: list[Body] = []
            if self.component:
                for (shard_bodies, shard_seconds), owner in zip(outputs, owners, strict=True):
                    seconds += shard_seconds
                    for body in shard_bodies:
                        index = owner.get(key_of(body))
                        (per_group[index] if index is not None else extra).append(body)
            else:
                per_group = [[dict(o.body) for o in group] for group in groups]
            built_groups = [
                _reattach(cluster, found, group, fallback)
                for found, group in zip(per_group, groups, strict=True)
            ]
            return Built(
                built_platform,
                built_groups,
                _reattach(cluster, extra, [], fallback),
                len(shard_jobs),
                seconds,
            )

        return wait


def duplicates(cluster: str, objects: Sequence[RenderedObject], blame: Origin) -> list[Finding]:
    """An object produced twice on one cluster, blamed on the overlay (the first one is kept)."""
    seen: set[ObjectKey] = set()
    found = []
    for obj in objects:
        key = obj.key
        if key in seen:
            found.append(blame.finding("duplicate-object", f"{key} is produced twice on cluster {cluster!r}"))
        seen.add(key)
    return found


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
    with (
        Stage(root, cluster) as stage,
        concurrent.futures.ThreadPoolExecutor(max_workers=workers or os.cpu_count() or 2) as pool,
    ):
        built = stage.start(platform, [tenants], pool, shard_size=shard_size)()
    objects = [*built.platform, *(o for g in built.groups for o in g), *built.extra]
    problems = duplicates(cluster, objects, Origin(f"overlays/{cluster}/kustomization.yaml"))
    if problems:
        raise PipelineError(problems)
    return objects


def _reattach(
    cluster: str, bodies: Sequence[Body], rendered: Sequence[RenderedObject], fallback: Origin
) -> list[RenderedObject]:
    by_key: dict[ObjectKey, RenderedObject] = {o.key: o for o in rendered}
    out = []
    for body in bodies:
        source = by_key.get(key_of(body))
        if source is None:
            out.append(RenderedObject(cluster, body, fallback))
        else:
            out.append(RenderedObject(cluster, body, source.origin, source.field_origins))
    return out
