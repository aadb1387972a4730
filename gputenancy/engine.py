"""The pipeline in memory, stage by stage: load -> rules -> render -> build -> validate -> trees. No writes
here, but for the cache, which the run reaches through one interface (`memo`: look up a finished result
by key, store one).

1. load and rules (`check_only`): the input files as records, and the model rules on them.
2. render, per cluster: the platform layer (DeviceClasses, ResourceFlavors, Cohorts, the Kueue
   Configuration, whose loader rules are checked here); then the cluster's files are staged for
   kustomize.
3. the tenants of the cluster: each is looked up in the cluster's `memo.tenants` by a key over all that
   can change its result (`cachekey`); those not found are rendered and added to the cluster's build.
4. build: kustomize runs in a thread pool shared by all clusters. A shard starts as soon as the tenants
   that fill it are rendered, so kustomize builds while the next tenants and clusters render.
5. validate and serialise (`_finish`), cluster by cluster, each tenant as soon as the shards holding it
   are done (`build.Build.group`); the tenants finished here are stored in the memo, and the cluster's
   tree assembled.

Output is the same with and without the cache: both paths validate and serialise one tenant at a time,
and a stored result is exactly what that produced.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import dataclasses
import gc
import json
import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from gputenancy.assemble import kustomize as build
from gputenancy.assemble import output
from gputenancy.caching import cachekey, memo
from gputenancy.caching.cache import Cache
from gputenancy.common import proc, timing
from gputenancy.common.findings import Finding, Origin, PipelineError, Severity
from gputenancy.common.objects import RenderedObject
from gputenancy.inputs.spec import Cluster, Model, Tenant, load_model
from gputenancy.policy import rules
from gputenancy.render.manifests import render_platform, render_tenant

if TYPE_CHECKING:
    from gputenancy.check.cluster import Checker

TENANT_ENTRY = memo.TENANT_ENTRY
PLATFORM_ENTRY = memo.PLATFORM_ENTRY


@dataclasses.dataclass(frozen=True)
class ClusterResult:
    name: str
    objects: tuple[RenderedObject, ...]
    tree: Mapping[str, bytes]


@dataclasses.dataclass(frozen=True)
class Stats:
    """What a run did. `hits`/`misses` count (tenant, cluster) cache lookups, `platform_hits`/
    `platform_misses` those of platform-layer reports, `overlay_hits`/`overlay_misses` those of the
    overlays' kustomize output; `rendered` lists the (cluster, tenant) pairs
    rendered, built and validated in this run; `corrupt` counts cache entries found but not usable;
    `seconds` is wall time per stage (load = reading inputs; rules = the model rules; boundary = the
    files kustomize may read, confined and staged; kustomizations = every kustomization read and its
    references checked; cache = keys and look-ups; kustomize = waiting for kustomize after rendering;
    postbuild = the checks on a cluster's built objects; fleet = those across a MultiKueue fleet;
    `kustomize_seconds` sums the processes); `cpu` is CPU seconds per stage (process, children) when
    `timing.enabled()`, else empty."""

    cache: str | None = None
    hits: int = 0
    misses: int = 0
    corrupt: int = 0
    rendered: tuple[tuple[str, str], ...] = ()
    shards: int = 0
    kustomize_seconds: float = 0.0
    seconds: Mapping[str, float] = dataclasses.field(default_factory=dict)
    platform_hits: int = 0
    platform_misses: int = 0
    cpu: Mapping[str, tuple[float, float]] = dataclasses.field(default_factory=dict)
    overlay_hits: int = 0
    overlay_misses: int = 0


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


def check_only(
    root: Path,
    cluster: str | None = None,
    *,
    cache: Cache | Path | Literal["auto"] | None = "auto",
) -> tuple[Model, list[Finding]]:
    """Load and run the model rules; raises PipelineError on load errors.

    `cache` as for `run`: input files loaded before with the same bytes are read from it instead of
    being parsed again (`source.load`)."""
    model, findings = load_model(root, cluster=cluster, cache=memo.open_cache(root, cache))
    return model, sorted(set(findings) | set(rules.check(model)))


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


@dataclasses.dataclass
class _Cluster:
    """One cluster between rendering its tenants and collecting its build."""

    cluster: Cluster
    tenants: list[Tenant]
    keys: list[str]  # per tenant ("" without a cache)
    found: dict[int, memo.Finished]  # tenant index -> result from the memo
    groups: dict[int, int]  # tenant index -> group index in `running`
    running: build.Build
    check: Checker
    kustomized: bool
    key: str | None  # of the cluster (None: no cache for its tenants)
    results: memo.Memo[memo.Finished]
    overlay_key: str | None  # of the overlay's build, to store its output (None: nothing to store)
    # once built: the platform objects, each tenant's and those the Component added (`_finish`)
    built: tuple[list[RenderedObject], list[memo.Finished], list[RenderedObject]] = dataclasses.field(
        default_factory=lambda: ([], [], [])
    )


def _run(
    root: Path,
    only: str | None,
    schemas: Path | None,
    kustomize: bool,
    cache: Cache | Path | Literal["auto"] | None,
    shard_size: int,
    workers: int | None,
) -> Result:
    from gputenancy.check import cluster as checks
    from gputenancy.check.chain import fleet

    clock = timing.Clock()
    store = memo.open_cache(root, cache)
    # 1. load and rules (as check_only, each its own stage)
    model, loaded = load_model(root, cluster=only, cache=store)
    clock.lap("load")
    findings = sorted(set(loaded) | set(rules.check(model)))
    clock.lap("rules")
    if any(f.severity is Severity.ERROR for f in findings):
        return Result(model, {}, tuple(sorted(set(findings))), (), _Stats(store, clock).done())
    catalog = rules.effective_catalog(model)
    keys = _Keys(store, kustomize, catalog)
    stats = _Stats(store, clock, platforms=memo.platform(store), overlays=memo.overlay(store))
    built_memo = memo.built(store)
    records = _Records()
    notes: list[str] = []
    results: dict[str, ClusterResult] = {}
    with contextlib.ExitStack() as stack:
        pool = stack.enter_context(
            concurrent.futures.ThreadPoolExecutor(max_workers=workers or os.cpu_count() or 2)
        )
        started: list[_Cluster] = []
        for name, c in sorted(model.clusters.items()):
            if only is not None and name != only:
                continue
            # 2. render the platform layer, check its Configuration, stage the cluster for kustomize
            platform, config, found = render_platform(model, c, catalog)
            findings += found + checks.configuration(c, config)
            missing = checks.schemas_missing(c, schemas, root)
            if missing:
                findings += missing
                continue
            stage = None
            clock.lap("render")
            if kustomize:
                try:
                    stage = stack.enter_context(build.Stage(root, name, lap=clock.lap))
                except PipelineError as exc:
                    findings.extend(exc.findings)
                    continue
            # 3. the cluster's tenants: finished ones from the memo, the others rendered into the build
            crd_dir = checks.crd_dir_for(schemas, c.kueue_version)
            cluster_key = keys.cluster(c, stage, crd_dir)
            clock.lap("boundary")  # the staged files' and CRDs' digests
            tenants = model.tenants_on(name)
            results_of = memo.tenants(store, cluster_key, name)
            tenant_keys = [
                memo.tenant_key(cluster_key, records.of(t)) if cluster_key else "" for t in tenants
            ]
            looked_up = {i: results_of.lookup(k) for i, k in enumerate(tenant_keys)}
            finished = {i: done for i, done in looked_up.items() if done is not None}
            clock.lap("cache")
            # 4. build: kustomize starts on each shard as soon as it is full; the overlay's output
            # comes from the memo when neither the staged files nor the platform layer changed
            overlay_key = None  # kept: the overlay is built in this run, its output to be stored
            if stage is not None:
                layer = build.layer_files(platform)
                overlay_key = memo.overlay_key(cluster_key, layer) if cluster_key else None
                output_before = stats.overlays.lookup(overlay_key) if overlay_key else None
                if output_before is not None:
                    overlay_key = None
                running = stage.begin(
                    platform, pool, shard_size=shard_size, layer=layer, overlay_output=output_before
                )
            else:
                running = build.Build(None, platform)
            groups = {
                i: running.add(
                    render_tenant(t, c, catalog, model.platform.queue_defaults, model.platform.default_weight)
                )
                for i, t in enumerate(tenants)
                if i not in finished
            }
            running.close()
            stats.rendered += [(name, tenants[i].name) for i in groups]
            started.append(
                _Cluster(
                    c,
                    tenants,
                    tenant_keys,
                    finished,
                    groups,
                    running,
                    checks.Checker(c, crd_dir),
                    stage is not None,
                    cluster_key,
                    results_of,
                    overlay_key,
                )
            )
            clock.lap("render")
        # 5. validate and serialise, cluster by cluster, as the builds finish
        for p in started:
            try:
                result, more, more_notes = _finish(p, stats, clock)
            except PipelineError as exc:
                clock.lap("kustomize")
                findings.extend(exc.findings)
                continue
            finally:
                stats.count(p)
            findings.extend(more)
            notes.extend(more_notes)
            if result is not None:
                results[p.cluster.name] = result
                # 6. the last word: the chain, Kueue support and canonical form on the built objects
                findings.extend(_check_built(p, model, catalog, result, built_memo, store))
                clock.lap("postbuild")
    # 7. across the clusters of each MultiKueue fleet built in this run (manager and workers together)
    findings.extend(
        fleet.check(model, catalog, {n: r.objects for n, r in results.items()}, kustomized=kustomize)
    )
    clock.lap("fleet")
    return Result(model, results, tuple(sorted(set(findings))), tuple(notes), stats.done())


def _check_built(
    p: _Cluster,
    model: Model,
    catalog: rules.Catalog,
    result: ClusterResult,
    found: memo.Memo[tuple[Finding, ...]],
    store: Cache | None,
) -> list[Finding]:
    """The checks on the cluster's built objects: from the memo when no tenant of the cluster changed;
    else tenant by tenant, each tenant's part from the memo when it was checked before against the same
    context (`check.chain.slices`), when the objects of every tenant are known (none the Component
    added)."""
    from gputenancy.check.chain import postbuild, slices

    key = memo.built_key(p.key, p.keys) if p.key else None
    done = found.lookup(key) if key else None
    if done is None:
        platform, finished, extra = p.built
        if extra or len(finished) != len(p.tenants):
            checked = postbuild.check(model, p.cluster, catalog, result.objects, kustomized=p.kustomized)
        else:
            parts = [(t, k, d.objects) for t, k, d in zip(p.tenants, p.keys, finished, strict=True)]
            memos = memo.built_parts(store, p.key)
            checked = slices.check(model, p.cluster, catalog, platform, parts, memos, kustomized=p.kustomized)
        done = tuple(checked)
        if key:
            found.store(key, done)
    return list(done)


def _finish(
    p: _Cluster, stats: _Stats, clock: timing.Clock
) -> tuple[ClusterResult | None, list[Finding], list[str]]:
    """Validate and serialise one cluster's objects as its build hands them back, tenant by tenant;
    store what was finished here. Raises PipelineError when kustomize failed."""
    from gputenancy.check.cluster import once_per_run, validation_ran

    name = p.cluster.name
    platform = p.running.platform()
    if p.overlay_key and p.running.overlay_output is not None:
        stats.overlays.store(p.overlay_key, p.running.overlay_output)
    clock.lap("kustomize")
    platform_files, tree_problems = output.files_of(platform)
    clock.lap("serialise")
    finished = dict(p.found)
    storable: list[int] = []  # built in this run, and every file of theirs could be written
    for i in sorted(p.groups):
        group = p.running.group(p.groups[i])
        clock.lap("kustomize")
        group_findings = p.check(group).findings
        clock.lap("validate")
        files, problems = output.files_of(group)
        tree_problems += problems
        finished[i] = memo.Finished(tuple(group), tuple(files), group_findings)
        if not problems:
            storable.append(i)
        clock.lap("serialise")
    extra = p.running.extra()
    clock.lap("kustomize")
    ordered = [finished[i] for i in range(len(p.tenants))]
    objects = [*platform, *(o for d in ordered for o in d.objects), *extra]
    p.built = (platform, ordered, extra)
    if p.kustomized:
        duplicated = build.duplicates(name, objects, Origin(f"overlays/{name}/kustomization.yaml"))
        if duplicated:
            return None, duplicated, []
    report = _platform_report(stats.platforms, p.key, platform, p.check)
    notes = validation_ran(p.cluster, p.check.crd_dir, report.skipped)
    notes += [f"{name}: {s}" for s in report.skipped]
    if p.cluster.overcommit:
        notes.append(f"{name}: overcommit is allowed by overlays/{name}/cluster.yaml")
    extra_findings = p.check(extra).findings if extra else ()
    clock.lap("validate")
    if not extra:  # objects the Component adds belong to no tenant: nothing of this cluster is kept
        for i in storable:
            p.results.store(p.keys[i], finished[i])
        p.results.save()
    extra_files, problems = output.files_of(extra)
    tree_problems += problems
    findings = once_per_run([*report.findings, *(f for d in ordered for f in d.findings), *extra_findings])
    tree: dict[str, bytes] = {}
    if not tree_problems:
        files = [*platform_files, *(f for d in ordered for f in d.files), *extra_files]
        tree, tree_problems = output.assemble(objects, files)
    clock.lap("serialise")
    if tree_problems:
        return None, [*findings, *tree_problems], notes
    return ClusterResult(name, tuple(objects), tree), findings, notes


def _platform_report(
    platforms: memo.Memo[memo.PlatformReport],
    cluster_key: str | None,
    objects: list[RenderedObject],
    check: Checker,
) -> memo.PlatformReport:
    """The validation of a platform layer, from the memo when these exact objects (bodies and where
    each field came from) were validated before for this cluster."""
    key = memo.platform_key(cluster_key, objects) if cluster_key else None
    report = platforms.lookup(key) if key else None
    if report is None:
        checked = check(objects)
        report = memo.PlatformReport(tuple(checked.findings), tuple(checked.skipped))
        if key:
            platforms.store(key, report)
    return report


# ------------------------------------------------------------------------------ keys, clock, stats


class _Keys:
    """The cluster keys of one run (`cachekey`): None when there is no cache, or when a cluster's
    kustomizations name something outside the staged files."""

    def __init__(self, store: Cache | None, kustomize: bool, catalog: rules.Catalog) -> None:
        self.store, self.kustomize = store, kustomize
        self.tool = ""
        if store is not None and kustomize:
            with contextlib.suppress(PipelineError):
                self.tool = store.tool_version(proc.kustomize_command())
        self.catalog = json.dumps(
            sorted(
                (n, e.resource, list(e.selectors), list(e.capacity or ())) for n, e in catalog.classes.items()
            )
        )
        self.hami = catalog.hami

    def _hami(self, cluster: str) -> str:
        """The HAMi resource and quota names behind each flavor of the cluster (ClusterQueues cover them)."""
        return json.dumps(sorted((f, d.names) for (c, f), d in self.hami.items() if c == cluster))

    def cluster(self, c: Cluster, stage: build.Stage | None, crd_dir: Path | None) -> str | None:
        if self.store is None or (stage is not None and not stage.hermetic()):
            return None
        return cachekey.key(
            "cluster",
            software=cachekey.software(),
            kustomize_version=self.tool,
            kustomize_run=str(self.kustomize),
            catalog=self.catalog + self._hami(c.name),
            cluster_name=c.name,
            kueue_version=c.kueue_version,
            kubernetes_version=c.kubernetes_version,
            staged_files=stage.digest() if stage is not None else "",
            crd_dir=str(crd_dir),
            crd_files=cachekey.tree_digest(crd_dir) if crd_dir is not None else "",
        )


class _Records:
    """Each tenant's record as text (`repr`, a cache-key ingredient), made once per run however many
    clusters the tenant is placed on."""

    def __init__(self) -> None:
        self._text: dict[int, tuple[Tenant, str]] = {}  # by id(), the record kept alive with it

    def of(self, tenant: Tenant) -> str:
        found = self._text.get(id(tenant))
        if found is None:
            found = self._text[id(tenant)] = (tenant, repr(tenant))
        return found[1]


@dataclasses.dataclass
class _Stats:
    """Counts gathered during a run, and the platform reports' memo."""

    store: Cache | None
    clock: timing.Clock
    platforms: memo.Memo[memo.PlatformReport] = dataclasses.field(default_factory=lambda: memo.platform(None))
    overlays: memo.Memo[str] = dataclasses.field(default_factory=lambda: memo.overlay(None))
    rendered: list[tuple[str, str]] = dataclasses.field(default_factory=list)
    hits: int = 0
    misses: int = 0
    shards: int = 0
    kustomize_seconds: float = 0.0

    def count(self, p: _Cluster) -> None:
        self.hits += p.results.hits
        self.misses += p.results.misses
        self.shards += p.running.shards
        self.kustomize_seconds += p.running.seconds

    def done(self) -> Stats:
        return Stats(
            str(self.store.directory) if self.store is not None else None,
            self.hits,
            self.misses,
            self.store.corrupt if self.store is not None else 0,
            tuple(self.rendered),
            self.shards,
            self.kustomize_seconds,
            dict(self.clock.seconds),
            self.platforms.hits,
            self.platforms.misses,
            dict(self.clock.cpu),
            self.overlays.hits,
            self.overlays.misses,
        )
