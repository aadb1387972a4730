"""The Git side of `status`: generated/<cluster>/ as committed in the work tree, which is what Argo CD
syncs (`python pipeline.py check` keeps it equal to what the inputs render). Objects of `_hub/` are
applied on the hub, not on the cluster; of them the Kueue install's Application is read for the
Configuration it puts in the manager's ConfigMap and the restart marker it puts on the Deployment."""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from gputenancy.assemble import output
from gputenancy.common import fastyaml
from gputenancy.common.findings import Finding, Origin, PipelineError, Severity
from gputenancy.render import kueueconfig

RULE = "status-git"
HUB = "_hub/"


@dataclasses.dataclass(frozen=True)
class GitObject:
    """One object of generated/<cluster>/: `file` as shown (generated/prod/clusterqueue/speech.yaml),
    `source` the input it was rendered from (its `gputenancy.io/source` annotation)."""

    api_version: str
    kind: str
    namespace: str
    name: str
    body: Mapping[str, Any]
    file: str
    data: bytes = b""  # the file's bytes (one object per file), for the line of a field

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.kind, self.namespace, self.name)

    @property
    def source(self) -> str:
        annotations = (self.body.get("metadata") or {}).get("annotations") or {}
        return str(annotations.get("gputenancy.io/source", ""))


@dataclasses.dataclass(frozen=True)
class GitConfig:
    """The manager Configuration Argo CD delivers (`text`, as the ConfigMap holds it) and, for an
    `install: manifests` cluster, the restart marker the Deployment's pod template carries."""

    application: str  # the file of the kueue-<cluster> Application
    install: str  # "manifests" | "helm"
    text: str
    marker: str | None  # the checksum annotation Git puts on the pod template (None: helm)

    @property
    def body(self) -> Mapping[str, Any]:
        data = fastyaml.load(self.text)
        return data if isinstance(data, Mapping) else {}

    @property
    def checksum(self) -> str:
        return checksum(self.text)


@dataclasses.dataclass(frozen=True)
class GitSide:
    cluster: str
    directory: str  # generated/<cluster>
    objects: tuple[GitObject, ...]  # what Argo CD applies to the cluster
    config: GitConfig | None
    self_heal: bool  # the cluster's Applications revert drift at once (syncPolicy.automated.selfHeal)

    def get(self, kind: str, name: str, namespace: str = "") -> GitObject | None:
        return next((o for o in self.objects if o.key == (kind, namespace, name)), None)


def checksum(text: str) -> str:
    """What `gputenancy.io/kueue-config-checksum` holds: sha256 of the Configuration text."""
    return hashlib.sha256(text.encode()).hexdigest()


def read(root: Path, cluster: str) -> GitSide:
    shown = f"{output.GENERATED}/{cluster}"
    directory = root / output.GENERATED / cluster
    if not directory.is_dir():
        raise PipelineError(
            [
                Finding(
                    shown,
                    0,
                    0,
                    Severity.ERROR,
                    RULE,
                    f"no {shown}/ to compare with: run `python pipeline.py render` and commit it",
                )
            ]
        )
    objects: list[GitObject] = []
    hub: list[GitObject] = []
    problems: list[Finding] = []
    for rel, data in output.read_tree(directory).items():
        if not rel.endswith((".yaml", ".yml")):
            continue
        where = f"{shown}/{rel}"
        try:
            docs = fastyaml.load_all(data.decode("utf-8"))
        except (UnicodeDecodeError, yaml.YAMLError) as exc:
            problems.append(Origin(where).finding(RULE, f"not readable YAML: {exc}"))
            continue
        for body in docs:
            meta = body.get("metadata") if isinstance(body, dict) else None
            if not isinstance(meta, dict) or not body.get("kind") or not meta.get("name"):
                continue
            obj = GitObject(
                str(body.get("apiVersion", "")),
                str(body["kind"]),
                str(meta.get("namespace", "") or ""),
                str(meta["name"]),
                body,
                where,
                data if len(docs) == 1 else b"",
            )
            (hub if rel.startswith(HUB) else objects).append(obj)
    if problems:
        raise PipelineError(problems)
    apps = {o.name: o for o in hub if o.kind == "Application"}
    install = apps.get(f"kueue-{cluster}")
    return GitSide(
        cluster,
        shown,
        tuple(objects),
        _config(install) if install is not None else None,
        any(_self_heals(a.body) for a in apps.values()),
    )


def _self_heals(app: Mapping[str, Any]) -> bool:
    automated = ((app.get("spec") or {}).get("syncPolicy") or {}).get("automated")
    return isinstance(automated, Mapping) and bool(automated.get("selfHeal"))


def _config(app: GitObject) -> GitConfig | None:
    source = (app.body.get("spec") or {}).get("source") or {}
    helm = source.get("helm") if isinstance(source, Mapping) else None
    if isinstance(helm, Mapping):
        values = helm.get("valuesObject") or {}
        text = (values.get("managerConfig") or {}).get("controllerManagerConfigYaml")
        return GitConfig(app.file, "helm", text, None) if isinstance(text, str) else None
    text, marker = None, None
    for entry in (
        ((source.get("kustomize") or {}).get("patches") or []) if isinstance(source, Mapping) else []
    ):
        try:
            patch = yaml.safe_load(str((entry or {}).get("patch", "")))
        except yaml.YAMLError:
            continue
        if not isinstance(patch, Mapping):
            continue
        if patch.get("kind") == "ConfigMap":
            found = (patch.get("data") or {}).get(kueueconfig.CONFIG_KEY)
            text = found if isinstance(found, str) else text
        if patch.get("kind") == "Deployment":
            template = ((patch.get("spec") or {}).get("template") or {}).get("metadata") or {}
            marker = (template.get("annotations") or {}).get(kueueconfig.CHECKSUM_ANNOTATION, marker)
    return GitConfig(app.file, "manifests", text, marker) if text is not None else None
