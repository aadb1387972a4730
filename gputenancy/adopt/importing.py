"""`import`: a dump of a cluster -> the repository's files, proven by rendering them back.

1. read and check the dump and the repository (bad input: findings, nothing written);
2. map the live objects to inputs (`mapping`), write them into a staging copy of the repository;
3. render the cluster there and compare (`proof`); the fields the model cannot express become kustomize
   patches in the cluster's overlay, objects it has no file for are kept verbatim there; render again;
4. when the round trip is exact (or `allow_partial`), copy the files into the repository: each written
   to a temporary file first, then all renamed into place."""

from __future__ import annotations

import dataclasses
import re
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from gputenancy.adopt import compare, grouping, mapping, proof, records, repository, writing
from gputenancy.cluster.dump import Dump, LiveObject
from gputenancy.common.findings import Finding, Origin, PipelineError

RULE = records.RULE
DEFAULT_KUEUE = "v0.19.2"
DEFAULT_KUBERNETES = "1.36"
_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
_IMAGE_TAG = re.compile(r"/kueue:(v[0-9]+\.[0-9]+\.[0-9]+)$")
_STAGED = ("tenants", "base", "overlays")


@dataclasses.dataclass(frozen=True)
class Options:
    cluster: str
    owners: tuple[str, ...] = ()
    kueue_version: str | None = None
    kubernetes_version: str | None = None
    allow_partial: bool = False
    schemas: Path | None = None
    groups: tuple[str, ...] = ()  # TEAM=QUEUE,QUEUE: the queues become one tenant (`grouping`)


@dataclasses.dataclass(frozen=True)
class Outcome:
    results: tuple[proof.ObjectResult, ...]
    files: Mapping[str, bytes]
    told: tuple[str, ...]
    notes: tuple[str, ...]
    findings: tuple[Finding, ...]

    @property
    def exact(self) -> bool:
        return not any(r.verdict in (proof.Verdict.DIFFERENT, proof.Verdict.NEW) for r in self.results)


def plan(root: Path, dump: Dump, options: Options) -> Outcome:
    """Everything up to the files to write (nothing under `root` is changed). Raises PipelineError on
    bad input."""
    from gputenancy import engine
    from gputenancy.policy import rules

    cluster = options.cluster
    if not _LABEL.fullmatch(cluster):
        raise PipelineError(
            [Origin("--cluster").finding(RULE, f"{cluster!r} is not a valid cluster name (a DNS label)")]
        )
    if (root / "overlays" / cluster).exists():
        raise PipelineError(
            [
                Origin(f"overlays/{cluster}").finding(
                    RULE, f"cluster {cluster} is already in the repository: import into a new cluster name"
                )
            ]
        )
    findings = mapping.check_dump(dump, cluster)
    if findings:
        raise PipelineError(findings)
    model, loaded = engine.check_only(root, cache=None)
    errors = [f for f in loaded if f.severity.value == "error"]
    if errors:
        raise PipelineError(errors)
    catalog = {n: e.resource for n, e in rules.effective_catalog(model).classes.items()}
    kueue, kubernetes, told_versions = repository.versions(
        dump, options.kueue_version, options.kubernetes_version
    )
    groups, refused_groups = grouping.parse(options.groups)
    if refused_groups:
        raise PipelineError(refused_groups)
    owners = options.owners or tuple(model.platform.owners or ()) or ("@platform-team",)
    with tempfile.TemporaryDirectory(prefix="gputenancy-import-") as tmp:
        stage = Path(tmp)
        # the shapes the model's rules judge across objects (namespaces by label, topologies) where the
        # live objects use them; if the rules refuse them (two tenants' selectors fitting one
        # namespace, a topology on a flavor without node labels), without: carried as patches or kept
        for judged in (True, False):
            adoption = mapping.adopt(
                dump,
                cluster,
                catalog=catalog,
                kueue_version=kueue,
                kubernetes_version=kubernetes,
                versions_told=told_versions,
                groups=groups,
                judged=judged,
            )
            collisions = repository.collisions(adoption, model, root)
            if collisions:
                raise PipelineError(collisions)
            files, told = _inputs(root, model, catalog, adoption, owners, Path(dump.path).name)
            for name in _STAGED:
                shutil.rmtree(stage / name, ignore_errors=True)
                if (root / name).is_dir():
                    shutil.copytree(root / name, stage / name, symlinks=False)
            first, adoption, refused, carried = _render_carrying(stage, files, adoption, options)
            labelled = any("namespaceSelector" in t.settings for t in adoption.tenants) or bool(
                adoption.cluster_settings.get("topologies")
            )
            if not first.failed or not labelled:
                break
        if first.failed:
            return Outcome((), files, tuple(told), adoption.notes, first.findings)
        platform_patches, tenant_patches, fields = _patches(dump, first, adoption)
        gaps = list(adoption.gaps) + [g for _, why, _ in (*platform_patches, *tenant_patches) for g in why]
        first, patched, removed = _with_patches(
            stage,
            files,
            cluster,
            adoption.common,
            sorted(carried),
            (platform_patches, tenant_patches),
            first,
            options,
            told,
        )
    carried_keys = {
        o.key: (why, f"overlays/{cluster}/{_carried_name(o.kind)}") for o, why in adoption.carried
    }
    results = proof.judge(
        dump,
        first,
        gaps=sorted(set(gaps), key=gaps.index),
        carried=carried_keys,
        patched=patched,
        fields=fields,
        skipped=adoption.skipped,
        removed=removed,
        refused=refused,
        replaced={q: team for team, queues in adoption.grouped.items() for q in queues},
    )
    config_result = proof.judge_config(adoption.config, first, f"overlays/{cluster}/cluster.yaml")
    if config_result is not None:
        results.append(config_result)
    return Outcome(tuple(results), files, tuple(told), adoption.notes, first.findings)


def _inputs(
    root: Path,
    model: Any,
    catalog: Mapping[str, str],
    adoption: records.Adoption,
    owners: tuple[str, ...],
    source: str,
) -> tuple[dict[str, bytes], list[str]]:
    """The tenant files, base/platform.yaml and the cluster's cluster.yaml, and what each got."""
    files, told = writing.tenant_files(adoption, root, owners, source)
    platform_text, more = writing.platform_file(
        (root / "base/platform.yaml").read_text(encoding="utf-8"), adoption
    )
    files["base/platform.yaml"] = platform_text.encode()
    told += more
    base_config = dict(model.platform.kueue_config.data)
    overlay_config, gates = repository.config_over_base(adoption.config, base_config, catalog, adoption)
    files[f"overlays/{adoption.cluster}/cluster.yaml"] = writing.cluster_file(
        adoption, overlay_config, gates, source
    ).encode()
    return files, told


def _render_carrying(
    stage: Path, files: dict[str, bytes], adoption: records.Adoption, options: Options
) -> tuple[proof.Rendered, records.Adoption, dict[tuple[str, str, str], str], dict[str, str]]:
    """The first render, with the objects kept verbatim; an object kept verbatim that the post-build
    checks refuse (the live cluster holds something the pipeline would never render, e.g. a claim
    template in a namespace no LocalQueue serves) is left out, with the checks' words."""
    cluster = adoption.cluster
    refused: dict[tuple[str, str, str], str] = {}
    for _ in range(4):
        carried = _carried_files(adoption)
        for rel in [r for r in files if r.startswith(f"overlays/{cluster}/kept-")]:
            files.pop(rel)
            (stage / rel).unlink(missing_ok=True)
        files.update({f"overlays/{cluster}/{f}": t.encode() for f, t in carried.items()})
        _layer_files(stage, files, cluster, adoption.common, sorted(carried), [], [])
        rendered = proof.render(stage, cluster, options.schemas)
        if not rendered.failed:
            break
        errors = [f.message for f in rendered.findings if f.severity.value == "error"]
        blamed = {
            o.key: "; ".join(m for m in errors if _names(o, m))
            for o, _ in adoption.carried
            if any(_names(o, m) for m in errors)
        }
        if not blamed:
            break
        refused.update(blamed)
        adoption = dataclasses.replace(
            adoption, carried=tuple(c for c in adoption.carried if c[0].key not in blamed)
        )
    return rendered, adoption, refused, carried


def _names(o: LiveObject, message: str) -> bool:
    """Whether a finding's message is about `o`."""
    subject = f"{o.kind} {o.namespace}/{o.name}" if o.namespace else f"{o.kind} '{o.name}'"
    return message.startswith((subject + " ", subject + ":"))


def _with_patches(
    stage: Path,
    files: dict[str, bytes],
    cluster: str,
    common: Mapping[str, Mapping[str, Mapping[str, str]]],
    carried: list[str],
    patches: tuple[list[Patch], list[Patch]],
    unpatched: proof.Rendered,
    options: Options,
    told: list[str],
) -> tuple[proof.Rendered, dict[tuple[str, str, str], str], set[tuple[str, str, str]]]:
    """Render again with the patches in the overlay (`files` updated). Patches the post-build checks
    refuse are left out: first the removals of objects the cluster lacks, then all; what they would
    have carried is then reported as different."""
    overlay, component = (
        f"overlays/{cluster}/kustomization.yaml",
        f"overlays/{cluster}/tenants/kustomization.yaml",
    )
    platform, tenant = patches
    attempts = [
        (platform, tenant),
        ([p for p in platform if p[2] is not None], [p for p in tenant if p[2] is not None]),
    ]
    for plat, ten in attempts:
        if not plat and not ten:
            break
        _layer_files(stage, files, cluster, common, carried, plat, ten)
        rendered = proof.render(stage, cluster, options.schemas)
        if not rendered.failed:
            patched = {o.key: overlay for o, _, _ in plat}
            patched.update({o.key: component for o, _, _ in ten})
            return rendered, patched, {o.key for o, _, ops in (*plat, *ten) if ops is None}
        errors = "; ".join(f.format() for f in rendered.findings if f.severity.value == "error")
        told.append(f"patches left out, the checks refuse them: {errors[:2000]}")
    _layer_files(stage, files, cluster, common, carried, [], [])
    return unpatched, {}, set()


def _layer_files(
    stage: Path,
    files: dict[str, bytes],
    cluster: str,
    common: Mapping[str, Mapping[str, Mapping[str, str]]],
    carried: list[str],
    platform: list[Patch],
    tenant: list[Patch],
) -> None:
    """The overlay's kustomization and (when it has something to do) its tenant Component, in `files`
    and in the staging copy."""
    overlay, component = (
        f"overlays/{cluster}/kustomization.yaml",
        f"overlays/{cluster}/tenants/kustomization.yaml",
    )
    files[overlay] = writing.overlay_kustomization(
        cluster, common.get("platform", {}), carried, platform
    ).encode()
    files.pop(component, None)
    (stage / component).unlink(missing_ok=True)
    tenant_common = common.get("tenant", {})
    if any(tenant_common.values()) or tenant:
        files[component] = writing.tenant_component(cluster, tenant_common, tenant).encode()
    _put(stage, files)


def _put(stage: Path, files: Mapping[str, bytes]) -> None:
    for rel, data in files.items():
        path = stage / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)


def _carried_name(kind: str) -> str:
    """kept-topologies.yaml, kept-deviceclasses.yaml, kept-localqueues.yaml"""
    name = kind.lower()
    plural = name[:-1] + "ies" if name.endswith("y") else name + ("es" if name.endswith("s") else "s")
    return f"kept-{plural}.yaml"


def _carried_files(adoption: records.Adoption) -> dict[str, str]:
    by_kind: dict[str, list[tuple[LiveObject, str]]] = {}
    for o, why in adoption.carried:
        by_kind.setdefault(o.kind, []).append((o, why))
    return {_carried_name(k): writing.carried_file(v) for k, v in sorted(by_kind.items())}


Patch = tuple[LiveObject, list[records.Gap], list[dict[str, Any]] | None]
"""The object, why, and the JSON patch operations (None: the object is removed from the build)."""


def _patches(
    dump: Dump, rendered: proof.Rendered, adoption: records.Adoption
) -> tuple[list[Patch], list[Patch], dict[tuple[str, str, str], tuple[compare.FieldDiff, ...]]]:
    """The JSON patches that make each rendered object equal to the live one (platform, tenant), and
    the fields each carries. A field no gap of the mapping explains is named as one of its own."""
    gaps: dict[tuple[str, str, str], list[records.Gap]] = {}
    for g in adoption.gaps:
        gaps.setdefault((g.kind, g.namespace, g.name), []).append(g)
    carried = {o.key for o, _ in adoption.carried}
    platform: list[Patch] = []
    tenant: list[Patch] = []
    fields: dict[tuple[str, str, str], tuple[compare.FieldDiff, ...]] = {}
    moved = {q for queues in adoption.grouped.values() for q in queues}  # what --group changes on purpose
    teams = {ns for t in adoption.tenants if t.name in adoption.grouped for ns in t.settings["namespaces"]}
    for o in dump.objects:
        if o.kind not in records.IMPORTED or o.key in carried:
            continue
        found = rendered.objects.get(o.key)
        if found is None or (
            o.kind == "LocalQueue" and (o.body.get("spec") or {}).get("clusterQueue") in moved
        ):
            continue
        pointed = compare.pointed(o.body, found, rendered.crd_dir)
        diffs = tuple(p.diff for p in pointed)
        if not diffs:
            continue
        why = list(gaps.get(o.key, []))
        for d in diffs:
            if not any(d.path == g.field or d.path.startswith((g.field + ".", g.field + "[")) for g in why):
                why.append(records.Gap(o.kind, o.namespace, o.name, d.path, "no input key renders it"))
        fields[o.key] = diffs
        ops = proof.patch_ops(_per_key(pointed))
        (tenant if o.kind in proof.TENANT_KINDS else platform).append((o, why, ops))
    live = {o.key for o in dump.objects}
    for key, body in sorted(rendered.objects.items()):
        if (
            key in live
            or key[0] not in records.IMPORTED
            or (key[0] == "ClusterQueue" and key[2] in adoption.grouped)
            or key[1] in teams
        ):
            continue
        ghost = LiveObject(str(body.get("apiVersion")), *key, body, "", 0)
        why = [records.Gap(*key, "(the object)", "the model renders it; the cluster has none")]
        (tenant if key[0] in proof.TENANT_KINDS else platform).append((ghost, why, None))
    return platform, tenant, fields


def _per_key(diffs: Sequence[compare.Pointed]) -> list[compare.Pointed]:
    """Labels and annotations the rendered object lacks, one key at a time (the pipeline's own stay)."""
    out = []
    for p in diffs:
        d = p.diff
        whole = p.pointer in (("metadata", "labels"), ("metadata", "annotations"))
        if whole and isinstance(d.live, dict) and d.rendered is compare.MISSING:
            out += [
                compare.Pointed(compare.FieldDiff(f"{d.path}.{k}", v, compare.MISSING), (*p.pointer, k))
                for k, v in d.live.items()
            ]
            continue
        out.append(p)
    return out
