"""Job manifests -> workloads: what a user would `kubectl apply`, read as Kueue's job integrations read it.

Each file may hold several YAML documents (and v1 `List`s). Every document is read with the inputs' hardened
reader (no aliases, no tags, bounded depth, unique keys), so every finding names the file, line and column
(rule `admit-input`); a document that is not a Kubernetes object, or a kind Kueue has no integration for, is
a finding too, never a traceback.

A workload has pod sets as Kueue makes them (pkg/controller/jobs/*): a batch Job one (`main`, parallelism
capped by completions), a JobSet one per replicated job (replicas x the job's pods), a PyTorchJob one per
replica type (lowercased), a RayCluster its head and each worker group, a RayJob the cluster it creates
and, in K8sJobMode (the default), its submitter pod (`submitterPodTemplate`, else KubeRay's default one:
cpu 500m, memory 200Mi), a TrainJob its `trainer` nodes
(`numNodes` x `resourcesPerNode`; the runtime's other pods are not read), a plain Pod one, and a Deployment
one workload per pod (the pod integration).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from gputenancy.common.findings import Finding, Origin, PipelineError
from gputenancy.inputs.document import Document
from gputenancy.inputs.source import load_text

RULE = "admit-input"
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
MAX_MANIFEST_BYTES = 16 * 1024 * 1024
_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

Path_ = tuple[str | int, ...]

# (apiVersion group, kind) -> the integration name in the Configuration's integrations.frameworks
FRAMEWORKS: Mapping[tuple[str, str], str] = {
    ("batch", "Job"): "batch/job",
    ("jobset.x-k8s.io", "JobSet"): "jobset.x-k8s.io/jobset",
    ("kubeflow.org", "PyTorchJob"): "kubeflow.org/pytorchjob",
    ("trainer.kubeflow.org", "TrainJob"): "trainer.kubeflow.org/trainjob",
    ("ray.io", "RayJob"): "ray.io/rayjob",
    ("ray.io", "RayCluster"): "ray.io/raycluster",
    ("", "Pod"): "pod",
    ("apps", "Deployment"): "deployment",
}


# The RayJob submitter pod Kueue charges when the job gives none (pkg/controller/jobs/rayjob, KubeRay's default)
DEFAULT_SUBMITTER: Mapping[str, Any] = {
    "containers": [
        {
            "name": "ray-job-submitter",
            "resources": {
                "limits": {"cpu": "1", "memory": "1Gi"},
                "requests": {"cpu": "500m", "memory": "200Mi"},
            },
        }
    ]
}


@dataclasses.dataclass(frozen=True)
class PodSet:
    """One pod set: `count` pods of the pod spec at `path` of the document."""

    name: str
    count: int
    spec: Mapping[str, Any]
    path: Path_
    annotations: Mapping[str, str] = dataclasses.field(default_factory=dict)  # the pod template's


@dataclasses.dataclass(frozen=True)
class Workload:
    """One job as Kueue makes a Workload of it."""

    api_version: str
    kind: str
    name: str
    namespace: str
    queue: str  # "" when the job carries no queue label
    pod_sets: tuple[PodSet, ...]
    doc: Document
    base: Path_  # where the object starts in the document
    framework: str
    per_pod: bool = False  # the pod integration: each pod is a workload of its own

    def origin(self, *path: str | int) -> Origin:
        return self.doc.origin(*self.base, *path)

    def key_origin(self, *path: str | int) -> Origin:
        return self.doc.key_origin(*self.base, *path)

    @property
    def title(self) -> str:
        return f"{self.kind} {self.namespace}/{self.name}"


def read(paths: Sequence[Path], *, shown: Mapping[Path, str] | None = None) -> list[Workload]:
    """Every workload of every file, in order; PipelineError with every finding of every file."""
    findings: list[Finding] = []
    out: list[Workload] = []
    for path in paths:
        display = (shown or {}).get(path, str(path))
        try:
            data = path.read_bytes() if path.is_file() else None
        except OSError as exc:
            findings.append(Origin(display).finding(RULE, f"cannot read: {exc.strerror or exc}"))
            continue
        if data is None:
            findings.append(Origin(display).finding(RULE, "no such file (or not a regular file)"))
            continue
        if len(data) > MAX_MANIFEST_BYTES:
            findings.append(
                Origin(display).finding(
                    RULE, f"file is {len(data)} bytes; the largest read is {MAX_MANIFEST_BYTES}"
                )
            )
            continue
        out.extend(read_text(data, display, findings))
    if findings:
        raise PipelineError(findings)
    return out


def read_text(data: bytes, shown: str, findings: list[Finding]) -> Iterator[Workload]:
    """The workloads of one file's bytes; problems are appended to `findings`."""
    found = False
    for start, end, first_line in _documents(data):
        chunk = data[start:end]
        if all(
            not ln.strip() or ln.lstrip().startswith(b"#") or ln.strip() in (b"---", b"...")
            for ln in chunk.splitlines()
        ):
            continue
        try:
            doc = _shifted(load_text(chunk, shown, max_bytes=MAX_MANIFEST_BYTES), first_line)
        except PipelineError as exc:
            findings.extend(
                dataclasses.replace(f, line=f.line + first_line if f.line else 0) for f in exc.findings
            )
            continue
        if doc.data is None:
            continue
        for base, value in _items(doc.data, ()):
            found = True
            workload = _workload(doc, base, value, findings)
            if workload is not None:
                yield workload
    if not found and not any(f.path == shown for f in findings):
        findings.append(Origin(shown).finding(RULE, "holds no Kubernetes objects"))


def _documents(data: bytes) -> list[tuple[int, int, int]]:
    """(start byte, end byte, lines before it) of each YAML document."""
    if b"\n---" not in data and not data.startswith(b"---"):
        return [(0, len(data), 0)]
    try:
        events = list(yaml.parse(data.decode("utf-8", "replace"), Loader=_LOADER))
    except yaml.YAMLError:
        return [(0, len(data), 0)]
    firsts = [
        ev.start_mark.line for ev in events if isinstance(ev, yaml.DocumentStartEvent) and ev.start_mark
    ]
    lines = data.split(b"\n")
    offsets = [0]
    for ln in lines:
        offsets.append(offsets[-1] + len(ln) + 1)
    out = []
    for i, first in enumerate(firsts):
        last = firsts[i + 1] if i + 1 < len(firsts) else len(lines)
        out.append((offsets[first], min(offsets[last], len(data)), first))
    return out or [(0, len(data), 0)]


def _shifted(doc: Document, lines: int) -> Document:
    if not lines:
        return doc
    marks = {k: (ln + lines, col) for k, (ln, col) in doc.marks.items()}
    keys = {k: (ln + lines, col) for k, (ln, col) in doc.key_marks.items()}
    findings = tuple(dataclasses.replace(f, line=f.line + lines if f.line else 0) for f in doc.findings)
    return Document(doc.path, doc.data, marks, keys, findings)


def _items(value: Any, path: Path_) -> Iterator[tuple[Path_, Any]]:
    if (
        isinstance(value, dict)
        and str(value.get("kind", "")).endswith("List")
        and isinstance(value.get("items"), list)
    ):
        for i, item in enumerate(value["items"]):
            yield from _items(item, (*path, "items", i))
        return
    yield path, value


def _int(value: Any, default: int) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else default


def _map(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, dict) else {}


def _workload(doc: Document, base: Path_, value: Any, findings: list[Finding]) -> Workload | None:
    where = doc.origin(*base)
    if (
        not isinstance(value, dict)
        or not isinstance(value.get("apiVersion"), str)
        or not isinstance(value.get("kind"), str)
    ):
        findings.append(where.finding(RULE, "not a Kubernetes object: apiVersion and kind are required"))
        return None
    api_version, kind = value["apiVersion"], value["kind"]
    meta = _map(value.get("metadata"))
    name = meta.get("name") or meta.get("generateName")
    if not isinstance(name, str) or not name:
        findings.append(where.finding(RULE, f"{kind} without metadata.name: not an object kubectl can apply"))
        return None
    group = api_version.rpartition("/")[0]
    framework = FRAMEWORKS.get((group, kind))
    if framework is None:
        known = ", ".join(sorted({k for _, k in FRAMEWORKS}))
        findings.append(
            doc.origin(*base, "kind").finding(
                RULE, f"{kind} ({api_version}) is not a job kind Kueue admits here (one of: {known})"
            )
        )
        return None
    namespace = meta.get("namespace") if isinstance(meta.get("namespace"), str) else "default"
    labels = _map(meta.get("labels"))
    queue = labels.get(QUEUE_LABEL)
    spec = _map(value.get("spec"))
    pod_sets = [_annotated(ps, value) for ps in _pod_sets(kind, spec)]
    if not pod_sets:
        findings.append(doc.origin(*base, "spec").finding(RULE, f"{kind} {name!r} has no pod template"))
        return None
    return Workload(
        api_version,
        kind,
        name,
        str(namespace),
        queue if isinstance(queue, str) else "",
        tuple(pod_sets),
        doc,
        base,
        framework,
        per_pod=kind == "Deployment",
    )


def _annotated(ps: PodSet, value: Mapping[str, Any]) -> PodSet:
    """The pod set with its pod template's annotations (the object's own for a Pod), where Kueue reads a
    pod set's topology request (kueue.x-k8s.io/podset-required-topology and the like)."""
    if not ps.path or ps.path[-1] != "spec":
        return ps
    node: Any = value
    for key in ps.path[:-1]:
        if isinstance(key, int):
            node = node[key] if isinstance(node, list) and 0 <= key < len(node) else None
        else:
            node = node.get(key) if isinstance(node, dict) else None
    annotations = _map(_map(_map(node).get("metadata")).get("annotations"))
    found = {str(k): str(v) for k, v in annotations.items()}
    return dataclasses.replace(ps, annotations=found) if found else ps


def _job_pods(spec: Mapping[str, Any]) -> int:
    pods = _int(spec.get("parallelism"), 1)
    completions = spec.get("completions")
    return (
        min(pods, completions) if isinstance(completions, int) and not isinstance(completions, bool) else pods
    )


def _template(spec: Mapping[str, Any], at: Path_) -> tuple[Mapping[str, Any], Path_]:
    return _map(_map(spec.get("template")).get("spec")), (*at, "template", "spec")


def _pod_sets(kind: str, spec: Mapping[str, Any]) -> Iterator[PodSet]:
    if kind == "Job":
        pod, at = _template(spec, ("spec",))
        yield PodSet("main", _job_pods(spec), pod, at)
    elif kind == "Pod":
        yield PodSet("main", 1, spec, ("spec",))
    elif kind == "Deployment":
        pod, at = _template(spec, ("spec",))
        yield PodSet("main", _int(spec.get("replicas"), 1), pod, at)
    elif kind == "JobSet":
        for i, rj in enumerate(spec.get("replicatedJobs") or []):
            rj = _map(rj)
            job = _map(_map(rj.get("template")).get("spec"))
            pod, pod_at = _template(job, ("spec", "replicatedJobs", i, "template", "spec"))
            yield PodSet(str(rj.get("name", i)), _int(rj.get("replicas"), 1) * _job_pods(job), pod, pod_at)
    elif kind == "PyTorchJob":
        for role, rs in _map(spec.get("pytorchReplicaSpecs")).items():
            pod, at = _template(_map(rs), ("spec", "pytorchReplicaSpecs", role))
            yield PodSet(role.lower(), _int(_map(rs).get("replicas"), 1), pod, at)
    elif kind in ("RayCluster", "RayJob"):
        prefix: Path_ = ("spec",) if kind == "RayCluster" else ("spec", "rayClusterSpec")
        cluster = spec if kind == "RayCluster" else _map(spec.get("rayClusterSpec"))
        pod, at = _template(_map(cluster.get("headGroupSpec")), (*prefix, "headGroupSpec"))
        yield PodSet("head", 1, pod, at)
        for i, group in enumerate(cluster.get("workerGroupSpecs") or []):
            group = _map(group)
            pod, at = _template(group, (*prefix, "workerGroupSpecs", i))
            pods = _int(group.get("replicas"), 1) * _int(group.get("numOfHosts"), 1)
            yield PodSet(str(group.get("groupName", f"workers-{i}")), pods, pod, at)
        if kind == "RayJob" and spec.get("submissionMode", "K8sJobMode") == "K8sJobMode":
            submitter = spec.get("submitterPodTemplate")
            if isinstance(submitter, dict):
                yield PodSet(
                    "submitter", 1, _map(submitter.get("spec")), ("spec", "submitterPodTemplate", "spec")
                )
            else:
                yield PodSet("submitter", 1, DEFAULT_SUBMITTER, ("spec",))
    elif kind == "TrainJob":
        trainer = _map(spec.get("trainer"))
        per_node = _map(trainer.get("resourcesPerNode"))
        container = {"name": "node", "resources": per_node}
        yield PodSet(
            "node", _int(trainer.get("numNodes"), 1), {"containers": [container]}, ("spec", "trainer")
        )
