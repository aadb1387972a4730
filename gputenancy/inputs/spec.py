"""Input records: Tenant, Platform and Cluster built from the YAML sources (schema, defaults, versions).

The JSON Schemas in `gputenancy/schemas/` decide the shape of each file (unknown keys are errors);
this module turns schema errors into findings at the right line and builds immutable records.
"""

from __future__ import annotations

import dataclasses
import functools
import json
from collections.abc import Iterable, Mapping
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

import jsonschema_rs

from gputenancy.cache import Cache, Entries, digest, software
from gputenancy.findings import Finding, Origin, PipelineError, Severity
from gputenancy.inputs import quantity, schemahints
from gputenancy.inputs.source import CACHE_ENTRY, Document, discover, load

if TYPE_CHECKING:
    import jsonschema

API_VERSION = "gputenancy.io/v1"
DEFAULT_KUEUE_NAMESPACE = "kueue-system"
CORE_RESOURCES = ("cpu", "memory", "ephemeral-storage", "pods")


@dataclasses.dataclass(frozen=True)
class Amount:
    nominal: quantity.Quantity
    borrowing: quantity.Quantity | None
    lending: quantity.Quantity | None
    origin: Origin
    field_origins: Mapping[str, Origin] = dataclasses.field(default_factory=dict)

    def origin_of(self, field: str) -> Origin:
        return self.field_origins.get(field, self.origin)


@dataclasses.dataclass(frozen=True)
class FlavorBudget:
    """Quota on one flavor. `devices` is keyed by DeviceClass, `resources` by resource name."""

    flavor: str
    devices: tuple[tuple[str, Amount], ...]
    resources: tuple[tuple[str, Amount], ...]
    origin: Origin


@dataclasses.dataclass(frozen=True)
class ClaimTemplate:
    name: str
    device_class: str
    count: int
    selectors: tuple[str, ...]
    namespaces: tuple[str, ...] | None
    clusters: tuple[str, ...] | None
    origin: Origin
    class_origin: Origin
    selector_origins: tuple[Origin, ...] = ()


@dataclasses.dataclass(frozen=True)
class Tenant:
    name: str
    path: str
    owners: tuple[str, ...]
    state: str
    clusters: tuple[str, ...] | None
    namespaces: tuple[tuple[str, Origin], ...]
    local_queue: str
    cohort: str | None
    fair_sharing_weight: quantity.Quantity | None
    preemption: str
    queueing_strategy: str
    default_budget: tuple[FlavorBudget, ...] | None
    cluster_budgets: Mapping[str, tuple[FlavorBudget, ...]]
    claim_templates: tuple[ClaimTemplate, ...]
    device_classes: tuple[DeviceClassEntry, ...]
    origin: Origin
    cohort_origin: Origin
    cluster_origins: tuple[Origin, ...] = ()  # of each entry of `clusters`

    def budget_for(self, cluster: str) -> tuple[FlavorBudget, ...] | None:
        return self.cluster_budgets.get(cluster, self.default_budget)

    def all_budgets(self) -> list[tuple[str, tuple[FlavorBudget, ...]]]:
        """Every budget list the file declares: ("*", default) and (cluster, override)."""
        out = [("*", self.default_budget)] if self.default_budget else []
        return out + list(self.cluster_budgets.items())

    def placed_on(self, cluster: str) -> bool:
        if self.clusters is not None:
            return cluster in self.clusters
        return self.budget_for(cluster) is not None


@dataclasses.dataclass(frozen=True)
class DeviceClassEntry:
    name: str
    resource: str
    selectors: tuple[str, ...]
    origin: Origin

    @property
    def rendered(self) -> bool:
        """Catalog classes with selectors are rendered by the pipeline; others come with the driver."""
        return bool(self.selectors)


@dataclasses.dataclass(frozen=True)
class Flavor:
    name: str
    node_labels: Mapping[str, str]
    node_taints: tuple[Mapping[str, Any], ...]
    tolerations: tuple[Mapping[str, Any], ...]
    origin: Origin


@dataclasses.dataclass(frozen=True)
class Cohort:
    name: str
    parent: str | None
    weight: quantity.Quantity | None
    origin: Origin


@dataclasses.dataclass(frozen=True)
class ArgoCD:
    """Where Argo CD reads the generated tree (`argocd:` in base/platform.yaml)."""

    repo_url: str
    target_revision: str
    project: str
    namespace: str
    path: str
    origin: Origin


@dataclasses.dataclass(frozen=True)
class Destination:
    """A cluster's Argo CD destination (`argocd:` in cluster.yaml): a server URL or a cluster name."""

    server: str | None
    name: str | None


@dataclasses.dataclass(frozen=True)
class Platform:
    path: str
    device_classes: Mapping[str, DeviceClassEntry]
    flavors: Mapping[str, Flavor]
    cohorts: Mapping[str, Cohort]
    kueue_config: Document
    owners: tuple[str, ...] = ()
    argocd: ArgoCD | None = None


@dataclasses.dataclass(frozen=True)
class Capacity:
    flavor: str
    devices: tuple[tuple[str, quantity.Quantity, Origin], ...]
    resources: tuple[tuple[str, quantity.Quantity, Origin], ...]
    origin: Origin


@dataclasses.dataclass(frozen=True)
class HelmInstall:
    repo_url: str
    chart: str
    release_name: str
    project: str
    argocd_namespace: str
    destination_server: str
    values: Mapping[str, Any]


@dataclasses.dataclass(frozen=True)
class Cluster:
    name: str
    path: str
    directory: str
    kubernetes_version: str
    kueue_version: str
    install: str
    kueue_namespace: str
    helm: HelmInstall | None
    feature_gates: Mapping[str, bool]
    config_overrides: Mapping[str, Any]
    capacity: tuple[Capacity, ...]
    overcommit: bool
    document: Document
    origin: Origin
    destination: Destination | None = None


@dataclasses.dataclass(frozen=True)
class Model:
    root: Path
    platform: Platform
    clusters: Mapping[str, Cluster]
    tenants: tuple[Tenant, ...]

    def tenants_on(self, cluster: str) -> list[Tenant]:
        return [t for t in self.tenants if t.placed_on(cluster)]


# ---------------------------------------------------------------- schema checking


@functools.cache
def schema(name: str) -> dict[str, Any]:
    text = resources.files("gputenancy").joinpath("schemas", f"{name}.schema.json").read_text("utf-8")
    loaded: dict[str, Any] = json.loads(text)
    return loaded


@functools.cache
def _validator(name: str) -> jsonschema.Draft202012Validator:
    """The pure-Python validator, which words the errors of an invalid file (imported only then)."""
    import jsonschema

    return jsonschema.Draft202012Validator(schema(name))


_PATTERNS = {
    "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$": "a DNS label is lower-case letters, digits and '-', starting and ending "
    "with a letter or digit, at most 63 characters",
    "^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$": "a DNS subdomain is DNS labels joined by '.'",
    "^@[A-Za-z0-9][A-Za-z0-9-]*(/[A-Za-z0-9][A-Za-z0-9._-]*)?$": "owners are GitHub @user or @org/team",
}


def _describe(error: jsonschema.ValidationError) -> str:
    if error.validator == "oneOf" and isinstance(error.instance, dict | list | bool):
        return f"expected a quantity or a mapping with nominal/borrowingLimit/lendingLimit, got {error.instance!r}"
    if error.validator == "oneOf":
        return f"{error.instance!r} is not a valid quantity or amount"
    if error.validator == "pattern":
        what = _PATTERNS.get(str(error.validator_value), f"must match {error.validator_value}")
        return f"{error.instance!r} is not valid: {what}"
    return str(error.message)


@functools.cache
def _fast_validator(name: str) -> Any:
    return jsonschema_rs.validator_for(schema(name))


def check_schema(doc: Document, name: str, rule: str) -> list[Finding]:
    """JSON Schema errors as findings at the offending line; unknown keys named with a did-you-mean.

    A compiled jsonschema-rs validator answers first (most files are valid); the messages of an
    invalid file come from jsonschema."""
    if _fast_validator(name).is_valid(doc.data):
        return []
    findings: list[Finding] = []
    for error in _validator(name).iter_errors(doc.data):
        path = tuple(error.absolute_path)
        explained = schemahints.explain(error, doc, rule, _dotted)
        if explained is not None:
            findings.extend(explained)
            continue
        o = doc.origin(*path)
        findings.append(o.finding(rule, f"{_dotted(path)}: {_describe(error)}"))
    return findings


def _dotted(path: Iterable[str | int]) -> str:
    out = "$"
    for p in path:
        out += f"[{p}]" if isinstance(p, int) else f".{p}"
    return out


# ---------------------------------------------------------------- builders


class _Collector:
    """Accumulates findings while records are built, so one run reports everything."""

    def __init__(self) -> None:
        self.findings: list[Finding] = []

    def add(self, origin: Origin, rule: str, message: str) -> None:
        self.findings.append(origin.finding(rule, message))

    def quantity(
        self, doc: Document, path: tuple[str | int, ...], value: Any, rule: str
    ) -> quantity.Quantity:
        try:
            if isinstance(value, str) and not any(ch.isdigit() for ch in value):
                raise quantity.QuantityError(
                    f'{value!r} is not a Kubernetes quantity (no digits); write a number such as 4, "500m" or 256Gi'
                )
            q = quantity.parse(value)
        except quantity.QuantityError as exc:
            self.add(doc.origin(*path), rule, f"{_dotted(path)}: {exc}")
            return quantity.parse(0)
        if q.is_negative():
            self.add(doc.origin(*path), rule, f"{_dotted(path)}: must not be negative, got {value!r}")
        return q


def _amount(c: _Collector, doc: Document, path: tuple[str | int, ...], raw: Any, device: bool) -> Amount:
    fields = raw if isinstance(raw, dict) else {"nominal": raw}
    values: dict[str, quantity.Quantity | None] = {}
    origins: dict[str, Origin] = {}
    for key in ("nominal", "borrowingLimit", "lendingLimit"):
        if key not in fields:
            values[key] = None
            continue
        sub = (*path, key) if isinstance(raw, dict) else path
        origins[key] = doc.key_origin(*sub)
        q = c.quantity(doc, sub, fields[key], "quantity")
        if device and not q.is_integer():
            c.add(
                doc.origin(*sub),
                "quantity",
                f"{_dotted(sub)}: device counts must be whole numbers, got {fields[key]!r}",
            )
        values[key] = q
    nominal = values["nominal"]
    assert nominal is not None
    return Amount(nominal, values["borrowingLimit"], values["lendingLimit"], doc.key_origin(*path), origins)


def _budgets(
    c: _Collector, doc: Document, path: tuple[str | int, ...], raw: list[Any]
) -> tuple[FlavorBudget, ...]:
    out = []
    for i, item in enumerate(raw):
        p = (*path, i)
        devices = tuple(
            (name, _amount(c, doc, (*p, "devices", name), amt, True))
            for name, amt in item.get("devices", {}).items()
        )
        res = tuple(
            (name, _amount(c, doc, (*p, "resources", name), amt, False))
            for name, amt in item.get("resources", {}).items()
        )
        if not devices and not res:
            c.add(doc.origin(*p), "budget-empty", f"{_dotted(p)}: a flavor budget needs devices or resources")
        out.append(FlavorBudget(item["flavor"], devices, res, doc.origin(*p, "flavor")))
    return tuple(out)


def build_tenant(doc: Document) -> Tenant:
    c = _Collector()
    d = doc.data
    stem = Path(doc.path).stem
    if d["name"] != stem:
        c.add(
            doc.origin("name"),
            "tenant-name-file",
            f"tenant name {d['name']!r} must equal the file name {stem!r} (one file per tenant; renaming a "
            "tenant means renaming its file)",
        )
    budgets = d["budgets"]
    default = _budgets(c, doc, ("budgets", "default"), budgets["default"]) if "default" in budgets else None
    per_cluster = {
        name: _budgets(c, doc, ("budgets", "clusters", name), raw)
        for name, raw in budgets.get("clusters", {}).items()
    }
    claims = []
    for i, raw in enumerate(d.get("claimTemplates", [])):
        claims.append(
            ClaimTemplate(
                name=raw["name"],
                device_class=raw["deviceClass"],
                count=int(raw.get("count", 1)),
                selectors=tuple(raw.get("selectors", ())),
                namespaces=tuple(raw["namespaces"]) if "namespaces" in raw else None,
                clusters=tuple(raw["clusters"]) if "clusters" in raw else None,
                origin=doc.origin("claimTemplates", i),
                class_origin=doc.origin("claimTemplates", i, "deviceClass"),
                selector_origins=tuple(
                    doc.origin("claimTemplates", i, "selectors", j)
                    for j in range(len(raw.get("selectors", ())))
                ),
            )
        )
    weight = None
    if "fairSharingWeight" in d:
        weight = c.quantity(doc, ("fairSharingWeight",), d["fairSharingWeight"], "quantity")
    tenant = Tenant(
        name=d["name"],
        path=doc.path,
        owners=tuple(d["owners"]),
        state=d.get("state", "active"),
        clusters=tuple(d["clusters"]) if "clusters" in d else None,
        namespaces=tuple((ns, doc.origin("namespaces", i)) for i, ns in enumerate(d["namespaces"])),
        local_queue=d.get("localQueueName", d["name"]),
        cohort=d.get("cohort"),
        fair_sharing_weight=weight,
        preemption=d.get("preemption", "none"),
        queueing_strategy=d.get("queueingStrategy", "BestEffortFIFO"),
        default_budget=default,
        cluster_budgets=per_cluster,
        claim_templates=tuple(claims),
        device_classes=tuple(
            DeviceClassEntry(
                raw["name"], raw["resource"], tuple(raw.get("selectors", ())), doc.origin("deviceClasses", i)
            )
            for i, raw in enumerate(d.get("deviceClasses", []))
        ),
        origin=doc.origin("name"),
        cohort_origin=doc.origin("cohort"),
        cluster_origins=tuple(doc.origin("clusters", i) for i in range(len(d.get("clusters", ())))),
    )
    if c.findings:
        raise PipelineError(c.findings)
    return tenant


def build_platform(doc: Document, kueue_config: Document) -> Platform:
    c = _Collector()
    d = doc.data
    classes: dict[str, DeviceClassEntry] = {}
    for i, raw in enumerate(d["deviceClasses"]):
        entry = DeviceClassEntry(
            raw["name"], raw["resource"], tuple(raw.get("selectors", ())), doc.origin("deviceClasses", i)
        )
        if entry.name in classes:
            first = classes[entry.name].origin
            c.add(
                entry.origin,
                "catalog-duplicate",
                f"device class {entry.name!r} is already listed at line {first.line}",
            )
        classes.setdefault(entry.name, entry)
    flavors: dict[str, Flavor] = {}
    for i, raw in enumerate(d["flavors"]):
        fl = Flavor(
            raw["name"],
            dict(raw.get("nodeLabels", {})),
            tuple(raw.get("nodeTaints", ())),
            tuple(raw.get("tolerations", ())),
            doc.origin("flavors", i),
        )
        if fl.name in flavors:
            c.add(
                fl.origin,
                "catalog-duplicate",
                f"flavor {fl.name!r} is already listed at line {flavors[fl.name].origin.line}",
            )
        flavors.setdefault(fl.name, fl)
    cohorts: dict[str, Cohort] = {}
    for i, raw in enumerate(d.get("cohorts", [])):
        w = None
        if "fairSharingWeight" in raw:
            w = c.quantity(doc, ("cohorts", i, "fairSharingWeight"), raw["fairSharingWeight"], "quantity")
        co = Cohort(raw["name"], raw.get("parent"), w, doc.origin("cohorts", i))
        if co.name in cohorts:
            c.add(
                co.origin,
                "catalog-duplicate",
                f"cohort {co.name!r} is already listed at line {cohorts[co.name].origin.line}",
            )
        cohorts.setdefault(co.name, co)
    for co in cohorts.values():
        if co.parent is not None and co.parent not in cohorts:
            c.add(
                co.origin,
                "cohort-unknown",
                f"cohort {co.name!r} has parent {co.parent!r}, which is not defined",
            )
    if c.findings:
        raise PipelineError(c.findings)
    argocd = None
    if "argocd" in d:
        a = d["argocd"]
        argocd = ArgoCD(
            repo_url=a["repoURL"],
            target_revision=a.get("targetRevision", "HEAD"),
            project=a.get("project", "default"),
            namespace=a.get("namespace", "argocd"),
            path=a.get("path", "generated").strip("/"),
            origin=doc.key_origin("argocd"),
        )
    return Platform(doc.path, classes, flavors, cohorts, kueue_config, tuple(d.get("owners", ())), argocd)


def build_cluster(doc: Document, directory: str) -> Cluster:
    c = _Collector()
    d = doc.data
    if d["name"] != directory:
        c.add(
            doc.origin("name"),
            "cluster-name-dir",
            f"cluster name {d['name']!r} must equal its overlay directory {directory!r}",
        )
    kueue = d["kueue"]
    helm = None
    if kueue["install"] == "helm":
        h = kueue.get("helm", {})
        helm = HelmInstall(
            repo_url=h.get("repoURL", "registry.k8s.io/kueue/charts"),
            chart=h.get("chart", "kueue"),
            release_name=h.get("releaseName", "kueue"),
            project=h.get("project", "default"),
            argocd_namespace=h.get("argocdNamespace", "argocd"),
            destination_server=h.get("destinationServer", "https://kubernetes.default.svc"),
            values=h.get("values", {}),
        )
    elif "helm" in kueue:
        c.add(
            doc.key_origin("kueue", "helm"),
            "cluster-install",
            "kueue.helm is only used with kueue.install: helm",
        )
    capacity = []
    for i, raw in enumerate(d["capacity"]):
        devs = []
        for name, value in raw.get("devices", {}).items():
            p = ("capacity", i, "devices", name)
            q = c.quantity(doc, p, value, "quantity")
            if not q.is_integer():
                c.add(
                    doc.origin(*p),
                    "quantity",
                    f"{_dotted(p)}: device counts must be whole numbers, got {value!r}",
                )
            devs.append((name, q, doc.origin(*p)))
        res = [
            (
                name,
                c.quantity(doc, ("capacity", i, "resources", name), value, "quantity"),
                doc.origin("capacity", i, "resources", name),
            )
            for name, value in raw.get("resources", {}).items()
        ]
        capacity.append(Capacity(raw["flavor"], tuple(devs), tuple(res), doc.origin("capacity", i)))
    k8s = d["kubernetesVersion"].lstrip("v")
    minor = int(k8s.split(".")[1])
    if minor < 34:
        c.add(
            doc.origin("kubernetesVersion"),
            "k8s-version-unsupported",
            f"Kubernetes {k8s} has no resource.k8s.io/v1, which Kueue reads for DRA: 1.34 or newer is required",
        )
    if c.findings:
        raise PipelineError(c.findings)
    return Cluster(
        name=d["name"],
        path=doc.path,
        directory=directory,
        kubernetes_version=".".join(k8s.split(".")[:2]),
        kueue_version="v" + kueue["version"].lstrip("v"),
        install=kueue["install"],
        kueue_namespace=kueue.get("namespace", DEFAULT_KUEUE_NAMESPACE),
        helm=helm,
        feature_gates=dict(kueue.get("featureGates", {})),
        config_overrides=kueue.get("config", {}),
        capacity=tuple(capacity),
        overcommit=bool(d.get("overcommit", False)),
        document=doc,
        origin=doc.origin("name"),
        destination=Destination(d["argocd"].get("server"), d["argocd"].get("name"))
        if "argocd" in d
        else None,
    )


# ---------------------------------------------------------------- loading a repository


def _load_checked(
    path: Path, root: Path, schema_name: str, kind: str, findings: list[Finding], cache: Entries | None
) -> Document | None:
    try:
        doc = load(path, root, cache=cache)
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
    (`source.load`, the entries kept in one pack); schema checks and records are made on every
    call."""
    findings: list[Finding] = []
    pack = cache.pack(CACHE_ENTRY, digest(CACHE_ENTRY, software())) if cache is not None else None
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
    return Model(root, platform, clusters, tuple(tenants)), findings


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
    findings.extend(problems)
    tenants = []
    for path in paths:
        doc = _load_checked(path, root, "tenant", "Tenant", findings, cache)
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
