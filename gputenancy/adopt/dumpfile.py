"""Reading a dump of a cluster (`kubectl get ... -A -o yaml`): a v1 List, nested Lists, or a stream of
documents, as untrusted input. The records follow gputenancy/cluster's (`LiveObject`, `Dump`), so the
shared reader can take this module's place.

Refused, each a finding `file:line:col: error: ... (dump-read)`: what is not YAML or is cut short,
aliases and anchors, documents nested deeper than `MAX_DEPTH` or files larger than `MAX_BYTES`,
a document that is not a Kubernetes object, a name that is not a valid Kubernetes name, the same
object twice."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import yaml

from gputenancy.common.findings import Finding, Origin, PipelineError

MAX_BYTES = 64 * 1024 * 1024
MAX_DEPTH = 64
RULE = "dump-read"
_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@dataclasses.dataclass(frozen=True)
class LiveObject:
    api_version: str
    kind: str
    namespace: str
    name: str
    body: Mapping[str, Any]
    path: str
    line: int

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.kind, self.namespace, self.name)

    @property
    def group(self) -> str:
        return self.api_version.rpartition("/")[0]

    @property
    def origin(self) -> Origin:
        return Origin(self.path, self.line, 1)

    def shown(self) -> str:
        return f"{self.kind} {self.namespace}/{self.name}" if self.namespace else f"{self.kind} {self.name}"


@dataclasses.dataclass(frozen=True)
class Dump:
    path: str
    objects: tuple[LiveObject, ...]
    command: str

    def of_kind(self, *kinds: str) -> list[LiveObject]:
        return [o for o in self.objects if o.kind in kinds]

    def get(self, kind: str, name: str, namespace: str = "") -> LiveObject | None:
        for o in self.objects:
            if o.key == (kind, namespace, name):
                return o
        return None

    def kueue_config(self) -> Mapping[str, Any] | None:
        """The manager Configuration in ConfigMap kueue-system/kueue-manager-config, parsed."""
        cm = self.get("ConfigMap", "kueue-manager-config", "kueue-system")
        if cm is None:
            return None
        text = (cm.body.get("data") or {}).get("controller_manager_config.yaml")
        if not isinstance(text, str):
            return None
        config = _parse(text.encode(), f"{cm.path} (ConfigMap kueue-system/kueue-manager-config)", cm.line)
        body = _plain(config[0][1]) if config else None
        return body if isinstance(body, dict) else None


def valid_name(name: object) -> bool:
    """A Kubernetes object name (DNS subdomain, at most 253 characters): the only names that may become
    parts of a path."""
    return isinstance(name, str) and 0 < len(name) <= 253 and _SUBDOMAIN.fullmatch(name) is not None


def read_dump(path: Path, *, shown: str | None = None) -> Dump:
    where = shown or str(path)
    try:
        with path.open("rb") as f:
            data = f.read(MAX_BYTES + 1)
    except OSError as exc:
        raise PipelineError(
            [Origin(where).finding(RULE, f"cannot read the dump: {exc.strerror or exc}")]
        ) from None
    return read_bytes(data, where)


def read_bytes(data: bytes, where: str) -> Dump:
    if len(data) > MAX_BYTES:
        raise PipelineError([Origin(where).finding(RULE, f"the dump is larger than {MAX_BYTES >> 20} MiB")])
    command = ""
    first = data.split(b"\n", 1)[0].decode("utf-8", "replace").strip()
    if first.startswith("# kubectl"):
        command = first[2:]
    documents = _parse(data, where, 0)
    findings: list[Finding] = []
    objects: list[LiveObject] = []
    seen: dict[tuple[str, str, str], int] = {}
    for line, doc in documents:
        if doc is None:
            continue
        for item_line, item in _flatten(doc, line, where, findings):
            obj = _object(item, item_line, where, findings)
            if obj is None:
                continue
            if obj.key in seen:
                findings.append(
                    obj.origin.finding(RULE, f"{obj.shown()} appears twice (first on line {seen[obj.key]})")
                )
                continue
            seen[obj.key] = obj.line
            objects.append(obj)
    if findings:
        raise PipelineError(findings)
    return Dump(where, tuple(objects), command)


def _flatten(doc: Any, line: int, where: str, findings: list[Finding]) -> Iterator[tuple[int, Any]]:
    if isinstance(doc, _Lined) and doc.value.get("kind") == "List" and "items" in doc.value:
        items = doc.value.get("items")
        if not isinstance(items, list):
            findings.append(Origin(where, line, 1).finding(RULE, "`items` of a List must be a list"))
            return
        for item in items:
            yield from _flatten(item, item.line if isinstance(item, _Lined) else line, where, findings)
        return
    yield line, doc


def _object(item: Any, line: int, where: str, findings: list[Finding]) -> LiveObject | None:
    here = Origin(where, line, 1)
    body = _plain(item)
    if not isinstance(body, dict):
        findings.append(
            here.finding(RULE, "not a Kubernetes object (expected a mapping with apiVersion, kind, metadata)")
        )
        return None
    api, kind, meta = body.get("apiVersion"), body.get("kind"), body.get("metadata")
    if not isinstance(api, str) or not isinstance(kind, str) or not isinstance(meta, dict):
        findings.append(
            here.finding(RULE, "not a Kubernetes object: apiVersion, kind and metadata are required")
        )
        return None
    name, namespace = meta.get("name"), meta.get("namespace", "")
    if not valid_name(name):
        findings.append(here.finding(RULE, f"{kind} name {str(name)[:80]!r} is not a valid Kubernetes name"))
        return None
    if namespace != "" and not valid_name(namespace):
        findings.append(
            here.finding(RULE, f"{kind} {name}: namespace {str(namespace)[:80]!r} is not a valid name")
        )
        return None
    return LiveObject(api, kind, str(namespace), str(name), body, where, line)


class _Lined:
    """A mapping as read, with the line it starts on (items of a List keep their own line)."""

    __slots__ = ("line", "value")

    def __init__(self, value: dict[Any, Any], line: int) -> None:
        self.value, self.line = value, line


def _plain(value: Any) -> Any:
    if isinstance(value, _Lined):
        return {k: _plain(v) for k, v in value.value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def _parse(data: bytes, where: str, offset: int) -> list[tuple[int, Any]]:
    """Documents with the line each starts on; mappings as `_Lined` (only the top two levels need
    their lines, so deeper ones are plain)."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise PipelineError([Origin(where).finding(RULE, f"not UTF-8 text (byte {exc.start})")]) from None
    out: list[tuple[int, Any]] = []
    try:
        for node in yaml.compose_all(text, Loader=_Loader):
            if node is None:
                continue
            _guard(node, where, offset)
            out.append((node.start_mark.line + 1 + offset, _build(node, 0)))
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 + offset if mark is not None else 0
        col = mark.column + 1 if mark is not None else 0
        problem = exc.problem or "not YAML"
        if "end of the stream" in problem or "found unexpected end" in problem:
            problem += " (the file looks cut short)"
        raise PipelineError([Finding(where, line, col, *_err(f"not a YAML dump: {problem}"))]) from None
    except yaml.YAMLError as exc:
        raise PipelineError([Origin(where).finding(RULE, f"not a YAML dump: {exc}")]) from None
    return out


def _err(message: str) -> tuple[Any, str, str]:
    from gputenancy.common.findings import Severity

    return (Severity.ERROR, RULE, message)


def _guard(root: yaml.Node, where: str, offset: int) -> None:
    """Aliases, anchors and nesting beyond MAX_DEPTH are refused (the inputs' reader refuses them too)."""
    stack: list[tuple[yaml.Node, int]] = [(root, 0)]
    seen: set[int] = set()
    while stack:
        node, depth = stack.pop()
        if id(node) in seen:
            mark = node.start_mark
            raise PipelineError(
                [
                    Finding(
                        where,
                        mark.line + 1 + offset,
                        mark.column + 1,
                        *_err("aliases are not accepted in a dump"),
                    )
                ]
            )
        seen.add(id(node))
        if depth > MAX_DEPTH:
            mark = node.start_mark
            raise PipelineError(
                [
                    Finding(
                        where,
                        mark.line + 1 + offset,
                        mark.column + 1,
                        *_err(f"nested deeper than {MAX_DEPTH} levels"),
                    )
                ]
            )
        if isinstance(node, yaml.MappingNode):
            for k, v in node.value:
                stack.append((k, depth + 1))
                stack.append((v, depth + 1))
        elif isinstance(node, yaml.SequenceNode):
            stack.extend((v, depth + 1) for v in node.value)


def _build(node: yaml.Node, depth: int) -> Any:
    if isinstance(node, yaml.MappingNode) and depth < 4:
        value = {}
        for k, v in node.value:
            value[yaml.constructor.SafeConstructor().construct_object(k, deep=True)] = _build(v, depth + 1)
        return _Lined(value, node.start_mark.line + 1)
    if isinstance(node, yaml.SequenceNode) and depth < 4:
        return [_build(v, depth + 1) for v in node.value]
    return yaml.constructor.SafeConstructor().construct_object(node, deep=True)
