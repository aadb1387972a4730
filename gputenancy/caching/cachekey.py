"""Every cache key and every ingredient of each, in one place.

A cache entry is only as good as its key: an input that can change an entry but is missing from its key
gives stale output. So keys are made here and nowhere else: `key(kind, **parts)` refuses parts that are
not exactly the ingredients listed for `kind` in `KEYS`, and `tests/test_cachekey.py` walks `INGREDIENTS`
and, for each, changes that input alone in a real run and sees a miss (a new ingredient without such a
test fails there).

Kinds of keys (a key holds the digest of another by naming that kind among its ingredients):

- ``software``: this package's files and the interpreter and libraries that run them; in every other
  key but ``tool``.
- ``cluster``: what every tenant of one cluster is rendered, built and validated against; names the
  cluster's tenant packs (`cache.Packs`).
- ``tenant``: one tenant's finished result on one cluster (built objects, generated/ files, findings).
- ``platform``: the validation report of one cluster's platform layer.
- ``overlay``: kustomize's output for one cluster's overlay (base/, the overlay, the platform layer):
  a plan that changes no file kustomize reads for it does not run kustomize on it again.
- ``built``: the checks on one cluster's built objects (`check.postbuild`), which look at every tenant
  of the cluster at once; its ``tenant`` part is the digest of the keys of every tenant on the cluster,
  in order.
- ``built-part``: one tenant's part of those checks (`check.chain.slices`), looked up when the
  cluster's ``built`` entry is not found: the tenant's entry key and what the part reads from the rest
  of the cluster; kept in a pack named by the ``cluster`` key, beside what those checks need of the
  tenant's objects before its part is looked up, kept under the ``tenant`` key itself (which fixes the
  objects).
- ``source-pack`` and ``source``: the pack of loaded input files, and one loaded file in it.
- ``tool``: the `version` output of a kustomize executable, so runs do not start it only to ask.

Some ingredients are implied by others today (a cluster's Kueue version is written in its overlay, whose
files are all in ``staged-files``); they are listed anyway, so a key stays right when its inputs move.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import yaml

SCHEME = "v2"
"""Part of every key: bump it when the form of an entry changes."""

DISTRIBUTIONS = (
    "PyYAML",
    "Jinja2",
    "jsonschema",
    "jsonschema-rs",
    "common-expression-language",
    "cel-expr-python",
    "protobuf",
    "kubernetes-validate",
)
"""The libraries that parse, render, validate and serialise: their versions are in ``software``."""

INGREDIENTS: Mapping[str, str] = {
    # software
    "python": "the Python version (sys.version)",
    "libyaml": "whether PyYAML runs with libyaml",
    "libraries": "the installed versions of DISTRIBUTIONS",
    "package_code": "the package's .py files (relative paths and bytes)",
    "package_templates": "the package's .j2 templates",
    "package_data": "every other file of the package: input schemas, per-version data",
    # cluster
    "kustomize_version": "the `version` output of the kustomize executable found on PATH",
    "kustomize_run": "whether the run builds with kustomize at all",
    "catalog": "the effective device-class catalog (class, quota resource, selectors, capacity) and the "
    "names of the HAMi device kind behind each of the cluster's flavors",
    "cluster_name": "the cluster's name",
    "kueue_version": "the cluster's Kueue version",
    "kubernetes_version": "the cluster's Kubernetes version",
    "staged_files": "every file kustomize can read for the cluster: base/ and the overlay, as staged",
    "crd_dir": "where the Kueue CRDs used for validation are (`--schemas`)",
    "crd_files": "the relative paths and bytes of those CRD files",
    # tenant, platform
    "tenant_record": "the tenant's record as loaded: every field, with its line numbers (repr)",
    "platform_objects": "the platform layer as built: bodies, origins and where each field came from",
    # built
    "built_context": "what a tenant's post-build checks read beyond its own objects: the platform layer "
    "as built, the lendable quota of its ClusterQueues' cohort trees, the owners of its namespaces",
    # overlay
    "platform_layer": "the platform layer's files as written for kustomize (names and text)",
    # source
    "path": "an input file's repository-relative path",
    "file_bytes": "an input file's bytes",
    # tool
    "executable": "the resolved path of the kustomize executable",
    "size": "its size in bytes",
    "mtime": "its modification time (ns)",
}

KEYS: Mapping[str, tuple[str, ...]] = {
    "software": ("python", "libyaml", "libraries", "package_code", "package_templates", "package_data"),
    "cluster": (
        "software",
        "kustomize_version",
        "kustomize_run",
        "catalog",
        "cluster_name",
        "kueue_version",
        "kubernetes_version",
        "staged_files",
        "crd_dir",
        "crd_files",
    ),
    "tenant": ("cluster", "tenant_record"),
    "platform": ("cluster", "platform_objects"),
    "overlay": ("cluster", "platform_layer"),
    "built": ("cluster", "tenant"),
    "built-part": ("tenant", "built_context"),
    "source-pack": ("software",),
    "source": ("software", "path", "file_bytes"),
    "tool": ("executable", "size", "mtime"),
}


def ingredients(kind: str) -> tuple[str, ...]:
    """The leaf ingredients of a kind of key, those of the keys it holds included."""
    out: list[str] = []
    for part in KEYS[kind]:
        out += ingredients(part) if part in KEYS else [part]
    return tuple(out)


def digest(*parts: str | bytes) -> str:
    """sha256 of the parts, each length-prefixed so that no two sequences of parts collide."""
    h = hashlib.sha256()
    _feed(h, parts)
    return h.hexdigest()


def _feed(h: Any, parts: Iterable[str | bytes]) -> None:
    for part in parts:
        data = part.encode("utf-8", "surrogatepass") if isinstance(part, str) else part
        h.update(b"%d:" % len(data))
        h.update(data)


def key(kind: str, **parts: str | bytes) -> str:
    """The key of `kind` over `parts`, which must be exactly the ingredients `KEYS` lists for it."""
    names = _named(kind, parts.keys())
    return digest(SCHEME, kind, *(p for name in names for p in (name, parts[name])))


def _named(kind: str, given: Iterable[str]) -> tuple[str, ...]:
    """The ingredients of `kind`, in order; ValueError unless `given` are exactly those, each once."""
    names = KEYS[kind]
    got = sorted(given)
    if got != sorted(names):
        raise ValueError(f"a {kind} key is made of {', '.join(names)}; got {', '.join(got)}")
    return names


def key_after(kind: str, first: str, **rest: str | bytes) -> str:
    """`key(kind, ...)` with `first` as its first ingredient and `rest` as the others, for keys made by
    the thousand that share their first ingredient (the input files of a run share the software, the
    tenants of a cluster its key): the hash of what they share is made once and copied."""
    names = _named(kind, [KEYS[kind][0], *rest])
    h = _begun(kind, first).copy()
    _feed(h, [p for name in names[1:] for p in (name, rest[name])])
    made: str = h.hexdigest()
    return made


@functools.lru_cache(maxsize=256)
def _begun(kind: str, first: str) -> Any:
    """The hash of a `kind` key after its first ingredient; only ever copied."""
    h = hashlib.sha256()
    _feed(h, (SCHEME, kind, KEYS[kind][0], first))
    return h


MAX_TREE_FILE = 64 * 1024 * 1024


def tree_digest(directory: Path) -> str:
    """sha256 over the relative paths and bytes of every regular file under `directory` ('' when
    missing). A file over `MAX_TREE_FILE` bytes counts by its size and time, unread (the schema
    reader refuses it anyway)."""
    if not directory.is_dir():
        return ""
    parts: list[str | bytes] = []
    for path in sorted(p for p in directory.rglob("*") if p.is_file()):
        info = path.stat()
        body = path.read_bytes() if info.st_size <= MAX_TREE_FILE else f"{info.st_size}:{info.st_mtime_ns}"
        parts += [path.relative_to(directory).as_posix(), body]
    return digest(*parts)


def _files(package: Path, kinds: Mapping[str, str]) -> dict[str, str]:
    """Digests of the package's files by ingredient: suffix -> ingredient, others in package_data."""
    parts: dict[str, list[str | bytes]] = {"package_code": [], "package_templates": [], "package_data": []}
    for path in sorted(package.rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc":
            which = kinds.get(path.suffix, "package_data")
            parts[which] += [path.relative_to(package).as_posix(), path.read_bytes()]
    return {name: digest(*found) for name, found in parts.items()}


@functools.cache
def software() -> str:
    """The ``software`` key: this package's files and the Python and library versions."""
    libraries = []
    for name in DISTRIBUTIONS:
        try:
            libraries.append(f"{name}={importlib.metadata.version(name)}")
        except importlib.metadata.PackageNotFoundError:
            libraries.append(f"{name}=none")
    files = _files(
        Path(__file__).resolve().parent.parent, {".py": "package_code", ".j2": "package_templates"}
    )
    return key(
        "software",
        python=sys.version,
        libyaml=str(getattr(yaml, "__with_libyaml__", False)),
        libraries="\n".join(libraries),
        **files,
    )


def source_pack() -> str:
    return key("source-pack", software=software())


def source(path: str, data: bytes) -> str:
    return key_after("source", software(), path=path, file_bytes=data)
