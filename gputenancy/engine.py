"""The pipeline in memory: load -> rules -> render -> kustomize -> validate -> trees. No writes here."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path

from gputenancy import build, output, rules
from gputenancy.findings import Finding, PipelineError, Severity
from gputenancy.objects import RenderedObject
from gputenancy.render import render_platform, render_tenant
from gputenancy.spec import Model, load_model


@dataclasses.dataclass(frozen=True)
class ClusterResult:
    name: str
    objects: tuple[RenderedObject, ...]
    tree: Mapping[str, bytes]


@dataclasses.dataclass(frozen=True)
class Result:
    model: Model
    clusters: Mapping[str, ClusterResult]
    findings: tuple[Finding, ...]
    notes: tuple[str, ...]

    @property
    def failed(self) -> bool:
        return any(f.severity is Severity.ERROR for f in self.findings)


def crd_dir_for(schemas: Path | None, kueue_version: str) -> Path | None:
    """<schemas>/kueue/<version>/crds, or <schemas>/<version>/crds, or None."""
    if schemas is None:
        return None
    for candidate in (schemas / "kueue" / kueue_version / "crds", schemas / kueue_version / "crds"):
        if candidate.is_dir():
            return candidate
    return None


def check_only(root: Path, cluster: str | None = None) -> tuple[Model, list[Finding]]:
    """Load and run the model rules; raises PipelineError on load errors."""
    model, findings = load_model(root, cluster=cluster)
    return model, sorted(set(findings) | set(rules.check(model)))


def run(
    root: Path, *, cluster: str | None = None, schemas: Path | None = None, kustomize: bool = True
) -> Result:
    """Everything up to the trees to write. Raises PipelineError when the inputs cannot be read."""
    from gputenancy import configcheck, validate

    model, findings = check_only(root, cluster)
    notes: list[str] = []
    results: dict[str, ClusterResult] = {}
    if any(f.severity is Severity.ERROR for f in findings):
        return Result(model, results, tuple(sorted(set(findings))), tuple(notes))
    catalog = rules.effective_catalog(model)
    for name, c in sorted(model.clusters.items()):
        if cluster is not None and name != cluster:
            continue
        platform, config, cfg_findings = render_platform(model, c, catalog)
        findings.extend(cfg_findings)
        gate_flag = (
            c.install == "helm"
            and c.helm is not None
            and bool((c.helm.values.get("controllerManager") or {}).get("featureGates"))
        )
        findings.extend(
            configcheck.check_configuration(
                config.body, c.kueue_version, origin_of=config.origin_of, feature_gates_flag=gate_flag
            )
        )
        if c.install == "helm" and c.helm is not None and "managerConfig" in c.helm.values:
            findings.append(
                c.document.origin("kueue", "helm", "values", "managerConfig").finding(
                    "cluster-install",
                    "kueue.helm.values.managerConfig is written by the pipeline from base/ and kueue.config; set the Configuration there",
                )
            )
        tenant_objects = [o for t in model.tenants_on(name) for o in render_tenant(t, c, catalog)]
        try:
            built = (
                build.build(root, name, platform, tenant_objects)
                if kustomize
                else [*platform, *tenant_objects]
            )
        except PipelineError as exc:
            findings.extend(exc.findings)
            continue
        report = validate.validate_objects(
            built,
            kueue_version=c.kueue_version,
            kubernetes_version=c.kubernetes_version,
            crd_dir=crd_dir_for(schemas, c.kueue_version),
        )
        findings.extend(report.findings)
        notes.extend(f"{name}: {s}" for s in report.skipped)
        if c.overcommit:
            notes.append(f"{name}: overcommit is allowed by overlays/{name}/cluster.yaml")
        try:
            tree = output.tree_of(built)
        except PipelineError as exc:
            findings.extend(exc.findings)
            continue
        results[name] = ClusterResult(name, tuple(built), tree)
    return Result(model, results, tuple(sorted(set(findings))), tuple(notes))
