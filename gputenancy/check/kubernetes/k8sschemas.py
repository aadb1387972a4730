"""Built-in kinds: validators from the strict OpenAPI-derived schemas that kubernetes-validate bundles."""

from __future__ import annotations

import functools
import importlib.resources
import importlib.util
import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import jsonschema_rs

_OBJECT_META = (
    "https://kubernetes.io/api/_definitions.json#/$defs/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
)


@functools.cache
def _schema_root() -> Any:
    """The schemas kubernetes-validate bundles, found without importing it: its import pulls in
    jsonschema and more (about 0.1 s), which nothing else here needs."""
    spec = importlib.util.find_spec("kubernetes_validate")
    locations = list(spec.submodule_search_locations or ()) if spec is not None else []
    if len(locations) == 1 and (Path(locations[0]) / "kubernetes-json-schema").is_dir():
        return Path(locations[0]) / "kubernetes-json-schema"
    return importlib.resources.files("kubernetes_validate") / "kubernetes-json-schema"


@functools.cache
def k8s_dirs() -> Mapping[tuple[int, int], str]:
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
def k8s_validator(version_dir: str, filename: str, relaxed: bool) -> jsonschema_rs.Validator | None:
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
def k8s_filename(api_version: str, kind: str) -> str:
    """kubernetes-validate's naming: `<kind>-<first label of group>-<version>.json`."""
    group_version = re.sub(r"^([^./]*)(?:\.[^/]*)?/", r"\1-", api_version)
    return f"{kind.lower()}-{group_version}.json"
