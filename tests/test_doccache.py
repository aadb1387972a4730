"""The cache of loaded input files (`source.load` with a Cache): a hit is exactly the Document a fresh
parse gives, findings and warnings included; a file with errors is never stored; a damaged entry is a
miss; an edited file is parsed again; the path and size checks run before the cache is consulted; and
the commands use it unless it is turned off."""

from __future__ import annotations

import hashlib
import json
import math
import os
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import trees
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from bench import fleet
from gputenancy import engine
from gputenancy.caching import cache, cachekey
from gputenancy.cli import app as cli
from gputenancy.common.findings import Finding, PipelineError, Severity
from gputenancy.inputs import source
from gputenancy.inputs.kustomizations import KUSTOMIZATION_FILES
from gputenancy.inputs.source import MAX_DEPTH, MAX_FILE_BYTES, Document

NEGATIVE = trees.REPO / "tests" / "negative"

# Plain scalars, quoting, warnings and layouts whose values or marks are easy to get wrong.
TRICKY = {
    "scalars": "a: 1.\nb: .5\nc: -0.0\nd: 1.0e+3\ne: 1e3\nf: 0x1F\ng: '010'\nh: 010\ni: 0b101\n"
    "j: 9223372036854775807\nk: -9223372036854775808\nl: ~\nm:\nn: 2024-01-01\no: 1:20\np: '1.5'\n",
    "warnings": "a: yes\nb: Off\nc: y\nd: N\ne: [on, no]\nf: true\n",
    "keys": "'0': zero\n'true': t\n'': empty\n\"a b\": c\nlist: [0, [1, [2]], {x: [3]}]\n",
    "nested": "a:\n  - b:\n      - c: {d: [e, {f: g}]}\n  - []\n  - {}\nz: |\n  text\n  lines\n",
    "unicode": "name: \"caf\\u00e9 \\U0001F600 \\x85\"\ntext: ünïcødé\n'ключ': значение\n",
    "crlf-bom": "\ufeffa: 1\r\nb:\r\n  - 2\r\n",
    "top-list": "- 1\n- two\n- {three: 3}\n",
    "top-scalar": "just text\n",
    "top-null": "null\n",
}


def _entries(directory: Path) -> list[Path]:
    return sorted((directory / cache.FORMAT / source.CACHE_ENTRY).rglob("*.json"))


def _packed(directory: Path) -> int:
    """Entries in the packs a model load writes."""
    return sum(len(json.loads(p.read_bytes().partition(b"\n")[2])["value"]) for p in _entries(directory))


def _outcome(path: Path, root: Path, store: cache.Cache | None = None) -> Document | list[Finding]:
    """The Document, or the findings of the PipelineError."""
    try:
        return source.load(path, root, cache=store)
    except PipelineError as exc:
        return exc.findings


def _inputs(root: Path) -> list[Path]:
    return sorted(p for sub in ("base", "overlays", "tenants") for p in (root / sub).rglob("*.y*ml"))


def _loaded_by_the_model(root: Path) -> int:
    """base/platform.yaml, the Kueue Configuration, every cluster.yaml and tenant file."""
    return 2 + len(list(root.glob("overlays/*/cluster.yaml"))) + len(list(root.glob("tenants/*.yaml")))


def _no_parse(monkeypatch: pytest.MonkeyPatch) -> None:
    """Parsing any model input file fails; kustomizations (read before each build, not cached) parse."""
    real = source._load_bytes

    def refuse(data: bytes, shown: str, max_bytes: int) -> Document:
        if shown.endswith(KUSTOMIZATION_FILES):
            return real(data, shown, max_bytes)
        raise AssertionError("parsed a file the cache holds")

    monkeypatch.setattr(source, "_load_bytes", refuse)


def _cached_equals_fresh(root: Path, store: cache.Cache, monkeypatch: pytest.MonkeyPatch) -> list[Document]:
    """Load every input file fresh, through a cold cache and through a warm one; all must agree.
    Returns the Documents (files that loaded)."""
    files = _inputs(root)
    fresh = {p: _outcome(p, root) for p in files}
    assert {p: _outcome(p, root, store) for p in files} == fresh  # misses: parsed and stored
    docs = [d for d in fresh.values() if isinstance(d, Document)]
    assert len(_entries(store.directory)) == len(docs)  # a file with errors is never stored
    with monkeypatch.context() as patched:
        _no_parse(patched)
        assert {p: _outcome(p, root, store) for p in files if isinstance(fresh[p], Document)} == {
            p: d for p, d in fresh.items() if isinstance(d, Document)
        }
    assert store.corrupt == 0
    return docs


def test_a_hit_is_the_document_a_fresh_parse_gives(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = trees.example(tmp_path, generated=False)
    for path in NEGATIVE.glob("*.yaml"):
        shutil.copyfile(path, root / "tenants" / f"negative-{path.name}")
    for name, text in TRICKY.items():
        (root / "tenants" / f"tricky-{name}.yaml").write_bytes(text.encode())
    docs = _cached_equals_fresh(root, cache.Cache(tmp_path / "cache"), monkeypatch)
    errors = len(_inputs(root)) - len(docs)
    assert errors >= 10  # the corpus has files that fail to load ...
    assert sum(bool(d.findings) for d in docs) >= 2  # ... and files that load with warnings
    warned = next(d for d in docs if d.path == "tenants/tricky-warnings.yaml")
    assert [f.rule for f in warned.findings] == ["source-ambiguous-bool"] * 6


def test_a_hit_is_the_document_a_fresh_parse_gives_for_a_fleet(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "fleet"
    fleet.generate(root, 300, seed=11)
    docs = _cached_equals_fresh(root, cache.Cache(tmp_path / "cache"), monkeypatch)
    assert len(docs) > 300


_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(st.characters(blacklist_categories=("Cs", "Cc")), max_size=12)
)
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=25,
)


@settings(max_examples=300)
@given(_VALUES, st.booleans())
def test_any_loaded_document_survives_an_entry(value: Any, flow: bool) -> None:
    text = yaml.safe_dump(value, default_flow_style=flow, allow_unicode=True, sort_keys=False)
    try:
        doc = source.load_text(text, "tenants/t.yaml")
    except PipelineError:
        return
    entry = source.to_entry(doc)
    assert entry is not None
    assert source.from_entry(json.loads(json.dumps(entry)), "tenants/t.yaml") == doc


# ------------------------------------------------------------------------------ damaged entries


@pytest.fixture
def stored(tmp_path: Path) -> tuple[Path, Path, Document, Path]:
    """The example repository, one tenant file, its fresh Document and its (only) cache entry."""
    root = trees.example(tmp_path, generated=False)
    path = root / "tenants" / "speech.yaml"
    path.write_text(path.read_text() + "extra: yes\n")  # a warning to keep
    store = cache.Cache(tmp_path / "cache")
    doc = source.load(path, root, cache=store)
    assert doc.findings and doc == source.load(path, root)
    [entry] = _entries(store.directory)
    return root, path, doc, entry


def _rewrite(entry: Path, change: Callable[[dict[str, Any]], Any]) -> None:
    """Change the stored value and write it back with a digest that checks out."""
    payload = json.loads(entry.read_bytes().partition(b"\n")[2])
    change(payload["value"])
    data = json.dumps(payload).encode()
    entry.write_bytes(hashlib.sha256(data).hexdigest().encode() + b"\n" + data)


def _nested(depth: int) -> Any:
    value: Any = "deep"
    for _ in range(depth):
        value = [value]
    return value


DAMAGES: dict[str, Callable[[Path], Any]] = {
    "bytes edited, digest kept": lambda e: e.write_bytes(e.read_bytes().replace(b"speech", b"speeck", 1)),
    "truncated": lambda e: e.write_bytes(e.read_bytes()[:80]),
    "not JSON": lambda e: _rewrite_raw(e, b"{not json"),
    "nested beyond the JSON reader": lambda e: _rewrite_raw(e, b"[" * 100_000 + b"]" * 100_000),
    "another file's path": lambda e: _rewrite(e, lambda v: v.update(path="tenants/vision.yaml")),
    "a key too many": lambda e: _rewrite(e, lambda v: v.update(extra=1)),
    "a mark missing": lambda e: _rewrite(e, lambda v: v["marks"].pop()),
    "a key mark missing": lambda e: _rewrite(e, lambda v: v["key_marks"].pop()),
    "a mark that is not a number": lambda e: _rewrite(e, lambda v: v["marks"].__setitem__(0, "1")),
    "a negative line": lambda e: _rewrite(e, lambda v: v["marks"].__setitem__(0, -1)),
    "a boolean line": lambda e: _rewrite(e, lambda v: v["marks"].__setitem__(0, True)),
    "a NaN value": lambda e: _rewrite(e, lambda v: v["data"].update(name=math.nan)),
    "an infinite value": lambda e: _rewrite(e, lambda v: v["data"].update(name=math.inf)),
    "an integer over 64 bits": lambda e: _rewrite(e, lambda v: v["data"].update(name=2**64)),
    "nesting over MAX_DEPTH": lambda e: _rewrite(e, lambda v: v["data"].update(name=_nested(MAX_DEPTH))),
    "data of another layout": lambda e: _rewrite(e, lambda v: v["data"].update(name={"a": 1})),
    "an error finding": lambda e: _rewrite(e, lambda v: v["findings"][0].__setitem__(3, "error")),
    "a finding of another file": lambda e: _rewrite(e, lambda v: v["findings"][0].__setitem__(0, "x.yaml")),
    "a finding of another shape": lambda e: _rewrite(e, lambda v: v["findings"][0].pop()),
    "findings not a list": lambda e: _rewrite(e, lambda v: v.update(findings={})),
    "not a mapping": lambda e: _rewrite(e, lambda v: v.clear()),
}


def _rewrite_raw(entry: Path, payload: bytes) -> None:
    entry.write_bytes(hashlib.sha256(payload).hexdigest().encode() + b"\n" + payload)


@pytest.mark.parametrize("damage", DAMAGES, ids=list(DAMAGES))
def test_a_damaged_entry_is_a_miss(
    stored: tuple[Path, Path, Document, Path], damage: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    root, path, doc, entry = stored
    DAMAGES[damage](entry)
    store = cache.Cache(entry.parents[3])
    assert source.load(path, root, cache=store) == doc
    assert store.corrupt == 1
    again = cache.Cache(store.directory)  # the run above wrote the entry anew
    _no_parse(monkeypatch)
    assert source.load(path, root, cache=again) == doc
    assert again.corrupt == 0


def test_an_edited_file_is_parsed_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = trees.example(tmp_path, generated=False)
    path = root / "tenants" / "speech.yaml"
    store = cache.Cache(tmp_path / "cache")
    before = source.load(path, root, cache=store)
    path.write_text("# a comment: the same data, every mark one line down\n" + path.read_text())
    after = source.load(path, root, cache=store)
    assert after == source.load(path, root) != before
    assert after.data == before.data and after.marks[()] == (before.marks[()][0] + 1, 1)
    assert len(_entries(store.directory)) == 2
    # the same bytes under another name load as that file, not as the cached one
    copy = root / "tenants" / "copy.yaml"
    shutil.copyfile(path, copy)
    assert source.load(copy, root, cache=store) == source.load(copy, root)
    assert source.load(copy, root, cache=store).path == "tenants/copy.yaml"
    # other software: other keys
    monkeypatch.setattr(cachekey, "software", lambda: "another version")
    assert source.load(path, root, cache=store) == after
    assert len(_entries(store.directory)) == 4


def test_checks_before_the_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Size, symlink and file-type checks refuse a file before its bytes are hashed or looked up."""
    root = trees.example(tmp_path, generated=False)
    store = cache.Cache(tmp_path / "cache")
    big = root / "tenants" / "big.yaml"
    big.write_bytes(b"a: " + b"x" * MAX_FILE_BYTES)
    outside = tmp_path / "outside.yaml"
    outside.write_text("name: outside\n")
    (root / "tenants" / "link.yaml").symlink_to(outside)
    (root / "tenants" / "dir.yaml").mkdir()
    expected = {p: _outcome(p, root) for p in (big, root / "tenants/link.yaml", root / "tenants/dir.yaml")}

    def refuse(*parts: Any) -> str:
        raise AssertionError("hashed a file that is refused")

    monkeypatch.setattr(cachekey, "digest", refuse)
    for path, findings in expected.items():
        assert _outcome(path, root, store) == findings
    refused = [f.rule for findings in expected.values() if isinstance(findings, list) for f in findings]
    assert refused == ["source-size", "source-symlink", "source-not-regular"]
    assert not _entries(store.directory)


def test_check_only_reads_inputs_from_the_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = trees.example(tmp_path, generated=False)
    store = tmp_path / "cache"
    fresh = engine.check_only(root, cache=None)
    assert not _entries(store)
    assert engine.check_only(root, cache=store) == fresh
    assert _packed(store) == _loaded_by_the_model(root)
    _no_parse(monkeypatch)
    assert engine.check_only(root, cache=store) == fresh


def test_commands_use_the_cache_unless_it_is_off(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = trees.example(tmp_path, generated=False)
    store = tmp_path / "store"
    monkeypatch.setenv(cache.ENV, str(store))
    assert cli.main(["--root", str(root), "--no-cache", "validate"]) == 0
    monkeypatch.setenv(cache.ENV, "off")
    assert cli.main(["--root", str(root), "validate"]) == 0
    assert not _entries(store)
    monkeypatch.setenv(cache.ENV, str(store))
    assert cli.main(["--root", str(root), "validate"]) == 0
    assert _packed(store) == _loaded_by_the_model(root)
    _no_parse(monkeypatch)
    assert cli.main(["--root", str(root), "validate"]) == 0


def test_warnings_are_kept_exactly(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = trees.example(tmp_path, generated=False)
    path = root / "tenants" / "w.yaml"
    path.write_text("a: on\nb: [Y, n]\n")
    store = cache.Cache(tmp_path / "cache")
    fresh = source.load(path, root)
    source.load(path, root, cache=store)
    _no_parse(monkeypatch)
    hit = source.load(path, root, cache=store)
    assert hit.findings == fresh.findings
    assert [(f.line, f.col, f.severity) for f in hit.findings] == [
        (1, 4, Severity.WARNING),
        (2, 5, Severity.WARNING),
        (2, 8, Severity.WARNING),
    ]


def test_a_pack_is_written_only_when_it_changes_and_keeps_what_the_run_used(tmp_path: Path) -> None:
    store = cache.Cache(tmp_path / "cache")
    first = store.pack("k", "p")
    first.put("k", "a", 1)
    first.put("k", "b", [2])
    assert first.save()
    (path,) = (tmp_path / "cache" / cache.FORMAT / "k").rglob("*.json")
    second = store.pack("k", "p")
    assert second.get("k", "a") == 1
    assert second.save()  # "b" was not used: written again without it
    third = store.pack("k", "p")
    assert third.get("k", "b") is None and third.get("k", "a") == 1
    inode = path.stat().st_ino
    assert third.save()
    assert path.stat().st_ino == inode  # nothing changed, nothing written
    third.put("k", "a", 3)
    assert third.save() and path.stat().st_ino != inode
    assert store.pack("k", "p").get("k", "a") == 3
    path.write_bytes(path.read_bytes().replace(b"3", b"4"))
    assert store.pack("k", "p").get("k", "a") is None
    assert store.corrupt == 1
    assert store.pack("other", "p").get("other", "a") is None  # packs of other kinds are apart
    with pytest.raises(ValueError, match="holds no"):
        store.pack("k", "p").get("other", "a")


def test_packs_no_run_opened_for_a_while_are_removed_when_another_is_written(tmp_path: Path) -> None:
    store = cache.Cache(tmp_path / "cache")
    for name in ("old", "kept", "new"):
        pack = store.pack("k", name)
        pack.put("k", "a", name)
        assert pack.save()
    (old, kept, new) = (Path(store._path("k", n)) for n in ("old", "kept", "new"))
    long_ago = time.time() - (cache.UNUSED_DAYS + 1) * 86400
    for path in (old, kept):
        os.utime(path, (long_ago, long_ago))
    assert store.pack("k", "kept").get("k", "a") == "kept"  # opening a pack marks it used
    other = store.pack("other", "x")
    other.put("other", "a", 1)
    assert other.save()
    assert old.exists()  # packs of another kind are left alone
    assert old.exists()  # this run's Cache pruned kind "k" when it first wrote a pack
    next_run = cache.Cache(store.directory)
    again = next_run.pack("k", "new")
    again.put("k", "b", 2)
    assert again.save()
    assert not old.exists() and kept.exists() and new.exists()


def test_packs_spread_entries_by_key_and_rewrite_only_the_pack_that_changed(tmp_path: Path) -> None:
    store = cache.Cache(tmp_path / "cache")
    keys = [cachekey.digest(str(i)) for i in range(64)]
    packs = store.packs("k", "cluster")
    for key in keys:
        packs.put("k", key, key[-4:])
    assert packs.save()
    files = sorted((tmp_path / "cache" / cache.FORMAT / "k").rglob("*.json"))
    assert len(files) == len({k[0] for k in keys}) > 1
    inodes = {f: f.stat().st_ino for f in files}
    again = store.packs("k", "cluster")
    assert [again.get("k", key) for key in keys] == [k[-4:] for k in keys]
    again.put("k", keys[0], "changed")
    assert again.save()
    rewritten = [f for f in files if f.stat().st_ino != inodes[f]]
    assert rewritten == [Path(store._path("k", f"cluster-{keys[0][0]}"))]
    assert store.packs("k", "cluster").get("k", keys[0]) == "changed"


def test_a_model_load_rewrites_only_the_packs_of_the_file_that_changed(tmp_path: Path) -> None:
    """Input files are kept in sixteen packs by key, and a load opens only the packs of the keys it
    asks for: after one tenant file changes, the next load rewrites the pack that takes its new entry
    and the pack that held its old one when that pack is opened (another file's key falls in it; it
    then drops the old entry), no other. A pack no key of the load falls in keeps what it held.
    Keys hold the package's digest, so which case occurs depends on the code: both are computed."""
    root = tmp_path / "fleet"
    fleet.generate(root, 40)
    store = tmp_path / "cache"
    engine.check_only(root, cache=store)
    files = _entries(store)
    assert len(files) > 2 and _packed(store) == _loaded_by_the_model(root)
    inodes = {f: f.stat().st_ino for f in files}
    engine.check_only(root, cache=store)
    assert {f: f.stat().st_ino for f in _entries(store)} == inodes  # nothing changed, nothing written
    keys = {k for f in files for k in json.loads(f.read_bytes().partition(b"\n")[2])["value"]}
    path = sorted((root / "tenants").glob("*.yaml"))[0]
    old = cachekey.source(f"tenants/{path.name}", path.read_bytes())
    path.write_text(path.read_text() + "# changed\n")
    new = cachekey.source(f"tenants/{path.name}", path.read_bytes())
    assert old in keys and new not in keys
    opened = {k[0] for k in keys - {old} | {new}}
    engine.check_only(root, cache=store)
    rewritten = {f.name for f in _entries(store) if f.stat().st_ino != inodes.get(f)}
    pack = cachekey.source_pack()
    assert rewritten == {f"{pack}-{new[0]}.json"} | ({f"{pack}-{old[0]}.json"} if old[0] in opened else set())
    assert _packed(store) == _loaded_by_the_model(root) + (old[0] not in opened)


ENTRY_VALUES: dict[str, Any] = {
    "plain": {"a": [1, -(2**63), 2**64 - 1, 0.1, -0.0, 1e300, None, True, "é\u2028\x00"]},
    "wide integers": {"a": [2**64, -(2**63) - 1, 10**40]},
    "not a number": {"a": [math.nan, math.inf, -math.inf]},
    "lone surrogate": {"a": "\ud800"},
    "deep": [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]] * 40,
}


@pytest.mark.parametrize("name", list(ENTRY_VALUES))
def test_an_entry_reads_back_as_the_standard_reader_gives_it(tmp_path: Path, name: str) -> None:
    """Entries whose integers all fit in 64 bits are marked and read by orjson, the others by json;
    either way the value read is the one `json.loads` gives, type for type (an integer wider than 64
    bits stays an int, NaN stays NaN)."""
    value = ENTRY_VALUES[name]
    store = cache.Cache(tmp_path / "cache")
    assert store.put("k", "key", value)
    (path,) = (tmp_path / "cache" / cache.FORMAT / "k").rglob("*.json")
    head, _, payload = path.read_bytes().partition(b"\n")
    assert head.endswith(b" i64") == (name not in ("wide integers", "lone surrogate"))
    expected = json.loads(payload)["value"]
    got = store.get("k", "key")
    assert repr(got) == repr(expected)
    assert json.dumps(got) == json.dumps(value)
    assert store.corrupt == 0
    path.write_bytes(head.split(b" ")[0] + b" i64\n" + payload.replace(b'"key"', b'"kez"'))
    assert store.get("k", "key") is None and store.corrupt == 1
