"""A content-addressed cache of per-tenant results, so a run re-renders only what its inputs changed.

Where: `.gputenancy-cache/` under the repository root, or `$GPUTENANCY_CACHE` (a directory; `off`
disables it, as does `pipeline.py --no-cache`). It is safe to delete at any time.

What: one entry per (tenant, cluster): the tenant's objects as built by kustomize, their file paths
and bytes in generated/, and the validation findings about them (`tenantcache`, the one interface
the engine uses). An entry's key is a sha256 over everything that can change it: the tenant's record
as loaded (every field, with its line numbers), the effective device-class catalog, the cluster's
Kueue and Kubernetes versions, every file kustomize can read for that cluster (base/ and the overlay,
its tenant Component included), the Kueue CRDs used for validation, the kustomize version, the
package's own code, templates, schemas and data, and the versions of Python and of the libraries that
parse, validate and serialise; `cachekey` lists them all, in one place. A changed input gives a new
key, so an entry is never stale. And one entry per input file as loaded (`source`): its data with
line/column marks, keyed by its path, its bytes and the software, so that unchanged files are not
parsed again.

How: each entry is a file `<dir>/v1/<kind>/<key[:2]>/<key>.json`: a first line with the sha256 of
the rest, then the entry as JSON of plain data (carrying its own key). The first line ends in ` i64`
when every integer of the entry fits in 64 bits: such an entry is read by orjson, which gives the
same values as the standard library's reader three times faster but would read a wider integer as a
float; any other entry, and any payload orjson refuses (`NaN`, a lone surrogate), is read by `json`. Small entries that a run
reads by the thousand (the tenants of a cluster, the input files) are kept in packs (`Pack`,
`Packs`): one entry holding many, read once and written once per run, since creating and opening thousands of
small files costs more than the bytes in them; a pack keeps the entries its last run used, and a
pack under an old name (changed software, cluster files or versions) is removed once no run has
read it for `UNUSED_DAYS` days (checked whenever a pack of its kind is written). An
entry whose digest or key does not match (edited, truncated, written by something else) is ignored
and counted in `corrupt`.
Writes go to a temporary file in the same directory and are renamed into place, so concurrent runs
never see half an entry; a failed write only costs a future miss.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import os
import shutil
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

import orjson

from gputenancy.caching import cachekey
from gputenancy.common import proc
from gputenancy.common.findings import PipelineError

ENV = "GPUTENANCY_CACHE"
DIRECTORY = ".gputenancy-cache"
OFF = "off"
FORMAT = "v1"
_DISABLED = frozenset({"", "0", "off", "false", "no", "none"})


def location(root: Path, environ: Mapping[str, str] | None = None) -> Path | None:
    """The cache directory for `root`: $GPUTENANCY_CACHE, else root/.gputenancy-cache; None when off
    (and when root/.gputenancy-cache is a symlink: a branch must not make runs write elsewhere)."""
    value = (os.environ if environ is None else environ).get(ENV)
    if value is None:
        default = root / DIRECTORY
        return None if default.is_symlink() else default
    if value.strip().lower() in _DISABLED:
        return None
    return Path(value).expanduser()


@contextlib.contextmanager
def disabled(flag: bool = True) -> Iterator[None]:
    """While inside, runs do not use the cache (sets $GPUTENANCY_CACHE to `off`, then restores it)."""
    if not flag:
        yield
        return
    before = os.environ.get(ENV)
    os.environ[ENV] = OFF
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(ENV, None)
        else:
            os.environ[ENV] = before


class Entries(Protocol):
    """Where loaders get and put entries: a `Cache`, or a `Pack` of one kind of entries."""

    corrupt: int

    def get(self, kind: str, key: str) -> Any: ...

    def put(self, kind: str, key: str, value: Any) -> bool: ...


@dataclasses.dataclass
class Cache:
    """Entries under one directory. `corrupt` counts entries that were found but could not be used."""

    directory: Path
    corrupt: int = 0
    _pruned: set[str] = dataclasses.field(default_factory=set, repr=False, compare=False)

    def _path(self, kind: str, key: str) -> str:
        # os.path rather than pathlib: a run looks up thousands of entries.
        return os.path.join(self.directory, FORMAT, kind, key[:2], f"{key}.json")

    def get(self, kind: str, key: str) -> Any:
        """The entry stored under `key`, or None when there is none or it does not check out."""
        try:
            with open(self._path(kind, key), "rb") as f:
                raw = f.read()
        except OSError:
            return None
        head, _, payload = raw.partition(b"\n")
        digest, _, form = head.partition(b" ")
        try:
            if digest.decode("ascii") != hashlib.sha256(payload).hexdigest():
                raise ValueError("digest mismatch")
            entry = _loads(payload, form == _FITS_64)
            if not isinstance(entry, dict) or entry.get("key") != key:
                raise ValueError("key mismatch")
        except (ValueError, RecursionError):  # UnicodeDecodeError, JSONDecodeError; nesting too deep
            self.corrupt += 1
            return None
        return entry.get("value")

    def put(self, kind: str, key: str, value: Any) -> bool:
        """Store `value` (plain data) atomically; False when it could not be written."""
        path = Path(self._path(kind, key))
        payload = json.dumps({"key": key, "value": value}, separators=(",", ":")).encode()
        head = hashlib.sha256(payload).hexdigest().encode()
        data = head + (b" " + _FITS_64 if _fits_64(value) else b"") + b"\n" + payload
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            ignore = self.directory / ".gitignore"
            if not ignore.exists():  # like .pytest_cache: never shows up in `git status`
                ignore.write_text("# created by gputenancy; the cache is safe to delete\n*\n")
            fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=path.parent)
        except OSError:
            return False
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.replace(tmp, path)
        except OSError:
            Path(tmp).unlink(missing_ok=True)
            return False
        return True

    def prune(self, kind: str, before: float) -> int:
        """Remove the files of `kind` last modified before `before` (a Unix time); returns how many."""
        removed = 0
        top = os.path.join(self.directory, FORMAT, kind)
        with contextlib.suppress(OSError), os.scandir(top) as shards:
            for shard in shards:
                if not shard.is_dir(follow_symlinks=False):
                    continue
                with contextlib.suppress(OSError), os.scandir(shard.path) as files:
                    for entry in files:
                        with contextlib.suppress(OSError):
                            if entry.is_file(follow_symlinks=False) and entry.stat().st_mtime < before:
                                os.unlink(entry.path)
                                removed += 1
        return removed

    def prune_unused(self, kind: str) -> None:
        """`prune` the packs of `kind` no run opened for UNUSED_DAYS; once per kind and Cache object."""
        if kind not in self._pruned:
            self._pruned.add(kind)
            self.prune(kind, time.time() - UNUSED_DAYS * 86400)

    def pack(self, kind: str, name: str) -> Pack:
        """The entries of `kind` kept in the pack `name` (see `Pack`)."""
        return Pack(self, kind, name)

    def packs(self, kind: str, name: str) -> Packs:
        """The entries of `kind` kept in sixteen packs `name-0` ... `name-f` (see `Packs`)."""
        return Packs(self, kind, name)

    def tool_version(self, command: Sequence[str]) -> str:
        """The `version` output of kustomize (`kustomize version`, `kubectl version --client`),
        remembered per binary (path, size, modification time) so that runs do not start it again."""
        exe = shutil.which(command[0])
        if exe is None:
            return f"{command[0]}: not found"
        real = Path(exe).resolve()
        try:
            st = real.stat()
        except OSError:
            return f"{command[0]}: unreadable"
        key = cachekey.key("tool", executable=str(real), size=str(st.st_size), mtime=str(st.st_mtime_ns))
        known = self.get("tool", key)
        if isinstance(known, str):
            return known
        found = version_of(command)
        self.put("tool", key, found)
        return found


_FITS_64 = b"i64"


def _fits_64(value: Any) -> bool:
    """True when orjson can write `value`, so that no integer in it is wider than 64 bits (orjson
    refuses those; what else it writes differently, NaN, is refused by its reader and read by `json`)."""
    try:
        orjson.dumps(value)
    except TypeError:  # orjson.JSONEncodeError: an integer wider than 64 bits, a key not a string, ...
        return False
    return True


def _loads(payload: bytes, fits_64: bool) -> Any:
    """An entry's payload as `json.loads` reads it; through orjson when its integers fit 64 bits."""
    if fits_64:
        try:
            return orjson.loads(payload)
        except orjson.JSONDecodeError:
            pass
    return json.loads(payload)


UNUSED_DAYS = 14
"""Packs no run has opened for this long are removed when another pack of their kind is written."""


class _Packed:
    """What `Pack` and `Packs` share: the cache they belong to, their one kind of entries, and the
    cache's `corrupt` count (which entry readers increment through them)."""

    def __init__(self, cache: Cache, kind: str, name: str) -> None:
        self.cache, self.kind, self.name = cache, kind, name

    @property
    def corrupt(self) -> int:
        return self.cache.corrupt

    @corrupt.setter
    def corrupt(self, value: int) -> None:
        self.cache.corrupt = value

    def _own(self, kind: str) -> None:
        if kind != self.kind:
            raise ValueError(f"a pack of {self.kind!r} entries holds no {kind!r} entries")


class Pack(_Packed):
    """Entries of one kind kept together in one cache entry, named `name`: read when the pack is
    opened, written by `save`. `get` and `put` take the same arguments as `Cache`'s, so a loader works
    with either. `save` writes the entries this run used (got or put), and only when something
    changed, so entries no run uses any more are dropped. A pack that does not check out is empty
    (counted once in `corrupt`); each entry in it is checked by its reader as before."""

    def __init__(self, cache: Cache, kind: str, name: str) -> None:
        super().__init__(cache, kind, name)
        stored = cache.get(kind, name)
        if stored is not None and not isinstance(stored, dict):
            cache.corrupt += 1
            stored = None
        if stored is not None:
            with contextlib.suppress(OSError):
                os.utime(cache._path(kind, name))  # in use: see UNUSED_DAYS
        self._stored: dict[str, Any] = stored or {}
        self._used: dict[str, Any] = {}
        self._changed = False

    def get(self, kind: str, key: str) -> Any:
        self._own(kind)
        value = self._stored.get(key)
        if value is not None:
            self._used[key] = value
        return value

    def put(self, kind: str, key: str, value: Any) -> bool:
        self._own(kind)
        self._changed = self._changed or self._stored.get(key) != value
        self._used[key] = value
        return True

    def save(self) -> bool:
        """Write the pack when an entry was added or changed, or one was not used; False when it could
        not be written."""
        if not self._changed and self._used.keys() == self._stored.keys():
            return True
        written = self.cache.put(self.kind, self.name, self._used)
        if written:
            self._stored, self._changed = dict(self._used), False
            self.cache.prune_unused(self.kind)
        return written


class Packs(_Packed):
    """Entries of one kind spread over sixteen packs by the first hex digit of their key (keys are
    sha256 digests), so that a run that changes one entry rewrites a sixteenth of them: the tenant
    entries of a cluster of 600 tenants are about 9 MB. Same `get`/`put`/`save` as `Pack`; each pack
    is opened when a key of its digit is first asked for."""

    def __init__(self, cache: Cache, kind: str, name: str) -> None:
        super().__init__(cache, kind, name)
        self._packs: dict[str, Pack] = {}

    def _pack(self, key: str) -> Pack:
        part = key[:1]
        if part not in self._packs:
            self._packs[part] = Pack(self.cache, self.kind, f"{self.name}-{part}")
        return self._packs[part]

    def get(self, kind: str, key: str) -> Any:
        return self._pack(key).get(kind, key)

    def put(self, kind: str, key: str, value: Any) -> bool:
        return self._pack(key).put(kind, key, value)

    def save(self) -> bool:
        """`Pack.save` of every pack opened; False when one could not be written."""
        return all([pack.save() for pack in self._packs.values()])


def version_of(command: Sequence[str]) -> str:
    """What the kustomize command says its version is (empty when it cannot say)."""
    argv = [command[0], "version", "--client"] if command[0] == "kubectl" else [command[0], "version"]
    try:
        done = proc.run(argv, check=False, timeout=60)
    except PipelineError:
        return ""
    return f"{' '.join(argv)} -> {done.rc}\n{done.out.strip()}"
