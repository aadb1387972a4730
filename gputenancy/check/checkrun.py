"""One validation run: findings at an object's field paths, schema errors as findings, and the plain
copies of object bodies that the checks default and read."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable, Mapping
from typing import Any, NoReturn

import jsonschema_rs

from gputenancy.common.findings import Finding, Severity
from gputenancy.common.objects import FieldPath, RenderedObject

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")
_SCALARS = frozenset({str, int, float, bool, type(None)})


def mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


class Inexact(Exception):
    """The value holds something other than exactly dict (str keys), list, str, int, float, bool, None."""


def _inexact() -> NoReturn:
    raise Inexact


def exact_copy(value: Any) -> Any:
    """A fresh copy of a dict or list made of exactly dicts with str keys, lists and JSON scalars, or
    Inexact. `plain` gives the same copy, and also copes with anything else."""
    if type(value) is dict:
        return {
            (k if type(k) is str else _inexact()): (v if type(v) in _SCALARS else exact_copy(v))
            for k, v in value.items()
        }
    if type(value) is list:
        return [v if type(v) in _SCALARS else exact_copy(v) for v in value]
    raise Inexact


def plain(value: Any) -> Any:
    """A fresh copy made of dicts and lists only."""
    if type(value) in (str, int, float, bool) or value is None:
        return value
    if isinstance(value, dict | Mapping):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
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
    meta = mapping(body.get("metadata"))
    name = str(meta.get("name") or meta.get("generateName") or "<unnamed>")
    ns = meta.get("namespace")
    return f"{body.get('kind') or 'object'} {ns}/{name}" if ns else f"{body.get('kind') or 'object'} {name}"


@dataclasses.dataclass
class Run:
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

    def cluster_scoped_namespace(self, obj: RenderedObject, body: Mapping[str, Any], kind: str) -> None:
        """A warning that `kind` is cluster-scoped, so the namespace `body` sets is dropped."""
        self.add(
            obj,
            body,
            ("metadata", "namespace"),
            "k8s-metadata",
            f"{kind} is cluster-scoped: the API server drops the namespace",
            Severity.WARNING,
        )

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
