"""Two versions of one object compared field by field: what differs, at a path a person can read."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

from gputenancy.cluster.normalise import normalise


class _Missing:
    def __repr__(self) -> str:
        return "<absent>"


MISSING: Final[Any] = _Missing()
"""The value on a side where the field is absent."""


@dataclasses.dataclass(frozen=True)
class FieldDiff:
    """One field that differs: `path` like `spec.resourceGroups[0].flavors[h100].resources[nvidia.com/gpu]
    .nominalQuota` (items of lists of named objects shown by name)."""

    path: str
    live: Any
    rendered: Any

    def describe(self) -> str:
        return f"{self.path}: {_shown(self.live)} -> {_shown(self.rendered)}"


def _shown(value: Any) -> str:
    if value is MISSING:
        return "(absent)"
    if isinstance(value, str):
        return value
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def compare(
    live: Mapping[str, Any], rendered: Mapping[str, Any], *, crd_dir: Path | None = None
) -> tuple[FieldDiff, ...]:
    """The fields in which `live` and `rendered` differ once both are normalised; () when they mean the same."""
    out: list[FieldDiff] = []
    _walk(normalise(live, crd_dir=crd_dir), normalise(rendered, crd_dir=crd_dir), "", out)
    return tuple(out)


def _named(items: list[Any]) -> dict[str, Any] | None:
    """Items keyed by their `name` when every item is a mapping with a unique string name."""
    keyed: dict[str, Any] = {}
    for item in items:
        if not isinstance(item, Mapping) or not isinstance(item.get("name"), str) or item["name"] in keyed:
            return None
        keyed[item["name"]] = item
    return keyed


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _walk(live: Any, rendered: Any, path: str, out: list[FieldDiff]) -> None:
    if isinstance(live, Mapping) and isinstance(rendered, Mapping):
        for key in sorted(set(live) | set(rendered), key=str):
            _walk(live.get(key, MISSING), rendered.get(key, MISSING), _join(path, str(key)), out)
        return
    if isinstance(live, list) and isinstance(rendered, list) and live != rendered:
        a, b = _named(live), _named(rendered)
        if a is not None and b is not None and list(a) == list(b):
            for name in a:
                _walk(a[name], b[name], f"{path}[{name}]", out)
            return
        if a is None and b is None and len(live) == len(rendered):
            for i, (x, y) in enumerate(zip(live, rendered, strict=True)):
                _walk(x, y, f"{path}[{i}]", out)
            return
    if live != rendered or isinstance(live, bool) != isinstance(rendered, bool):
        out.append(FieldDiff(path, live, rendered))
