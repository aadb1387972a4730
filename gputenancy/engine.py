"""The pipeline in memory: load -> rules -> render -> kustomize -> validate -> trees. No writes here, but
for the cache (`gputenancy.cache`: loaded input files, per-tenant results).

Per cluster, the platform layer (DeviceClasses, ResourceFlavors, Cohorts, the Kueue Configuration) is
rendered, built and validated on every run. Tenant objects are handled per (tenant, cluster): a cache
entry holds the tenant's built objects, their generated/ files and the validation findings about them,
under a key over everything that can change them, so only tenants whose inputs changed are rendered,
built with kustomize and validated. Output is the same with and without the cache: both paths
validate and serialise one tenant at a time, and an entry is exactly what that produced. A cluster's
entries are kept in packs (`cache.Packs`) named by the cluster's key.

kustomize runs in a thread pool shared by all clusters. A shard starts as soon as the tenants that
fill it are rendered, so kustomize builds while the next tenants and clusters render; then each
tenant is validated and serialised as soon as the shards holding it are done (`build.Build.group`).
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import dataclasses
import gc
import json
import os
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from gputenancy import fastyaml, proc
from gputenancy.build import kustomize as build
from gputenancy.build import output
from gputenancy.cache import Cache, Packs, digest, location, software, tree_digest
from gputenancy.findings import Finding, Origin, PipelineError, Severity
from gputenancy.inputs.spec import Cluster, Model, Tenant, load_model
from gputenancy.objects import RenderedObject
from gputenancy.policy import rules
from gputenancy.render.manifests import render_platform, render_tenant

TENANT_ENTRY = "tenant"
PLATFORM_ENTRY = "platform"
# validate_objects reports these once per call; tenants are validated one call each, so keep the first.
_ONCE_PER_RUN = ("crd-cel-unsupported", "k8s-version-unsupported")


@dataclasses.dataclass(frozen=True)
class ClusterResult:
    name: str
    objects: tuple[RenderedObject, ...]
    tree: Mapping[str, bytes]


@dataclasses.dataclass(frozen=True)
class Stats:
    """What a run did. `hits`/`misses` count (tenant, cluster) cache lookups; `rendered` lists the
    (cluster, tenant) pairs rendered, built and validated in this run; `corrupt` counts cache entries
    found but not usable; `seconds` is wall time per stage (load = reading inputs and model rules;
    kustomize = waiting for kustomize after rendering; `kustomize_seconds` sums the processes)."""

    cache: str | None = None
    hits: int = 0
    misses: int = 0
    corrupt: int = 0
    rendered: tuple[tuple[str, str], ...] = ()
    shards: int = 0
    kustomize_seconds: float = 0.0
    seconds: Mapping[str, float] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(frozen=True)
class Result:
    model: Model
    clusters: Mapping[str, ClusterResult]
    findings: tuple[Finding, ...]
    notes: tuple[str, ...]
    stats: Stats = dataclasses.field(default_factory=Stats)

    @property
    def failed(self) -> bool:
        return any(f.severity is Severity.ERROR for f in self.findings)


def crd_dir_for(schemas: Path | None, kueue_version: str) -> Path | None:
    """<schemas>/kueue/<version>/crds, or <schemas>/<version>/crds, or None."""
    if schemas is None:
        return None
    for candidate in (schemas / "kueue" / kueue_version / "crds", schemas / kueue_version / "crds"):
        if candidate.is_dir():
            return candidate
    return None


def check_only(
    root: Path,
    cluster: str | None = None,
    *,
    cache: Cache | Path | Literal["auto"] | None = "auto",
) -> tuple[Model, list[Finding]]:
    """Load and run the model rules; raises PipelineError on load errors.

    `cache` as for `run`: input files loaded before with the same bytes are read from it instead of
    being parsed again (`source.load`)."""
    model, findings = load_model(root, cluster=cluster, cache=_open(root, cache))
    return model, sorted(set(findings) | set(rules.check(model)))


# ------------------------------------------------------------------------------ per-tenant results


@dataclasses.dataclass(frozen=True)
class _Done:
    """One tenant on one cluster, finished: built objects, their generated/ files, findings."""

    objects: tuple[RenderedObject, ...]
    files: tuple[tuple[str, bytes], ...]
    findings: tuple[Finding, ...]


def _plain(value: Any) -> bool:
    """True when JSON gives `value` back unchanged (string keys, JSON types only)."""
    if isinstance(value, dict):
        return all(isinstance(k, str) and _plain(v) for k, v in value.items())
    if isinstance(value, list):
        return all(_plain(v) for v in value)
    return value is None or isinstance(value, str | int | float)


def _encode(done: _Done) -> dict[str, Any] | None:
    if not all(_plain(dict(o.body)) for o in done.objects):
        return None
    return {
        "objects": [
            [dict(o.body), [o.origin.path, o.origin.line, o.origin.col], path, data.decode()]
            for o, (path, data) in zip(done.objects, done.files, strict=True)
        ],
        "findings": [[f.path, f.line, f.col, f.severity.value, f.rule, f.message] for f in done.findings],
    }


def _decode(cluster: str, value: Any) -> _Done | None:
    """An entry back to records; None when it does not have the expected shape."""
    try:
        objects, files = [], []
        for body, (path, line, col), rel, text in value["objects"]:
            if not isinstance(body, dict) or not isinstance(rel, str) or not isinstance(text, str):
                return None
            objects.append(RenderedObject(cluster, body, Origin(str(path), int(line), int(col))))
            files.append((rel, text.encode()))
        findings = tuple(
            Finding(str(p), int(line), int(col), Severity(sev), str(rule), str(message))
            for p, line, col, sev, rule, message in value["findings"]
        )
    except (KeyError, TypeError, ValueError):
        return None
    return _Done(tuple(objects), tuple(files), findings)


def _files(objects: Sequence[RenderedObject]) -> tuple[list[tuple[str, bytes]], list[Finding]]:
    """generated/ paths and bytes of objects, or the findings of those that cannot be written."""
    files, findings = [], []
    for obj in objects:
        try:
            files.append((output.object_path(obj), fastyaml.dump(obj.body).encode()))
        except PipelineError as exc:
            findings.extend(exc.findings)
    return files, findings


def _platform_report(
    store: Cache | None,
    cluster_key: str,
    objects: Sequence[RenderedObject],
    check: Callable[[Sequence[RenderedObject]], Any],
) -> tuple[list[Finding], list[str]]:
    """Validation of the platform layer, from the cache when these exact objects (bodies and where
    each field came from) were validated before for this cluster."""
    key = ""
    if store is not None and all(_plain(dict(o.body)) for o in objects):
        key = digest(
            cluster_key,
            *(
                json.dumps(o.body, sort_keys=True)
                + repr(o.origin)
                + repr(sorted(o.field_origins.items(), key=repr))
                for o in objects
            ),
        )
        value = store.get(PLATFORM_ENTRY, key)
        try:
            if value is not None:
                found = [
                    Finding(str(p), int(line), int(col), Severity(sev), str(rule), str(message))
                    for p, line, col, sev, rule, message in value["findings"]
                ]
                return found, [str(n) for n in value["skipped"]]
        except (KeyError, TypeError, ValueError):
            store.corrupt += 1
    report = check(objects)
    if key and store is not None:
        store.put(
            PLATFORM_ENTRY,
            key,
            {
                "findings": [
                    [f.path, f.line, f.col, f.severity.value, f.rule, f.message] for f in report.findings
                ],
                "skipped": list(report.skipped),
            },
        )
    return list(report.findings), list(report.skipped)


def _once_per_run(findings: Sequence[Finding]) -> list[Finding]:
    seen: set[tuple[str, str]] = set()
    out = []
    for f in findings:
        if f.rule in _ONCE_PER_RUN:
            kind = f.message.split(" ", 1)[0] if f.rule == "crd-cel-unsupported" else ""
            what = (kind, f.message[f.message.find("CEL rule") :] if kind else f.rule)
            if what in seen:
                continue
            seen.add(what)
        out.append(f)
    return out


# ------------------------------------------------------------------------------ the run


@dataclasses.dataclass
class _Clock:
    seconds: dict[str, float] = dataclasses.field(default_factory=dict)
    last: float = dataclasses.field(default_factory=time.perf_counter)

    def lap(self, stage: str) -> None:
        now = time.perf_counter()
        self.seconds[stage] = self.seconds.get(stage, 0.0) + now - self.last
        self.last = now


@dataclasses.dataclass
class _Cluster:
    """One cluster between rendering and collecting its build."""

    cluster: Cluster
    tenants: list[Tenant]
    keys: list[str]
    cached: dict[int, _Done]
    groups: dict[int, int]  # tenant index -> group index in `running`
    running: build.Build
    crd_dir: Path | None
    kustomized: bool
    key: str  # of the cluster, for cache keys ("" without a cache)
    pack: Packs | None  # the cluster's tenant entries


def _open(root: Path, cache: Cache | Path | Literal["auto"] | None) -> Cache | None:
    if cache == "auto":
        directory = location(root)
        return Cache(directory) if directory is not None else None
    if isinstance(cache, Path):
        return Cache(cache)
    return cache


def _catalog_digest(catalog: rules.Catalog) -> str:
    return json.dumps(sorted((n, e.resource, list(e.selectors)) for n, e in catalog.classes.items()))


def run(
    root: Path,
    *,
    cluster: str | None = None,
    schemas: Path | None = None,
    kustomize: bool = True,
    cache: Cache | Path | Literal["auto"] | None = "auto",
    shard_size: int = build.SHARD_SIZE,
    workers: int | None = None,
) -> Result:
    """Everything up to the trees to write. Raises PipelineError when the inputs cannot be read.

    `cache`: "auto" (the default) uses `cache.location(root)` ($GPUTENANCY_CACHE or
    root/.gputenancy-cache), None none; a Cache or a directory that one."""
    with without_cycle_collection():
        return _run(root, cluster, schemas, kustomize, cache, shard_size, workers)


@contextlib.contextmanager
def without_cycle_collection() -> Iterator[None]:
    """A run allocates millions of short-lived objects that hold no reference cycles; the cycle
    collector would scan the growing heap again and again (a quarter of the Python CPU time at 1,000
    tenants, more with more). Reference counting frees them; collection is back on afterwards (as it
    was). The command line keeps it off for a whole command, comparisons with generated/ included."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _run(
    root: Path,
    cluster: str | None,
    schemas: Path | None,
    kustomize: bool,
    cache: Cache | Path | Literal["auto"] | None,
    shard_size: int,
    workers: int | None,
) -> Result:
    from gputenancy.check import configcheck, helmgates

    clock = _Clock()
    store = _open(root, cache)
    model, findings = check_only(root, cluster, cache=store)
    clock.lap("load")
    notes: list[str] = []
    results: dict[str, ClusterResult] = {}
    if any(f.severity is Severity.ERROR for f in findings):
        return Result(model, results, tuple(sorted(set(findings))), tuple(notes), _stats(store, clock))
    catalog = rules.effective_catalog(model)
    tool = ""
    if store is not None and kustomize:
        with contextlib.suppress(PipelineError):
            tool = store.tool_version(proc.kustomize_command())
    salt = digest("engine-v1", software(), tool, f"kustomize={kustomize}", _catalog_digest(catalog))
    hits = misses = shards = 0
    kustomize_seconds = 0.0
    rendered: list[tuple[str, str]] = []
    with contextlib.ExitStack() as stack:
        pool = stack.enter_context(
            concurrent.futures.ThreadPoolExecutor(max_workers=workers or os.cpu_count() or 2)
        )
        pending: list[_Cluster] = []
        for name, c in sorted(model.clusters.items()):
            if cluster is not None and name != cluster:
                continue
            platform, config, cfg_findings = render_platform(model, c, catalog)
            findings.extend(cfg_findings)
            gate_flag = helmgates.chart_passes_feature_gates(c)
            checked = configcheck.check_configuration(
                config.body, c.kueue_version, origin_of=config.origin_of, feature_gates_flag=gate_flag
            )
            findings.extend(helmgates.at_the_overlay(c, checked, config.origin_of))
            if c.install == "helm" and c.helm is not None and "managerConfig" in c.helm.values:
                findings.append(
                    c.document.origin("kueue", "helm", "values", "managerConfig").finding(
                        "cluster-install",
                        "kueue.helm.values.managerConfig is written by the pipeline from base/ and "
                        "kueue.config; set the Configuration there",
                    )
                )
            stage = None
            if kustomize:
                try:
                    stage = stack.enter_context(build.Stage(root, name))
                except PipelineError as exc:
                    findings.extend(exc.findings)
                    continue
            clock.lap("render")
            crd_dir = crd_dir_for(schemas, c.kueue_version)
            tenants = model.tenants_on(name)
            keys, cached, fresh = [], {}, []
            cluster_key = ""
            pack = None
            if store is not None and (stage is None or stage.hermetic()):
                cluster_key = digest(
                    salt,
                    name,
                    c.kueue_version,
                    c.kubernetes_version,
                    stage.digest() if stage is not None else "",
                    str(crd_dir),
                    tree_digest(crd_dir) if crd_dir is not None else "",
                )
                pack = store.packs(TENANT_ENTRY, cluster_key)
                for i, tenant in enumerate(tenants):
                    key = digest(cluster_key, repr(tenant))
                    keys.append(key)
                    value = pack.get(TENANT_ENTRY, key)
                    done = _decode(name, value) if value is not None else None
                    if value is not None and done is None:
                        store.corrupt += 1
                    if done is None:
                        fresh.append(i)
                    else:
                        cached[i] = done
            else:
                fresh = list(range(len(tenants)))
            hits += len(cached)
            misses += len(fresh)
            clock.lap("cache")
            running = (
                stage.begin(platform, pool, shard_size=shard_size)
                if stage is not None
                else build.Build(None, platform)
            )
            groups = {i: running.add(render_tenant(tenants[i], c, catalog)) for i in fresh}
            running.close()
            rendered += [(name, tenants[i].name) for i in fresh]
            pending.append(
                _Cluster(
                    c, tenants, keys, cached, groups, running, crd_dir, stage is not None, cluster_key, pack
                )
            )
            clock.lap("render")
        for p in pending:
            try:
                outcome = _collect(p, store, clock)
            except PipelineError as exc:
                clock.lap("kustomize")
                findings.extend(exc.findings)
                continue
            finally:
                shards += p.running.shards
                kustomize_seconds += p.running.seconds
            findings.extend(outcome.findings)
            notes.extend(outcome.notes)
            if outcome.result is not None:
                results[p.cluster.name] = outcome.result
    stats = _stats(store, clock, hits, misses, tuple(rendered), shards, kustomize_seconds)
    return Result(model, results, tuple(sorted(set(findings))), tuple(notes), stats)


@dataclasses.dataclass(frozen=True)
class _Outcome:
    result: ClusterResult | None
    findings: list[Finding]
    notes: list[str]


def _collect(p: _Cluster, store: Cache | None, clock: _Clock) -> _Outcome:
    """Validate and serialise one cluster's objects as its build hands them back, tenant by tenant.
    Raises PipelineError when kustomize failed."""
    from gputenancy.check import validate

    name, c = p.cluster.name, p.cluster

    def check(objects: Sequence[RenderedObject]) -> validate.ValidationReport:
        return validate.validate_objects(
            objects, kueue_version=c.kueue_version, kubernetes_version=c.kubernetes_version, crd_dir=p.crd_dir
        )

    platform = p.running.platform()
    clock.lap("kustomize")
    platform_files, tree_problems = _files(platform)
    clock.lap("serialise")
    finished: dict[int, _Done] = {}
    storable: list[int] = []  # built in this run, and every file of theirs could be written
    for i in range(len(p.tenants)):
        if i in p.cached:
            finished[i] = p.cached[i]
            continue
        group = p.running.group(p.groups[i])
        clock.lap("kustomize")
        group_findings = check(group).findings
        clock.lap("validate")
        files, problems = _files(group)
        tree_problems += problems
        finished[i] = _Done(tuple(group), tuple(files), group_findings)
        if not problems:
            storable.append(i)
        clock.lap("serialise")
    extra = p.running.extra()
    clock.lap("kustomize")
    objects = [*platform, *(o for i in range(len(p.tenants)) for o in finished[i].objects), *extra]
    if p.kustomized:
        duplicated = build.duplicates(name, objects, Origin(f"overlays/{name}/kustomization.yaml"))
        if duplicated:
            return _Outcome(None, duplicated, [])
    platform_findings, skipped = _platform_report(store if p.key else None, p.key, platform, check)
    notes = [f"{name}: {s}" for s in skipped]
    if c.overcommit:
        notes.append(f"{name}: overcommit is allowed by overlays/{name}/cluster.yaml")
    extra_findings = check(extra).findings if extra else ()
    clock.lap("validate")
    if p.pack is not None and not extra:
        for i in storable:
            value = _encode(finished[i])
            if value is not None:
                p.pack.put(TENANT_ENTRY, p.keys[i], value)
        p.pack.save()
    extra_files, problems = _files(extra)
    tree_problems += problems
    ordered = [finished[i] for i in range(len(p.tenants))]
    findings = _once_per_run([*platform_findings, *(f for d in ordered for f in d.findings), *extra_findings])
    tree: dict[str, bytes] = {}
    if not tree_problems:
        files = [*platform_files, *(f for d in ordered for f in d.files), *extra_files]
        for obj, (path, data) in zip(objects, files, strict=True):
            if path in tree:
                tree_problems.append(obj.origin.finding("object-name", f"{obj.key} would overwrite {path}"))
            tree[path] = data
    clock.lap("serialise")
    if tree_problems:
        return _Outcome(None, [*findings, *tree_problems], notes)
    return _Outcome(ClusterResult(name, tuple(objects), dict(sorted(tree.items()))), findings, notes)


def _stats(
    store: Cache | None,
    clock: _Clock,
    hits: int = 0,
    misses: int = 0,
    rendered: tuple[tuple[str, str], ...] = (),
    shards: int = 0,
    kustomize_seconds: float = 0.0,
) -> Stats:
    return Stats(
        str(store.directory) if store is not None else None,
        hits,
        misses,
        store.corrupt if store is not None else 0,
        rendered,
        shards,
        kustomize_seconds,
        dict(clock.seconds),
    )
