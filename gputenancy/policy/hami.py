"""Rules of classic HAMi vGPU budgets (listed in `rules.RULES`).

Kueue charges HAMi's per-vGPU `gpumem`/`gpucores` through `resources.transformations` with `multiplyBy`.
Several Configurations Kueue starts with charge wrongly, and a duplicate `input` stops the manager
(docs: hami-kueue-verified.md); these rules refuse them before anything is merged or rendered.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any

from gputenancy.common.findings import Finding, Origin
from gputenancy.inputs.hami import (
    DEFAULT_NAMES,
    DRA_DRIVER,
    PERCENT_PER_CARD,
    HamiDevice,
    VgpuTemplate,
    gib_text,
)
from gputenancy.inputs.quantity import Quantity
from gputenancy.inputs.spec import Amount, Cluster, FlavorBudget, Model, Tenant
from gputenancy.policy.catalog import Catalog, classes_used, placed_budgets
from gputenancy.versions import gates as kueuegates
from gputenancy.versions import hami as facts

RESERVED = ("pods", "cpu", "memory", "ephemeral-storage")
V1BETA2 = "config.kueue.x-k8s.io/v1beta2"


# ---------------------------------------------------------------- helpers


def devices_on(catalog: Catalog, cluster: str) -> dict[str, HamiDevice]:
    """HAMi device kinds behind the flavors of `cluster`, by name."""
    return {d.name: d for (c, _), d in sorted(catalog.hami.items()) if c == cluster}


def _placed_budgets(model: Model) -> Iterator[tuple[Tenant, Cluster, FlavorBudget]]:
    """`catalog.placed_budgets` with each cluster's record instead of its name."""
    for t, name, fb in placed_budgets(model):
        yield t, model.clusters[name], fb


def _is_hami_dra(catalog: Catalog, name: str) -> bool:
    entry = catalog.classes.get(name)
    return name == DRA_DRIVER or (entry is not None and any(DRA_DRIVER in s for s in entry.selectors))


def config_resources(model: Model, cluster: Cluster) -> tuple[Mapping[str, Any], Callable[..., Origin]]:
    """`resources` of the base Configuration with the overlay's keys over it (lists replace), and where
    each of its values was written."""
    base = model.platform.kueue_config
    merged = dict(base.data.get("resources") or {}) if isinstance(base.data, Mapping) else {}
    over = (
        cluster.config_overrides.get("resources") if isinstance(cluster.config_overrides, Mapping) else None
    )
    over_keys = set(over) if isinstance(over, Mapping) else set()
    if isinstance(over, Mapping):
        merged.update(over)

    def origin(*path: str | int) -> Origin:
        if path and path[0] in over_keys:
            return cluster.document.origin("kueue", "config", "resources", *path)
        return base.origin("resources", *path)

    return merged, origin


def mapping_names(model: Model, cluster: Cluster, catalog: Catalog) -> dict[str, Origin]:
    """deviceClassMappings names on `cluster`: the catalog's for the classes in use and the Configuration's."""
    out: dict[str, Origin] = {}
    used = classes_used(model, cluster.name)
    for cap in cluster.capacity:
        for name, _, origin in cap.devices:
            used.setdefault(name, origin)
    for name in sorted(used):
        entry = catalog.classes.get(name)
        if entry is not None:
            out.setdefault(entry.resource, entry.origin)
    resources, origin_in = config_resources(model, cluster)
    for i, m in enumerate(resources.get("deviceClassMappings") or []):
        if isinstance(m, Mapping) and isinstance(m.get("name"), str):
            out.setdefault(m["name"], origin_in("deviceClassMappings", i, "name"))
    return out


def _limit(amount: Amount, tenant: Tenant, cap: Quantity | None) -> Quantity:
    """The most one workload can be charged: nominal plus what the tenant may borrow."""
    if tenant.cohort is None:
        return amount.nominal
    if amount.borrowing is not None:
        return amount.nominal + amount.borrowing
    return cap if cap is not None and cap > amount.nominal else amount.nominal


def _gate_words(version: str, gate: str) -> str:
    spec = kueuegates.gates_for(version).get(gate)
    minor = kueuegates.minor_of(version)
    if spec is None:
        return f"Kueue {minor} has no {gate} gate"
    state = "on" if spec.default else "off"
    return f"{gate} is {spec.stage} and {state} by default in Kueue {minor}"


# ---------------------------------------------------------------- rules


def hami_device(model: Model, catalog: Catalog) -> Iterator[Finding]:
    """A cluster's `capacity[].hami` names a HAMi device kind of base/platform.yaml (`hami[]`; `device`
    may be left out when there is exactly one) and has at least one card, memory and one vGPU per card.

    Passes: platform hami: [{name: hami}], capacity hami: {cards: 2, memoryPerCard: 15Gi}.
    Fails: capacity hami: {device: hami-a100, ...} with no such device in base/platform.yaml.
    """
    devices = model.platform.hami
    known = ", ".join(sorted(devices)) or "none"
    for cluster in model.clusters.values():
        for cap in cluster.capacity:
            h = cap.hami
            if h is None:
                continue
            if h.device is None and len(devices) != 1:
                yield h.origin.finding(
                    "hami-device",
                    f"capacity of flavor {cap.flavor!r} uses HAMi but base/platform.yaml declares {len(devices)} HAMi "
                    f"device kinds ({known}); set hami.device",
                )
            elif h.device is not None and h.device not in devices:
                yield h.origin_of("device").finding(
                    "hami-device",
                    f"HAMi device {h.device!r} is not declared in base/platform.yaml hami[] (known: {known})",
                )
            for key, value in (
                ("cards", h.cards),
                ("memoryPerCard", h.memory_per_card),
                ("splitCount", h.split_count),
            ):
                if value < 1:
                    yield h.origin_of(key).finding(
                        "hami-device", f"hami.{key} must be at least 1 (got {value})"
                    )


def hami_flavor(model: Model, catalog: Catalog) -> Iterator[Finding]:
    """A `hami:` budget sits on a flavor whose nodes run classic HAMi on that cluster (its capacity entry
    has `hami:`); elsewhere no node offers HAMi's resources and the quota could never be used.

    Passes: hami: {vgpus: 4, memory: 12Gi, cores: 100} on flavor t4-hami, whose capacity has hami:.
    Fails: the same budget on flavor h100, whose nodes have no HAMi.
    """
    for t, cluster, fb in _placed_budgets(model):
        if fb.hami is None or (cluster.name, fb.flavor) in catalog.hami:
            continue
        caps = [c for c in cluster.capacity if c.flavor == fb.flavor]
        if not caps:
            continue  # the flavor is not offered on the cluster: flavor-unknown says so
        if any(c.hami is not None for c in caps):
            continue  # an unresolved device is reported by hami-device
        if any(_is_hami_dra(catalog, n) for c in caps for n, _, _ in c.devices):
            continue  # HAMi through DRA: hami-dra explains
        with_hami = sorted({f for c, f in catalog.hami if c == cluster.name})
        hint = (
            f"flavors with HAMi on {cluster.name!r}: {', '.join(with_hami)}"
            if with_hami
            else (
                f"no flavor of {cluster.name!r} has HAMi; declare capacity[].hami in {cluster.path} if its nodes run it"
            )
        )
        yield fb.hami.origin.finding(
            "hami-flavor",
            f"tenant {t.name!r} budgets HAMi vGPUs on flavor {fb.flavor!r}, whose nodes on cluster "
            f"{cluster.name!r} have no HAMi; move the hami: budget to a HAMi flavor ({hint})",
        )


def hami_dra(model: Model, catalog: Catalog) -> Iterator[Finding]:
    """HAMi through DRA (DeviceClass hami-core-gpu.project-hami.io) is charged by device count only:
    budget it as `devices: {hami-core-gpu.project-hami.io: N}`. Separate memory and cores quotas need
    capacity sources (gate KueueDRAIntegrationConsumableCapacity: absent in Kueue v0.18, Alpha and off in
    v0.19), and even then one DeviceClass maps to one quota name whose capacity sources are summed, so
    memory and cores cannot be two quotas.

    Passes: devices: {hami-core-gpu.project-hami.io: 4} on a flavor with HAMi DRA devices.
    Fails: hami: {vgpus: 4, memory: 12Gi, cores: 100} on that flavor.
    """
    gate = facts.dra_capacity_gate()
    for _, cluster, fb in _placed_budgets(model):
        if fb.hami is None or (cluster.name, fb.flavor) in catalog.hami:
            continue
        dra = [
            n
            for c in cluster.capacity
            if c.flavor == fb.flavor
            for n, _, _ in c.devices
            if _is_hami_dra(catalog, n)
        ]
        if not dra:
            continue
        yield fb.hami.origin.finding(
            "hami-dra",
            f"flavor {fb.flavor!r} on cluster {cluster.name!r} offers HAMi through DRA ({dra[0]}); Kueue "
            f"{cluster.kueue_version} can charge it only by device count through deviceClassMappings: "
            f"separate memory and cores quotas need capacity sources ({_gate_words(cluster.kueue_version, gate)}) "
            f"and one DeviceClass maps to one quota name, whose capacity sources are summed; write "
            f"devices: {{{dra[0]}: {fb.hami.vgpus.nominal.canonical()}}} instead of hami: (or, for a memory "
            f"quota alone where the gate is on, give the catalog entry capacity: {{name: memory, driver: "
            f"{DRA_DRIVER}}} and budget bytes)",
        )


def hami_names(model: Model, catalog: Catalog) -> Iterator[Finding]:
    """The resource names of a HAMi device kind are distinct, none is a reserved name (`pods`, `cpu`,
    `memory`, `ephemeral-storage`: a transformation output named `pods` is replaced by the pod count),
    and device kinds used on one cluster do not share an input (Kueue stops on a duplicate
    transformations[].input).

    Passes: the defaults nvidia.com/gpu, nvidia.com/gpumem, nvidia.com/gpucores, nvidia.com/total-gpumem,
    nvidia.com/total-gpucores.
    Fails: memoryQuota: pods; or coresQuota: nvidia.com/gpucores (the input itself).
    """
    for device in model.platform.hami.values():
        seen: dict[str, str] = {}
        for key, name in device.names.items():
            if name in RESERVED:
                yield device.origin_of(key).finding(
                    "hami-names",
                    f"HAMi device {device.name!r}: {key} {name!r} is a name Kueue charges itself ({', '.join(RESERVED)}); "
                    f"a quota under it would be mixed with the pods' own {name} (default {key}: "
                    f"{DEFAULT_NAMES[key]})",
                )
            if name in seen:
                yield device.origin_of(key).finding(
                    "hami-names",
                    f"HAMi device {device.name!r}: {key} and {seen[name]} are both {name!r}; every HAMi resource "
                    "and quota name must be distinct",
                )
            seen.setdefault(name, key)
    for cluster in model.clusters.values():
        inputs: dict[str, HamiDevice] = {}
        for device in devices_on(catalog, cluster.name).values():
            for key in ("resourceMem", "resourceCores"):
                name = device.names[key]
                if name in inputs and inputs[name].name != device.name:
                    yield device.origin_of(key).finding(
                        "hami-names",
                        f"HAMi devices {inputs[name].name!r} and {device.name!r} on cluster {cluster.name!r} both use "
                        f"{name!r}: Kueue refuses to start on a duplicate transformations[].input",
                    )
                inputs.setdefault(name, device)


def hami_collision(model: Model, catalog: Catalog) -> Iterator[Finding]:
    """On a cluster with classic HAMi, no DRA name claims a HAMi resource: neither a deviceClassMappings
    name (a mapping named like a transformation output adds devices and MiB into one number; one named
    like the multiplyBy resource is not seen by multiplyBy) nor a DRA driver's DeviceClass whose
    `extendedResourceName` is HAMi's vGPU resource (the NVIDIA DRA driver and HAMi both claim
    nvidia.com/gpu, and Kueue would charge both under one name).

    Passes: HAMi on flavor t4-hami of cluster edge, the NVIDIA DRA driver on other clusters only.
    Fails: gpu.nvidia.com (extendedResourceName nvidia.com/gpu) used on the cluster where HAMi's
    resourceName is nvidia.com/gpu.
    """
    extended = facts.driver_extended_resource_names()
    for cluster in model.clusters.values():
        devices = devices_on(catalog, cluster.name)
        if not devices:
            continue
        names = {name: (d, key) for d in devices.values() for key, name in d.names.items()}
        for mapped, origin in sorted(mapping_names(model, cluster, catalog).items()):
            if mapped in names:
                d, key = names[mapped]
                yield origin.finding(
                    "hami-collision",
                    f"deviceClassMappings name {mapped!r} on cluster {cluster.name!r} is HAMi device {d.name!r}'s "
                    f"{key}; Kueue would add DRA devices and HAMi's {key} into one quota. Map the DeviceClass to "
                    f"another name, or rename the HAMi resource in base/platform.yaml hami[]",
                )
        used = classes_used(model, cluster.name)
        for cap in cluster.capacity:
            for name, _, origin in cap.devices:
                used.setdefault(name, origin)
        for cls, origin in sorted(used.items()):
            ext = extended.get(cls)
            if ext is not None and ext in names:
                d, key = names[ext]
                yield origin.finding(
                    "hami-collision",
                    f"DeviceClass {cls!r} is used on cluster {cluster.name!r}, whose DRA driver sets "
                    f"extendedResourceName {ext!r}, the {key} of HAMi device {d.name!r} on the same cluster: both "
                    f"claim {ext!r}. Run one of the two on a cluster, or rename HAMi's resourceName (HAMi chart "
                    "value resourceName) in base/platform.yaml hami[]",
                )


def hami_transformation(model: Model, catalog: Catalog) -> Iterator[Finding]:
    """The pipeline writes the HAMi transformations into the Kueue Configuration (strategy Replace, explicit:
    Kueue's default Retain also charges the raw inputs); the Configuration in base/ and kueue.config may
    not also transform a HAMi input (Kueue stops on a duplicate input), produce a HAMi name or `pods`,
    or exclude a HAMi name with excludeResourcePrefixes (Kueue would not charge it). The cluster's
    Kueue must support multiplyBy (v0.16+).

    Passes: base/kueue-config.yaml without resources.transformations.
    Fails: resources.transformations: [{input: nvidia.com/gpumem, ...}] in base/kueue-config.yaml.
    """
    for cluster in model.clusters.values():
        devices = devices_on(catalog, cluster.name)
        if not devices:
            continue
        if not facts.has_multiply_by(cluster.kueue_version):
            yield cluster.document.origin("kueue", "version").finding(
                "hami-transformation",
                f"Kueue {cluster.kueue_version} has no resources.transformations[].multiplyBy (since "
                f"{facts.multiply_by_since()}), so HAMi's per-vGPU memory and cores cannot be charged; upgrade Kueue",
            )
        api = model.platform.kueue_config.data.get("apiVersion")
        if api != V1BETA2:
            yield model.platform.kueue_config.origin("apiVersion").finding(
                "hami-transformation",
                f"cluster {cluster.name!r} runs HAMi, whose transformations need multiplyBy, which only the "
                f"{V1BETA2} Configuration has (not {api}); write the base Configuration as {V1BETA2}",
            )
        names = {name: (d, key) for d in devices.values() for key, name in d.names.items()}
        resources, origin = config_resources(model, cluster)
        for i, raw in enumerate(resources.get("transformations") or []):
            if not isinstance(raw, Mapping):
                continue
            source = raw.get("input")
            if source in names:
                d, key = names[str(source)]
                yield origin("transformations", i, "input").finding(
                    "hami-transformation",
                    f"transformation of {source!r} ({key} of HAMi device {d.name!r}) on cluster {cluster.name!r}: the "
                    "pipeline writes this transformation from base/platform.yaml hami[]; Kueue stops on a "
                    "duplicate input. Remove it here",
                )
            outputs = raw.get("outputs")
            for out in outputs if isinstance(outputs, Mapping) else ():
                if out == "pods" or out in names:
                    what = "the pod count" if out == "pods" else f"HAMi's {names[out][1]}"
                    yield origin("transformations", i, "outputs", out).finding(
                        "hami-transformation",
                        f"transformation output {out!r} on cluster {cluster.name!r} would be mixed with {what}; "
                        "name the output something else",
                    )
        for i, prefix in enumerate(resources.get("excludeResourcePrefixes") or []):
            hit = sorted(n for n in names if isinstance(prefix, str) and n.startswith(prefix))
            if hit:
                yield origin("excludeResourcePrefixes", i).finding(
                    "hami-transformation",
                    f"excludeResourcePrefixes {prefix!r} on cluster {cluster.name!r} excludes HAMi's "
                    f"{', '.join(hit)} from quota, so vGPU jobs would not be charged; narrow the prefix",
                )


def hami_template(model: Model, catalog: Catalog) -> Iterator[Finding]:
    """Every vGPU template fits a card and the tenant's budget: at most 100 percent compute per vGPU, memory
    per vGPU above 0 and at most a card's, no more vGPUs than cards (each vGPU is on its own card), and
    on each cluster one flavor whose budget (nominal plus what may be borrowed) covers what Kueue charges
    for one pod: vGPUs, vGPUs x memory, vGPUs x cores.

    Passes: {vgpus: 1, memory: 4Gi, cores: 25} with a budget of 4 vGPUs, 12Gi, 100.
    Fails: {vgpus: 1, memory: 4Gi, cores: 150}; or {vgpus: 2, memory: 8Gi, cores: 50} with a budget of 12Gi.
    """
    for t in model.tenants:
        for vt in t.vgpu_templates:
            if vt.cores > PERCENT_PER_CARD:
                yield vt.origin_of("cores").finding(
                    "hami-template",
                    f"vGPU template {vt.name!r}: cores {vt.cores} is over 100 percent of a card per vGPU (HAMi's "
                    f"gpucores is per vGPU); for more compute ask for more vGPUs, e.g. vgpus: "
                    f"{-(-vt.vgpus * vt.cores // PERCENT_PER_CARD)} with cores: 100",
                )
            if vt.memory == 0:
                yield vt.origin_of("memory").finding(
                    "hami-template",
                    f"vGPU template {vt.name!r}: memory 0 is charged as nothing by Kueue, whatever HAMi gives; "
                    "set the memory per vGPU",
                )
            for name in vt.clusters or ():
                if name not in model.clusters:
                    yield vt.origin_of("clusters").finding(
                        "hami-template",
                        f"vGPU template {vt.name!r} names cluster {name!r}, which has no overlay "
                        f"(known: {', '.join(sorted(model.clusters))})",
                    )
            for cluster in model.clusters.values():
                if t.placed_on(cluster.name) and (vt.clusters is None or cluster.name in vt.clusters):
                    yield from _template_on(t, vt, cluster, catalog)


def _template_on(t: Tenant, vt: VgpuTemplate, cluster: Cluster, catalog: Catalog) -> Iterator[Finding]:
    charge = vt.charge()
    reasons: list[str] = []
    for fb in t.budget_for(cluster.name) or ():
        device = catalog.hami.get((cluster.name, fb.flavor))
        if fb.hami is None or device is None:
            continue
        cap = next(c.hami for c in cluster.capacity if c.flavor == fb.flavor and c.hami is not None)
        if vt.vgpus > cap.cards:
            reasons.append(f"{fb.flavor}: {vt.vgpus} vGPUs need {vt.vgpus} cards, the flavor has {cap.cards}")
            continue
        if vt.memory > cap.memory_per_card:
            reasons.append(
                f"{fb.flavor}: {gib_text(vt.memory)} per vGPU is more than a card's {gib_text(cap.memory_per_card)}"
            )
            continue
        short = []
        for (name, amount), need, unit, total in zip(
            fb.hami.amounts(device), charge, ("vGPUs", "memory", "cores"), cap.totals(), strict=True
        ):
            most = _limit(amount, t, total)
            if need > most.value:
                shown = gib_text(need) if unit == "memory" else str(need)
                have = gib_text(most) if unit == "memory" else most.canonical()
                short.append(f"{unit} {shown} > {have} ({name})")
        if not short:
            return
        reasons.append(f"{fb.flavor}: " + ", ".join(short))
    if not reasons:
        reasons.append(f"no hami: budget on a HAMi flavor of cluster {cluster.name!r}")
    yield vt.origin.finding(
        "hami-template",
        f"vGPU template {vt.name!r} ({vt.vgpus} vGPU x {gib_text(vt.memory)}, {vt.cores}%) can never be admitted "
        f"for tenant {t.name!r} on cluster {cluster.name!r}: one pod is charged {charge[0]} vGPUs, "
        f"{gib_text(charge[1])}, {charge[2]}% but {'; '.join(reasons)}; raise the budget or shrink the template",
    )


def hami_units(model: Model, catalog: Catalog) -> Iterator[Finding]:
    """HAMi amounts convert exactly to what HAMi and Kueue count: GPU memory is written with a unit and is
    a whole number of MiB (HAMi's gpumem unit; a bare number would be bytes to Kubernetes and MiB to
    HAMi), vGPUs and percent of a card are whole numbers. Checked when the files are read (the finding
    names the nearest whole MiB on either side); the quota is rendered in MiB as the API server stores
    it (16000 MiB is "16k").

    Passes: memory: 48Gi (49152 MiB), memory: 16000Mi, cores: 150.
    Fails: memory: 48.5G (46253.5 MiB); memory: 16000 (no unit); cores: "1500m".
    """
    return iter(())


def quota_units(catalog: Catalog, cluster: str) -> dict[str, str]:
    """Quota names on `cluster` that people read in other units: HAMi memory ("MiB") and cores ("percent")."""
    out: dict[str, str] = {}
    for device in devices_on(catalog, cluster).values():
        out[device.memory_quota] = "MiB"
        out[device.cores_quota] = "percent"
    return out
