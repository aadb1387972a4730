"""Who set a field of a live object: the field managers of `metadata.managedFields`, read from their
`fieldsV1` tries (the structured-merge-diff field sets the API server keeps per manager).

A trie names fields `f:<name>`, items of map-type lists `k:{"key":value,...}` (their key fields), items of
set-type lists `v:<value>` and positions of other lists `i:<index>`; `.` marks the node itself. A leaf
(`{}`) owns the whole value below it: an atomic list such as a ClusterQueue's `spec.resourceGroups` is
owned whole by the manager that last wrote it, so `kubectl edit` on one quota takes the list from
`argocd-controller`.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping, Sequence
from typing import Any

ARGOCD = "argocd-controller"
"""The field manager of Argo CD's server-side apply."""

Step = tuple[str, Any, Any]
"""("f", field name, None) or ("i", index, item) for a list item."""


@dataclasses.dataclass(frozen=True)
class Manager:
    """One entry of managedFields: the manager's name, `Apply` or `Update`, and when."""

    name: str
    operation: str
    time: str

    def shown(self) -> str:
        verb = "applied" if self.operation == "Apply" else "updated"
        return f"{self.name} ({verb} {self.time})" if self.time else self.name


def managers(body: Mapping[str, Any]) -> list[tuple[Manager, Mapping[str, Any]]]:
    """Every managedFields entry of the object with its trie (entries that are not FieldsV1 skipped)."""
    meta = body.get("metadata")
    entries = meta.get("managedFields") if isinstance(meta, Mapping) else None
    out: list[tuple[Manager, Mapping[str, Any]]] = []
    for e in entries if isinstance(entries, list) else ():
        if not isinstance(e, Mapping) or not isinstance(e.get("fieldsV1"), Mapping):
            continue
        name = str(e.get("manager", ""))
        out.append((Manager(name, str(e.get("operation", "")), str(e.get("time", ""))), e["fieldsV1"]))
    return out


def names(body: Mapping[str, Any]) -> tuple[str, ...]:
    """The managers of an object, in managedFields order."""
    return tuple(dict.fromkeys(m.name for m, _ in managers(body)))


def steps(path: str, *bodies: Any) -> list[Step]:
    """A compare path (`spec.resourceGroups[0].flavors[h100].resources[nvidia.com/gpu].nominalQuota`)
    as steps through the first body that holds each step. Keys may hold dots (`gputenancy.io/source`):
    the longest key of the object that the path continues with is taken."""
    out: list[Step] = []
    nodes: list[Any] = list(bodies)
    rest = path
    while rest:
        if rest.startswith("["):
            end = rest.find("]")
            token, rest = rest[1 : end if end > 0 else len(rest)], rest[end + 1 :] if end > 0 else ""
            rest = rest.removeprefix(".")
            found: tuple[int, Any] | None = None
            for node in nodes:
                if isinstance(node, list):
                    found = _item(node, token)
                    if found is not None:
                        break
            if found is None:
                break
            out.append(("i", found[0], found[1]))
            nodes = [_item_value(n, token) for n in nodes]
            continue
        candidates = {k for n in nodes if isinstance(n, Mapping) for k in n if isinstance(k, str)}
        fitting = [k for k in candidates if rest == k or rest.startswith((k + ".", k + "["))]
        key = max(fitting, key=len) if fitting else rest.split("[", 1)[0].split(".", 1)[0]
        out.append(("f", key, None))
        nodes = [n.get(key) if isinstance(n, Mapping) else None for n in nodes]
        rest = rest[len(key) :].removeprefix(".")
    return out


def _item(items: list[Any], token: str) -> tuple[int, Any] | None:
    for i, x in enumerate(items):
        if isinstance(x, Mapping) and x.get("name") == token:
            return i, x
    if token.isdigit() and int(token) < len(items):
        return int(token), items[int(token)]
    return None


def _item_value(node: Any, token: str) -> Any:
    hit = _item(node, token) if isinstance(node, list) else None
    return hit[1] if hit is not None else None


def _child(node: Mapping[str, Any], step: Step) -> Any:
    if step[0] == "f":
        return node.get(f"f:{step[1]}")
    index, item = step[1], step[2]
    for key, value in node.items():
        if key == f"i:{index}":
            return value
        if key.startswith(("k:", "v:")):
            try:
                want = json.loads(key[2:])
            except ValueError:
                continue
            if key[0] == "v" and want == item:
                return value
            if (
                key[0] == "k"
                and isinstance(want, dict)
                and isinstance(item, Mapping)
                and all(item.get(k) == v for k, v in want.items())
            ):
                return value
    return None


def owns(trie: Mapping[str, Any], path: Sequence[Step]) -> bool:
    """Whether a fieldsV1 trie owns the value at `path` (or an atomic value holding it)."""
    node: Any = trie
    for step in path:
        if not isinstance(node, Mapping):
            return False
        if not node:  # a leaf: the whole value below is this manager's
            return True
        node = _child(node, step)
        if node is None:
            return False
    return True


def owners_of(body: Mapping[str, Any], path: str, *others: Any) -> tuple[Manager, ...]:
    """The managers owning the field at `path` (a compare path) of the live `body`; when the field is
    absent there, those owning the nearest enclosing value that is present. `others` (the rendered body)
    help read the path."""
    walk = steps(path, body, *others)
    entries = managers(body)
    while walk:  # never the empty path: every manager owns some of the object
        found = tuple(m for m, trie in entries if owns(trie, walk))
        if found:
            return found
        walk = walk[:-1]
    return ()
