"""Loading a repository: base/, overlays/ and tenants/ read, schema-checked and built into the `Model`.

The JSON Schemas in `gputenancy/schemas/` decide the shape of each file (unknown keys are errors,
`gputenancy.inputs.schemacheck`); the records (`gputenancy.inputs.records`) are built by
`gputenancy.inputs.builders`. The records are importable from here too.
"""

from __future__ import annotations

from pathlib import Path

from gputenancy.caching import cachekey
from gputenancy.caching.cache import Cache, Entries
from gputenancy.common.findings import Finding, PipelineError, Severity
from gputenancy.inputs import fleet
from gputenancy.inputs.builders import build_cluster, build_platform, build_tenant
from gputenancy.inputs.files import misplaced
from gputenancy.inputs.records import (
    Amount,
    ArgoCD,
    Capacity,
    ClaimTemplate,
    Cluster,
    Cohort,
    Destination,
    DeviceClassEntry,
    Flavor,
    FlavorBudget,
    Model,
    Platform,
    Tenant,
)
from gputenancy.inputs.schemacheck import check_schema
from gputenancy.inputs.source import CACHE_ENTRY, Document, discover, load


def _load_checked(
    path: Path,
    root: Path,
    schema_name: str,
    kind: str,
    findings: list[Finding],
    cache: Entries | None,
    real_root: Path | None = None,
    real_dir: tuple[Path, Path] | None = None,
) -> Document | None:
    try:
        doc = load(path, root, cache=cache, real_root=real_root, real_dir=real_dir)
    except PipelineError as exc:
        findings.extend(exc.findings)
        return None
    findings.extend(doc.findings)
    if not isinstance(doc.data, dict):
        findings.append(
            doc.origin().finding(f"{schema_name}-schema", f"expected a {kind} mapping at the top level")
        )
        return None
    problems = check_schema(doc, schema_name, f"{schema_name}-schema")
    findings.extend(problems)
    return None if problems else doc


def load_model(
    root: Path, *, cluster: str | None = None, cache: Cache | None = None
) -> tuple[Model, list[Finding]]:
    """Read base/, overlays/ and tenants/ under root. Returns the model of everything that could be read
    and every finding; raises PipelineError only when base/ or the overlays cannot be read at all.

    With `cache`, files are parsed only when their path, bytes or the software changed
    (`source.load`, the entries kept in sixteen packs by key, `cache.Packs`); schema checks and
    records are made on every call."""
    findings: list[Finding] = []
    # sixteen packs by key: a run that changes one file rewrites the one or two packs of its entries
    pack = cache.packs(CACHE_ENTRY, cachekey.source_pack()) if cache is not None else None
    try:
        platform = _load_platform(root, findings, pack)
        clusters = _load_clusters(root, cluster, findings, pack)
        tenants = _load_tenants(root, findings, pack)
    finally:
        if pack is not None:
            pack.save()
    platform_broken = any(
        f.severity is Severity.ERROR and not f.path.startswith("tenants/") for f in findings
    )
    if platform is None or platform_broken:
        raise PipelineError(
            findings
            or [
                Finding(
                    "base/platform.yaml",
                    0,
                    0,
                    Severity.ERROR,
                    "platform-missing",
                    "base/platform.yaml is required",
                )
            ]
        )
    return fleet.derive(Model(root, platform, clusters, tuple(tenants))), findings


def _load_platform(root: Path, findings: list[Finding], cache: Entries | None) -> Platform | None:
    path = root / "base" / "platform.yaml"
    if not path.is_file():
        findings.append(
            Finding(
                "base/platform.yaml",
                0,
                0,
                Severity.ERROR,
                "platform-missing",
                "base/platform.yaml is required",
            )
        )
        return None
    doc = _load_checked(path, root, "platform", "Platform", findings, cache)
    if doc is None:
        return None
    cfg_path = root / "base" / doc.data["kueueConfig"]
    if not cfg_path.is_file():
        findings.append(
            doc.origin("kueueConfig").finding(
                "platform-kueue-config", f"{cfg_path.relative_to(root)} does not exist"
            )
        )
        return None
    try:
        cfg = load(cfg_path, root, cache=cache)
    except PipelineError as exc:
        findings.extend(exc.findings)
        return None
    if not isinstance(cfg.data, dict):
        findings.append(
            cfg.origin().finding("kueue-config-version", "the base Kueue Configuration must be a mapping")
        )
        return None
    try:
        return build_platform(doc, cfg)
    except PipelineError as exc:
        findings.extend(exc.findings)
        return None


def _load_clusters(
    root: Path, only: str | None, findings: list[Finding], cache: Entries | None
) -> dict[str, Cluster]:
    overlays = root / "overlays"
    clusters: dict[str, Cluster] = {}
    if not overlays.is_dir():
        findings.append(Finding("overlays", 0, 0, Severity.ERROR, "cluster-missing", "overlays/ is required"))
        return clusters
    names = sorted(p.name for p in overlays.iterdir() if p.is_dir() and not p.name.startswith("."))
    if only is not None and only not in names:
        findings.append(
            Finding(
                "overlays",
                0,
                0,
                Severity.ERROR,
                "cluster-unknown",
                f"no cluster {only!r}; known: {', '.join(names)}",
            )
        )
    for name in names:
        path = overlays / name / "cluster.yaml"
        if not path.is_file():
            findings.append(
                Finding(
                    f"overlays/{name}",
                    0,
                    0,
                    Severity.ERROR,
                    "cluster-missing",
                    f"overlays/{name}/cluster.yaml is required",
                )
            )
            continue
        doc = _load_checked(path, root, "cluster", "Cluster", findings, cache)
        if doc is None:
            continue
        try:
            clusters[name] = build_cluster(doc, name)
        except PipelineError as exc:
            findings.extend(exc.findings)
    return clusters


def _load_tenants(root: Path, findings: list[Finding], cache: Entries | None) -> list[Tenant]:
    paths, problems = discover(root, "tenants")
    findings.extend(problems + misplaced(root, "tenants"))
    tenants = []
    directory = root / "tenants"
    try:
        real_root: Path | None = root.resolve()  # once for all tenant files
        real_dir: tuple[Path, Path] | None = (directory, directory.resolve())
    except (OSError, RuntimeError):
        real_root = real_dir = None  # each file's load reports it
    for path in paths:
        doc = _load_checked(path, root, "tenant", "Tenant", findings, cache, real_root, real_dir)
        if doc is None:
            continue
        try:
            tenants.append(build_tenant(doc))
        except PipelineError as exc:
            findings.extend(exc.findings)
    return tenants


__all__ = [
    "Amount",
    "ArgoCD",
    "Capacity",
    "ClaimTemplate",
    "Cluster",
    "Cohort",
    "Destination",
    "DeviceClassEntry",
    "Flavor",
    "FlavorBudget",
    "Model",
    "Platform",
    "Tenant",
    "check_schema",
    "load_model",
]
