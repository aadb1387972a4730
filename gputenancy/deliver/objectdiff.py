"""Two trees of generated files compared object by object, each change worded in Kubernetes terms.

Objects are matched by (group, kind, namespace, name), never by file path. Files with identical bytes
at the same path are equal without parsing; the others are parsed, and only objects whose serialised
bytes differ go through deepdiff. Lists of mappings with unique `name`s (ClusterQueue flavors and
resources, deviceClassMappings, device requests) are compared by name, their order separately; an
embedded YAML document (the Kueue Configuration in a ConfigMap, in helm values or in a kustomize patch
of the Kueue install Application) is compared as YAML.
"""

from __future__ import annotations

import dataclasses
import json
import re
import sys
from collections.abc import Mapping, Sequence
from typing import Any

import yaml

from gputenancy.common import fastyaml
from gputenancy.common.findings import Finding, PipelineError, Severity
from gputenancy.common.objects import ObjectKey, key_of, to_yaml

Tree = Mapping[str, bytes]
Segment = Any  # a mapping key (str), a list index (int) or a Named list item
TENANT_LABEL = "gputenancy.io/tenant"
CONFIG_PATHS = (
    ("data", "controller_manager_config.yaml"),
    ("spec", "source", "helm", "valuesObject", "managerConfig", "controllerManagerConfigYaml"),
    # install: manifests: the ConfigMap patch in the Kueue install Application (render/kueueapp.py)
    ("spec", "source", "kustomize", "patches", 0, "patch", "data", "controller_manager_config.yaml"),
)
_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@dataclasses.dataclass(frozen=True, order=True)
class Named:
    """A list item keyed by its `name` (with `order`: the order of the names in that list)."""

    name: str
    order: bool = False


ORDER = Named("", order=True)


@dataclasses.dataclass(frozen=True)
class Change:
    """One field of one object: `op` changed | added | removed; `old`/`new` are None when absent."""

    op: str
    path: tuple[Segment, ...]
    field: str
    description: str
    old: Any
    new: Any


@dataclasses.dataclass(frozen=True)
class ObjectChange:
    cluster: str
    action: str  # added | removed | changed
    key: ObjectKey
    path: str  # file under generated/<cluster>/ (the synced side's for removed objects)
    tenant: str  # the gputenancy.io/tenant label, "" for platform objects
    changes: tuple[Change, ...] = ()

    @property
    def title(self) -> str:
        ns = f"{self.key.namespace}/" if self.key.namespace else ""
        return f"{self.cluster} {self.key.kind} {ns}{self.key.name}"


def _normalise(value: Any, key: Any = None) -> Any:
    """Named lists -> {Named: item, ..., ORDER: 'a, b'}; embedded YAML documents -> their mapping."""
    if isinstance(value, Mapping):
        return {k: _normalise(v, k) for k, v in value.items()}
    if isinstance(value, list):
        items = [_normalise(v) for v in value]
        names = [str(v["name"]) for v in value if isinstance(v, Mapping) and isinstance(v.get("name"), str)]
        if value and len(names) == len(value) == len(set(names)):
            return {Named(n): item for n, item in zip(names, items, strict=True)} | {ORDER: ", ".join(names)}
        return items
    if isinstance(value, str) and "\n" in value and re.search(r"(\.ya?ml|Yaml|^patch)$", str(key)):
        try:
            doc = yaml.load(value, Loader=_Loader)  # noqa: S506 - the safe loader
        except yaml.YAMLError:
            return value
        return _normalise(doc) if isinstance(doc, Mapping) else value
    return value


def _plain(value: Any) -> Any:
    if isinstance(value, Mapping):
        if any(isinstance(k, Named) for k in value):
            return [_plain(v) for k, v in value.items() if k != ORDER]
        return {str(k): _plain(v) for k, v in value.items()}
    return [_plain(v) for v in value] if isinstance(value, list) else value


def _get(body: Any, path: Sequence[Segment]) -> Any:
    for seg in path:
        try:
            body = body[seg]
        except (KeyError, IndexError, TypeError):
            return None
    return body


def field_path(path: Sequence[Segment]) -> str:
    """spec.resourceGroups[0].flavors[name=h100].resources[name=cpu].nominalQuota"""
    out = ""
    for seg in path:
        if isinstance(seg, Named):
            out += "[order]" if seg.order else f"[name={seg.name}]"
        elif isinstance(seg, int):
            out += f"[{seg}]"
        elif re.fullmatch(r"[A-Za-z_][A-Za-z0-9_-]*", str(seg)):
            out += f".{seg}" if out else str(seg)
        else:
            out += f"[{json.dumps(str(seg))}]"
    return out


def describe(kind: str, path: Sequence[Segment]) -> str:
    """A field in Kubernetes terms, e.g. `nvidia.com/gpu nominalQuota on flavor h100`."""
    p = list(path)
    for prefix in CONFIG_PATHS:
        if tuple(p[: len(prefix)]) == prefix:
            rest = p[len(prefix) :]
            if (
                rest[:2] == ["resources", "deviceClassMappings"]
                and len(rest) > 2
                and isinstance(rest[2], Named)
            ):
                tail = f" {field_path(rest[3:])}" if rest[3:] else ""
                what = (
                    "deviceClassMappings order"
                    if rest[2].order
                    else f"deviceClassMapping {rest[2].name}{tail}"
                )
            elif len(rest) == 2 and rest[0] == "featureGates":
                what = f"feature gate {rest[1]}"
            else:
                what = field_path(rest) or "(whole document)"
            return f"Kueue Configuration {what}"
    if (
        kind in ("ClusterQueue", "Cohort")
        and p[:2] == ["spec", "resourceGroups"]
        and p[3:4] == ["flavors"]
        and len(p) > 4
    ):
        flavor, res = p[4], p[6] if len(p) > 6 and p[5] == "resources" else None
        if not isinstance(flavor, Named):
            return field_path(p)
        if flavor.order:
            return "flavor order"
        if isinstance(res, Named):
            what = "resource order" if res.order else f"{res.name} {field_path(p[7:])}".rstrip()
            return f"{what} on flavor {flavor.name}"
        if len(p) == 5:
            return f"flavor {flavor.name}"
    return field_path(p)


def _scalars(value: Any) -> bool:
    return isinstance(value, list) and not any(isinstance(x, Mapping | list) for x in value)


def _reordered(old: Any, new: Any) -> bool:
    a, b = str(old).split(", "), str(new).split(", ")
    return [n for n in a if n in b] != [n for n in b if n in a]


def _leaves(value: Any, path: tuple[Segment, ...] = ()) -> list[tuple[Segment, ...]]:
    if isinstance(value, Mapping) and value and not any(isinstance(k, Named) for k in value):
        return [leaf for k, v in value.items() for leaf in _leaves(v, (*path, k))]
    return [path]


def _deepdiff() -> Any:
    """DeepDiff, imported only when two objects differ (~0.05 s). When pydantic is installed and not yet
    imported, deepdiff would import it (~0.08 s) only to recognise pydantic models, which the plain
    data compared here never holds: it is kept out of that one import."""
    if "deepdiff" not in sys.modules and "pydantic" not in sys.modules:
        sys.modules["pydantic"] = None  # type: ignore[assignment]  # `import pydantic` raises ImportError
        try:
            from deepdiff import DeepDiff
        finally:
            del sys.modules["pydantic"]
        return DeepDiff
    from deepdiff import DeepDiff

    return DeepDiff


def _changes(kind: str, old: Any, new: Any) -> list[Change]:
    """Field changes; lists of scalars as one value, a mapping added or removed as its leaves."""
    DeepDiff = _deepdiff()
    a, b = _normalise(old), _normalise(new)
    found: dict[tuple[Segment, ...], Change] = {}
    for report_type, levels in DeepDiff(a, b, view="tree").items():
        for level in levels:
            path = tuple(level.path(output_format="list"))
            op = "added" if "added" in report_type else "removed" if "removed" in report_type else "changed"
            if (
                path
                and isinstance(path[-1], int)
                and (_scalars(_get(a, path[:-1])) or _scalars(_get(b, path[:-1])))
            ):
                path = path[:-1]
                op = op if _get(a, path) is None or _get(b, path) is None else "changed"
            if path and path[-1] == ORDER and not _reordered(_get(a, path), _get(b, path)):
                continue
            leaves = _leaves(_get(b if op == "added" else a, path)) if op != "changed" else [()]
            for sub in leaves if path and isinstance(path[-1], str) and len(leaves) <= 20 else [()]:
                at = (*path, *sub)
                found[at] = Change(
                    op, at, field_path(at), describe(kind, at), _plain(_get(a, at)), _plain(_get(b, at))
                )
    return sorted(found.values(), key=lambda c: c.field)


def _unreadable(where: str, message: str, line: int = 0, col: int = 0) -> PipelineError:
    return PipelineError([Finding(where, line, col, Severity.ERROR, "plan-read", message)])


def load_objects(where: str, data: bytes) -> list[dict[str, Any]]:
    try:
        docs = fastyaml.load_all(data.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise _unreadable(where, f"not UTF-8: {exc}") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        raise _unreadable(
            where, f"not valid YAML: {exc}", *((mark.line + 1, mark.column + 1) if mark else ())
        ) from None
    return [
        d for d in docs if isinstance(d, dict) and d.get("kind") and (d.get("metadata") or {}).get("name")
    ]


def _index(where: str, tree: Tree) -> dict[ObjectKey, tuple[str, dict[str, Any]]]:
    out: dict[ObjectKey, tuple[str, dict[str, Any]]] = {}
    for rel, data in tree.items():
        for body in load_objects(f"{where}/{rel}", data) if rel.endswith((".yaml", ".yml")) else ():
            if key_of(body) in out:
                raise _unreadable(f"{where}/{rel}", f"{key_of(body)} is also in {out[key_of(body)][0]}")
            out[key_of(body)] = (rel, body)
    return out


def _tenant(*bodies: Mapping[str, Any] | None) -> str:
    for body in bodies:
        labels = ((body or {}).get("metadata") or {}).get("labels") or {}
        if labels.get(TENANT_LABEL):
            return str(labels[TENANT_LABEL])
    return ""


def compare(
    cluster: str, new: Tree, old: Tree, where: str = "against"
) -> tuple[list[ObjectChange], list[str], dict[ObjectKey, dict[str, Any]]]:
    """Object changes, the files that differ without an object change, the synced side's parsed bodies."""
    same = {p for p in new if old.get(p) == new[p]}
    olds = _index(f"{where}/{cluster}", {p: d for p, d in old.items() if p not in same})
    news = _index(f"generated/{cluster}", {p: d for p, d in new.items() if p not in same})
    objects: list[ObjectChange] = []
    covered: set[str] = set()
    for key in sorted(olds.keys() | news.keys(), key=lambda k: (k.kind, k.namespace, k.name, k.group)):
        (opath, obody), (npath, nbody) = olds.get(key, ("", None)), news.get(key, ("", None))
        if obody is None or nbody is None:
            action = "added" if obody is None else "removed"
            objects.append(ObjectChange(cluster, action, key, npath or opath, _tenant(nbody, obody)))
        elif to_yaml(obody) != to_yaml(nbody) and (changes := _changes(key.kind, obody, nbody)):
            objects.append(
                ObjectChange(cluster, "changed", key, npath, _tenant(nbody, obody), tuple(changes))
            )
        else:
            continue  # the same object: a moved or re-serialised file shows in `files`
        covered.update(p for p in (opath, npath) if p)
    files = [
        f"{'+' if p not in old else '-' if p not in new else '~'} {p}"
        for p in sorted(old.keys() | new.keys())
    ]
    listed = same | covered
    return objects, [f for f in files if f[2:] not in listed], {k: b for k, (_, b) in olds.items()}
