"""JSON Schema errors about keys and enumerations, explained with a did-you-mean.

jsonschema reports a mistyped key inside a value that may be a scalar or a mapping (an amount:
`{nominal, borrowLimit}`) as "not valid under any of the given schemas"; here the mapping branch's
own error is found and the unknown key is named at its line, with the key it most likely mistypes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from gputenancy.common.findings import Finding
from gputenancy.common.hints import closest

if TYPE_CHECKING:  # jsonschema is imported only when a file is invalid
    import jsonschema

    from gputenancy.inputs.document import Document


def _unknown_keys(
    error: jsonschema.ValidationError, doc: Document, rule: str, where: str
) -> Iterator[Finding]:
    schema = error.schema if isinstance(error.schema, dict) else {}
    known = [str(k) for k in schema.get("properties", {})]
    instance: dict[str, Any] = error.instance if isinstance(error.instance, dict) else {}
    for key in instance:
        if key in known:
            continue
        hint = closest(str(key), known, cutoff=0.6)  # keys: as difflib's default
        extra = f"; did you mean {hint!r}?" if hint else f"; expected one of: {', '.join(known)}"
        yield doc.key_origin(*error.absolute_path, key).finding(
            rule, f"unknown key {key!r} at {where}{extra}"
        )


def _ref(node: Any, root: dict[str, Any]) -> dict[str, Any]:
    if not isinstance(node, dict) or not str(node.get("$ref", "")).startswith("#/"):
        return node if isinstance(node, dict) else {}
    found: Any = root
    for part in str(node["$ref"])[2:].split("/"):
        found = found.get(part, {}) if isinstance(found, dict) else {}
    return _ref(found, root)


def misplaced(
    error: jsonschema.ValidationError, doc: Document, rule: str, where: str, root: dict[str, Any]
) -> list[Finding] | None:
    """A key indented one level too shallow, still valid YAML: under a mapping of names (cluster
    names: `budgets.clusters`) a key of the entries listed there (`resources:` of a budget entry)
    is read as one more name, whose value is then not a list. Said as such, with where it belongs:
    the last entry of the list above it."""
    path = tuple(error.absolute_path)
    if error.validator != "type" or len(path) < 2 or not isinstance(path[-1], str):
        return None
    parent_path, key = path[:-1], path[-1]
    items = _ref(_ref(error.schema, root).get("items"), root)
    fields = [str(k) for k in items.get("properties", {})]
    if key not in fields:
        return None
    parent: Any = doc.data
    for p in parent_path:
        parent = parent[p]
    here = doc.key_marks.get(path, (0, 0))
    above = [
        (doc.key_marks.get((*parent_path, k), (0, 0)), k)
        for k, v in parent.items()
        if k != key and isinstance(v, list) and v and isinstance(v[-1], dict)
    ]
    above = [a for a in above if a[0] < here]
    named = str(parent_path[-1])
    kind = named[:-1] if named.endswith("s") else named
    place = dotted_path(parent_path)
    message = (
        f"{where}: {key!r} is read as a {kind} name in {place} (it is indented like one), but it is "
        f"a key of the entries listed there ({', '.join(fields)})"
    )
    if above:
        sibling = max(above)[1]
        entry = parent[sibling][-1]
        first = next(iter(entry))
        line = doc.key_marks.get((*parent_path, sibling, len(parent[sibling]) - 1, first), (0, 0))[0]
        message += (
            f": indent it to the column of {first!r} of the entry at line {line}, as that entry's {key!r}"
        )
    else:
        message += f": indent it into the entry it belongs to (one of {', '.join(fields)})"
    return [doc.key_origin(*path).finding(rule, message)]


def dotted_path(path: tuple[Any, ...]) -> str:
    return ".".join(str(p) for p in path)


def explain(
    error: jsonschema.ValidationError, doc: Document, rule: str, dotted: Callable[[Any], str]
) -> list[Finding] | None:
    """Findings for an unknown key (also inside a oneOf/anyOf branch that takes a mapping) or a
    mistyped enumeration value; None when `error` is of another kind."""
    where = dotted(tuple(error.absolute_path))
    if error.validator == "additionalProperties" and isinstance(error.instance, dict):
        return list(_unknown_keys(error, doc, rule, where))
    if error.validator in ("oneOf", "anyOf") and isinstance(error.instance, dict):
        mapping_errors = [
            e
            for e in error.context or ()
            if e.validator == "additionalProperties" and e.instance is error.instance
        ]
        if mapping_errors:
            return list(_unknown_keys(mapping_errors[0], doc, rule, where))
    if error.validator == "enum" and isinstance(error.instance, str):
        allowed = [str(v) for v in error.validator_value] if isinstance(error.validator_value, list) else []
        hint = closest(error.instance, allowed)
        extra = f"; did you mean {hint!r}?" if hint else ""
        return [
            doc.origin(*error.absolute_path).finding(
                rule, f"{where}: {error.instance!r} is not one of {', '.join(allowed)}{extra}"
            )
        ]
    return None
