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
