"""Finished results by key: the one interface through which a run uses the cache.

`Memo.lookup(key)` gives a result stored before under `key` (or None), `Memo.store(key, result)` keeps
one; `Memo.save` writes what was stored. The engine asks before it renders a tenant and stores what it
validated; no stage decides anything about caching. Keys come from `cachekey`. Without a cache a Memo
misses every lookup and keeps nothing, so a run takes the same path either way.

Four kinds of results: kustomize's output for a cluster's overlay (`overlay`), a tenant's on one cluster (`Finished`: built objects, their generated/ files and
the validation findings about them), kept in the cluster's packs; the validation report of a
cluster's platform layer (`PlatformReport`), one cache entry each; the findings of the checks on a
cluster's built objects (`built`), one cache entry each, and each tenant's part of them (`BuiltPart`),
kept in the packs of their cluster. Entries are JSON of plain data; one
that checks out but does not decode is a miss, counted in `Cache.corrupt`.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Generic, Literal, TypeVar

from gputenancy.caching import cachekey
from gputenancy.caching.cache import Cache, Entries, location
from gputenancy.common.findings import Finding, Origin, Severity
from gputenancy.common.objects import RenderedObject

TENANT_ENTRY = "tenant"
PLATFORM_ENTRY = "platform"
BUILT_ENTRY = "built"
BUILT_PART_ENTRY = "built-part"
OVERLAY_ENTRY = "overlay"
T = TypeVar("T")


@dataclasses.dataclass(frozen=True)
class Finished:
    """One tenant on one cluster, finished: built objects, their generated/ files, findings."""

    objects: tuple[RenderedObject, ...]
    files: tuple[tuple[str, bytes], ...]
    findings: tuple[Finding, ...]


@dataclasses.dataclass(frozen=True)
class BuiltPart:
    """One tenant's part of the checks on a cluster's built objects (`check.chain.slices`): the findings
    about its objects, and whether kustomize changed a quota of its ClusterQueue."""

    findings: tuple[Finding, ...]
    capacity_changed: bool


Lent = tuple[str, tuple[tuple[str, str, str], ...]]  # cohortName ("": none), (flavor, resource, amount)


@dataclasses.dataclass(frozen=True)
class BuiltFacts:
    """What the checks on a cluster's built objects need of one tenant's objects before its part is
    looked up (`check.chain.slices`): whether they refer only to the tenant (`separate`), its
    ClusterQueues (name, and what each lends its cohort), its LocalQueues (namespace, ClusterQueue
    named), the namespaces of its claim templates and the names of those with CEL selectors."""

    separate: bool
    queues: tuple[tuple[str, Lent], ...]
    local_queues: tuple[tuple[str, str | None], ...]
    claim_namespaces: tuple[str, ...]
    selector_claims: tuple[str, ...]


@dataclasses.dataclass(frozen=True)
class PlatformReport:
    """The validation of a cluster's platform layer: findings, and the notes on what was skipped."""

    findings: tuple[Finding, ...]
    skipped: tuple[str, ...]


class Memo(Generic[T]):
    """Results of one kind by key; `hits` and `misses` count lookups."""

    def __init__(
        self,
        entries: Entries | None,
        kind: str,
        encode: Callable[[T], Any],
        decode: Callable[[Any], T | None],
    ) -> None:
        self._entries, self._kind, self._encode, self._decode = entries, kind, encode, decode
        self.hits = self.misses = 0

    def lookup(self, key: str) -> T | None:
        found = None
        if self._entries is not None:
            value = self._entries.get(self._kind, key)
            found = self._decode(value) if value is not None else None
            if value is not None and found is None:
                self._entries.corrupt += 1
        if found is None:
            self.misses += 1
        else:
            self.hits += 1
        return found

    def store(self, key: str, result: T) -> None:
        """Keep `result` (not when it cannot be written as plain JSON)."""
        if self._entries is not None:
            value = self._encode(result)
            if value is not None:
                self._entries.put(self._kind, key, value)

    def save(self) -> None:
        save = getattr(self._entries, "save", None)
        if save is not None:
            save()


def open_cache(root: Path, cache: Cache | Path | Literal["auto"] | None) -> Cache | None:
    """ "auto": `cache.location(root)`; a directory: a Cache there; a Cache: itself; None: none."""
    if cache == "auto":
        directory = location(root)
        return Cache(directory) if directory is not None else None
    if isinstance(cache, Path):
        return Cache(cache)
    return cache


def tenants(store: Cache | None, cluster_key: str | None, cluster: str) -> Memo[Finished]:
    """The finished tenants of one cluster, in the packs named by `cluster_key` (None: no cache)."""
    packs = store.packs(TENANT_ENTRY, cluster_key) if store is not None and cluster_key else None
    return Memo(packs, TENANT_ENTRY, _encode, lambda value: _decode(cluster, value))


def platform(store: Cache | None) -> Memo[PlatformReport]:
    return Memo(store, PLATFORM_ENTRY, _encode_report, _decode_report)


def built(store: Cache | None) -> Memo[tuple[Finding, ...]]:
    """The findings of the checks on a cluster's built objects, one cache entry per cluster."""
    return Memo(store, BUILT_ENTRY, _findings, _decode_built)


def built_parts(store: Cache | None, cluster_key: str | None) -> tuple[Memo[BuiltPart], Memo[BuiltFacts]]:
    """The tenants' parts of the checks on one cluster's built objects and the facts they are looked up
    by, in the sixteen packs named by `cluster_key` (None: no cache): a changed tenant rewrites one. The facts of a tenant's objects are kept
    under the tenant's entry key itself, which fixes the objects."""
    pack = store.packs(BUILT_PART_ENTRY, cluster_key) if store is not None and cluster_key else None
    return (
        Memo(pack, BUILT_PART_ENTRY, _encode_part, _decode_part),
        Memo(pack, BUILT_PART_ENTRY, dataclasses.astuple, _decode_facts),
    )


def overlay(store: Cache | None) -> Memo[str]:
    """kustomize's output for a cluster's overlay, one cache entry per cluster."""
    return Memo(store, OVERLAY_ENTRY, lambda text: text, lambda v: v if isinstance(v, str) else None)


def overlay_key(cluster_key: str, layer: Mapping[str, str]) -> str:
    """The key of an overlay's build: the cluster's key and the platform layer's files."""
    described = cachekey.digest(*(part for name in sorted(layer) for part in (name, layer[name])))
    return cachekey.key("overlay", cluster=cluster_key, platform_layer=described)


def built_key(cluster_key: str, tenant_keys: Sequence[str]) -> str:
    return cachekey.key("built", cluster=cluster_key, tenant=cachekey.digest(*tenant_keys))


def built_part_key(tenant_key: str, context: str) -> str:
    """The key of a tenant's part of the checks on the built objects: its entry key, and what the part
    reads from the rest of the cluster (`check.chain.slices.context`)."""
    return cachekey.key("built-part", tenant=tenant_key, built_context=context)


def tenant_key(cluster_key: str, record: str) -> str:
    """`record`: the tenant's record as loaded, `repr(Tenant)` (made once per tenant and run)."""
    return cachekey.key_after("tenant", cluster_key, tenant_record=record)


def platform_key(cluster_key: str, objects: Sequence[RenderedObject]) -> str | None:
    """The key of a platform report on `objects`; None when they cannot be written as JSON."""
    if not all(_plain(dict(o.body)) for o in objects):
        return None
    return cachekey.key("platform", cluster=cluster_key, platform_objects=platform_digest(objects))


def platform_digest(objects: Sequence[RenderedObject]) -> str:
    """The digest of objects as built: bodies, origins and where each field came from."""
    return cachekey.digest(
        *(
            json.dumps(o.body, sort_keys=True, default=repr)
            + repr(o.origin)
            + repr(sorted(o.field_origins.items(), key=repr))
            for o in objects
        )
    )


# ------------------------------------------------------------------------------ entries


_SCALARS = (str, int, float)


def _plain(value: Any) -> bool:
    """True when JSON gives `value` back unchanged (string keys, JSON types only). Loops rather than
    generators, and strings (most leaves) taken without a call: every object a run stores passes
    through here (11,000 at 1,000 tenants)."""
    if isinstance(value, dict):
        for k, v in value.items():
            if not isinstance(k, str):
                return False
            if type(v) is not str and not _plain(v):
                return False
        return True
    if isinstance(value, list):
        for v in value:
            if type(v) is str:
                continue
            if not _plain(v):
                return False
        return True
    return value is None or isinstance(value, _SCALARS)


def _findings(found: Sequence[Finding]) -> list[list[Any]]:
    return [[f.path, f.line, f.col, f.severity.value, f.rule, f.message] for f in found]


def _read_findings(value: Any) -> tuple[Finding, ...]:
    return tuple(
        Finding(str(p), int(line), int(col), Severity(sev), str(rule), str(message))
        for p, line, col, sev, rule, message in value
    )


def _encode(done: Finished) -> dict[str, Any] | None:
    if not all(_plain(dict(o.body)) for o in done.objects):
        return None
    return {
        "objects": [
            [dict(o.body), [o.origin.path, o.origin.line, o.origin.col], path, data.decode()]
            for o, (path, data) in zip(done.objects, done.files, strict=True)
        ],
        "findings": _findings(done.findings),
    }


def _decode(cluster: str, value: Any) -> Finished | None:
    """An entry back to records; None when it does not have the expected shape."""
    try:
        objects, files = [], []
        for body, (path, line, col), rel, text in value["objects"]:
            if not isinstance(body, dict) or not isinstance(rel, str) or not isinstance(text, str):
                return None
            objects.append(RenderedObject(cluster, body, Origin(str(path), int(line), int(col))))
            files.append((rel, text.encode()))
        findings = _read_findings(value["findings"])
    except (KeyError, TypeError, ValueError):
        return None
    return Finished(tuple(objects), tuple(files), findings)


def _decode_built(value: Any) -> tuple[Finding, ...] | None:
    try:
        return _read_findings(value)
    except (KeyError, TypeError, ValueError):
        return None


def _encode_part(part: BuiltPart) -> dict[str, Any]:
    return {"findings": _findings(part.findings), "capacity_changed": part.capacity_changed}


def _decode_part(value: Any) -> BuiltPart | None:
    try:
        changed = value["capacity_changed"]
        if not isinstance(changed, bool):
            return None
        return BuiltPart(_read_findings(value["findings"]), changed)
    except (KeyError, TypeError, ValueError):
        return None


def _decode_facts(value: Any) -> BuiltFacts | None:
    """An entry back to facts; None when it does not have the shape `dataclasses.astuple` gave it."""
    try:
        separate, queues, local_queues, claim_namespaces, selector_claims = value
        queued = tuple((name, (cohort, tuple(map(tuple, amounts)))) for name, (cohort, amounts) in queues)
        pointed = tuple((ns, target) for ns, target in local_queues)
    except (TypeError, ValueError):
        return None
    amounts = [a for _, (_, lent) in queued for a in lent]
    if (
        type(separate) is not bool
        or set(map(len, amounts)) - {3}
        or set(map(type, itertools.chain(claim_namespaces, selector_claims, *amounts))) - {str}
        or {type(x) for name, (cohort, _) in queued for x in (name, cohort)} - {str}
        or {type(ns) for ns, _ in pointed} - {str}
        or {type(t) for _, t in pointed} - {str, type(None)}
    ):
        return None
    return BuiltFacts(separate, queued, pointed, tuple(claim_namespaces), tuple(selector_claims))


def _encode_report(report: PlatformReport) -> dict[str, Any]:
    return {"findings": _findings(report.findings), "skipped": list(report.skipped)}


def _decode_report(value: Any) -> PlatformReport | None:
    try:
        return PlatformReport(_read_findings(value["findings"]), tuple(str(n) for n in value["skipped"]))
    except (KeyError, TypeError, ValueError):
        return None
