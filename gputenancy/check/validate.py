"""Rendered objects vs what the cluster would accept, offline and as strict as the cluster.

Kueue objects are checked against the CRD schemas of a platform-configured directory (structural
schema as JSON Schema with unknown fields rejected, list-type uniqueness, CEL `x-kubernetes-validations`
evaluated on the defaulted object), built-in kinds against the strict OpenAPI-derived schemas that the
kubernetes-validate package bundles, and both against the admission rules of `gputenancy.check.webhook.webhooks`.
Findings point back to inputs through each object's provenance (`RenderedObject.origin_for`).
"""

from __future__ import annotations

import dataclasses
import functools
import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from gputenancy.check.checkrun import Inexact, Run, exact_copy, mapping, plain
from gputenancy.check.kubernetes import crds
from gputenancy.check.kubernetes.crdcheck import check_kueue
from gputenancy.check.kubernetes.k8sschemas import k8s_dirs, k8s_filename, k8s_validator
from gputenancy.check.kubernetes.metadata import check_metadata
from gputenancy.check.webhook import webhooks
from gputenancy.common.findings import Finding, Origin, Severity
from gputenancy.common.objects import RenderedObject

PARTIAL_ANNOTATION = "gputenancy.io/partial"
DRA_MIN_K8S = (1, 34)
_SKIPPED_GROUPS = frozenset({"argoproj.io"})
_CLUSTER_SCOPED = frozenset({("", "Namespace"), (webhooks.RESOURCE, "DeviceClass")})
_VERSION_RE = re.compile(r"v?(\d+)\.(\d+)(?:\.(\d+))?")


@dataclasses.dataclass(frozen=True)
class ValidationReport:
    """Findings plus what was used and what was not checked.

    `schema_dirs_used` names the Kueue CRD directory and the kubernetes-validate schema set applied;
    `skipped` holds human notes about checks that could not run.
    """

    findings: tuple[Finding, ...]
    schema_dirs_used: tuple[str, ...]
    skipped: tuple[str, ...]


def _parse_version(text: str) -> tuple[int, int] | None:
    m = _VERSION_RE.fullmatch(text.strip())
    return (int(m.group(1)), int(m.group(2))) if m else None


def _builtin(
    run: Run,
    obj: RenderedObject,
    body: dict[str, Any],
    schema_dir: str,
    k8s: tuple[int, int],
    api_version: str,
    group: str,
    kind: str,
) -> None:
    meta = mapping(body.get("metadata"))
    annotations = mapping(meta.get("annotations"))
    partial = annotations.get(PARTIAL_ANNOTATION) == "true"
    validator = k8s_validator(schema_dir, k8s_filename(api_version, kind), partial)
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
        run.cluster_scoped_namespace(obj, body, kind)


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
    elif not crds.load(crd_dir.resolve()):
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
    dirs = k8s_dirs()
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
    run = Run()
    run.findings.extend(setup.findings)
    directory, k8s, schema_dir = setup.directory, setup.k8s, setup.schema_dir
    if setup.unsupported_k8s:
        dra = [o for o in objects if str(o.body.get("apiVersion", "")).startswith(f"{webhooks.RESOURCE}/")]
        where = (dra or list(objects))[0].origin if objects else Origin("")
        run.findings.append(where.finding("k8s-version-unsupported", setup.unsupported_k8s))

    for obj in objects:
        try:
            body, exact = exact_copy(obj.body), True
        except Inexact:
            body, exact = plain(obj.body), False
        api_version, kind = body.get("apiVersion"), body.get("kind")
        if not isinstance(api_version, str) or not isinstance(kind, str) or not api_version or not kind:
            run.add(obj, body, (), "k8s-schema", "apiVersion and kind are required")
            continue
        group, _, version = api_version.rpartition("/")
        if group in _SKIPPED_GROUPS:
            continue
        check_metadata(run, obj, body, group, kind)
        crd_applied = False
        if group == webhooks.KUEUE:
            body, crd_applied = check_kueue(run, obj, body, directory, schema_dir, version, kind, exact)
        elif schema_dir is not None and k8s is not None:
            _builtin(run, obj, body, schema_dir, k8s, api_version, group, kind)
        for rule in webhooks.rules_for(api_version, kind, kueue_version):
            if rule.also_in_crd and crd_applied:
                continue
            for problem in rule.check(body):
                run.add(obj, body, problem.path, rule.id, problem.message, problem.severity)
    return ValidationReport(tuple(sorted(set(run.findings))), setup.used, setup.skipped)
