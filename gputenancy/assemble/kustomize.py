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
A shard starts building as soon as it is full (`Build.add`), and groups are handed back one at a
time (`Build.group`), so rendering, kustomize and validation overlap. Objects the Component renames
or adds (namePrefix, generators) belong to no group: they come back from `Build.extra` (and the
engine does not cache that cluster's tenants). When the overlay has no tenant
Component there is nothing to transform and tenant objects skip kustomize altogether; the output is
the same bytes either way, because every object is re-serialised by `objects.to_yaml`.

Shard files are JSON documents (YAML flow syntax), which Python writes twenty times faster than
block YAML; an object holding a float is written as block YAML instead, since JSON spells some
floats (`1e+20`) in a way a YAML 1.1 reader takes for a string. Shard sizes and GOGC come from
measurements in docs/performance.md.
"""

from __future__ import annotations

import concurrent.futures
import hashlib
import json
import os
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from gputenancy.common import fastyaml, interrupt, proc, timing
from gputenancy.common.findings import Finding, Origin, PipelineError
from gputenancy.common.objects import ObjectKey, RenderedObject, key_of, to_yaml
from gputenancy.inputs import confine, kustomizations

PLATFORM_DIR = "_platform"
TENANT_COMPONENT = "tenants"
SHARD_SIZE = 250
"""Objects per kustomize process. Measured on 2 cores (docs/performance.md): a process costs ~55 ms to
start and ~0.8 ms per object, plus a quadratic term that dominates above ~400 objects; 200-350 is
the flat bottom of the curve, and smaller shards spread better over the workers."""
GOGC = "400"
"""Go garbage-collector target for kustomize processes (unless GOGC is set): they live for a fraction
of a second, and collecting less often saves about a fifth of their CPU time."""
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


def layer_files(objects: Sequence[RenderedObject]) -> dict[str, str]:
    """The files of the platform layer (`PLATFORM_DIR` in the overlay) as kustomize reads them."""
    return {
        "objects.yaml": "---\n".join(to_yaml(o.body) for o in objects),
        "kustomization.yaml": _kustomization(["objects.yaml"] if objects else []),
    }


def _write_layer(directory: Path, files: Mapping[str, str]) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (directory / name).write_text(text, encoding="utf-8")


def _command() -> list[str]:
    cmd = proc.kustomize_command()
    return cmd if "GOGC" in os.environ else ["env", f"GOGC={GOGC}", *cmd]


def _kustomize(directory: Path, stage: Path, blame: str) -> str:
    """kustomize's output for `directory` (YAML text; `_objects` reads it)."""
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
    return result.out


def _objects(text: str) -> list[Body]:
    docs = [d for d in fastyaml.load_all(text) if d is not None]
    return [d for d in docs if isinstance(d, dict)]


class _Packer:
    """Shards of at most `size` objects, filled group by group; a group is split only where it does not
    fit (a group larger than a shard fills whole shards). `add` returns the shards it closed."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.current: list[tuple[int, Sequence[RenderedObject]]] = []
        self.room = size

    def add(
        self, index: int, group: Sequence[RenderedObject]
    ) -> list[list[tuple[int, Sequence[RenderedObject]]]]:
        closed = []
        start = 0
        while start < len(group):
            if self.room == 0 or (
                self.room < len(group) - start and self.current and len(group) <= self.size
            ):
                closed.append(self.current)
                self.current, self.room = [], self.size
            take = group[start : start + self.room]
            self.current.append((index, take))
            self.room -= len(take)
            start += len(take)
        return closed

    def close(self) -> list[list[tuple[int, Sequence[RenderedObject]]]]:
        closed = [self.current] if self.current else []
        self.current, self.room = [], self.size
        return closed


class Stage:
    """The staging tree of one cluster: base/ and the overlay copied once, so what kustomize reads is
    fixed for the build and can be hashed (`digest`). Use as a context manager."""

    def __init__(self, root: Path, cluster: str, *, lap: Callable[[str], None] = timing.no_lap) -> None:
        """`lap`: the run's clock, lapped after the confinement walk ("boundary") and after the
        kustomizations are read and checked ("kustomizations")."""
        base, problems = confine.walk(root, "base")
        overlay, more = confine.walk(root, f"overlays/{cluster}")
        lap("boundary")
        problems += more + kustomizations.check(root, cluster)
        lap("kustomizations")
        if problems:
            raise PipelineError(problems)
        self.cluster = cluster
        self.path = interrupt.mkdtemp("gputenancy-")  # removed by `close`, or when a signal stops the run
        try:
            confine.copy(base, self.path / "base")
            confine.copy(overlay, self.overlay)
        except BaseException:
            self.close()
            raise
        self.component = (self.overlay / TENANT_COMPONENT / "kustomization.yaml").is_file()
        lap("boundary")

    @property
    def overlay(self) -> Path:
        return self.path / "overlays" / self.cluster

    def __enter__(self) -> Stage:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        interrupt.rmtree(self.path)

    def hermetic(self) -> bool:
        """True: kustomizations that name anything outside the staged files (remote bases, paths
        outside base/ and the overlay, helm charts, plugins) are refused before staging
        (`inputs.kustomizations`), so `digest` sees all that kustomize reads."""
        return True

    def digest(self) -> str:
        """sha256 over every staged file (relative path and bytes): all that kustomize can read."""
        h = hashlib.sha256()
        for path in sorted(p for p in self.path.rglob("*") if p.is_file()):
            rel = path.relative_to(self.path).as_posix().encode()
            data = path.read_bytes()
            h.update(b"%d:%s%d:" % (len(rel), rel, len(data)))
            h.update(data)
        return h.hexdigest()

    def begin(
        self,
        platform: Sequence[RenderedObject],
        pool: concurrent.futures.Executor,
        *,
        shard_size: int = SHARD_SIZE,
        layer: Mapping[str, str] | None = None,
        overlay_output: str | None = None,
    ) -> Build:
        """Write the platform layer (`layer`: its `layer_files`, when the caller has them) and start
        its build, unless `overlay_output` is what kustomize printed for this overlay and layer before;
        tenant groups follow with `Build.add`."""
        return Build(self, platform, pool, shard_size, layer=layer, overlay_output=overlay_output)


class Build:
    """The kustomize processes of one cluster. The overlay (platform layer) builds at once; tenant
    groups are packed into shards as they are added, and each full shard starts building right away,
    so kustomize runs while the caller renders the next tenants. Results are taken group by group
    (`group` waits only for the shards that hold that group), so the caller can validate the first
    tenants while later shards still build. The pool's threads only run kustomize; its output is
    parsed by the caller when it takes the results, so parsing (Python, under the GIL) never keeps a
    worker from starting the next kustomize process. kustomize problems raise PipelineError from whichever
    method first waits for the failed process."""

    def __init__(
        self,
        stage: Stage | None,
        platform: Sequence[RenderedObject],
        pool: concurrent.futures.Executor | None = None,
        shard_size: int = SHARD_SIZE,
        *,
        layer: Mapping[str, str] | None = None,
        overlay_output: str | None = None,
    ) -> None:
        """Without a stage nothing is built: objects come back as rendered (`--no-kustomize`).
        `overlay_output`: the overlay's build output from before (the same staged files and layer)."""
        self._stage, self._pool = stage, pool
        self._component = stage is not None and stage.component
        cluster = stage.cluster if stage is not None else ""
        self._blame = f"overlays/{cluster}/kustomization.yaml"
        self._fallback = Origin(self._blame)
        self._rendered_platform = list(platform)
        self._platform_job: concurrent.futures.Future[tuple[str, float]] | None = None
        self._built_platform: list[RenderedObject] | None = None
        self.overlay_output: str | None = overlay_output
        """kustomize's output for the overlay, once `platform` has it."""
        if stage is not None:
            assert pool is not None, "a build needs a pool"
            _write_layer(stage.overlay / PLATFORM_DIR, layer or layer_files(platform))
            if overlay_output is None:
                self._platform_job = pool.submit(self._job, stage.overlay)
        else:
            self._built_platform = self._rendered_platform
        self._packer = _Packer(max(1, shard_size))
        self._groups: list[Sequence[RenderedObject]] = []
        self._last_shard: list[int] = []  # per group: the last shard holding its objects, -1 if none
        self._jobs: list[concurrent.futures.Future[tuple[str, float]]] = []
        self._owners: list[dict[ObjectKey, int]] = []
        self._collected = 0  # shards whose bodies are sorted into groups
        self._found: list[list[Body]] = []
        self._extra: list[Body] = []
        self.seconds = 0.0  # summed wall time of the kustomize processes collected so far

    @property
    def shards(self) -> int:
        return len(self._jobs)

    def _job(self, directory: Path) -> tuple[str, float]:
        assert self._stage is not None
        started = time.perf_counter()
        interrupt.checkpoint("kustomize")
        text = _kustomize(directory, self._stage.path, self._blame)
        return text, time.perf_counter() - started

    def _submit(self, shard: list[tuple[int, Sequence[RenderedObject]]]) -> None:
        assert self._stage is not None and self._pool is not None
        n = len(self._jobs)
        directory = self._stage.path / "shards" / str(n)
        directory.mkdir(parents=True)
        (directory / "objects.json").write_text(
            "---\n".join(_document(o.body) for _, objects in shard for o in objects), encoding="utf-8"
        )
        (directory / "kustomization.yaml").write_text(
            _kustomization(["objects.json"], [f"../../overlays/{self._stage.cluster}/{TENANT_COMPONENT}"]),
            encoding="utf-8",
        )
        for index, _ in shard:
            self._last_shard[index] = n
        self._owners.append({o.key: index for index, objects in shard for o in objects})
        self._jobs.append(self._pool.submit(self._job, directory))

    def add(self, group: Sequence[RenderedObject]) -> int:
        """Queue one tenant's objects; returns the group's index."""
        index = len(self._groups)
        self._groups.append(group)
        self._last_shard.append(-1)
        self._found.append([])
        if self._component:
            for shard in self._packer.add(index, group):
                self._submit(shard)
        return index

    def close(self) -> None:
        """No more groups: start the last, partly filled shard."""
        if self._component:
            for shard in self._packer.close():
                self._submit(shard)

    def cancel(self) -> None:
        for job in self._jobs:
            job.cancel()

    def _collect(self, upto: int) -> None:
        """Sort the bodies of shards up to `upto` (exclusive) into their groups, in shard order."""
        try:
            while self._collected < upto:
                text, seconds = self._jobs[self._collected].result()
                owner = self._owners[self._collected]
                self.seconds += seconds
                for body in _objects(text):
                    index = owner.get(key_of(body))
                    (self._found[index] if index is not None else self._extra).append(body)
                self._collected += 1
        except BaseException:
            self.cancel()
            raise

    def platform(self) -> list[RenderedObject]:
        """The overlay's built objects (the platform layer and anything the overlay adds)."""
        if self._built_platform is None:
            assert self._stage is not None
            text = self.overlay_output
            if text is None:
                assert self._platform_job is not None
                try:
                    text, seconds = self._platform_job.result()
                except BaseException:
                    self.cancel()
                    raise
                self.seconds += seconds
                self.overlay_output = text
            self._built_platform = _reattach(
                self._stage.cluster, _objects(text), self._rendered_platform, self._fallback
            )
        return list(self._built_platform)

    def group(self, index: int) -> list[RenderedObject]:
        """The built objects of group `index` (waits for the shards that hold it)."""
        group = self._groups[index]
        if self._stage is None:
            return list(group)
        if not self._component:
            return _reattach(self._stage.cluster, [dict(o.body) for o in group], group, self._fallback)
        if self._last_shard[index] >= 0:
            self._collect(self._last_shard[index] + 1)
        return _reattach(self._stage.cluster, self._found[index], group, self._fallback)

    def extra(self) -> list[RenderedObject]:
        """Objects that came out of tenant shards under a key that went into none of them (renamed or
        generated by the Component); waits for every shard."""
        if self._stage is None:
            return []
        self._collect(len(self._jobs))
        return _reattach(self._stage.cluster, self._extra, [], self._fallback)


def duplicates(cluster: str, objects: Sequence[RenderedObject], blame: Origin) -> list[Finding]:
    """An object produced twice on one cluster, blamed on the overlay (the first one is kept). Objects are
    compared by the fields of their `ObjectKey`, which is made only for a duplicate."""
    seen: set[tuple[str, str, str, str]] = set()
    found = []
    groups: dict[str, str] = {}  # apiVersion -> group, as key_of reads it
    for obj in objects:
        body = obj.body
        meta = body.get("metadata") or {}
        api_version = body.get("apiVersion", "")
        group = groups.get(api_version) if type(api_version) is str else None
        if group is None:
            group = key_of({"apiVersion": api_version}).group
            if type(api_version) is str:
                groups[api_version] = group
        fields = (
            group,
            str(body.get("kind", "")),
            str(meta.get("namespace", "") or ""),
            str(meta.get("name", "")),
        )
        if fields in seen:
            found.append(
                blame.finding("duplicate-object", f"{obj.key} is produced twice on cluster {cluster!r}")
            )
        seen.add(fields)
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
        running = stage.begin(platform, pool, shard_size=shard_size)
        running.add(tenants)
        running.close()
        objects = [*running.platform(), *running.group(0), *running.extra()]
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
