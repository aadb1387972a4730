"""A change of `kueue.version` as a reviewed upgrade: what `plan` says about it.

The versions come from the plan itself (the Kueue install Application's `targetRevision`, old → new).
The two releases' manifests are read from the schemas cache (`schemas fetch`); nothing is downloaded.
From them: CRDs added or removed, API versions no longer served or removed, a changed storage version,
schema fields added and removed, and the manager Deployment's changes; from the version data: feature
gates whose default changes or that are removed. Each thing an upgrade needs is a risk.
"""

from __future__ import annotations

import dataclasses
import difflib
import json
import re
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from gputenancy.inputs.spec import Model
from gputenancy.versions import gates as kueuegates
from gputenancy.versions import releasedata, releases

MAX_FIELDS = 6


@dataclasses.dataclass(frozen=True)
class Upgrade:
    cluster: str
    old: str
    new: str
    changes: tuple[str, ...]  # CRD and manager changes, one line each
    compared: bool  # both releases' manifests were in the schemas cache


@dataclasses.dataclass(frozen=True)
class UpgradeRisk:
    cluster: str
    risk: str
    subject: str
    message: str


def _version(value: Any, helm: bool) -> str | None:
    if not isinstance(value, str) or not value:
        return None
    return "v" + value.lstrip("v") if helm or not value.startswith("v") else value


def version_changes(plan: Any) -> Iterator[tuple[str, str, str]]:
    """(cluster, old, new) for each Kueue install Application whose targetRevision changes."""
    for cluster in plan.clusters:
        for o in cluster.objects:
            if o.key.kind != "Application" or o.key.name != f"kueue-{cluster.name}" or o.action != "changed":
                continue
            for c in o.changes:
                if tuple(c.path) == ("spec", "source", "targetRevision"):
                    helm = not str(c.new).startswith("v")
                    old, new = _version(c.old, helm), _version(c.new, helm)
                    if old and new and old != new:
                        yield cluster.name, old, new


def _load(path: Path) -> dict[tuple[str, str], dict[str, Any]]:
    """The objects of a release file by (kind, name), read as hostile input: a file the pipeline
    could not walk (an alias bomb, a CRD whose `versions` is not a list) is a PipelineError naming
    it (`releasedata`), never a MemoryError or KeyError."""
    out = {}
    for doc in releasedata.load(path):
        if isinstance(doc, dict) and isinstance(doc.get("metadata"), dict):
            out[(str(doc.get("kind")), str(doc["metadata"].get("name")))] = doc
    return out


def _fields(schema: Any, prefix: str = "") -> set[str]:
    """Every property path of an OpenAPI schema (array items as `[]`)."""
    out: set[str] = set()
    if not isinstance(schema, Mapping):
        return out
    for name, sub in (schema.get("properties") or {}).items():
        path = f"{prefix}.{name}" if prefix else str(name)
        out.add(path)
        out |= _fields(sub, path)
    items = schema.get("items")
    if isinstance(items, Mapping):
        out |= _fields(items, f"{prefix}[]")
    return out


_STRUCTURE = frozenset({"properties", "items", "description", "additionalProperties"})


def _constraints(schema: Any, prefix: str = "") -> dict[str, dict[str, Any]]:
    """The validation of each property path (everything but structure and descriptions)."""
    out: dict[str, dict[str, Any]] = {}
    if not isinstance(schema, Mapping):
        return out
    own = {k: v for k, v in schema.items() if k not in _STRUCTURE}
    if own:
        out[prefix or "(root)"] = own
    for name, sub in (schema.get("properties") or {}).items():
        out.update(_constraints(sub, f"{prefix}.{name}" if prefix else str(name)))
    if isinstance(schema.get("items"), Mapping):
        out.update(_constraints(schema["items"], f"{prefix}[]"))
    extra = schema.get("additionalProperties")
    if isinstance(extra, Mapping):
        out.update(_constraints(extra, f"{prefix}{{}}"))
    return out


SHORT = 60  # characters of a value shown whole
CONTEXT = 24  # characters kept on each side of the part that differs


def _short(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, ensure_ascii=False)
    return text if len(text) <= SHORT else text[: SHORT - 1] + "…"


def differing(before: str, after: str) -> tuple[str, str]:
    """The two texts cut around the part where they differ (with some context either side), so
    that long values that differ late (CEL rules, messages) never look identical once cut."""
    if len(before) <= SHORT and len(after) <= SHORT:
        return before, after
    start = 0
    while start < min(len(before), len(after)) and before[start] == after[start]:
        start += 1
    end = 0
    while end < min(len(before), len(after)) - start and before[-1 - end] == after[-1 - end]:
        end += 1
    lo = max(start - CONTEXT, 0)

    def cut(text: str) -> str:
        hi = min(len(text) - end + CONTEXT, len(text))
        return ("…" if lo else "") + text[lo:hi] + ("…" if hi < len(text) else "")

    return cut(before), cut(after)


_TOKENS = re.compile(r"\w+|\s+|[^\w\s]")
MAX_EDIT = 400


def edits(before: str, after: str) -> str:
    """What changes from one text to the other, word by word: `[-removed-]{+added+}` with a few
    words of context around each edit, the unchanged stretches between them elided."""
    a, b = _TOKENS.findall(before), _TOKENS.findall(after)
    parts = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if op == "equal":
            same = "".join(a[i1:i2])
            parts.append(same if len(same) <= 2 * CONTEXT else f"{same[:CONTEXT]}…{same[-CONTEXT:]}")
            continue
        parts.append(("[-" + "".join(a[i1:i2]) + "-]") if i2 > i1 else "")
        parts.append(("{+" + "".join(b[j1:j2]) + "+}") if j2 > j1 else "")
    text = "".join(parts)
    if parts and not text.startswith(("[-", "{+")):
        first = parts[0]
        text = ("…" + first[-CONTEXT:] if len(first) > CONTEXT else first) + "".join(parts[1:])
    return text if len(text) <= MAX_EDIT else text[: MAX_EDIT - 1] + "…"


def _rules(value: Any) -> dict[str, Any] | None:
    """x-kubernetes-validations by rule text; None when it is not a list of rules."""
    if not isinstance(value, list) or not all(isinstance(r, Mapping) and "rule" in r for r in value):
        return None
    return {str(r["rule"]): r for r in value}


def _validation_changes(old: Any, new: Any) -> list[str]:
    a, b = _constraints(old), _constraints(new)
    out = []
    for path in sorted(a.keys() & b.keys()):
        for key in sorted(a[path].keys() | b[path].keys()):
            if a[path].get(key) == b[path].get(key):
                continue
            ra, rb = _rules(a[path].get(key, [])), _rules(b[path].get(key, []))
            if ra is not None and rb is not None:
                out += _rule_changes(f"{path} {key}", ra, rb)
                continue
            before = (
                json.dumps(a[path][key], sort_keys=True, ensure_ascii=False) if key in a[path] else "(none)"
            )
            after = (
                json.dumps(b[path][key], sort_keys=True, ensure_ascii=False) if key in b[path] else "(none)"
            )
            shown = differing(before, after)
            out.append(f"{path} {key}: {shown[0]} → {shown[1]}")
    return out


def _rule_changes(where: str, old: Mapping[str, Any], new: Mapping[str, Any]) -> list[str]:
    """CEL rules removed, added and changed (a rule whose text is replaced by one like it: the
    differing part of both texts), instead of the whole list cut to its first characters."""
    gone = [r for r in old if r not in new]
    came = [r for r in new if r not in old]
    out = []
    for rule in sorted(old.keys() & new.keys()):
        if old[rule] != new[rule]:
            before, after = differing(
                json.dumps(old[rule], sort_keys=True), json.dumps(new[rule], sort_keys=True)
            )
            out.append(f"{where}: rule {_short(rule)} changed: {before} → {after}")
    for before_rule, after_rule in zip(gone, came, strict=False):
        out.append(f"{where}: rule changed: {edits(before_rule, after_rule)}")
    out += [f"{where}: rule removed: {_short(r)}" for r in gone[len(came) :]]
    out += [f"{where}: rule added: {_short(r)}" for r in came[len(gone) :]]
    return out


def _listed(paths: Sequence[str]) -> str:
    shown = ", ".join(paths[:MAX_FIELDS])
    return shown + (f", … ({len(paths)} in all)" if len(paths) > MAX_FIELDS else "")


def _crd(
    name: str, old: Mapping[str, Any], new: Mapping[str, Any], cluster: str
) -> tuple[list[str], list[UpgradeRisk]]:
    lines: list[str] = []
    risks: list[UpgradeRisk] = []
    ov = {v["name"]: v for v in old["spec"]["versions"]}
    nv = {v["name"]: v for v in new["spec"]["versions"]}
    subject = f"CustomResourceDefinition {name}"
    for v in sorted(ov.keys() - nv.keys()):
        lines.append(f"CRD {name}: API version {v} removed")
        risks.append(
            UpgradeRisk(
                cluster,
                "kueue-crd-version-removed",
                subject,
                f"{name} no longer has {v}: objects still stored as {v} (status.storedVersions) must be "
                "migrated to the storage version before the upgrade, and clients using it fail",
            )
        )
    for v in sorted(nv.keys() - ov.keys()):
        lines.append(f"CRD {name}: API version {v} added")
    for v in sorted(ov.keys() & nv.keys()):
        if ov[v].get("served") and not nv[v].get("served"):
            lines.append(f"CRD {name}: {v} no longer served")
            risks.append(
                UpgradeRisk(
                    cluster,
                    "kueue-crd-version-not-served",
                    subject,
                    f"{name} {v} is no longer served: clients and manifests using it fail after the upgrade",
                )
            )
        old_schema = (ov[v].get("schema") or {}).get("openAPIV3Schema")
        new_schema = (nv[v].get("schema") or {}).get("openAPIV3Schema")
        before, after = _fields(old_schema), _fields(new_schema)
        added, removed = sorted(after - before), sorted(before - after)
        if added or removed:
            parts = [f"{len(added)} field(s) added ({_listed(added)})"] if added else []
            parts += [f"{len(removed)} removed ({_listed(removed)})"] if removed else []
            lines.append(f"CRD {name} {v}: " + "; ".join(parts))
        validation = _validation_changes(old_schema, new_schema)
        if validation:
            lines.append(f"CRD {name} {v}: validation changed: {_listed(validation)}")
        if validation and nv[v].get("served") and nv[v].get("storage"):
            risks.append(
                UpgradeRisk(
                    cluster,
                    "kueue-crd-validation-changed",
                    subject,
                    f"{name} {v} validates differently ({len(validation)} rule(s), listed with the plan): "
                    "objects that break a new rule keep working but cannot be updated until fixed",
                )
            )
        if removed and nv[v].get("served"):
            risks.append(
                UpgradeRisk(
                    cluster,
                    "kueue-crd-field-removed",
                    subject,
                    f"{name} {v} no longer has {_listed(removed)}: the API server drops these fields "
                    "from stored objects, and manifests that set them are rejected in strict mode",
                )
            )
    old_storage = next((v for v, d in ov.items() if d.get("storage")), None)
    new_storage = next((v for v, d in nv.items() if d.get("storage")), None)
    if old_storage != new_storage:
        lines.append(f"CRD {name}: storage version {old_storage} → {new_storage}")
        risks.append(
            UpgradeRisk(
                cluster,
                "kueue-crd-storage-version",
                subject,
                f"{name} stores {new_storage} instead of {old_storage}: existing objects stay stored as "
                f"{old_storage} (status.storedVersions) until rewritten; migrate them before a later "
                f"release stops serving {old_storage}",
            )
        )
    return lines, risks


def _containers(deployment: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    spec = deployment.get("spec", {}).get("template", {}).get("spec", {})
    return {c["name"]: c for c in spec.get("containers", [])}


def _manager(name: str, old: Mapping[str, Any], new: Mapping[str, Any]) -> list[str]:
    lines = []
    oc, nc = _containers(old), _containers(new)
    for container in sorted(oc.keys() | nc.keys()):
        a, b = oc.get(container, {}), nc.get(container, {})
        for field in (
            "image",
            "args",
            "command",
            "ports",
            "resources",
            "env",
            "livenessProbe",
            "readinessProbe",
        ):
            if a.get(field) != b.get(field):
                lines.append(
                    f"Deployment {name}: container {container} {field}: "
                    f"{json.dumps(a.get(field), ensure_ascii=False)} → {json.dumps(b.get(field), ensure_ascii=False)}"
                )
    return lines


def compare_releases(
    old: Path,
    new: Path,
    cluster: str,
    parsed: dict[Path, dict[tuple[str, str], dict[str, Any]]] | None = None,
) -> tuple[list[str], list[UpgradeRisk]]:
    """The CRD and manager changes between two release manifests. `parsed` keeps each file's
    documents across calls (read only), so clusters making the same upgrade parse it once."""
    parsed = {} if parsed is None else parsed
    for path in (old, new):
        if path not in parsed:
            parsed[path] = _load(path)
    a, b = parsed[old], parsed[new]
    lines: list[str] = []
    risks: list[UpgradeRisk] = []
    crds = sorted({n for k, n in a.keys() | b.keys() if k == "CustomResourceDefinition"})
    for name in crds:
        key = ("CustomResourceDefinition", name)
        if key not in b:
            lines.append(f"CRD {name} removed")
            risks.append(
                UpgradeRisk(
                    cluster,
                    "kueue-crd-removed",
                    f"CustomResourceDefinition {name}",
                    f"{name} is removed: its objects are deleted with it",
                )
            )
        elif key not in a:
            lines.append(f"CRD {name} added")
        else:
            more_lines, more_risks = _crd(name, a[key], b[key], cluster)
            lines += more_lines
            risks += more_risks
    for key in sorted(a.keys() & b.keys()):
        if key[0] == "Deployment":
            lines += _manager(key[1], a[key], b[key])
    kinds: dict[str, tuple[list[str], list[str], list[str]]] = {}
    for key in sorted(a.keys() | b.keys()):
        if key[0] in ("CustomResourceDefinition", "Deployment"):
            continue
        names = kinds.setdefault(key[0], ([], [], []))
        if key not in a or key not in b or a[key] != b[key]:
            names[0 if key not in a else 1 if key not in b else 2].append(key[1])
    for kind, (added, removed, changed) in sorted(kinds.items()):
        if added or removed or changed:
            named = "; ".join(
                f"{w}: {_listed(n)}"
                for w, n in (("added", added), ("removed", removed), ("changed", changed))
                if n
            )
            lines.append(
                f"{kind}: {len(added)} added, {len(removed)} removed, {len(changed)} changed ({named})"
            )
    return lines, risks


def _gates(cluster: str, old: str, new: str, model: Model) -> list[UpgradeRisk]:
    try:
        before, after = kueuegates.gates_for(old), kueuegates.gates_for(new)
    except ValueError:
        return []
    record = model.clusters.get(cluster)
    explicit = set(record.feature_gates) if record is not None else set()
    risks = []
    removed = sorted(before.keys() - after.keys())
    if removed:
        risks.append(
            UpgradeRisk(
                cluster,
                "kueue-feature-gate-removed",
                "feature gates",
                f"Kueue {new} no longer has {', '.join(removed)}"
                + (" (a Configuration that sets one is rejected at start-up)"),
            )
        )
    flipped = [
        f"{n} {str(before[n].default).lower()} → {str(after[n].default).lower()}"
        for n in sorted(before.keys() & after.keys())
        if before[n].default != after[n].default and n not in explicit
    ]
    if flipped:
        risks.append(
            UpgradeRisk(
                cluster,
                "kueue-feature-gate-default-changed",
                "feature gates",
                f"defaults change from Kueue {old} to {new} (not set in this cluster's featureGates): "
                + ", ".join(flipped),
            )
        )
    return risks


def analyse(
    plan: Any, model: Model, schemas: Path | None
) -> tuple[list[Upgrade], list[UpgradeRisk], list[str]]:
    """The upgrades in `plan`, their risks, and notes on what could not be compared."""
    upgrades, risks, notes = [], [], []
    parsed: dict[Path, dict[tuple[str, str], dict[str, Any]]] = {}
    for cluster, old, new in version_changes(plan):
        risks.append(
            UpgradeRisk(
                cluster,
                "kueue-upgrade",
                f"Kueue {old} → {new}",
                f"Kueue {old} → {new}: Argo CD applies the new release manifests and the manager restarts; "
                "review the CRD and manager changes listed with the plan",
            )
        )
        risks += _gates(cluster, old, new, model)
        files = [releases.manifests_file(schemas, v) for v in (old, new)]
        if files[0] is None or files[1] is None:
            missing = [v for v, f in zip((old, new), files, strict=True) if f is None]
            notes.append(
                f"{cluster}: the release manifests of Kueue {', '.join(missing)} are not in the schemas "
                f"cache, so the upgrade's CRD and manager changes are not listed; run "
                f"`{releases.FETCH_COMMAND}` (schemas.lock keeps the old version) and pass --schemas"
            )
            upgrades.append(Upgrade(cluster, old, new, (), False))
            continue
        lines, crd_risks = compare_releases(files[0], files[1], cluster, parsed)
        record = model.clusters.get(cluster)
        if record is not None and record.install == "helm":
            lines.insert(
                0,
                f"compared: the release manifests (manifests.yaml) of Kueue {old} and {new}, which hold "
                "the CRDs and the manager the Helm chart installs; the chart's own templates and values "
                "are not compared",
            )
        risks += crd_risks
        upgrades.append(Upgrade(cluster, old, new, tuple(lines), True))
    return upgrades, risks, notes
