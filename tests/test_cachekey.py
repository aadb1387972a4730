"""The cache key as a contract. `cachekey.INGREDIENTS` lists every ingredient of every cache key; for each,
a check below changes that input alone in a real run (a real other kustomize on PATH, another Python, a
changed file of the package in a copy of it, ...) and sees a miss; a run that changes nothing hits. An
ingredient without a check fails `test_every_ingredient_has_a_check`.

Runs record the parts every key is made of (the real `cachekey.key`, wrapped), so each check also says
which ingredients its change moved: alone where the inputs allow it; where they do not (a cluster's
Kueue version is written in its overlay, whose files are all staged), with the others it moves.
"""

from __future__ import annotations

import dataclasses
import importlib.metadata
import json
import os
import shutil
import stat
import subprocess
import sys
import sysconfig
from collections import defaultdict
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import trees

from gputenancy import engine
from gputenancy.caching import cache, cachekey, memo
from gputenancy.common import proc

PACKAGE = trees.REPO / "gputenancy"
SITE = sysconfig.get_paths()["purelib"]


@dataclasses.dataclass
class World:
    """A repository, its Kueue CRDs and a cache, warmed by one run."""

    root: Path
    schemas: Path
    store: Path
    parts: list[tuple[str, dict[str, str | bytes]]] = dataclasses.field(default_factory=list)

    def run(self, **kwargs: Any) -> engine.Result:
        self.parts.clear()
        result = engine.run(self.root, schemas=self.schemas, cache=self.store, **kwargs)
        assert not result.failed, [f.format() for f in result.findings]
        return result

    def placements(self, result: engine.Result, cluster: str | None = None) -> int:
        return sum(len(result.model.tenants_on(c)) for c in result.model.clusters if cluster in (None, c))

    def seen(self) -> dict[str, list[str | bytes]]:
        """'kind.ingredient' -> the values the last run used, sorted."""
        out: dict[str, list[str | bytes]] = defaultdict(list)
        for kind, parts in self.parts:
            if kind == "built-part":  # made only when the cluster's `built` entry is not found
                continue  # (the parts' own checks count their hits and misses)
            for name, value in parts.items():
                if name not in cachekey.KEYS:  # digests of other keys move with their own ingredients
                    out[f"{kind}.{name}"].append(value)
        return {k: sorted(v, key=lambda x: x if isinstance(x, bytes) else x.encode()) for k, v in out.items()}

    def source_keys(self) -> set[str]:
        store = cache.Cache(self.store)
        packs = (store.get("source", f"{cachekey.source_pack()}-{digit}") for digit in "0123456789abcdef")
        return {key for pack in packs for key in pack or ()}


@pytest.fixture(scope="module")
def baseline(tmp_path_factory: pytest.TempPathFactory, shared: Path) -> World:
    """The example repository with the Kueue CRDs of its clusters' versions, rendered once into a cache."""
    top = tmp_path_factory.mktemp("baseline")
    root = trees.example(top, generated=False)
    schemas = top / "schemas"
    for cluster in (root / "overlays").iterdir():
        version = trees.read(root, f"overlays/{cluster.name}/cluster.yaml")["kueue"]["version"]
        if not (schemas / "kueue" / version).exists():
            shutil.copytree(shared / "kueue" / version / "crds", schemas / "kueue" / version / "crds")
    world = World(root, schemas, top / "cache")
    cold = world.run()
    assert cold.stats.hits == 0 and cold.stats.misses == world.placements(cold) > 0
    return world


@pytest.fixture
def world(baseline: World, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[World]:
    """A copy of the baseline (repository and cache; the CRDs stay where they are: their place is an
    ingredient), with every key made during a run recorded."""
    root = tmp_path / "repo"
    shutil.copytree(baseline.root, root)
    shutil.copytree(baseline.store, tmp_path / "cache")
    copy = World(root, baseline.schemas, tmp_path / "cache")
    real, real_after = cachekey.key, cachekey.key_after

    def recording(kind: str, **parts: str | bytes) -> str:
        copy.parts.append((kind, dict(parts)))
        return real(kind, **parts)

    def recording_after(kind: str, first: str, **rest: str | bytes) -> str:
        made = real_after(kind, first, **rest)
        parts = {cachekey.KEYS[kind][0]: first, **rest}
        assert made == real(kind, **parts)  # the same key, its shared part hashed once
        copy.parts.append((kind, parts))
        return made

    monkeypatch.setattr(cachekey, "key", recording)
    monkeypatch.setattr(cachekey, "key_after", recording_after)
    yield copy


def _moved(before: dict[str, list[str | bytes]], after: dict[str, list[str | bytes]]) -> set[str]:
    return {k for k in before.keys() | after.keys() if before.get(k) != after.get(k)}


def _warm(world: World) -> tuple[engine.Result, dict[str, list[str | bytes]], set[str]]:
    """A run on the unchanged copy: everything hits. Returns it, the parts it used and its source keys."""
    result = world.run()
    assert (result.stats.hits, result.stats.misses) == (world.placements(result), 0)
    assert (result.stats.platform_hits, result.stats.platform_misses) == (len(result.model.clusters), 0)
    assert (result.stats.overlay_hits, result.stats.overlay_misses) == (len(result.model.clusters), 0)
    return result, world.seen(), world.source_keys()


# ------------------------------------------------------------------------------ the checks

Check = Callable[[World, pytest.MonkeyPatch], None]
CHECKS: dict[str, Check] = {}


def checks(*ingredients: str) -> Callable[[Check], Check]:
    def register(fn: Check) -> Check:
        for name in ingredients:
            CHECKS[name] = fn
        return fn

    return register


def _tenant_file(world: World, cluster: str | None = None) -> Path:
    """The first tenant file (of a tenant placed on `cluster`)."""
    for path in sorted((world.root / "tenants").glob("*.yaml")):
        data = trees.read(world.root, f"tenants/{path.name}")
        if cluster is None or cluster in data.get("clusters", []):
            return path
    raise AssertionError(f"no tenant on {cluster}")


@checks("tenant_record")
def _tenant_record(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    _, before, _ = _warm(world)
    path = _tenant_file(world)
    trees.edit(world.root, f"tenants/{path.name}", lambda d: d.update(description="changed"))
    after = world.run()
    tenant = next(t for t in after.model.tenants if t.name == path.stem)
    placed = sum(1 for c in after.model.clusters if tenant.placed_on(c))
    assert (after.stats.misses, after.stats.hits) == (placed, world.placements(after) - placed)
    assert {name for _, name in after.stats.rendered} == {path.stem}
    assert _moved(before, world.seen()) == {"tenant.tenant_record", "source.file_bytes"}


@checks("built_context")
def _built_context(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    """A tenant's description: its entry and its part of the post-build checks miss, the other tenants'
    parts hit. What it lends its cohort: the parts of the tenants whose queues borrow from that cohort
    miss too (what they may borrow changed), though their entries hit; the others' parts hit."""
    warm, _, _ = _warm(world)
    opened: list[memo.Memo[memo.BuiltPart]] = []
    real = memo.built_parts

    def recording(*args: Any) -> tuple[memo.Memo[memo.BuiltPart], memo.Memo[memo.BuiltFacts]]:
        parts, facts = real(*args)
        opened.append(parts)
        return parts, facts

    monkeypatch.setattr(memo, "built_parts", recording)
    prod = world.placements(warm, "prod")
    trees.edit(world.root, "tenants/nlp.yaml", lambda d: d.update(description="changed"))
    world.run()
    assert [(m.hits, m.misses) for m in opened] == [(prod - 1, 1)]  # only prod has nlp
    opened.clear()
    gpu = "gpu.nvidia.com"
    trees.edit(
        world.root,
        "tenants/nlp.yaml",
        lambda d: d["budgets"]["default"][0]["devices"][gpu].update(lendingLimit=1),
    )
    after = world.run()
    assert (after.stats.misses, after.stats.hits) == (1, world.placements(after) - 1)
    borrowers = [t for t in after.model.tenants_on("prod") if t.cohort == "research"]
    assert len(borrowers) > 1
    assert [(m.hits, m.misses) for m in opened] == [(prod - len(borrowers), len(borrowers))]


@checks("catalog")
def _catalog(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    """A class one tenant declares is in the catalog of every cluster: every tenant misses."""
    _, before, _ = _warm(world)
    path = _tenant_file(world)
    declared = {"name": "extra.example.com", "resource": "example.com/extra", "selectors": ["true"]}
    trees.edit(world.root, f"tenants/{path.name}", lambda d: d.update(deviceClasses=[declared]))
    after = world.run()
    assert (after.stats.hits, after.stats.misses) == (0, world.placements(after))
    assert _moved(before, world.seen()) == {"cluster.catalog", "tenant.tenant_record", "source.file_bytes"}


def _wrapper(directory: Path, version: str, log: Path) -> Path:
    """An executable named like the kustomize command in use that reports `version` and runs the real
    one for everything else."""
    name = proc.kustomize_command()[0]
    real = shutil.which(name)
    assert real is not None
    directory.mkdir(parents=True, exist_ok=True)
    exe = directory / name
    exe.write_text(
        f'#!/bin/sh\nif [ "$1" = version ]; then echo "$@" >> "{log}"; echo "{version}"; exit 0; fi\n'
        f'exec "{real}" "$@"\n'
    )
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return exe


@checks("kustomize_version")
def _kustomize_version(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    warm, before, _ = _warm(world)
    _wrapper(world.root.parent / "bin", "Kustomize Version: v9.9.9-other", world.root.parent / "log")
    monkeypatch.setenv("PATH", f"{world.root.parent / 'bin'}{os.pathsep}{os.environ['PATH']}")
    after = world.run()
    assert (after.stats.hits, after.stats.misses) == (0, world.placements(after))
    assert (world.root.parent / "log").read_text().count("version") == 1  # asked once; kustomize ran
    assert {c: r.tree for c, r in after.clusters.items()} == {c: r.tree for c, r in warm.clusters.items()}
    assert _moved(before, world.seen()) == {
        "cluster.kustomize_version",
        "tool.executable",
        "tool.size",
        "tool.mtime",
    }


@checks("kustomize_run")
def _kustomize_run(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without kustomize the overlays are not staged either: staged_files moves with it."""
    _, before, _ = _warm(world)
    after = world.run(kustomize=False)
    assert (after.stats.hits, after.stats.misses) == (0, world.placements(after))
    moved = _moved(before, world.seen())
    assert (
        {"cluster.kustomize_run", "cluster.staged_files"}
        <= moved
        <= {
            "cluster.kustomize_run",
            "cluster.staged_files",
            "cluster.kustomize_version",  # not asked without kustomize
            "tool.executable",
            "tool.size",
            "tool.mtime",
            "platform.platform_objects",  # the overlay's transformers no longer apply
            "overlay.platform_layer",  # no overlay is built
            "source.path",  # nor are kustomizations read (each content parsed once, as a source file)
            "source.file_bytes",
        }
    )


def _cluster_with_tenants(world: World, result: engine.Result) -> str:
    return next(c for c in sorted(result.model.clusters) if result.model.tenants_on(c))


@checks("staged_files")
def _staged_files(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    """A comment in one overlay's kustomization: that cluster's tenants miss, the others hit."""
    warm, before, _ = _warm(world)
    cluster = _cluster_with_tenants(world, warm)
    path = world.root / "overlays" / cluster / "kustomization.yaml"
    path.write_text(path.read_text() + "# changed\n")
    after = world.run()
    assert after.stats.misses == world.placements(after, cluster)
    assert after.stats.hits == world.placements(after) - after.stats.misses
    assert (after.stats.platform_hits, after.stats.platform_misses) == (len(after.model.clusters) - 1, 1)
    # the kustomization is parsed again: its content is new (`inputs.kustomizations`)
    assert _moved(before, world.seen()) == {"cluster.staged_files", "source.file_bytes"}


@checks("platform_objects")
def _platform_objects(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    """A flavor's node label: the platform layer changes, and base/ is staged."""
    _, before, _ = _warm(world)
    trees.edit(
        world.root,
        "base/platform.yaml",
        lambda d: [
            f.setdefault("nodeLabels", {}).update({"example.com/changed": "yes"}) for f in d["flavors"]
        ],
    )
    after = world.run()
    assert after.stats.platform_misses == len(after.model.clusters)
    assert after.stats.overlay_misses == len(after.model.clusters)
    assert _moved(before, world.seen()) == {
        "cluster.staged_files",
        "platform.platform_objects",
        "overlay.platform_layer",
        "source.file_bytes",
    }


@checks("platform_layer")
def _platform_layer(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    """One label more on one rendered platform object, nothing staged changed: that cluster's overlay is
    built again (its output carries the label), the other clusters' come from the cache."""
    warm, before, _ = _warm(world)
    cluster = _cluster_with_tenants(world, warm)
    real = engine.render_platform
    changed: list[Any] = []

    def labelled(model: Any, c: Any, catalog: Any) -> Any:
        objects, config, found = real(model, c, catalog)
        if c.name == cluster:
            first = objects[0]
            meta = {**first.body["metadata"]}
            meta["labels"] = {**meta.get("labels", {}), "example.com/changed": "yes"}
            objects = [dataclasses.replace(first, body={**first.body, "metadata": meta}), *objects[1:]]
            changed.append(first.key)
        return objects, config, found

    monkeypatch.setattr(engine, "render_platform", labelled)
    after = world.run()
    assert (after.stats.overlay_hits, after.stats.overlay_misses) == (len(after.model.clusters) - 1, 1)
    assert (after.stats.hits, after.stats.misses) == (world.placements(after), 0)
    built = [o for o in after.clusters[cluster].objects if o.key in changed]
    assert built and built[0].body["metadata"]["labels"]["example.com/changed"] == "yes"
    assert _moved(before, world.seen()) == {"overlay.platform_layer", "platform.platform_objects"}


def _overlay(world: World, cluster: str) -> dict[str, Any]:
    data: dict[str, Any] = trees.read(world.root, f"overlays/{cluster}/cluster.yaml")
    return data


@checks("cluster_name")
def _cluster_name(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    """A cluster renamed: its overlay's path (staged) and its tenants' records move with its name (one
    where no cohort holds quota, which base/platform.yaml would name: that would change every key)."""
    warm, before, _ = _warm(world)
    held = {c for co in warm.model.platform.cohorts.values() for c in co.cluster_budgets}
    cluster = next(c for c in sorted(warm.model.clusters) if warm.model.tenants_on(c) and c not in held)
    renamed = f"{cluster}-2"
    (world.root / "overlays" / cluster).rename(world.root / "overlays" / renamed)
    trees.edit(world.root, f"overlays/{renamed}/cluster.yaml", lambda d: d.update(name=renamed))
    for tenant in warm.model.tenants_on(cluster):
        trees.edit(
            world.root,
            f"tenants/{tenant.name}.yaml",
            lambda d: d.update(clusters=[renamed if c == cluster else c for c in d["clusters"]]),
        )

    after = world.run()
    assert after.stats.misses == world.placements(after, renamed) > 0
    assert after.stats.hits == world.placements(after) - after.stats.misses
    assert {"cluster.cluster_name", "cluster.staged_files", "tenant.tenant_record"} <= _moved(
        before, world.seen()
    )


@checks("kubernetes_version")
def _kubernetes_version(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    """A cluster's Kubernetes version, one minor down (its overlay is staged: staged_files moves too)."""
    warm, before, _ = _warm(world)
    cluster = _cluster_with_tenants(world, warm)
    minor = int(str(_overlay(world, cluster)["kubernetesVersion"]).split(".")[1])
    trees.edit(
        world.root,
        f"overlays/{cluster}/cluster.yaml",
        lambda d: d.update(kubernetesVersion=f"1.{minor - 1}"),
    )
    after = world.run()
    assert after.stats.misses == world.placements(after, cluster)
    assert after.stats.hits == world.placements(after) - after.stats.misses
    moved = _moved(before, world.seen())
    assert {"cluster.kubernetes_version", "cluster.staged_files"} <= moved
    assert not {"cluster.kueue_version", "cluster.cluster_name", "tenant.tenant_record"} & moved


@checks("kueue_version")
def _kueue_version(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    """A cluster moved to another Kueue version whose CRDs are there (its overlay moves too)."""
    warm, before, _ = _warm(world)
    cluster = _cluster_with_tenants(world, warm)
    version = _overlay(world, cluster)["kueue"]["version"]
    others = sorted(p.name for p in (world.schemas / "kueue").iterdir() if p.name != version)
    assert others, "the example's clusters should run two Kueue versions"
    trees.edit(world.root, f"overlays/{cluster}/cluster.yaml", lambda d: d["kueue"].update(version=others[0]))
    after = world.run()
    assert after.stats.misses == world.placements(after, cluster)
    assert after.stats.hits == world.placements(after) - after.stats.misses
    moved = _moved(before, world.seen())
    assert {"cluster.kueue_version", "cluster.staged_files"} <= moved
    assert not {"cluster.kubernetes_version", "cluster.cluster_name", "tenant.tenant_record"} & moved


@checks("crd_dir")
def _crd_dir(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    """The same CRD files in another directory."""
    _, before, _ = _warm(world)
    elsewhere = world.root.parent / "schemas"
    shutil.copytree(world.schemas, elsewhere)
    world.schemas = elsewhere
    after = world.run()
    assert (after.stats.hits, after.stats.misses) == (0, world.placements(after))
    assert _moved(before, world.seen()) == {"cluster.crd_dir"}


@checks("crd_files")
def _crd_files(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    """One CRD file's bytes (a comment at its end), in place; restored afterwards."""
    _, before, _ = _warm(world)
    crd = sorted(world.schemas.rglob("*.yaml"))[0]
    original = crd.read_bytes()
    try:
        crd.write_bytes(original + b"\n# changed\n")
        after = world.run()
    finally:
        crd.write_bytes(original)
    version = crd.relative_to(world.schemas / "kueue").parts[0]
    on_version = [
        c
        for c in after.model.clusters
        if trees.read(world.root, f"overlays/{c}/cluster.yaml")["kueue"]["version"] == version
    ]
    assert after.stats.misses == sum(world.placements(after, c) for c in on_version) > 0
    assert _moved(before, world.seen()) == {"cluster.crd_files"}


@checks("path")
def _source_path(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    """A tenant file renamed from .yaml to .yml, bytes kept: parsed again (its records name the file)."""
    _, before, keys = _warm(world)
    path = _tenant_file(world)
    path.rename(path.with_suffix(".yml"))
    world.run()
    assert len(world.source_keys() - keys) == 1
    assert _moved(before, world.seen()) == {"source.path", "tenant.tenant_record"}


@checks("file_bytes")
def _source_bytes(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    """A comment at the end of a tenant file: parsed again; its records, and so its tenant entries, are
    the same."""
    _, before, keys = _warm(world)
    path = _tenant_file(world)
    path.write_text(path.read_text() + "# changed\n")
    after = world.run()
    assert len(world.source_keys() - keys) == 1
    assert after.stats.misses == 0
    assert _moved(before, world.seen()) == {"source.file_bytes"}


def _asked(log: Path) -> int:
    return log.read_text().count("version") if log.exists() else 0


@checks("executable", "size", "mtime")
def _tool(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    """The kustomize version is asked again of another executable with the same size and time, of the
    same one with another size (time kept) and of the same one touched (bytes kept)."""
    store, log = cache.Cache(world.store), world.root.parent / "log"
    first = _wrapper(world.root.parent / "one", "v1", log)
    second = _wrapper(world.root.parent / "two", "v1", log)
    times = (first.stat().st_atime_ns, first.stat().st_mtime_ns)
    os.utime(second, ns=times)
    command = proc.kustomize_command()

    def version(directory: Path) -> str:
        monkeypatch.setenv("PATH", f"{directory}{os.pathsep}{os.environ['PATH']}")
        try:
            return store.tool_version(command)
        finally:
            monkeypatch.setenv("PATH", os.environ["PATH"].split(os.pathsep, 1)[1])

    world.parts.clear()
    assert version(first.parent) == version(first.parent) and version(first.parent).endswith("\nv1")
    assert _asked(log) == 1  # asked once, then remembered
    version(second.parent)  # another executable: same bytes, same time
    assert _asked(log) == 2
    first.write_text(first.read_text() + "# longer\n")
    os.utime(first, ns=times)
    version(first.parent)  # another size, same time
    assert _asked(log) == 3
    os.utime(first, ns=(times[0], times[1] + 10**9))
    version(first.parent)  # another time, same bytes
    assert _asked(log) == 4
    made = [parts for kind, parts in world.parts if kind == "tool"]
    assert len(made) == 6  # three times the first, then each change
    first_parts, second_parts, longer, touched = made[0], made[3], made[4], made[5]
    assert [k for k in first_parts if first_parts[k] != second_parts[k]] == ["executable"]
    assert [k for k in first_parts if first_parts[k] != longer[k]] == ["size"]
    assert [k for k in longer if longer[k] != touched[k]] == ["mtime"]


# ------------------------------------------------------------------------------ the software, in a copy


_RUN = """
import json, sys
from pathlib import Path
{prelude}
from gputenancy import engine
result = engine.run(Path(sys.argv[1]), schemas=Path(sys.argv[2]), cache=Path(sys.argv[3]))
assert not result.failed, [f.format() for f in result.findings]
print(json.dumps([result.stats.hits, result.stats.misses, result.stats.platform_misses]))
"""


def _package_copy(into: Path) -> Path:
    shutil.copytree(PACKAGE, into / "gputenancy", ignore=shutil.ignore_patterns("__pycache__"))
    return into


def _in_copy(
    world: World,
    package: Path,
    *,
    python: str = sys.executable,
    prelude: str = "",
    path: tuple[Path, ...] = (),
) -> list[int]:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([*map(str, path), str(package), SITE]),
        "PYTHONDONTWRITEBYTECODE": "1",
    }
    done = subprocess.run(
        [python, "-c", _RUN.format(prelude=prelude), str(world.root), str(world.schemas), str(world.store)],
        capture_output=True,
        text=True,
        env=env,
        check=False,
        timeout=300,
        cwd=package,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    counts: list[int] = json.loads(done.stdout.splitlines()[-1])
    return counts


def _all_miss(world: World, counts: list[int]) -> None:
    result = world.run()  # in this process again: hits, the copy's entries were stored beside
    assert counts == [0, world.placements(result), len(result.model.clusters)]


_PACKAGE_CHANGES = {
    "package_code": ("engine.py", b"\n# changed\n"),
    "package_templates": ("render/templates/cohort.yaml.j2", b"{# changed #}"),
    "package_data": ("schemas/tenant.schema.json", b"\n"),
}


def _package_file(ingredient: str) -> Check:
    """A copy of the package with one file changed (a comment, a Jinja comment, a JSON file's trailing
    newline: the output stays the same) misses; an unchanged copy hits (test_nothing_changed_is_a_hit)."""
    rel, tail = _PACKAGE_CHANGES[ingredient]

    def check(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
        package = _package_copy(world.root.parent / "pkg")
        target = package / "gputenancy" / rel
        target.write_bytes(target.read_bytes() + tail)
        _all_miss(world, _in_copy(world, package))

    return check


for _name in _PACKAGE_CHANGES:
    checks(_name)(_package_file(_name))


def _other_python() -> str | None:
    """Another Python interpreter that can run the package (with this environment's libraries)."""
    ours = sys.version
    for name in ("python3.11", "python3", f"python{sys.version_info[0]}.{sys.version_info[1]}"):
        for directory in ("/usr/bin", "/usr/local/bin", *os.environ["PATH"].split(os.pathsep)):
            candidate = Path(directory) / name
            if not candidate.is_file() or candidate.resolve() == Path(sys.executable).resolve():
                continue
            done = subprocess.run(
                [str(candidate), "-c", "import sys, yaml, jinja2, jsonschema_rs; print(sys.version)"],
                capture_output=True,
                text=True,
                env={**os.environ, "PYTHONPATH": SITE},
                check=False,
            )
            if done.returncode == 0 and done.stdout.strip() != ours:
                return str(candidate)
    return None


@checks("python")
def _python(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    """Another Python interpreter (another build of the same minor version, with the same libraries);
    where the machine has none, this one reporting another version."""
    package = _package_copy(world.root.parent / "pkg")
    other = _other_python()
    if other is not None:
        _all_miss(world, _in_copy(world, package, python=other))
    else:
        _all_miss(world, _in_copy(world, package, prelude="sys.version += ' (another build)'"))


@checks("libyaml")
def _libyaml(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    """PyYAML without its C extension (pure Python)."""
    package = _package_copy(world.root.parent / "pkg")
    prelude = "sys.modules['yaml._yaml'] = None\nimport yaml\nassert not yaml.__with_libyaml__"
    _all_miss(world, _in_copy(world, package, prelude=prelude))


@checks("libraries")
def _libraries(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    """A library installed in another version (its distribution's metadata first on the path)."""
    package = _package_copy(world.root.parent / "pkg")
    for name in cachekey.DISTRIBUTIONS:  # all installed: a misspelt name would never change
        assert importlib.metadata.version(name)
    meta = world.root.parent / "meta"
    info = meta / "PyYAML-999.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: PyYAML\nVersion: 999.0\n")
    _all_miss(world, _in_copy(world, package, path=(meta,)))


# ------------------------------------------------------------------------------ the tests


def test_every_ingredient_has_a_check() -> None:
    assert set(CHECKS) == set(cachekey.INGREDIENTS)
    used = {part for parts in cachekey.KEYS.values() for part in parts}
    assert used - set(cachekey.KEYS) == set(cachekey.INGREDIENTS)  # listed and used, nothing else


@pytest.mark.parametrize("ingredient", sorted(cachekey.INGREDIENTS))
def test_a_change_to_each_ingredient_is_a_miss(
    ingredient: str, world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    check = CHECKS.get(ingredient)
    assert check is not None, f"cache-key ingredient {ingredient!r} has no check in CHECKS"
    check(world, monkeypatch)


def test_nothing_changed_is_a_hit(world: World) -> None:
    """The copy of the baseline (another root, the same cache) hits everything, in this process and in a
    fresh one running a copy of the package; no input file is parsed again."""
    _, seen, keys = _warm(world)
    assert world.source_keys() == keys
    package = _package_copy(world.root.parent / "pkg")
    result = world.run()
    assert _in_copy(world, package) == [world.placements(result), 0, 0]
    assert world.seen() == seen


def test_a_key_is_made_of_exactly_its_ingredients() -> None:
    parts = {name: "x" for name in cachekey.KEYS["tool"]}
    assert cachekey.key("tool", **parts) != cachekey.key("tool", **{**parts, "size": "y"})
    with pytest.raises(ValueError, match="a tool key is made of"):
        cachekey.key("tool", executable="x", size="y")
    with pytest.raises(ValueError, match="a tool key is made of"):
        cachekey.key("tool", **parts, extra="z")
    assert cachekey.ingredients("tenant")[-1] == "tenant_record"
    assert set(cachekey.ingredients("tenant")) >= set(cachekey.KEYS["software"])


def test_a_key_made_after_its_shared_first_ingredient_is_the_same_key() -> None:
    """`key_after` (input files and tenant entries, by the thousand) gives what `key` gives, for every
    kind and after keys of other first ingredients, and refuses other ingredients as `key` does."""
    for kind, names in cachekey.KEYS.items():
        for first in ("a", "b", "a"):
            rest = {name: f"{first}-{name}".encode() if name == "file_bytes" else name for name in names[1:]}
            made = cachekey.key_after(kind, first, **rest)
            assert made == cachekey.key(kind, **{names[0]: first}, **rest)
            if rest:
                other = {**rest, names[-1]: "changed"}
                assert cachekey.key_after(kind, first, **other) != made
    with pytest.raises(ValueError, match="a source key is made of"):
        cachekey.key_after("source", "s", path="p")
    with pytest.raises(ValueError, match="a source key is made of"):
        cachekey.key_after("source", "s", path="p", file_bytes=b"", software="s")
