"""Per-kind record builders: a schema-valid tenant, platform or cluster file to its record, with defaults
applied, quantities parsed and every problem of the file collected as findings."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any, Protocol, TypeVar

from gputenancy.common.findings import Finding, Origin, PipelineError
from gputenancy.inputs import amounts, frameworks, hami, kueueinstall, multikueue, quantity, queuepolicy
from gputenancy.inputs.document import Document
from gputenancy.inputs.records import (
    DEFAULT_KUEUE_NAMESPACE,
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
    HelmInstall,
    InventoryDevice,
    Platform,
    Tenant,
    Topology,
)
from gputenancy.inputs.schemacheck import dotted
from gputenancy.versions import kueue as kueue_versions


class _Named(Protocol):
    @property
    def name(self) -> str: ...
    @property
    def origin(self) -> Origin: ...


_N = TypeVar("_N", bound=_Named)


class _Collector:
    """Accumulates findings while records are built, so one run reports everything."""

    def __init__(self) -> None:
        self.findings: list[Finding] = []

    def add(self, origin: Origin, rule: str, message: str) -> None:
        self.findings.append(origin.finding(rule, message))

    def keep_first(self, seen: dict[str, _N], record: _N, what: str) -> None:
        """Keep the first record of each name in `seen`; a later one is a `catalog-duplicate`."""
        if record.name in seen:
            self.add(
                record.origin,
                "catalog-duplicate",
                f"{what} {record.name!r} is already listed at line {seen[record.name].origin.line}",
            )
        seen.setdefault(record.name, record)

    def device_count(self, doc: Document, path: tuple[str | int, ...], raw: Any) -> None:
        """Device counts are whole numbers written plainly (`amounts.device_count_problem`)."""
        problem = _count_problem(raw) if type(raw) in _SCALARS else _count_problem.__wrapped__(raw)
        if problem is not None:
            rule, text = problem
            self.add(doc.origin(*path), rule, f"{dotted(path)}: {text}")

    def quantity(
        self, doc: Document, path: tuple[str | int, ...], value: Any, rule: str
    ) -> quantity.Quantity:
        q, problems = _judged(value) if type(value) in _SCALARS else _judged.__wrapped__(value)
        for own_rule, text in problems:
            self.add(doc.origin(*path), own_rule or rule, f"{dotted(path)}: {text}")
        return q


_SCALARS = frozenset({str, int, float, bool})
"""The values whose judgement as a quantity is remembered (hashable; kept apart by type, so `1`,
`1.0` and `True` are judged each on its own)."""


@functools.lru_cache(maxsize=4096, typed=True)
def _judged(value: Any) -> tuple[quantity.Quantity, tuple[tuple[str | None, str], ...]]:
    """`value` as a quantity, and its problems as (rule, text) with None for the caller's rule: a
    pure function of the value, remembered (a fleet writes the same few amounts thousands of times;
    a Quantity is immutable). Zero stands in for a value that does not parse."""
    try:
        if isinstance(value, str) and not any(ch.isdigit() for ch in value):
            raise quantity.QuantityError(
                f'{value!r} is not a Kubernetes quantity (no digits); write a number such as 4, "500m" or 256Gi'
            )
        q = quantity.parse(value)
    except quantity.QuantityError as exc:
        return quantity.ZERO, ((None, str(exc)),)
    problems: list[tuple[str | None, str]] = []
    if q.is_negative():
        problems.append((None, f"must not be negative, got {value!r}"))
    beyond = amounts.range_problem(value, q)
    if beyond is not None:
        problems.append(("quantity-range", beyond))
    return q, tuple(problems)


@functools.lru_cache(maxsize=4096, typed=True)
def _count_problem(raw: Any) -> tuple[str, str] | None:
    """Why `raw` is not a plain whole device count, as (rule, text); None when it is one or when it is
    not a quantity at all (reported by `_judged`). Remembered per value like `_judged`."""
    try:
        q = quantity.parse(raw)
    except quantity.QuantityError:
        return None
    if not q.is_integer():
        return "quantity", f"device counts must be whole numbers, got {raw!r}"
    problem = amounts.device_count_problem(raw)
    return ("device-count", problem) if problem is not None else None


def _amount(c: _Collector, doc: Document, path: tuple[str | int, ...], raw: Any, device: bool) -> Amount:
    if not isinstance(raw, dict):  # the common form, `gpu: 4`: the nominal amount alone, marked at its key
        origin = doc.key_origin(*path)
        q = c.quantity(doc, path, raw, "quantity")
        if device:
            c.device_count(doc, path, raw)
        return Amount(q, None, None, origin, {"nominal": origin})
    fields = raw
    values: dict[str, quantity.Quantity | None] = {}
    origins: dict[str, Origin] = {}
    for key in ("nominal", "borrowingLimit", "lendingLimit"):
        if key not in fields:
            values[key] = None
            continue
        sub = (*path, key)
        origins[key] = doc.key_origin(*sub)
        q = c.quantity(doc, sub, fields[key], "quantity")
        if device:
            c.device_count(doc, sub, fields[key])
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
        vgpu = None
        if "hami" in item:
            vgpu = hami.build_budget(
                c.add, doc, (*p, "hami"), item["hami"], lambda q, raw: _amount(c, doc, q, raw, False)
            )
        if not devices and not res and vgpu is None:
            c.add(
                doc.origin(*p),
                "budget-empty",
                f"{dotted(p)}: a flavor budget needs devices, hami or resources",
            )
        group = item.get("resourceGroup")
        out.append(
            FlavorBudget(
                item["flavor"],
                devices,
                res,
                doc.origin(*p, "flavor"),
                vgpu,
                group,
                doc.origin(*p, "resourceGroup") if group is not None else None,
            )
        )
    return tuple(out)


def _stem(shown: str) -> str:
    """`Path(shown).stem` of a shown path (POSIX, relative), without making a Path (once per tenant)."""
    name = shown.rpartition("/")[2]
    if name in ("", ".", ".."):
        return Path(shown).stem
    dot = name.rfind(".")
    return name[:dot] if 0 < dot < len(name) - 1 else name


def build_tenant(doc: Document) -> Tenant:
    c = _Collector()
    d = doc.data
    stem = _stem(doc.path)
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
                capacity=tuple(
                    (name, c.quantity(doc, ("claimTemplates", i, "capacity", name), value, "quantity"))
                    for name, value in raw.get("capacity", {}).items()
                ),
                excluded_workers=tuple(
                    (str(w), str(why), doc.origin("claimTemplates", i, "excludedWorkers", w))
                    for w, why in raw.get("excludedWorkers", {}).items()
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
        preemption=d["preemption"] if isinstance(d.get("preemption"), str) else "none",
        queueing_strategy=d.get("queueingStrategy", "BestEffortFIFO"),
        default_budget=default,
        cluster_budgets=per_cluster,
        claim_templates=tuple(claims),
        device_classes=tuple(_class_entry(doc, i, raw) for i, raw in enumerate(d.get("deviceClasses", []))),
        origin=doc.origin("name"),
        cohort_origin=doc.origin("cohort"),
        cluster_origins=tuple(doc.origin("clusters", i) for i in range(len(d.get("clusters", ())))),
        vgpu_templates=hami.build_templates(c.add, doc, d.get("vgpuTemplates", [])),
        policy=queuepolicy.build(doc, (), d, tenant=True),
        namespace_selector=dict(d["namespaceSelector"]["matchLabels"]) if "namespaceSelector" in d else None,
        namespace_labels=dict(d.get("namespaceLabels") or {}),
        selector_origin=doc.key_origin("namespaceSelector") if "namespaceSelector" in d else None,
    )
    if c.findings:
        raise PipelineError(c.findings)
    return tenant


def build_platform(doc: Document, kueue_config: Document) -> Platform:
    c = _Collector()
    d = doc.data
    classes: dict[str, DeviceClassEntry] = {}
    for i, raw in enumerate(d["deviceClasses"]):
        entry = _class_entry(doc, i, raw)
        c.keep_first(classes, entry, "device class")
    flavors: dict[str, Flavor] = {}
    for i, raw in enumerate(d["flavors"]):
        fl = Flavor(
            raw["name"],
            dict(raw.get("nodeLabels", {})),
            tuple(raw.get("nodeTaints", ())),
            tuple(raw.get("tolerations", ())),
            doc.origin("flavors", i),
        )
        c.keep_first(flavors, fl, "flavor")
    cohorts: dict[str, Cohort] = {}
    for i, raw in enumerate(d.get("cohorts", [])):
        w = None
        if "fairSharingWeight" in raw:
            w = c.quantity(doc, ("cohorts", i, "fairSharingWeight"), raw["fairSharingWeight"], "quantity")
        held = {
            name: _budgets(c, doc, ("cohorts", i, "budgets", "clusters", name), budget)
            for name, budget in (raw.get("budgets") or {}).get("clusters", {}).items()
        }
        co = Cohort(
            raw["name"],
            raw.get("parent"),
            w,
            doc.origin("cohorts", i),
            held,
            doc.origin("cohorts", i, "parent") if "parent" in raw else None,
        )
        c.keep_first(cohorts, co, "cohort")
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
            clusters=tuple(a["clusters"]) if "clusters" in a else None,
        )
    devices: dict[str, hami.HamiDevice] = {}
    for i, raw in enumerate(d.get("hami", [])):
        dev = hami.build_device(doc, i, raw)
        c.keep_first(devices, dev, "HAMi device")
    pod_requests = tuple(
        (
            name,
            c.quantity(doc, ("minimumPodRequests", name), raw, "quantity"),
            doc.origin("minimumPodRequests", name),
        )
        for name, raw in (d.get("minimumPodRequests") or {}).items()
    )
    if c.findings:
        raise PipelineError(c.findings)
    namespaces = d.get("tenantNamespaces", {})
    defaults = d.get("queueDefaults") or {}
    weight = None
    if "fairSharingWeight" in defaults:
        weight = c.quantity(
            doc, ("queueDefaults", "fairSharingWeight"), defaults["fairSharingWeight"], "quantity"
        )
    checks: dict[str, queuepolicy.AdmissionCheckDef] = {}
    for check in queuepolicy.build_checks(doc, d.get("admissionChecks", [])):
        c.keep_first(checks, check, "admission check")
    if c.findings:
        raise PipelineError(c.findings)
    return Platform(
        doc.path,
        classes,
        flavors,
        cohorts,
        kueue_config,
        tuple(d.get("owners", ())),
        argocd,
        pod_requests,
        tuple(namespaces.get("reserved", ())),
        tuple(namespaces.get("allowed", ())),
        hami=devices,
        kueue_manifests_url=d.get("kueueManifestsURL"),
        frameworks=frameworks.build(doc, d.get("frameworks")),
        queue_defaults=queuepolicy.build(doc, ("queueDefaults",), d.get("queueDefaults") or {}, tenant=False),
        admission_checks=checks,
        default_weight=weight,
    )


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
            project=h.get("project"),
            argocd_namespace=h.get("argocdNamespace"),
            destination_server=h.get("destinationServer"),
            values=h.get("values", {}),
        )
    elif "helm" in kueue:
        c.add(
            doc.key_origin("kueue", "helm"),
            "cluster-install",
            "kueue.helm is only used with kueue.install: helm",
        )
    manifests = kueueinstall.manifests_install(doc, kueue, c.add)
    capacity = []
    for i, raw in enumerate(d.get("capacity", ())):
        devs = []
        for name, value in raw.get("devices", {}).items():
            p = ("capacity", i, "devices", name)
            q = c.quantity(doc, p, value, "quantity")
            c.device_count(doc, p, value)
            devs.append((name, q, doc.origin(*p)))
        res = [
            (
                name,
                c.quantity(doc, ("capacity", i, "resources", name), value, "quantity"),
                doc.origin("capacity", i, "resources", name),
            )
            for name, value in raw.get("resources", {}).items()
        ]
        vgpu = (
            hami.build_capacity(c.add, doc, ("capacity", i, "hami"), raw["hami"]) if "hami" in raw else None
        )
        inventory = _inventory(c, doc, i, raw["inventory"]) if "inventory" in raw else None
        capacity.append(
            Capacity(
                raw["flavor"],
                tuple(devs),
                tuple(res),
                doc.origin("capacity", i),
                vgpu,
                inventory,
                raw.get("topologyName"),
                doc.origin("capacity", i, "topologyName") if "topologyName" in raw else None,
            )
        )
    k8s = d["kubernetesVersion"].lstrip("v")
    minor = int(k8s.split(".")[1])
    if minor < 34:
        c.add(
            doc.origin("kubernetesVersion"),
            "k8s-version-unsupported",
            f"Kubernetes {k8s} has no resource.k8s.io/v1, which Kueue reads for DRA "
            f"(supported: {kueue_versions.supported_kubernetes()})",
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
        manifests=manifests,
        feature_gates=dict(kueue.get("featureGates", {})),
        config_overrides=kueue.get("config", {}),
        capacity=tuple(capacity),
        overcommit=bool(d.get("overcommit", False)),
        document=doc,
        origin=doc.origin("name"),
        destination=Destination(d["argocd"].get("server"), d["argocd"].get("name"))
        if "argocd" in d
        else None,
        multikueue=multikueue.build(doc, d.get("multiKueue")),
        frameworks=frameworks.build(doc, d.get("frameworks")),
        topologies=tuple(
            Topology(
                t["name"], tuple(level["nodeLabel"] for level in t["levels"]), doc.origin("topologies", i)
            )
            for i, t in enumerate(d.get("topologies", ()))
        ),
    )


def _inventory(
    c: _Collector, doc: Document, i: int, raw: list[dict[str, Any]]
) -> tuple[InventoryDevice, ...]:
    out = []
    for j, dev in enumerate(raw):
        at = ("capacity", i, "inventory", j)
        count = None
        if "count" in dev:
            q = c.quantity(doc, (*at, "count"), dev["count"], "quantity")
            c.device_count(doc, (*at, "count"), dev["count"])
            count = int(q.value)
        caps = tuple(
            (name, c.quantity(doc, (*at, "capacity", name), value, "quantity"))
            for name, value in (dev.get("capacity") or {}).items()
        )
        out.append(
            InventoryDevice(
                dev["deviceClass"],
                count,
                dev.get("driver"),
                tuple((dev.get("attributes") or {}).items()),
                caps,
                doc.origin(*at),
            )
        )
    return tuple(out)


def _class_entry(doc: Document, i: int, raw: dict[str, Any]) -> DeviceClassEntry:
    cap = raw.get("capacity")
    return DeviceClassEntry(
        raw["name"],
        raw["resource"],
        tuple(raw.get("selectors", ())),
        doc.origin("deviceClasses", i),
        (cap["name"], cap["driver"]) if cap is not None else None,
    )
