"""A CRD's structural schema compiled: JSON Schema for the structure, and a plan of what JSON Schema
cannot say (CEL `x-kubernetes-validations`, defaults, list types), per (directory, group, kind, version)."""

from __future__ import annotations

import dataclasses
import functools
import marshal
import re
import types
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import jsonschema_rs

from gputenancy.check.kubernetes import crds
from gputenancy.check.kubernetes.celext import cel
from gputenancy.common.objects import FieldPath

_INT_FORMATS = types.MappingProxyType({"int32": (-(2**31), 2**31 - 1), "int64": (-(2**63), 2**63 - 1)})
_OLD_SELF = re.compile(r"\boldSelf\b")
CEL_ERRORS = (ValueError, TypeError, RuntimeError, LookupError, ArithmeticError)
_MEMO_MAX_KEY = 16 * 1024
_MARSHAL_VERSION = 2  # the last without back-references, which would make bytes depend on reference counts
_MEMO_MAX_ENTRIES = 4096


class _Results:
    """A rule's results by the marshalled value, kept while values repeat often enough."""

    __slots__ = ("hits", "lookups", "results")

    def __init__(self) -> None:
        self.results: dict[bytes, Any] = {}
        self.lookups = 0
        self.hits = 0

    def worthwhile(self) -> bool:
        return self.lookups < 256 or self.hits * 8 >= self.lookups


@dataclasses.dataclass(frozen=True)
class CelRule:
    rule: str
    message: str
    field_path: FieldPath
    program: cel.Program | None
    compile_error: str
    transition: bool
    optional_old_self: bool
    message_expression: cel.Program | None
    results: _Results = dataclasses.field(default_factory=_Results, compare=False, repr=False)

    def activation(self, value: Any) -> dict[str, Any]:
        if self.optional_old_self:
            return {"self": value, "oldSelf": cel.OptionalValue.none()}
        return {"self": value}

    def execute(self, program: cel.Program, value: Any, exact: bool) -> Any:
        """`program` run on `value`. `exact` says `value` is made of values of exactly the types YAML
        gives (no subclasses, no bytearray), so that its marshalled bytes stand for it (the same bytes
        load back as the same value): results are then reused."""
        memo = self.results
        if exact and memo.worthwhile():
            try:
                key = marshal.dumps(value, _MARSHAL_VERSION)
            except (ValueError, RecursionError):
                key = None
            if key is not None and len(key) <= _MEMO_MAX_KEY:
                memo.lookups += 1
                if key in memo.results:
                    memo.hits += 1
                    return memo.results[key]
                result = program.execute(self.activation(value))
                if len(memo.results) < _MEMO_MAX_ENTRIES:
                    memo.results[key] = result
                return result
        return program.execute(self.activation(value))

    def failure_message(self, value: Any) -> str:
        if self.message_expression is not None:
            try:
                text = self.message_expression.execute(self.activation(value))
            except CEL_ERRORS:
                return self.message
            if isinstance(text, str) and text.strip():
                return text
        return self.message


@dataclasses.dataclass(frozen=True)
class Node:
    """What the schema asks of one node beyond JSON Schema; subtrees asking nothing are left out."""

    rules: tuple[CelRule, ...]
    properties: Mapping[str, Node]
    items: Node | None
    values: Node | None
    defaults: Mapping[str, Any]
    list_type: str
    map_keys: tuple[str, ...]


@dataclasses.dataclass(frozen=True)
class Compiled:
    validator: jsonschema_rs.Validator
    plan: Node | None


def json_schema(schema: Mapping[str, Any], *, strict: bool = True) -> dict[str, Any]:
    """A Kubernetes structural schema as JSON Schema 2020-12.

    `strict` adds `additionalProperties: false` to object schemas that neither preserve unknown fields
    nor declare additionalProperties: the API server prunes such fields, so they are errors here.
    Branches of allOf/anyOf/oneOf/not only add value validations, so they are converted loosely.
    """
    out: dict[str, Any] = {}
    kind = schema.get("type")
    if schema.get("x-kubernetes-int-or-string"):
        out["type"] = ["integer", "string", "null"] if schema.get("nullable") else ["integer", "string"]
    elif isinstance(kind, str):
        out["type"] = [kind, "null"] if schema.get("nullable") else kind
    for key in (
        "pattern",
        "minLength",
        "maxLength",
        "minItems",
        "maxItems",
        "minProperties",
        "maxProperties",
        "multipleOf",
        "required",
        "uniqueItems",
        "enum",
    ):
        if key in schema:
            out[key] = schema[key]
    if "enum" in out and schema.get("nullable"):
        out["enum"] = [*out["enum"], None]
    for bound, exclusive in (("minimum", "exclusiveMinimum"), ("maximum", "exclusiveMaximum")):
        if bound in schema:
            out[exclusive if schema.get(exclusive) is True else bound] = schema[bound]
    fmt = str(schema.get("format", ""))
    if kind == "integer" and fmt in _INT_FORMATS:
        low, high = _INT_FORMATS[fmt]
        out["minimum"] = max(out.get("minimum", low), low)
        out["maximum"] = min(out.get("maximum", high), high)
    elif fmt == "date-time":
        out["format"] = fmt
    props = schema.get("properties")
    if isinstance(props, Mapping):
        out["properties"] = {k: json_schema(v, strict=strict) for k, v in props.items()}
    if isinstance(schema.get("items"), Mapping):
        out["items"] = json_schema(schema["items"], strict=strict)
    extra = schema.get("additionalProperties")
    if isinstance(extra, Mapping):
        out["additionalProperties"] = json_schema(extra, strict=strict)
    elif isinstance(extra, bool):
        out["additionalProperties"] = extra
    elif strict and (kind == "object" or props) and not schema.get("x-kubernetes-preserve-unknown-fields"):
        out["additionalProperties"] = False
    for junctor in ("allOf", "anyOf", "oneOf"):
        if junctor in schema and not schema.get("x-kubernetes-int-or-string"):
            out[junctor] = [json_schema(s, strict=False) for s in schema[junctor]]
    if isinstance(schema.get("not"), Mapping):
        out["not"] = json_schema(schema["not"], strict=False)
    return out


def _field_path(text: str) -> FieldPath:
    """A rule's `fieldPath` (`.spec.a['b'].c`) as path elements."""
    return tuple(m.group(1) or m.group(2) for m in re.finditer(r"\.([A-Za-z_$][\w$-]*)|\['([^']*)'\]", text))


def _compile(expression: Any) -> tuple[cel.Program | None, str]:
    try:
        return cel.compile(str(expression)), ""
    except CEL_ERRORS as exc:
        return None, (str(exc).strip().splitlines() or [type(exc).__name__])[0]


def cel_rule(spec: Mapping[str, Any]) -> CelRule:
    rule = str(spec.get("rule", ""))
    program, error = _compile(rule)
    message_expression = _compile(spec["messageExpression"])[0] if spec.get("messageExpression") else None
    optional = bool(spec.get("optionalOldSelf"))
    # A transition rule compares with `oldSelf`, the stored object. A create has none, so it runs only when
    # the rule asks for `optionalOldSelf` (and then sees oldSelf as an empty optional).
    return CelRule(
        rule,
        str(spec.get("message") or "") or f"failed rule: {rule}",
        _field_path(str(spec.get("fieldPath", ""))),
        program,
        error,
        bool(_OLD_SELF.search(rule)) and not optional,
        optional,
        message_expression,
    )


def _plan(schema: Mapping[str, Any]) -> Node | None:
    props: Mapping[str, Any] = schema.get("properties") or {}
    children = {k: n for k, v in props.items() if isinstance(v, Mapping) and (n := _plan(v)) is not None}
    defaults = {k: v["default"] for k, v in props.items() if isinstance(v, Mapping) and "default" in v}
    items = _plan(schema["items"]) if isinstance(schema.get("items"), Mapping) else None
    extra = schema.get("additionalProperties")
    values = _plan(extra) if isinstance(extra, Mapping) else None
    rules = tuple(cel_rule(r) for r in schema.get("x-kubernetes-validations") or ())
    list_type = str(schema.get("x-kubernetes-list-type", ""))
    list_type = list_type if list_type in ("map", "set") else ""
    if not (rules or children or defaults or items or values or list_type):
        return None
    keys = tuple(schema.get("x-kubernetes-list-map-keys") or ())
    return Node(rules, children, items, values, defaults, list_type, keys)


@functools.cache
def compiled(directory: Path, group: str, kind: str, version: str) -> Compiled:
    schema = crds.load(directory)[(group, kind)].versions[version].schema
    converted = json_schema(schema)
    # metadata is ObjectMeta, checked against the Kubernetes schema and name rules instead.
    converted.setdefault("properties", {})["metadata"] = {"type": "object"}
    return Compiled(jsonschema_rs.Draft202012Validator(converted, validate_formats=True), _plan(schema))


def unsupported_cel_rules(crd_dir: Path) -> tuple[tuple[str, str, str], ...]:
    """(kind, version, rule) of every CRD CEL rule in `crd_dir` the CEL library cannot compile."""
    found = []
    for (_, kind), crd in sorted(crds.load(crd_dir.resolve()).items()):
        for version, spec in sorted(crd.versions.items()):
            stack: list[Any] = [spec.schema]
            while stack:
                node = stack.pop()
                if isinstance(node, Mapping):
                    for rule in node.get("x-kubernetes-validations") or ():
                        if cel_rule(rule).program is None:
                            found.append((kind, version, str(rule.get("rule"))))
                    stack.extend(node.values())
                elif isinstance(node, list):
                    stack.extend(node)
    return tuple(found)
