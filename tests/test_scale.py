"""Large fleets: the output is the same with and without the cache and whatever the shard size; a damaged
cache entry is never used; editing one tenant re-renders only that tenant. Real kustomize throughout."""

from __future__ import annotations

import dataclasses
import gc
import hashlib
import json
import os
import random
import re
import shutil
import sys
import typing
from pathlib import Path
from typing import Any

import pytest
import trees
import yaml

from bench import fleet
from gputenancy import engine
from gputenancy.assemble import kustomize as build
from gputenancy.caching import cache
from gputenancy.cli import app as cli
from gputenancy.common import fastyaml, objects
from gputenancy.common.findings import Origin, PipelineError
from gputenancy.inputs import spec

TENANTS = 70


def _snapshot(result: engine.Result) -> tuple[dict[str, dict[str, bytes]], list[str], tuple[str, ...]]:
    assert not result.failed, [f.format() for f in result.findings][:5]
    return (
        {name: dict(c.tree) for name, c in result.clusters.items()},
        [f.format() for f in result.findings],
        result.notes,
    )


@pytest.fixture(scope="module")
def fleet_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("fleet")
    fleet.generate(root, TENANTS, seed=7)
    return root


@pytest.fixture(scope="module")
def reference(
    fleet_root: Path, shared: Path
) -> tuple[dict[str, dict[str, bytes]], list[str], tuple[str, ...]]:
    """The render without any cache, with the default shard size, validated against the Kueue CRDs."""
    return _snapshot(engine.run(fleet_root, schemas=shared, cache=None))


def test_fleet_is_a_realistic_mix(fleet_root: Path, reference: Any) -> None:
    tree, findings, _ = reference
    # notes only: clusters without a device inventory, and the draining tenants' queues not judged
    assert [f for f in findings if ": note: " not in f] == []
    assert {f.rsplit("(", 1)[1] for f in findings} <= {"claim-devices)", "claim-admissible)"}
    assert set(tree) == {"us-east", "eu-west", "ap-south"}
    kinds = {path.split("/")[0] for t in tree.values() for path in t}
    assert {"clusterqueue", "localqueue", "resourceclaimtemplate", "deviceclass", "cohort"} <= kinds
    tenant_objects = sum(
        1
        for t in tree.values()
        for p in t
        if p.split("/")[0] in ("clusterqueue", "localqueue", "resourceclaimtemplate")
    )
    assert tenant_objects >= 8 * TENANTS
    assert all(
        (fleet_root / "overlays" / c / "tenants" / "kustomization.yaml").is_file()
        for c in ("us-east", "eu-west")
    )
    labels = yaml.safe_load(tree["us-east"][next(p for p in tree["us-east"] if p.startswith("localqueue/"))])
    assert labels["metadata"]["labels"]["gputenancy.io/cluster"] == "us-east"  # the Component ran


def test_cold_and_warm_cache_give_the_same_output(
    fleet_root: Path, reference: Any, tmp_path: Path, shared: Path
) -> None:
    store = tmp_path / "cache"
    cold = engine.run(fleet_root, schemas=shared, cache=store)
    placements = sum(len(cold.model.tenants_on(c)) for c in cold.model.clusters)
    assert (cold.stats.hits, cold.stats.misses) == (0, placements)
    warm = engine.run(fleet_root, schemas=shared, cache=store)
    assert (warm.stats.hits, warm.stats.misses, warm.stats.rendered) == (placements, 0, ())
    assert warm.stats.shards == 0  # no tenant object went through kustomize
    assert _snapshot(cold) == reference
    assert _snapshot(warm) == reference


def test_shards_split_a_group_only_when_it_is_larger_than_a_shard() -> None:
    packer = build._Packer(4)
    sizes = [3, 2, 9, 1, 4]
    closed = []
    for index, size in enumerate(sizes):
        closed += packer.add(index, [index] * size)  # type: ignore[list-item]
    closed += packer.close()
    shards = [[(i, len(objs)) for i, objs in shard] for shard in closed]
    # group 1 does not fit beside group 0; group 2 is larger than a shard, so it fills what is left
    assert shards == [[(0, 3)], [(1, 2), (2, 2)], [(2, 4)], [(2, 3), (3, 1)], [(4, 4)]]
    assert packer.close() == []


@pytest.mark.parametrize("shard_size", [7, 100_000])
def test_shard_size_does_not_change_the_output(
    fleet_root: Path, reference: Any, shard_size: int, shared: Path
) -> None:
    result = engine.run(fleet_root, schemas=shared, cache=None, shard_size=shard_size)
    assert _snapshot(result) == reference
    if shard_size == 100_000:
        assert result.stats.shards == 2  # one per cluster with a tenant Component
    else:
        assert result.stats.shards > 60


def _entries(store: Path) -> list[Path]:
    """The tenant packs: up to sixteen per cluster."""
    return sorted((store / cache.FORMAT / engine.TENANT_ENTRY).rglob("*.json"))


def _size(pack: Path) -> int:
    return len(json.loads(pack.read_bytes().partition(b"\n")[2])["value"])


def test_a_damaged_cache_entry_is_never_used(
    fleet_root: Path, reference: Any, tmp_path: Path, shared: Path
) -> None:
    store = tmp_path / "cache"
    first = engine.run(fleet_root, schemas=shared, cache=store)
    assert first.stats.hits == 0
    packs = random.Random(3).sample(_entries(store), 4)
    sizes = [_size(p) for p in packs]
    # 1. a generated file edited inside a pack, digest left as it was
    head, _, payload = packs[0].read_bytes().partition(b"\n")
    assert b"nominalQuota" in payload or b"namespace" in payload
    packs[0].write_bytes(head + b"\n" + payload.replace(b"namespace", b"nameSpace", 1))
    # 2. truncated
    packs[1].write_bytes(packs[1].read_bytes()[:100])
    # 3. a valid pack of another name copied over this one
    shutil.copyfile(packs[3], packs[2])
    result = engine.run(fleet_root, schemas=shared, cache=store)
    assert (result.stats.corrupt, result.stats.misses) == (3, sum(sizes[:3]))
    assert _snapshot(result) == reference
    again = engine.run(fleet_root, schemas=shared, cache=store)  # rewritten by the run above
    assert (again.stats.corrupt, again.stats.misses) == (0, 0)
    # 4. digest recomputed over a payload that is not a pack
    bogus = b'{"key": "x", "value": 1}'
    packs[3].write_bytes(hashlib.sha256(bogus).hexdigest().encode() + b"\n" + bogus)
    result = engine.run(fleet_root, schemas=shared, cache=store)
    assert (result.stats.corrupt, result.stats.misses) == (1, sizes[3])
    assert _snapshot(result) == reference


def test_an_entry_that_checks_out_but_has_the_wrong_shape_is_a_miss(fleet_root: Path, tmp_path: Path) -> None:
    store = cache.Cache(tmp_path / "cache")
    first = engine.run(fleet_root, cache=store, cluster="ap-south")
    pack = _entries(store.directory)[0]
    entries = store.get(engine.TENANT_ENTRY, pack.stem)
    victim = sorted(entries)[0]
    entries[victim] = {"objects": [["not", "an", "object"]], "findings": []}
    assert store.put(engine.TENANT_ENTRY, pack.stem, entries)
    result = engine.run(fleet_root, cache=cache.Cache(store.directory), cluster="ap-south")
    assert (result.stats.corrupt, result.stats.misses) == (1, 1)
    assert _snapshot(result)[0] == _snapshot(first)[0]


def test_editing_one_tenant_re_renders_only_that_tenant(tmp_path: Path, shared: Path) -> None:
    root = tmp_path / "fleet"
    fleet.generate(root, TENANTS, seed=7)
    store = tmp_path / "cache"
    engine.run(root, schemas=shared, cache=store)
    name = fleet.edit_one(root)
    result = engine.run(root, schemas=shared, cache=store)
    tenant = next(t for t in result.model.tenants if t.name == name)
    placed = sorted((c, name) for c in result.model.clusters if tenant.placed_on(c))
    assert sorted(result.stats.rendered) == placed
    assert result.stats.misses == len(placed)
    assert _snapshot(result) == _snapshot(engine.run(root, schemas=shared, cache=None))
    # a change that does not reach any object (the description) renders nothing
    path = root / "tenants" / f"{name}.yaml"
    text = path.read_text()
    if "\ndescription:" in text:
        text = re.sub(r"\ndescription: .*\n", "\ndescription: changed\n", text, count=1)
    else:
        text += "description: changed\n"
    path.write_text(text)
    quiet = engine.run(root, schemas=shared, cache=store)
    assert quiet.stats.rendered == ()


def test_cache_key_covers_every_field_of_the_tenant_record() -> None:
    """Tenant entries are keyed by repr(Tenant): every field of every record it holds must be in it."""
    seen: set[type] = set()

    def walk(cls: type) -> None:
        if cls in seen or not dataclasses.is_dataclass(cls):
            return
        seen.add(cls)
        hints = typing.get_type_hints(cls, vars(sys.modules[cls.__module__]))
        for field in dataclasses.fields(cls):
            assert field.repr, f"{cls.__name__}.{field.name} is left out of repr()"
            for arg in _types(hints[field.name]):
                walk(arg)

    walk(spec.Tenant)
    assert {spec.Tenant, spec.FlavorBudget, spec.Amount, spec.ClaimTemplate, Origin} <= seen


def _types(hint: Any) -> list[type]:
    out = [hint] if isinstance(hint, type) else []
    for arg in typing.get_args(hint):
        out += _types(arg)
    return out


def test_remote_bases_are_refused_before_staging(tmp_path: Path) -> None:
    root = trees.example(tmp_path, generated=False)
    component = root / "overlays/prod/tenants/kustomization.yaml"
    component.write_text(
        component.read_text() + "# https://kubectl.docs.kubernetes.io/references/kustomize/\n"
    )
    with build.Stage(root, "prod") as stage:
        assert stage.hermetic()  # a URL in a comment is no reference
    component.write_text(
        component.read_text() + "components:\n  - https://github.com/acme/kustomize//tenants?ref=v1\n"
    )
    with pytest.raises(PipelineError) as refused:
        build.Stage(root, "prod")
    assert [f.rule for f in refused.value.findings] == ["kustomize-remote"]


def test_no_cache_flag_and_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = trees.example(tmp_path, generated=False)
    monkeypatch.delenv(cache.ENV, raising=False)
    assert cli.main(["--root", str(root), "--no-cache", "validate"]) == 0
    assert not (root / cache.DIRECTORY).exists()
    assert os.environ.get(cache.ENV) is None  # restored after the command
    assert gc.isenabled()  # the cycle collector is off only while a command runs
    monkeypatch.setenv(cache.ENV, "off")
    assert cli.main(["--root", str(root), "validate"]) == 0
    assert not (root / cache.DIRECTORY).exists()
    monkeypatch.setenv(cache.ENV, str(tmp_path / "elsewhere"))
    assert cli.main(["--root", str(root), "validate"]) == 0
    assert not (root / cache.DIRECTORY).exists() and _entries(tmp_path / "elsewhere")
    monkeypatch.delenv(cache.ENV)
    assert cli.main(["--root", str(root), "validate"]) == 0
    assert _entries(root / cache.DIRECTORY)


# ------------------------------------------------------------------------------ fastyaml is exact

_TEXT = "abcXYZ019 -_.:/'\"#@!%&*?|>{}[],`~=<\\\té\u2028\x85"
_WORDS = [
    "yes",
    "No",
    "ON",
    "null",
    "~",
    "true",
    "1",
    "0x1F",
    "010",
    "1e3",
    "1.5",
    ".5",
    "2024-01-01",
    "1:20",
    "",
    " ",
    "-",
    "- x",
    "a: b",
    "#",
    "name",
    "=",
    "<<",
    "y",
    "n",
    "x" * 130,
    "1_000",
]


def _random(rng: random.Random, depth: int = 0) -> Any:
    roll = rng.random()
    if depth > 3 or roll < 0.5:
        leaf = rng.random()
        if leaf < 0.35:
            return rng.choice(_WORDS)
        if leaf < 0.7:
            return "".join(rng.choice(_TEXT) for _ in range(rng.randint(0, 10)))
        return rng.choice([rng.randint(-(10**20), 10**20), True, False, None, rng.random()])
    if roll < 0.75:
        keys = [
            rng.choice(_WORDS) if rng.random() < 0.4 else "".join(rng.choice(_TEXT) for _ in range(4))
            for _ in range(rng.randint(0, 4))
        ]
        return {k: _random(rng, depth + 1) for k in keys}
    return [_random(rng, depth + 1) for _ in range(rng.randint(0, 4))]


def test_fastyaml_dump_and_load_are_pyyaml_exactly(reference: Any) -> None:
    rng = random.Random(11)
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    for _ in range(3000):
        body = {
            k: _random(rng)
            for k in rng.sample(["apiVersion", "kind", "metadata", "spec", "data", "name", "zz"], 4)
        }
        text = objects.to_yaml(body)
        assert fastyaml.dump(body) == text
        assert fastyaml.load(text) == yaml.load(text, Loader=loader)
    files = [data.decode() for tree in reference[0].values() for data in tree.values()]
    assert all(fastyaml.dump(fastyaml.load(text)) == text for text in files)
    stream = "---\n".join(files)
    assert fastyaml.load_all(stream) == list(yaml.load_all(stream, Loader=loader))
    for odd in (
        "a: &x [1]\nb: *x\n",
        "<<: {a: 1}\n",
        "d: 2024-01-01\n",
        "a: b\n---\nc: d\n",
        "[unclosed\n",
        "",
    ):
        try:
            want: Any = yaml.load(odd, Loader=loader)
        except yaml.YAMLError as exc:
            with pytest.raises(type(exc)):
                fastyaml.load(odd)
        else:
            assert fastyaml.load(odd) == want


def test_fleet_command_writes_to_fleet_n_by_default(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    assert fleet.main(["--tenants", "3"]) == 0
    assert sorted(p.name for p in (tmp_path / "fleet-3").iterdir()) == ["base", "overlays", "tenants"]
    assert len(list((tmp_path / "fleet-3" / "tenants").glob("*.yaml"))) == 3
    assert "fleet-3" in capsys.readouterr().out
    assert fleet.main(["--tenants", "3"]) == 1  # never over an existing fleet without --force
