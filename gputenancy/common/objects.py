"""RenderedObject: one Kubernetes object with the input place that caused it (a leaf module)."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from typing import Any

import yaml

from gputenancy.common.findings import Origin

FieldPath = tuple[str | int, ...]


@dataclasses.dataclass(frozen=True)
class ObjectKey:
    """How objects are matched across renders: group, kind, namespace, name."""

    group: str
    kind: str
    namespace: str
    name: str

    def __str__(self) -> str:
        ns = f"{self.namespace}/" if self.namespace else ""
        group = f".{self.group}" if self.group else ""
        return f"{self.kind}{group} {ns}{self.name}"


def key_of(body: Mapping[str, Any]) -> ObjectKey:
    api_version = str(body.get("apiVersion", ""))
    group = api_version.rpartition("/")[0] if "/" in api_version else ""
    meta = body.get("metadata") or {}
    return ObjectKey(
        group, str(body.get("kind", "")), str(meta.get("namespace", "") or ""), str(meta.get("name", ""))
    )


def longest_origin(origins: Mapping[FieldPath, Origin], path: FieldPath, default: Origin) -> Origin:
    """The origin recorded for the longest prefix of `path`, else `default`."""
    for n in range(len(path), 0, -1):
        found = origins.get(tuple(path[:n]))
        if found is not None:
            return found
    return default


@dataclasses.dataclass(frozen=True)
class RenderedObject:
    """A rendered object for one cluster. `body` is never mutated after construction.

    `origin` is the input place that caused the object; `field_origins` maps field paths inside
    `body` (e.g. ("spec", "resourceGroups", 0)) to more precise input places. `origin_for` picks the
    longest matching prefix.
    """

    cluster: str
    body: Mapping[str, Any]
    origin: Origin
    field_origins: Mapping[FieldPath, Origin] = dataclasses.field(default_factory=dict)

    @property
    def key(self) -> ObjectKey:
        return key_of(self.body)

    def origin_for(self, path: FieldPath) -> Origin:
        return longest_origin(self.field_origins, path, self.origin)


class _Dumper(getattr(yaml, "CSafeDumper", yaml.SafeDumper)):  # type: ignore[misc]
    """Block style, multi-line strings as literal blocks, no aliases."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


# Strings a YAML 1.2 reader (Go's YAML, and so kustomize, kubectl and Argo CD) takes for numbers, while
# PyYAML's YAML 1.1 resolver writes some of them plain: `30e9`, `7500e-3`, `0o17`, `1_000`. Quoted, they
# stay strings for every reader (a quantity written plain as `30e9` reaches the API server as the number
# 30000000000 and is stored as `30G`: endless drift).
_NUMBER_LIKE = re.compile(
    r"[-+]?(?:[0-9][0-9_]*|0[xX][0-9a-fA-F_]+|0[oO][0-7_]+|0[bB][01_]+"
    r"|(?:\.[0-9][0-9_]*|[0-9][0-9_]*(?:\.[0-9_]*)?)(?:[eE][-+]?[0-9]+)?|\.(?:inf|Inf|INF))"
    r"|\.(?:nan|NaN|NAN)"
)


# Kubernetes quantities (`500m`, `1792Gi`, `30e9`) are written quoted too: one form, a string to every
# reader, whatever the suffix.
_QUANTITY = re.compile(r"[-+]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][-+]?[0-9]+|[KMGTPE]i|[numkMGTPE])?")


def _quoted(value: str) -> bool:
    return bool(_NUMBER_LIKE.fullmatch(value) or _QUANTITY.fullmatch(value))


def _str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value else "'" if _quoted(value) else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _str)


_TOP = ("apiVersion", "kind", "metadata", "spec", "data")


def _sorted(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {k: _sorted(value[k]) for k in sorted(value, key=lambda k: (k != "name", str(k)))}
    if isinstance(value, list):
        return [_sorted(v) for v in value]
    return value


def canonical_body(body: Mapping[str, Any]) -> dict[str, Any]:
    """Keys in one order whatever produced the object: apiVersion, kind, metadata, spec, data, then the
    rest; nested keys sorted (as `kubectl get -o yaml` shows them) but for `name`, which comes first."""
    order = sorted(body, key=lambda k: (_TOP.index(k) if k in _TOP else len(_TOP), str(k)))
    return {k: _sorted(body[k]) for k in order}


def to_yaml(body: Mapping[str, Any]) -> str:
    """The one serialisation of an object: deterministic bytes, trailing newline."""
    text: str = yaml.dump(
        canonical_body(body), Dumper=_Dumper, sort_keys=False, default_flow_style=False, width=4096
    )
    return text
