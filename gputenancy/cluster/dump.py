"""A dump of a cluster's objects: what `kubectl get ... -o yaml` prints (a v1 `List`, Lists nested in it)
or a stream of YAML documents, each a Kubernetes object.

A dump is untrusted input. Each document is read with the inputs' hardened reader (no aliases, no tags,
bounded depth, unique keys, UTF-8 only), with a size limit of its own (`MAX_DUMP_BYTES`: a whole cluster,
status included, is far larger than a tenant file); every problem is a finding at the file and line
(rule `dump-read`), all of them in one run. Object names are checked as the API server checks them, so a
name read from a dump can be trusted as a Kubernetes name (never as a path on its own).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import yaml

from gputenancy.common import names
from gputenancy.common.findings import Finding, Origin, PipelineError, Severity
from gputenancy.inputs.document import Document
from gputenancy.inputs.source import load_text

RULE = "dump-read"
MAX_DUMP_BYTES = 256 * 1024 * 1024
"""Largest dump read, in bytes (256 MiB): a 5,000-tenant cluster with its status is a few tens of MiB."""
MAX_OBJECTS = 1_000_000
CONFIG_MAP = ("kueue-system", "kueue-manager-config")
POLICY_KINDS: tuple[str, ...] = (
    "ResourceFlavor",
    "Cohort",
    "ClusterQueue",
    "LocalQueue",
    "WorkloadPriorityClass",
    "AdmissionCheck",
    "Topology",
    "DeviceClass",
    "ResourceClaimTemplate",
)
"""The kinds of a cluster's queue policy, which the pipeline renders, `import` adopts and `status`
compares (in the order Kueue's objects depend on each other)."""
CONFIG_KEY = "controller_manager_config.yaml"

_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@dataclasses.dataclass(frozen=True)
class LiveObject:
    """One object of a dump, as the server returned it."""

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
        return Origin(self.path, self.line, 1 if self.line else 0)

    def __repr__(self) -> str:
        where = f"{self.namespace}/{self.name}" if self.namespace else self.name
        return f"LiveObject({self.kind} {where} at {self.path}:{self.line})"


@dataclasses.dataclass(frozen=True)
class Dump:
    path: str
    objects: tuple[LiveObject, ...]
    command: str = ""

    def of_kind(self, *kinds: str) -> list[LiveObject]:
        wanted = set(kinds)
        return [o for o in self.objects if o.kind in wanted]

    def get(self, kind: str, name: str, namespace: str = "") -> LiveObject | None:
        for o in self.objects:
            if o.kind == kind and o.name == name and o.namespace == namespace:
                return o
        return None

    def kueue_config_map(self) -> LiveObject | None:
        return self.get("ConfigMap", CONFIG_MAP[1], CONFIG_MAP[0])

    def kueue_config(self) -> Mapping[str, Any] | None:
        """The Configuration the manager's ConfigMap holds (None when the dump has no such ConfigMap);
        a Configuration that is not a YAML mapping raises PipelineError at the ConfigMap."""
        cm = self.kueue_config_map()
        if cm is None:
            return None
        data = cm.body.get("data")
        text = data.get(CONFIG_KEY) if isinstance(data, Mapping) else None
        if not isinstance(text, str):
            raise PipelineError(
                [
                    cm.origin.finding(
                        RULE, f"ConfigMap {CONFIG_MAP[0]}/{CONFIG_MAP[1]} has no data.{CONFIG_KEY}"
                    )
                ]
            )
        doc = _read(text.encode("utf-8"), f"{self.path} (ConfigMap {CONFIG_MAP[1]}, {CONFIG_KEY})", 0)
        if not isinstance(doc.data, Mapping):
            raise PipelineError([cm.origin.finding(RULE, f"data.{CONFIG_KEY} is not a YAML mapping")])
        return doc.data


def read_dump(path: Path, *, shown: str | None = None) -> Dump:
    """Read a dump file; raise PipelineError with every finding (file:line) when it is not one."""
    display = shown if shown is not None else str(path)
    where = Origin(display)
    try:
        if not path.is_file():
            raise PipelineError([where.finding(RULE, "no such file (or not a regular file)")])
        size = path.stat().st_size
        if size > MAX_DUMP_BYTES:
            raise PipelineError(
                [where.finding(RULE, f"file is {size} bytes; the largest dump read is {MAX_DUMP_BYTES}")]
            )
        data = path.read_bytes()
    except OSError as exc:
        raise PipelineError([where.finding(RULE, f"cannot read: {exc.strerror or exc}")]) from None
    return read_text(data, display)


def read_text(data: bytes, shown: str) -> Dump:
    """`read_dump` on bytes already read."""
    command = _command(data)
    findings: list[Finding] = []
    objects: list[LiveObject] = []
    if data.lstrip()[:1] == b"{":
        for doc in _json_documents(data, shown, findings):
            objects.extend(_objects(doc, 0, findings, ()))
        return _done(shown, objects, findings, command)
    starts = _document_starts(data, shown)
    for index, (start, end, first_line) in enumerate(starts):
        chunk = data[start:end]
        if not chunk.strip() or all(
            not ln.strip() or ln.lstrip().startswith(b"#") or ln.strip() in (b"---", b"...")
            for ln in chunk.splitlines()
        ):
            continue
        try:
            doc = _read(chunk, shown, first_line)
        except PipelineError as exc:
            findings.extend(exc.findings)
            continue
        if doc.data is None:
            continue
        objects.extend(_objects(doc, first_line, findings, (index,)))
    return _done(shown, objects, findings, command)


def _done(shown: str, objects: list[LiveObject], findings: list[Finding], command: str) -> Dump:
    if not objects and not findings:
        findings.append(Origin(shown).finding(RULE, "holds no Kubernetes objects (an empty List or file)"))
    findings.extend(_duplicates(objects))
    if findings:
        raise PipelineError(findings)
    return Dump(shown, tuple(objects), command)


def _json_documents(data: bytes, shown: str, findings: list[Finding]) -> list[Document]:
    """What `kubectl get -o json` prints: JSON values back to back (one per kubectl run). JSON has no
    aliases or tags; it is read by the standard library's C scanner, many times faster than YAML,
    without a line for each object (findings name the file)."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        findings.append(Origin(shown).finding(RULE, f"not UTF-8 text: {exc.reason} at byte {exc.start}"))
        return []
    decoder = json.JSONDecoder()
    out: list[Document] = []
    at = 0
    while True:
        while at < len(text) and (text[at] in " \t\r\n" or text.startswith("---", at)):
            at += 3 if text.startswith("---", at) else 1  # the documented line's separator
        if at >= len(text):
            return out
        try:
            value, at = decoder.raw_decode(text, at)
        except json.JSONDecodeError as exc:
            findings.append(
                Finding(shown, exc.lineno, exc.colno, Severity.ERROR, RULE, f"not JSON: {exc.msg}")
            )
            return out
        except RecursionError:
            findings.append(Origin(shown).finding(RULE, "JSON nested too deep"))
            return out
        out.append(Document(shown, value, {}))


def _command(data: bytes) -> str:
    first = data.split(b"\n", 1)[0].decode("utf-8", "replace").strip()
    return first.lstrip("#").strip() if first.startswith("#") else ""


def _document_starts(data: bytes, shown: str) -> list[tuple[int, int, int]]:
    """(start byte, end byte, line offset) of each YAML document; the whole file when it is one document
    or cannot be split (the per-document reader then says what is wrong)."""
    if b"\n---" not in data and not data.startswith(b"---"):
        return [(0, len(data), 0)]
    text = data.decode("utf-8", "replace")
    try:
        events = list(yaml.parse(text, Loader=_LOADER))
    except yaml.YAMLError:
        return [(0, len(data), 0)]
    bounds: list[tuple[int, int]] = []
    for ev in events:
        if isinstance(ev, yaml.DocumentStartEvent) and ev.start_mark is not None:
            bounds.append((ev.start_mark.line, -1))
    lines = data.split(b"\n")
    offsets = [0]
    for ln in lines:
        offsets.append(offsets[-1] + len(ln) + 1)
    out: list[tuple[int, int, int]] = []
    for i, (first, _) in enumerate(bounds):
        last = bounds[i + 1][0] if i + 1 < len(bounds) else len(lines)
        out.append((offsets[first], min(offsets[last], len(data)), first))
    return out or [(0, len(data), 0)]


def _read(chunk: bytes, shown: str, first_line: int) -> Document:
    try:
        return load_text(chunk, shown, max_bytes=MAX_DUMP_BYTES)
    except PipelineError as exc:
        raise PipelineError([_shift(f, first_line) for f in exc.findings]) from None


def _shift(f: Finding, lines: int) -> Finding:
    rule = f.rule if f.rule != "source-empty" else RULE
    return dataclasses.replace(f, line=f.line + lines if f.line else f.line, rule=rule)


def _line(doc: Document, first_line: int, path: tuple[str | int, ...]) -> int:
    mark = doc.marks.get(path)
    return mark[0] + first_line if mark else 0


def _objects(
    doc: Document, first_line: int, findings: list[Finding], _at: tuple[int, ...]
) -> Iterator[LiveObject]:
    stack: list[tuple[Any, tuple[str | int, ...]]] = [(doc.data, ())]
    out: list[LiveObject] = []
    while stack:
        value, path = stack.pop()
        where = Origin(doc.path, _line(doc, first_line, path), 1)
        if not isinstance(value, Mapping):
            findings.append(where.finding(RULE, "a document or List item that is not a Kubernetes object"))
            continue
        kind = value.get("kind")
        if isinstance(kind, str) and kind.endswith("List") and isinstance(value.get("items"), list):
            items = value["items"]
            stack.extend((item, (*path, "items", i)) for i, item in reversed(list(enumerate(items))))
            continue
        obj = _object(value, doc.path, where, findings)
        if obj is not None:
            out.append(obj)
        if len(out) > MAX_OBJECTS:
            findings.append(where.finding(RULE, f"more than {MAX_OBJECTS} objects"))
            break
    return iter(out)


def _object(
    value: Mapping[str, Any], shown: str, where: Origin, findings: list[Finding]
) -> LiveObject | None:
    api_version, kind, meta = value.get("apiVersion"), value.get("kind"), value.get("metadata")
    if not isinstance(api_version, str) or not isinstance(kind, str) or not api_version or not kind:
        findings.append(where.finding(RULE, "not a Kubernetes object: apiVersion and kind are required"))
        return None
    if not isinstance(meta, Mapping) or not isinstance(meta.get("name"), str):
        findings.append(where.finding(RULE, f"{kind} without metadata.name: not an object the server stores"))
        return None
    name = meta["name"]
    namespace = meta.get("namespace") or ""
    if not isinstance(namespace, str):
        findings.append(where.finding(RULE, f"{kind} {name!r}: metadata.namespace is not a string"))
        return None
    errors = (names.dns1123_label_errors if kind == "Namespace" else names.dns1123_subdomain_errors)(name)
    if not errors and namespace:
        errors = names.dns1123_label_errors(namespace)
    if errors:
        problem = "; ".join(errors)
        findings.append(where.finding(RULE, f"{kind} {name!r}: not a name the API server accepts: {problem}"))
        return None
    return LiveObject(api_version, kind, namespace, name, value, shown, where.line)


def _duplicates(objects: list[LiveObject]) -> list[Finding]:
    seen: dict[tuple[str, str, str, str], LiveObject] = {}
    out = []
    for o in objects:
        k = (o.group, *o.key)
        first = seen.setdefault(k, o)
        if first is not o:
            out.append(
                o.origin.finding(
                    RULE,
                    f"{o.kind} {o.namespace + '/' if o.namespace else ''}{o.name} appears twice "
                    f"(first at line {first.line}): a dump of one cluster holds each object once",
                )
            )
    return out
