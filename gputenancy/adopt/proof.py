"""The round trip: render the cluster from the files an import wrote (the engine, in memory) and compare
each rendered object with the live one. Every live object ends in one of the verdicts below, and every
field that differs is named: nothing is dropped silently."""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from gputenancy import engine
from gputenancy.adopt import compare
from gputenancy.adopt.records import IMPORTED, Gap
from gputenancy.cluster.dump import Dump, LiveObject
from gputenancy.common.findings import Finding

TENANT_KINDS = ("ClusterQueue", "LocalQueue", "ResourceClaimTemplate")
"""Built through the tenant Component: their patches go to overlays/<cluster>/tenants/."""
COMPARED = (*IMPORTED, "ConfigMap")


class Verdict(enum.StrEnum):
    EXACT = "reproduced exactly"
    PATCHED = "not expressible, carried as a patch"
    CARRIED = "not expressible, kept verbatim"
    DIFFERENT = "different"
    NEW = "rendered, not on the cluster"
    SKIPPED = "not imported"


@dataclasses.dataclass(frozen=True)
class ObjectResult:
    kind: str
    namespace: str
    name: str
    verdict: Verdict
    diffs: tuple[compare.FieldDiff, ...] = ()
    why: str = ""
    where: str = ""  # the file carrying it, for patched and carried objects

    def shown(self) -> str:
        return f"{self.kind} {self.namespace}/{self.name}" if self.namespace else f"{self.kind} {self.name}"


@dataclasses.dataclass(frozen=True)
class Rendered:
    objects: Mapping[tuple[str, str, str], Mapping[str, Any]]
    config: Mapping[str, Any] | None
    findings: tuple[Finding, ...]
    failed: bool
    crd_dir: Path | None = None  # the Kueue CRDs of the cluster's version (their defaults), when known


def render(root: Path, cluster: str, schemas: Path | None) -> Rendered:
    """The cluster as the pipeline renders it from the files under `root` (no cache: the files are a
    staging copy), with the merged Kueue Configuration."""
    result = engine.run(root, cluster=cluster, schemas=schemas, cache=None)
    built = result.clusters.get(cluster)
    if result.failed or built is None:
        return Rendered({}, None, result.findings, True)
    objects = {}
    for o in built.objects:
        body = o.body
        meta = body.get("metadata") or {}
        key = (str(body.get("kind")), str(meta.get("namespace", "")), str(meta.get("name")))
        if key[0] in COMPARED:
            objects[key] = body
    from gputenancy.policy import rules
    from gputenancy.render import kueueconfig

    config, _ = kueueconfig.build(
        result.model, result.model.clusters[cluster], rules.effective_catalog(result.model)
    )
    return Rendered(objects, config.body, result.findings, False)


def judge(
    dump: Dump,
    rendered: Rendered,
    *,
    gaps: Sequence[Gap],
    carried: Mapping[tuple[str, str, str], tuple[str, str]],
    patched: Mapping[tuple[str, str, str], str],
    fields: Mapping[tuple[str, str, str], Sequence[compare.FieldDiff]],
    skipped: Sequence[tuple[LiveObject, str]],
    removed: set[tuple[str, str, str]] = frozenset(),  # type: ignore[assignment]
    refused: Mapping[tuple[str, str, str], str] | None = None,
    replaced: Mapping[str, str] | None = None,
) -> list[ObjectResult]:
    """One result per live object (and per rendered object the cluster does not hold). `carried`: key ->
    (why, file); `patched`: key -> the file whose patch carries its unexpressed fields."""
    why_of: dict[tuple[str, str, str], list[Gap]] = {}
    for g in gaps:
        why_of.setdefault((g.kind, g.namespace, g.name), []).append(g)
    out: list[ObjectResult] = []
    seen: set[tuple[str, str, str]] = set()
    for o, why in skipped:
        out.append(ObjectResult(o.kind, o.namespace, o.name, Verdict.SKIPPED, why=why))
    for key in sorted(removed):
        out.append(
            ObjectResult(
                *key,
                Verdict.PATCHED,
                why="the model renders it, the cluster has none: removed from the build by a patch",
                where=patched.get(key, ""),
            )
        )
    not_imported = {o.key for o, _ in skipped}
    for o in dump.objects:
        if o.kind not in IMPORTED or o.key in not_imported:
            continue
        seen.add(o.key)
        found = rendered.objects.get(o.key)
        if found is None:
            why = "not in the repository: it stays on the cluster, unmanaged (Argo CD prunes only what it tracks)"
            if refused and o.key in refused:
                why = f"cannot be kept verbatim, the post-build checks refuse it: {refused[o.key]}; {why}"
            if replaced and o.kind == "ClusterQueue" and o.name in replaced:
                team = replaced[o.name]
                why = f"grouped into tenant {team} (--group): ClusterQueue {team} takes its place; {why}"
            out.append(ObjectResult(o.kind, o.namespace, o.name, Verdict.DIFFERENT, why=why))
            continue
        diffs = compare.compare(o.body, found, rendered.crd_dir)
        if diffs:
            out.append(
                ObjectResult(
                    o.kind, o.namespace, o.name, Verdict.DIFFERENT, diffs, _reasons(why_of.get(o.key, []))
                )
            )
        elif o.key in carried:
            why, where = carried[o.key]
            out.append(ObjectResult(o.kind, o.namespace, o.name, Verdict.CARRIED, why=why, where=where))
        elif o.key in patched:
            out.append(
                ObjectResult(
                    o.kind,
                    o.namespace,
                    o.name,
                    Verdict.PATCHED,
                    tuple(fields.get(o.key, ())),
                    _reasons(why_of.get(o.key, [])),
                    patched[o.key],
                )
            )
        else:
            out.append(ObjectResult(o.kind, o.namespace, o.name, Verdict.EXACT))
    for key in sorted(rendered.objects):
        if key not in seen and key[0] in IMPORTED:
            why = "Argo CD would create it"
            if replaced and key[0] == "ClusterQueue" and key[2] in set(replaced.values()):
                why += ": the queue of a group (--group)"
            out.append(ObjectResult(*key, Verdict.NEW, why=why))
    return out


def judge_config(live: Mapping[str, Any] | None, rendered: Rendered, source: str) -> ObjectResult | None:
    if live is None or rendered.config is None:
        return None
    diffs = compare.compare({"spec": dict(live)}, {"spec": dict(rendered.config)}, None)
    name = "kueue-system/kueue-manager-config"
    if diffs:
        return ObjectResult(
            "Configuration",
            "",
            name,
            Verdict.DIFFERENT,
            diffs,
            "kueue.config of the overlay deep-merges over the base: a key of the base cannot be removed",
        )
    return ObjectResult("Configuration", "", name, Verdict.EXACT, where=source)


def _reasons(gaps: Sequence[Gap]) -> str:
    return "; ".join(dict.fromkeys(f"{g.field}: {g.why}" for g in gaps))


def patch_ops(diffs: Sequence[compare.Pointed]) -> list[dict[str, Any]]:
    """JSON patch operations that turn the rendered object into the live one."""
    ops: list[dict[str, Any]] = []
    for p in diffs:
        d = p.diff
        path = "/" + "/".join(str(k).replace("~", "~0").replace("/", "~1") for k in p.pointer)
        if d.live is compare.MISSING:
            ops.append({"op": "remove", "path": path})
        elif d.rendered is compare.MISSING:
            ops.append({"op": "add", "path": path, "value": d.live})
        else:
            ops.append({"op": "replace", "path": path, "value": d.live})
    return ops
