"""The checks of one cluster, as the engine calls them: the merged Kueue Configuration and the Helm values
the pipeline owns before the build (`configuration`), the built objects after it (`Checker`, one tenant's
objects at a time), and the notes `validate_objects` gives once per call kept once per run
(`once_per_run`)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from gputenancy.check import validate
from gputenancy.check.config import configcheck, helmgates
from gputenancy.common.findings import Finding, PipelineError
from gputenancy.common.objects import RenderedObject
from gputenancy.inputs.spec import Cluster
from gputenancy.render.kueueconfig import KueueConfig
from gputenancy.versions import releases

# validate_objects reports these once per call; tenants are validated one call each, so keep the first.
_ONCE_PER_RUN = ("crd-cel-unsupported", "k8s-version-unsupported")


def crd_dir_for(schemas: Path | None, kueue_version: str) -> Path | None:
    """<schemas>/kueue/<version>/crds, or <schemas>/<version>/crds, or None."""
    return releases.crd_dir(schemas, kueue_version)


def schemas_missing(c: Cluster, schemas: Path | None, root: Path | None = None) -> list[Finding]:
    """A schemas directory without the cluster's Kueue version: an error naming it and the fetch
    command that works (with `--update` when schemas.lock of `root` has no entry for the version)."""
    if schemas is None or crd_dir_for(schemas, c.kueue_version) is not None:
        return []
    try:
        locked = root is None or c.kueue_version in releases.read_lock(root).versions
    except PipelineError:
        locked = False
    message = releases.missing_message(schemas, c.kueue_version, locked)
    return [c.document.origin("kueue", "version").finding("schemas-missing", message)]


def validation_ran(c: Cluster, crd_dir: Path | None, skipped: Sequence[str]) -> list[str]:
    """The note that says CRD validation ran for the cluster (when it did; `skipped` says when not)."""
    if crd_dir is None or any(s.startswith("Kueue CRD schema validation skipped") for s in skipped):
        return []
    return [f"{c.name}: Kueue CRD schema and CEL validation ran (Kueue {c.kueue_version}, {crd_dir})"]


def configuration(c: Cluster, config: KueueConfig) -> list[Finding]:
    """What Kueue `c.kueue_version` would refuse in the merged Configuration, and a Helm
    `managerConfig` set by hand (the pipeline writes it). A feature-gate conflict with the chart's
    values is reported at those values in the overlay (`helmgates`)."""
    gate_flag = helmgates.chart_passes_feature_gates(c)
    findings = helmgates.at_the_overlay(
        c,
        configcheck.check_configuration(
            config.body, c.kueue_version, origin_of=config.origin_of, feature_gates_flag=gate_flag
        ),
        config.origin_of,
    )
    findings += helmgates.chart_gate_problems(c)
    if c.install == "helm" and c.helm is not None and "managerConfig" in c.helm.values:
        findings.append(
            c.document.origin("kueue", "helm", "values", "managerConfig").finding(
                "cluster-install",
                "kueue.helm.values.managerConfig is written by the pipeline from base/ and "
                "kueue.config; set the Configuration there",
            )
        )
    return findings


class Checker:
    """Validation of built objects against one cluster's versions and CRDs (`crd_dir`, or none)."""

    def __init__(self, c: Cluster, crd_dir: Path | None) -> None:
        self.cluster, self.crd_dir = c, crd_dir

    def __call__(self, objects: Sequence[RenderedObject]) -> validate.ValidationReport:
        return validate.validate_objects(
            objects,
            kueue_version=self.cluster.kueue_version,
            kubernetes_version=self.cluster.kubernetes_version,
            crd_dir=self.crd_dir,
        )


def once_per_run(findings: Sequence[Finding]) -> list[Finding]:
    """`findings` with the repeats of the notes reported once per validation call left out."""
    seen: set[tuple[str, str]] = set()
    out = []
    for f in findings:
        if f.rule in _ONCE_PER_RUN:
            kind = f.message.split(" ", 1)[0] if f.rule == "crd-cel-unsupported" else ""
            what = (kind, f.message[f.message.find("CEL rule") :] if kind else f.rule)
            if what in seen:
                continue
            seen.add(what)
        out.append(f)
    return out
