"""A Kueue object against its CRD: served version, structural defaulting, the compiled JSON Schema,
then CEL rules and list-type uniqueness at every node the object has."""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from gputenancy.check.checkrun import Run
from gputenancy.check.kubernetes import crds, crdschema, k8sschemas
from gputenancy.check.kubernetes.crdschema import CEL_ERRORS, CelRule, Node
from gputenancy.check.webhook import webhooks
from gputenancy.common.findings import Severity
from gputenancy.common.objects import FieldPath, RenderedObject


def apply_defaults(value: Any, node: Node) -> None:
    """Structural defaulting as the API server does it before validation."""
    if isinstance(value, dict):
        for key, default in node.defaults.items():
            if key not in value:
                value[key] = copy.deepcopy(default)
        for key, child in node.properties.items():
            if key in value:
                apply_defaults(value[key], child)
        if node.values is not None:
            for item in value.values():
                apply_defaults(item, node.values)
    elif isinstance(value, list) and node.items is not None:
        for item in value:
            apply_defaults(item, node.items)


def _list_key(item: Any, node: Node) -> Any:
    """What makes `item` a duplicate: two items clash exactly when their `_list_text` is the same."""
    if node.list_type == "map" and isinstance(item, Mapping):
        fields = tuple([item.get(k) for k in node.map_keys])
        if all(type(f) is str or f is None for f in fields):
            return fields
    elif node.list_type == "set" and type(item) is str:
        return (item,)
    return _list_text(item, node)


def _list_text(item: Any, node: Node) -> str:
    if node.list_type == "map" and isinstance(item, Mapping):
        return json.dumps({k: item.get(k) for k in node.map_keys}, sort_keys=True)
    return json.dumps(item, sort_keys=True)


def walk(
    run: Run,
    obj: RenderedObject,
    body: Mapping[str, Any],
    value: Any,
    node: Node,
    path: FieldPath,
    quiet_errors: bool,
    exact: bool,
) -> None:
    """CEL rules and list-type uniqueness at every node the object has, array items and map values too.

    `exact`: the body is made of exactly dicts, lists and JSON scalars (see `CelRule.execute`)."""
    for rule in node.rules:
        if rule.transition:
            continue
        if rule.program is None:
            _unsupported(run, obj, body, path, rule, rule.compile_error)
            continue
        try:
            result = rule.execute(rule.program, value, exact)
        except CEL_ERRORS as exc:
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
                walk(run, obj, body, item, node.items, (*path, i), quiet_errors, exact)
    elif isinstance(value, dict | Mapping):
        for key, child in node.properties.items():
            if key in value:
                walk(run, obj, body, value[key], child, (*path, key), quiet_errors, exact)
        if node.values is not None:
            for key, item in value.items():
                walk(run, obj, body, item, node.values, (*path, key), quiet_errors, exact)


def _unsupported(
    run: Run, obj: RenderedObject, body: Mapping[str, Any], path: FieldPath, rule: CelRule, detail: str
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


def check_kueue(
    run: Run,
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
        meta_validator = k8sschemas.k8s_validator(meta_dir, "ObjectMeta", False)
        if meta_validator is not None:
            run.schema_errors(obj, body, meta_validator.iter_errors(body["metadata"]), "k8s", ("metadata",))
    if crd_dir is None:
        return body, False
    crd = crds.load(crd_dir).get((webhooks.KUEUE, kind))
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
        run.cluster_scoped_namespace(obj, body, kind)
    compiled = crdschema.compiled(crd_dir, webhooks.KUEUE, kind, version)
    # `body` is this run's own plain copy: defaults go straight into it.
    if compiled.plan is not None:
        apply_defaults(body, compiled.plan)
    errors = run.schema_errors(obj, body, compiled.validator.iter_errors(body), "crd")
    if compiled.plan is not None:
        walk(run, obj, body, body, compiled.plan, (), errors > 0, exact)
    return body, True
