"""Rendered objects vs what the cluster would accept, offline and as strict as the cluster.

Kueue objects are checked against the CRD schemas of a platform-configured directory (structural
schema as JSON Schema with unknown fields rejected, list-type uniqueness, CEL `x-kubernetes-validations`
evaluated on the defaulted object), built-in kinds against the strict OpenAPI-derived schemas that the
kubernetes-validate package bundles, and both against the admission rules of `gputenancy.check.webhooks`.
Findings point back to inputs through each object's provenance (`RenderedObject.origin_for`).
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import importlib.resources
import json
import marshal
import os
import re
import types
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, NoReturn

import jsonschema_rs

from gputenancy import fastyaml
from gputenancy.check import webhooks
from gputenancy.check.celext import cel
from gputenancy.findings import Finding, Origin, Severity
from gputenancy.objects import FieldPath, RenderedObject

PARTIAL_ANNOTATION = "gputenancy.io/partial"
DRA_MIN_K8S = (1, 34)
_SKIPPED_GROUPS = frozenset({"argoproj.io"})
_CLUSTER_SCOPED = frozenset({("", "Namespace"), (webhooks.RESOURCE, "DeviceClass")})
_OBJECT_META = (
    "https://kubernetes.io/api/_definitions.json#/$defs/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
)
_INT_FORMATS = types.MappingProxyType({"int32": (-(2**31), 2**31 - 1), "int64": (-(2**63), 2**63 - 1)})
_VERSION_RE = re.compile(r"v?(\d+)\.(\d+)(?:\.(\d+))?")
_OLD_SELF = re.compile(r"\boldSelf\b")
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")
_CEL_ERRORS = (ValueError, TypeError, RuntimeError, LookupError, ArithmeticError)
_MAX_ANNOTATIONS_BYTES = 256 * 1024
_SCALARS = frozenset({str, int, float, bool, type(None)})
_MEMO_MAX_KEY = 16 * 1024
_MARSHAL_VERSION = 2  # the last without back-references, which would make bytes depend on reference counts
_MEMO_MAX_ENTRIES = 4096


@dataclasses.dataclass(frozen=True)
class ValidationReport:
    """Findings plus what was used and what was not checked.

    `schema_dirs_used` names the Kueue CRD directory and the kubernetes-validate schema set applied;
    `skipped` holds human notes about checks that could not run.
    """

    findings: tuple[Finding, ...]
    schema_dirs_used: tuple[str, ...]
    skipped: tuple[str, ...]


# --- Kueue CRDs: structural schema -> JSON Schema, plus a plan of CEL rules, defaults, list types ------


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
class _CelRule:
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
            except _CEL_ERRORS:
                return self.message
            if isinstance(text, str) and text.strip():
                return text
        return self.message


@dataclasses.dataclass(frozen=True)
class _Node:
    """What the schema asks of one node beyond JSON Schema; subtrees asking nothing are left out."""

    rules: tuple[_CelRule, ...]
    properties: Mapping[str, _Node]
    items: _Node | None
    values: _Node | None
    defaults: Mapping[str, Any]
    list_type: str
    map_keys: tuple[str, ...]


@dataclasses.dataclass(frozen=True)
class _CrdVersion:
    served: bool
    deprecated: bool
    warning: str
    schema: Mapping[str, Any]


@dataclasses.dataclass(frozen=True)
class _Crd:
    source: str
    namespaced: bool
    versions: Mapping[str, _CrdVersion]


@dataclasses.dataclass(frozen=True)
class _Compiled:
    validator: jsonschema_rs.Validator
    plan: _Node | None


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
    except _CEL_ERRORS as exc:
        return None, (str(exc).strip().splitlines() or [type(exc).__name__])[0]


def _cel_rule(spec: Mapping[str, Any]) -> _CelRule:
    rule = str(spec.get("rule", ""))
    program, error = _compile(rule)
    message_expression = _compile(spec["messageExpression"])[0] if spec.get("messageExpression") else None
    optional = bool(spec.get("optionalOldSelf"))
    # A transition rule compares with `oldSelf`, the stored object. A create has none, so it runs only when
    # the rule asks for `optionalOldSelf` (and then sees oldSelf as an empty optional).
    return _CelRule(
        rule,
        str(spec.get("message") or "") or f"failed rule: {rule}",
        _field_path(str(spec.get("fieldPath", ""))),
        program,
        error,
        bool(_OLD_SELF.search(rule)) and not optional,
        optional,
        message_expression,
    )


def _plan(schema: Mapping[str, Any]) -> _Node | None:
    props: Mapping[str, Any] = schema.get("properties") or {}
    children = {k: n for k, v in props.items() if isinstance(v, Mapping) and (n := _plan(v)) is not None}
    defaults = {k: v["default"] for k, v in props.items() if isinstance(v, Mapping) and "default" in v}
    items = _plan(schema["items"]) if isinstance(schema.get("items"), Mapping) else None
    extra = schema.get("additionalProperties")
    values = _plan(extra) if isinstance(extra, Mapping) else None
    rules = tuple(_cel_rule(r) for r in schema.get("x-kubernetes-validations") or ())
    list_type = str(schema.get("x-kubernetes-list-type", ""))
    list_type = list_type if list_type in ("map", "set") else ""
    if not (rules or children or defaults or items or values or list_type):
        return None
    keys = tuple(schema.get("x-kubernetes-list-map-keys") or ())
    return _Node(rules, children, items, values, defaults, list_type, keys)


_CRD_GROUP = re.compile(r"^  group: ['\"]?([A-Za-z0-9.-]+)['\"]?$", re.M)
_CRD_NAMES = re.compile(r"^  names:\n((?:    .*\n|[ ]*\n)*)", re.M)
_CRD_KIND = re.compile(r"^    kind: ['\"]?([A-Za-z0-9]+)['\"]?$", re.M)


def _read_crds(file: Path) -> dict[tuple[str, str], _Crd]:
    found: dict[tuple[str, str], _Crd] = {}
    for doc in fastyaml.load_all(file.read_text(encoding="utf-8")):
        if not isinstance(doc, dict) or doc.get("kind") != "CustomResourceDefinition":
            continue
        spec = doc.get("spec") or {}
        versions = {
            str(v["name"]): _CrdVersion(
                bool(v.get("served")),
                bool(v.get("deprecated")),
                str(v.get("deprecationWarning") or ""),
                ((v.get("schema") or {}).get("openAPIV3Schema") or {}),
            )
            for v in spec.get("versions") or ()
        }
        key = (str(spec.get("group")), str((spec.get("names") or {}).get("kind")))
        found[key] = _Crd(file.name, spec.get("scope") == "Namespaced", versions)
    return found


def _guess(text: str) -> tuple[str, str] | None:
    """(group, kind) of a file holding one CRD as controller-gen writes it, from its text alone."""
    if (
        text.count("\nkind: CustomResourceDefinition") + text.startswith("kind: CustomResourceDefinition")
        != 1
    ):
        return None
    group, names = _CRD_GROUP.findall(text), _CRD_NAMES.findall(text)
    kinds = _CRD_KIND.findall(names[0]) if len(names) == 1 else []
    return (group[0], kinds[0]) if len(group) == 1 and len(kinds) == 1 else None


class _CrdDirectory(Mapping[tuple[str, str], _Crd]):
    """The CRDs of a directory by (group, kind). A file is parsed when one of its kinds is first asked
    for: the directory holds the Workload CRD (1.4 MB of the 1.6 MB), which the pipeline never
    validates. Which file holds which kind is read off the text (`_guess`); when a file does not
    look like one CRD written by controller-gen, or what it holds is not what its text said, every
    file is parsed."""

    def __init__(self, directory: Path) -> None:
        self._files = sorted([*directory.glob("*.yaml"), *directory.glob("*.yml")])
        self._where: dict[tuple[str, str], Path] | None = {}
        self._loaded: dict[tuple[str, str], _Crd] = {}
        self._parsed: set[Path] = set()
        for file in self._files:
            guess = _guess(file.read_text(encoding="utf-8"))
            if guess is None or guess in self._where:
                self._where = None
                break
            self._where[guess] = file
        if self._where is None:
            self._load_all()

    def _load_all(self) -> None:
        self._where = None
        self._loaded = {}
        for file in self._files:
            self._loaded.update(_read_crds(file))
        self._parsed = set(self._files)

    def _find(self, key: tuple[str, str]) -> _Crd | None:
        if key in self._loaded or self._where is None:
            return self._loaded.get(key)
        file = self._where.get(key)
        if file is None or file in self._parsed:
            return None
        found = _read_crds(file)
        self._parsed.add(file)
        if set(found) != {key}:
            self._load_all()
            return self._loaded.get(key)
        self._loaded.update(found)
        return found[key]

    def __getitem__(self, key: tuple[str, str]) -> _Crd:
        found = self._find(key)
        if found is None:
            raise KeyError(key)
        return found

    def __iter__(self) -> Iterator[tuple[str, str]]:
        if self._where is not None:
            self._load_all()
        return iter(dict(self._loaded))

    def __len__(self) -> int:
        return len(self._where) if self._where is not None else len(self._loaded)


@functools.cache
def _crds(directory: Path) -> Mapping[tuple[str, str], _Crd]:
    """CRDs of a directory by (group, kind), read once per resolved path (each file when first needed)."""
    return _CrdDirectory(directory)


@functools.cache
def _compiled(directory: Path, group: str, kind: str, version: str) -> _Compiled:
    schema = _crds(directory)[(group, kind)].versions[version].schema
    converted = json_schema(schema)
    # metadata is ObjectMeta, checked against the Kubernetes schema and name rules instead.
    converted.setdefault("properties", {})["metadata"] = {"type": "object"}
    return _Compiled(jsonschema_rs.Draft202012Validator(converted, validate_formats=True), _plan(schema))


def unsupported_cel_rules(crd_dir: Path) -> tuple[tuple[str, str, str], ...]:
    """(kind, version, rule) of every CRD CEL rule in `crd_dir` the CEL library cannot compile."""
    found = []
    for (_, kind), crd in sorted(_crds(crd_dir.resolve()).items()):
        for version, spec in sorted(crd.versions.items()):
            stack: list[Any] = [spec.schema]
            while stack:
                node = stack.pop()
                if isinstance(node, Mapping):
                    for rule in node.get("x-kubernetes-validations") or ():
                        if _cel_rule(rule).program is None:
                            found.append((kind, version, str(rule.get("rule"))))
                    stack.extend(node.values())
                elif isinstance(node, list):
                    stack.extend(node)
    return tuple(found)


# --- built-in kinds: the strict schemas bundled with kubernetes-validate -----------------------------


def _schema_root() -> Any:
    return importlib.resources.files("kubernetes_validate") / "kubernetes-json-schema"


@functools.cache
def _k8s_dirs() -> Mapping[tuple[int, int], str]:
    dirs = {}
    for entry in _schema_root().iterdir():
        m = re.fullmatch(r"v(\d+)\.(\d+)\.\d+-local-strict", entry.name)
        if m:
            dirs[(int(m.group(1)), int(m.group(2)))] = entry.name
    return dirs


def _strip_required(node: Any) -> Any:
    if isinstance(node, dict):
        return {k: _strip_required(v) for k, v in node.items() if k != "required"}
    if isinstance(node, list):
        return [_strip_required(v) for v in node]
    return node


@functools.cache
def _k8s_registry(version_dir: str, relaxed: bool) -> jsonschema_rs.Registry:
    defs = json.loads((_schema_root() / version_dir / "_definitions.json").read_text(encoding="utf-8"))
    defs = _strip_required(defs) if relaxed else defs
    return jsonschema_rs.Registry([(defs["$id"], defs)])


@functools.cache
def _k8s_validator(version_dir: str, filename: str, relaxed: bool) -> jsonschema_rs.Validator | None:
    """A compiled validator for one kind, or None when that Kubernetes version has no such kind."""
    if filename == "ObjectMeta":
        schema: Any = {"$ref": _OBJECT_META}
    else:
        file = _schema_root() / version_dir / filename
        if not file.is_file():
            return None
        schema = json.loads(file.read_text(encoding="utf-8"))
    schema = _strip_required(schema) if relaxed else schema
    return jsonschema_rs.Draft202012Validator(schema, registry=_k8s_registry(version_dir, relaxed))


@functools.lru_cache(maxsize=1024)
def _k8s_filename(api_version: str, kind: str) -> str:
    """kubernetes-validate's naming: `<kind>-<first label of group>-<version>.json`."""
    group_version = re.sub(r"^([^./]*)(?:\.[^/]*)?/", r"\1-", api_version)
    return f"{kind.lower()}-{group_version}.json"


# --- one validation run ------------------------------------------------------------------------------


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


class _Inexact(Exception):
    """The value holds something other than exactly dict (str keys), list, str, int, float, bool, None."""


def _inexact() -> NoReturn:
    raise _Inexact


def _exact_copy(value: Any) -> Any:
    """A fresh copy of a dict or list made of exactly dicts with str keys, lists and JSON scalars, or
    _Inexact. `_plain` gives the same copy, and also copes with anything else."""
    if type(value) is dict:
        return {
            (k if type(k) is str else _inexact()): (v if type(v) in _SCALARS else _exact_copy(v))
            for k, v in value.items()
        }
    if type(value) is list:
        return [v if type(v) in _SCALARS else _exact_copy(v) for v in value]
    raise _Inexact


def _plain(value: Any) -> Any:
    """A fresh copy made of dicts and lists only."""
    if type(value) in (str, int, float, bool) or value is None:
        return value
    if isinstance(value, dict | Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def format_path(path: FieldPath) -> str:
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        elif _IDENT.fullmatch(part):
            out += f".{part}" if out else part
        else:
            out += f"[{part}]"
    return out


def _describe(body: Mapping[str, Any]) -> str:
    meta = _mapping(body.get("metadata"))
    name = str(meta.get("name") or meta.get("generateName") or "<unnamed>")
    ns = meta.get("namespace")
    return f"{body.get('kind') or 'object'} {ns}/{name}" if ns else f"{body.get('kind') or 'object'} {name}"


@dataclasses.dataclass
class _Run:
    """Findings of one validate_objects call, and the warnings already given once."""

    findings: list[Finding] = dataclasses.field(default_factory=list)
    warned: set[str] = dataclasses.field(default_factory=set)

    def add(
        self,
        obj: RenderedObject,
        body: Mapping[str, Any],
        path: FieldPath,
        rule: str,
        message: str,
        severity: Severity = Severity.ERROR,
    ) -> None:
        where = f"{format_path(path)}: " if path else ""
        text = f"{_describe(body)}: {where}{message}"
        self.findings.append(obj.origin_for(path).finding(rule, text, severity))

    def schema_errors(
        self,
        obj: RenderedObject,
        body: Mapping[str, Any],
        errors: Iterable[jsonschema_rs.ValidationError],
        prefix: str,
        base: FieldPath = (),
    ) -> int:
        count = 0
        for err in errors:
            count += 1
            path = (*base, *err.instance_path)
            kind = err.kind
            if isinstance(kind, jsonschema_rs.ValidationErrorKind.AdditionalProperties):
                for name in kind.unexpected:
                    self.add(
                        obj,
                        body,
                        (*path, name),
                        f"{prefix}-unknown-field",
                        f'unknown field "{name}" (the API server would reject or prune it, and Argo CD '
                        "would show a diff forever)",
                    )
            elif isinstance(kind, jsonschema_rs.ValidationErrorKind.Required):
                self.add(obj, body, (*path, str(kind.property)), f"{prefix}-schema", "Required value")
            else:
                self.add(obj, body, path, f"{prefix}-schema", err.message)
        return count


def _apply_defaults(value: Any, node: _Node) -> None:
    """Structural defaulting as the API server does it before validation."""
    if isinstance(value, dict):
        for key, default in node.defaults.items():
            if key not in value:
                value[key] = copy.deepcopy(default)
        for key, child in node.properties.items():
            if key in value:
                _apply_defaults(value[key], child)
        if node.values is not None:
            for item in value.values():
                _apply_defaults(item, node.values)
    elif isinstance(value, list) and node.items is not None:
        for item in value:
            _apply_defaults(item, node.items)


def _list_key(item: Any, node: _Node) -> Any:
    """What makes `item` a duplicate: two items clash exactly when their `_list_text` is the same."""
    if node.list_type == "map" and isinstance(item, Mapping):
        fields = tuple([item.get(k) for k in node.map_keys])
        if all(type(f) is str or f is None for f in fields):
            return fields
    elif node.list_type == "set" and type(item) is str:
        return (item,)
    return _list_text(item, node)


def _list_text(item: Any, node: _Node) -> str:
    if node.list_type == "map" and isinstance(item, Mapping):
        return json.dumps({k: item.get(k) for k in node.map_keys}, sort_keys=True)
    return json.dumps(item, sort_keys=True)


def _walk(
    run: _Run,
    obj: RenderedObject,
    body: Mapping[str, Any],
    value: Any,
    node: _Node,
    path: FieldPath,
    quiet_errors: bool,
    exact: bool,
) -> None:
    """CEL rules and list-type uniqueness at every node the object has, array items and map values too.

    `exact`: the body is made of exactly dicts, lists and JSON scalars (see `_CelRule.execute`)."""
    for rule in node.rules:
        if rule.transition:
            continue
        if rule.program is None:
            _unsupported(run, obj, body, path, rule, rule.compile_error)
            continue
        try:
            result = rule.execute(rule.program, value, exact)
        except _CEL_ERRORS as exc:
            detail = (
                f"no such key: {exc.args[0]}" if isinstance(exc, KeyError) and exc.args else str(exc).strip()
            )
            if "Undefined variable or function" in detail or "No such overload" in detail:
                _unsupported(run, obj, body, path, rule, detail)
            elif not quiet_errors:
                run.add(
                    obj,
                    body,
                    (*path, *rule.field_path),
                    "crd-cel",
                    f"{rule.failure_message(value)} (evaluation error: {detail})",
                )
            continue
        if result is not True:
            run.add(obj, body, (*path, *rule.field_path), "crd-cel", rule.failure_message(value))
    if isinstance(value, list):
        if node.list_type:
            seen: set[Any] = set()
            for i, item in enumerate(value):
                key = _list_key(item, node)
                if key in seen:
                    text = _list_text(item, node)
                    run.add(obj, body, (*path, i), "crd-list-duplicate", f"Duplicate value: {text}")
                seen.add(key)
        if node.items is not None:
            for i, item in enumerate(value):
                _walk(run, obj, body, item, node.items, (*path, i), quiet_errors, exact)
    elif isinstance(value, dict | Mapping):
        for key, child in node.properties.items():
            if key in value:
                _walk(run, obj, body, value[key], child, (*path, key), quiet_errors, exact)
        if node.values is not None:
            for key, item in value.items():
                _walk(run, obj, body, item, node.values, (*path, key), quiet_errors, exact)


def _unsupported(
    run: _Run, obj: RenderedObject, body: Mapping[str, Any], path: FieldPath, rule: _CelRule, detail: str
) -> None:
    key = f"{body.get('kind')}\0{rule.rule}"
    if key not in run.warned:
        run.warned.add(key)
        run.add(
            obj,
            body,
            path,
            "crd-cel-unsupported",
            f"CEL rule not checked offline ({detail}): {rule.rule}",
            Severity.WARNING,
        )


_LABELS: FieldPath = ("metadata", "labels")


def _strings_key(mapping: Any, *, values: bool) -> tuple[Any, ...] | None:
    """A small dict of short strings as a hashable key (its items, or its keys when `values` is
    False, the values then being free), else None."""
    if type(mapping) is not dict or len(mapping) > 32:
        return None
    for key, value in mapping.items():
        if type(key) is not str or len(key) > 256:
            return None
        if values and (type(value) is not str or len(value) > 256):
            return None
    return tuple(mapping.items()) if values else tuple(mapping)


@functools.lru_cache(maxsize=4096)
def _label_problems(items: tuple[tuple[str, str], ...]) -> tuple[tuple[FieldPath, str], ...]:
    """Label problems of metadata.labels, for labels objects repeat."""
    return tuple((p.path, p.message) for p in webhooks.label_problems(dict(items), _LABELS))


def _annotation_key_problems(key: Any) -> list[tuple[FieldPath, str]]:
    return [
        (("metadata", "annotations", str(key)), f"Invalid value: {json.dumps(key)}: {msg}")
        for msg in webhooks.qualified_name_errors(str(key).lower())
    ]


@functools.lru_cache(maxsize=4096)
def _annotation_problems(keys: tuple[str, ...]) -> tuple[tuple[FieldPath, str], ...]:
    """Problems of metadata.annotations keys, for annotation keys objects repeat."""
    return tuple(problem for key in keys for problem in _annotation_key_problems(key))


def _metadata(run: _Run, obj: RenderedObject, body: Mapping[str, Any], group: str, kind: str) -> None:
    meta = body.get("metadata")
    if not isinstance(meta, Mapping):
        run.add(obj, body, ("metadata",), "k8s-metadata", "Required value")
        return
    name, generate = meta.get("name"), meta.get("generateName")
    check = (
        webhooks.dns1123_label_errors
        if (group, kind) == ("", "Namespace")
        else webhooks.dns1123_subdomain_errors
    )
    if isinstance(name, str) and name:
        for msg in check(name):
            run.add(
                obj, body, ("metadata", "name"), "k8s-metadata", f"Invalid value: {json.dumps(name)}: {msg}"
            )
    elif isinstance(generate, str) and generate:
        run.add(
            obj,
            body,
            ("metadata", "generateName"),
            "k8s-metadata",
            "generateName without name: Argo CD would create a new object on every sync",
            Severity.WARNING,
        )
        # The API server checks the prefix with a trailing '-' read as a letter.
        for msg in check(generate[:-1] + "a" if generate.endswith("-") else generate):
            run.add(
                obj,
                body,
                ("metadata", "generateName"),
                "k8s-metadata",
                f"Invalid value: {json.dumps(generate)}: {msg}",
            )
    else:
        run.add(
            obj, body, ("metadata", "name"), "k8s-metadata", "Required value: a GitOps object needs a name"
        )
    namespace = meta.get("namespace")
    if isinstance(namespace, str) and namespace:
        for msg in webhooks.dns1123_label_errors(namespace):
            run.add(
                obj,
                body,
                ("metadata", "namespace"),
                "k8s-metadata",
                f"Invalid value: {json.dumps(namespace)}: {msg}",
            )
    labels = meta.get("labels")
    labels_key = _strings_key(labels, values=True)
    for path, message in (
        _label_problems(labels_key)
        if labels_key is not None
        else [(p.path, p.message) for p in webhooks.label_problems(labels, _LABELS)]
    ):
        run.add(obj, body, path, "k8s-metadata", message)
    annotations = meta.get("annotations")
    if isinstance(annotations, Mapping):
        keys = _strings_key(annotations, values=False)
        size = 0
        for key, value in annotations.items():
            size += len(str(key)) + len(str(value))
            if keys is None:
                for path, message in _annotation_key_problems(key):
                    run.add(obj, body, path, "k8s-metadata", message)
        if keys is not None:
            for path, message in _annotation_problems(keys):
                run.add(obj, body, path, "k8s-metadata", message)
        if size > _MAX_ANNOTATIONS_BYTES:
            run.add(
                obj,
                body,
                ("metadata", "annotations"),
                "k8s-metadata",
                f"Too long: must have at most {_MAX_ANNOTATIONS_BYTES} bytes",
            )


def _parse_version(text: str) -> tuple[int, int] | None:
    m = _VERSION_RE.fullmatch(text.strip())
    return (int(m.group(1)), int(m.group(2))) if m else None


def _kueue(
    run: _Run,
    obj: RenderedObject,
    body: dict[str, Any],
    crd_dir: Path | None,
    meta_dir: str | None,
    version: str,
    kind: str,
    exact: bool,
) -> tuple[dict[str, Any], bool]:
    """CRD checks; returns the defaulted body and whether a CRD schema was applied."""
    if meta_dir is not None and isinstance(body.get("metadata"), Mapping):
        meta_validator = _k8s_validator(meta_dir, "ObjectMeta", False)
        if meta_validator is not None:
            run.schema_errors(obj, body, meta_validator.iter_errors(body["metadata"]), "k8s", ("metadata",))
    if crd_dir is None:
        return body, False
    crd = _crds(crd_dir).get((webhooks.KUEUE, kind))
    if crd is None:
        run.add(
            obj, body, ("kind",), "crd-kind-unknown", f"no CRD for {webhooks.KUEUE} kind {kind} in {crd_dir}"
        )
        return body, False
    served = crd.versions.get(version)
    if served is None or not served.served:
        known = ", ".join(v for v, s in crd.versions.items() if s.served)
        run.add(
            obj,
            body,
            ("apiVersion",),
            "crd-version-not-served",
            f"{webhooks.KUEUE}/{version} {kind} is not served (served: {known})",
        )
        return body, False
    if served.deprecated:
        run.add(
            obj,
            body,
            ("apiVersion",),
            "crd-version-deprecated",
            served.warning or f"{webhooks.KUEUE}/{version} is deprecated",
            Severity.WARNING,
        )
    if not crd.namespaced and isinstance(body.get("metadata"), Mapping) and body["metadata"].get("namespace"):
        run.add(
            obj,
            body,
            ("metadata", "namespace"),
            "k8s-metadata",
            f"{kind} is cluster-scoped: the API server drops the namespace",
            Severity.WARNING,
        )
    compiled = _compiled(crd_dir, webhooks.KUEUE, kind, version)
    # `body` is this run's own plain copy: defaults go straight into it.
    if compiled.plan is not None:
        _apply_defaults(body, compiled.plan)
    errors = run.schema_errors(obj, body, compiled.validator.iter_errors(body), "crd")
    if compiled.plan is not None:
        _walk(run, obj, body, body, compiled.plan, (), errors > 0, exact)
    return body, True


def _builtin(
    run: _Run,
    obj: RenderedObject,
    body: dict[str, Any],
    schema_dir: str,
    k8s: tuple[int, int],
    api_version: str,
    group: str,
    kind: str,
) -> None:
    meta = _mapping(body.get("metadata"))
    annotations = _mapping(meta.get("annotations"))
    partial = annotations.get(PARTIAL_ANNOTATION) == "true"
    validator = _k8s_validator(schema_dir, _k8s_filename(api_version, kind), partial)
    if validator is None:
        if group == webhooks.RESOURCE and api_version.endswith("/v1") and k8s < DRA_MIN_K8S:
            return
        builtin = group == "" or group.endswith(".k8s.io") or "." not in group
        run.add(
            obj,
            body,
            ("apiVersion",),
            "k8s-schema-not-found",
            f"Kubernetes {k8s[0]}.{k8s[1]} has no {api_version} {kind}"
            + ("" if builtin else "; not validated (a CRD the validator does not know)"),
            Severity.ERROR if builtin else Severity.WARNING,
        )
        return
    run.schema_errors(obj, body, validator.iter_errors(body), "k8s")
    if (group, kind) in _CLUSTER_SCOPED and meta.get("namespace"):
        run.add(
            obj,
            body,
            ("metadata", "namespace"),
            "k8s-metadata",
            f"{kind} is cluster-scoped: the API server drops the namespace",
            Severity.WARNING,
        )


@dataclasses.dataclass(frozen=True)
class _Setup:
    """What a validate_objects call takes from its arguments other than the objects."""

    directory: Path | None
    findings: tuple[Finding, ...]
    used: tuple[str, ...]
    skipped: tuple[str, ...]
    k8s: tuple[int, int] | None
    schema_dir: str | None
    unsupported_k8s: str  # the k8s-version-unsupported message, "" when the version is fine


def _setup(crd_dir: Path | None, kueue_version: str, kubernetes_version: str) -> _Setup:
    skipped: list[str] = []
    used: list[str] = []
    findings: list[Finding] = []
    directory: Path | None = None
    if crd_dir is None:
        skipped.append("Kueue CRD schema validation skipped: no schema directory configured")
    elif not crd_dir.is_dir():
        skipped.append(f"Kueue CRD schema validation skipped: {crd_dir} is not a directory")
    elif not _crds(crd_dir.resolve()):
        skipped.append(f"Kueue CRD schema validation skipped: no CustomResourceDefinition in {crd_dir}")
    else:
        directory = crd_dir.resolve()
        used.append(str(directory))
        wanted, found = _VERSION_RE.search(kueue_version), re.search(r"v(\d+\.\d+\.\d+)", str(directory))
        if wanted and found and wanted.group(0).lstrip("v") != found.group(1):
            findings.append(
                Finding(
                    str(crd_dir),
                    0,
                    0,
                    Severity.WARNING,
                    "crd-version-mismatch",
                    f"CRD directory {crd_dir} is not for Kueue {kueue_version}",
                )
            )

    k8s = _parse_version(kubernetes_version)
    dirs = _k8s_dirs()
    usable = [v for v in dirs if k8s is not None and v <= k8s]
    schema_dir = dirs[max(usable)] if usable else None
    if schema_dir is None:
        skipped.append(
            f"built-in kind schema validation skipped: no bundled schemas for Kubernetes "
            f"{kubernetes_version!r} (oldest is {'.'.join(map(str, min(dirs)))})"
        )
    else:
        used.append(f"kubernetes-validate/{schema_dir}")
        if k8s is not None and max(usable) < k8s:
            skipped.append(
                f"Kubernetes {kubernetes_version}: built-in kinds checked against the newest bundled "
                f"schemas ({schema_dir})"
            )
    unsupported = ""
    if k8s is None or k8s < DRA_MIN_K8S:
        unsupported = (
            f"Kubernetes {kubernetes_version!r}: resource.k8s.io/v1, which Kueue reads, "
            "needs Kubernetes >= 1.34"
            if k8s is not None
            else f"cannot read Kubernetes version {kubernetes_version!r} (expected MAJOR.MINOR, e.g. 1.35)"
        )
    return _Setup(directory, tuple(findings), tuple(used), tuple(skipped), k8s, schema_dir, unsupported)


@functools.lru_cache(maxsize=256)
def _setup_once(crd_dir: Path | None, cwd: str, kueue_version: str, kubernetes_version: str) -> _Setup:
    """`_setup` once per process; `cwd` is what a relative `crd_dir` is resolved against."""
    return _setup(crd_dir, kueue_version, kubernetes_version)


def _setup_for(crd_dir: Path | None, kueue_version: str, kubernetes_version: str) -> _Setup:
    if type(kueue_version) is str and type(kubernetes_version) is str:
        if crd_dir is None or (isinstance(crd_dir, Path) and crd_dir.is_absolute()):
            return _setup_once(crd_dir, "", kueue_version, kubernetes_version)
        if isinstance(crd_dir, Path):
            try:
                cwd = os.getcwd()
            except OSError:
                return _setup(crd_dir, kueue_version, kubernetes_version)
            return _setup_once(crd_dir, cwd, kueue_version, kubernetes_version)
    return _setup(crd_dir, kueue_version, kubernetes_version)


def validate_objects(
    objects: Sequence[RenderedObject], *, kueue_version: str, kubernetes_version: str, crd_dir: Path | None
) -> ValidationReport:
    """Judge rendered objects as the API server and Kueue's webhooks would on create."""
    setup = _setup_for(crd_dir, kueue_version, kubernetes_version)
    run = _Run()
    run.findings.extend(setup.findings)
    directory, k8s, schema_dir = setup.directory, setup.k8s, setup.schema_dir
    if setup.unsupported_k8s:
        dra = [o for o in objects if str(o.body.get("apiVersion", "")).startswith(f"{webhooks.RESOURCE}/")]
        where = (dra or list(objects))[0].origin if objects else Origin("")
        run.findings.append(where.finding("k8s-version-unsupported", setup.unsupported_k8s))

    for obj in objects:
        try:
            body, exact = _exact_copy(obj.body), True
        except _Inexact:
            body, exact = _plain(obj.body), False
        api_version, kind = body.get("apiVersion"), body.get("kind")
        if not isinstance(api_version, str) or not isinstance(kind, str) or not api_version or not kind:
            run.add(obj, body, (), "k8s-schema", "apiVersion and kind are required")
            continue
        group, _, version = api_version.rpartition("/")
        if group in _SKIPPED_GROUPS:
            continue
        _metadata(run, obj, body, group, kind)
        crd_applied = False
        if group == webhooks.KUEUE:
            body, crd_applied = _kueue(run, obj, body, directory, schema_dir, version, kind, exact)
        elif schema_dir is not None and k8s is not None:
            _builtin(run, obj, body, schema_dir, k8s, api_version, group, kind)
        for rule in webhooks.rules_for(api_version, kind, kueue_version):
            if rule.also_in_crd and crd_applied:
                continue
            for problem in rule.check(body):
                run.add(obj, body, problem.path, rule.id, problem.message, problem.severity)
    return ValidationReport(tuple(sorted(set(run.findings))), setup.used, setup.skipped)
