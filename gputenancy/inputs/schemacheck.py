"""The JSON Schemas in `gputenancy/schemas/` that decide the shape of each input file, and their
errors as findings at the offending line (unknown keys with a did-you-mean)."""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterable, Iterator
from importlib import resources
from typing import TYPE_CHECKING, Any

import jsonschema_rs

from gputenancy.common.findings import Finding
from gputenancy.inputs import schemahints
from gputenancy.inputs.document import Document

if TYPE_CHECKING:
    import jsonschema


@functools.cache
def schema(name: str) -> dict[str, Any]:
    text = resources.files("gputenancy").joinpath("schemas", f"{name}.schema.json").read_text("utf-8")
    loaded: dict[str, Any] = json.loads(text)
    return loaded


_DOLLAR = re.compile(r"(?<!\\)\$")


@functools.cache
def whole(pattern: str) -> re.Pattern[str]:
    """A schema pattern as JSON Schema means it (ECMA-262): `$` matches at the very end only, never
    before a final line break as Python's `$` does (`"v0.19.2\\n"` is not a version)."""
    return re.compile(_DOLLAR.sub(r"\\Z", pattern))


def _pattern(validator: Any, pattern: str, instance: Any, _schema: Any) -> Iterator[Any]:
    import jsonschema

    if validator.is_type(instance, "string") and whole(pattern).search(instance) is None:
        yield jsonschema.ValidationError(f"{instance!r} does not match {pattern!r}")


@functools.cache
def _validator(name: str) -> jsonschema.Draft202012Validator:
    """The pure-Python validator, which words the errors of an invalid file (imported only then),
    with the ECMA meaning of `$` in patterns (`whole`)."""
    import jsonschema

    cls: Any = jsonschema.validators.extend(  # type: ignore[no-untyped-call]
        jsonschema.Draft202012Validator, {"pattern": _pattern}
    )
    validator: jsonschema.Draft202012Validator = cls(schema(name))
    return validator


_PATTERNS = {
    "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$": "a DNS label is lower-case letters, digits and '-', starting and ending "
    "with a letter or digit, at most 63 characters",
    "^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$": "a DNS subdomain is DNS labels joined by '.'",
    "^@[A-Za-z0-9][A-Za-z0-9-]*(/[A-Za-z0-9][A-Za-z0-9._-]*)?$": "owners are GitHub @user or @org/team",
}


def _describe(error: jsonschema.ValidationError) -> str:
    if error.validator == "oneOf" and isinstance(error.instance, dict | list | bool):
        return f"expected a quantity or a mapping with nominal/borrowingLimit/lendingLimit, got {error.instance!r}"
    if error.validator == "oneOf":
        return f"{error.instance!r} is not a valid quantity or amount"
    if error.validator == "pattern":
        what = _PATTERNS.get(str(error.validator_value), f"must match {error.validator_value}")
        return f"{error.instance!r} is not valid: {what}"
    return str(error.message)


@functools.cache
def _fast_validator(name: str) -> Any:
    return jsonschema_rs.validator_for(schema(name))


def check_schema(doc: Document, name: str, rule: str) -> list[Finding]:
    """JSON Schema errors as findings at the offending line; unknown keys named with a did-you-mean.

    A compiled jsonschema-rs validator answers first (most files are valid); the messages of an
    invalid file come from jsonschema."""
    if _fast_validator(name).is_valid(doc.data):
        return []
    findings: list[Finding] = []
    for error in _validator(name).iter_errors(doc.data):
        path = tuple(error.absolute_path)
        explained = schemahints.explain(error, doc, rule, dotted) or schemahints.misplaced(
            error, doc, rule, dotted(path), schema(name)
        )
        if explained is not None:
            findings.extend(explained)
            continue
        o = doc.origin(*path)
        findings.append(o.finding(rule, f"{dotted(path)}: {_describe(error)}"))
    if not findings:  # the two validators disagree: the file is refused all the same
        findings.append(doc.origin().finding(rule, "does not match its schema"))
    return findings


def dotted(path: Iterable[str | int]) -> str:
    out = "$"
    for p in path:
        out += f"[{p}]" if isinstance(p, int) else f".{p}"
    return out
