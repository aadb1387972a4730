"""What Kueue charges for one pod of a pod set, per quota resource, and why.

As Kueue computes a Workload's requests (pkg/workload/workload.go, k8s.io/component-helpers `PodRequests`):
the containers' requests summed (a container with limits only is requested its limits, as the API server
defaults it), restartable init containers (sidecars) added to them, the largest regular init container
(plus the sidecars started before it) when it asks for more, and the pod overhead; then the Kueue
Configuration's `resources.transformations` (`multiplyBy`, Retain / Replace: `admissible.transformed`, the
model `claim-admissible` uses) and `excludeResourcePrefixes`; then the devices of every claim made from a
ResourceClaimTemplate, per DeviceClass through `deviceClassMappings` (pkg/dra/claims.go; a class with no
mapping, allocationMode All, constraints and config keep the workload Inadmissible with Kueue's message);
and one `pods` per pod where the ClusterQueue covers `pods`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from decimal import Decimal
from typing import Any

from gputenancy.admission.manifests import PodSet, Workload
from gputenancy.check.chain.charging import Transformation, claim_device_classes, transformed
from gputenancy.common.findings import Origin
from gputenancy.inputs.quantity import ZERO, Quantity, QuantityError, parse

ONE = parse(1)


@dataclasses.dataclass(frozen=True)
class Charge:
    """What one pod is charged of one resource, why, and the line that asks for it."""

    resource: str
    amount: Quantity
    why: str
    origin: Origin


@dataclasses.dataclass(frozen=True)
class Refusal:
    """Kueue refuses the pod set before it looks at quota (Inadmissible), in its own words."""

    message: str
    origin: Origin
    fix: str


@dataclasses.dataclass(frozen=True)
class PodSetCharge:
    name: str
    count: int
    per_pod: tuple[Charge, ...]
    origin: Origin
    refusal: Refusal | None = None

    def total(self) -> dict[str, Quantity]:
        return {c.resource: Quantity(c.amount.value * self.count, c.amount.format) for c in self.per_pod}


@dataclasses.dataclass(frozen=True)
class Rules:
    """The cluster's charging rules: the Configuration's mappings, transformations and exclusions."""

    mappings: Mapping[str, str]  # DeviceClass -> quota resource
    transformations: tuple[Transformation, ...]
    excluded: tuple[str, ...]
    retain_multiplied: bool = True
    extended: Mapping[str, tuple[str, str]] = dataclasses.field(default_factory=dict)
    """extended resource backed by a DeviceClass (`spec.extendedResourceName`) -> (quota resource, class),
    where the version's KueueDRAIntegrationExtendedResource gate is on"""


Template = tuple[Mapping[str, Any], str]  # claim spec, where the template is (object and line)
Templates = Callable[[str, str], Template | None]  # (namespace, name) -> template


def _quantity(value: Any) -> Quantity | None:
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        return None
    try:
        return parse(value)
    except QuantityError:
        return None


def _add(
    into: dict[str, tuple[Decimal, Quantity, str, Origin]], name: str, q: Quantity, why: str, at: Origin
) -> None:
    before = into.get(name)
    value = q.value + (before[0] if before else Decimal(0))
    into[name] = (value, q, why if before is None else f"{before[2]} + {why}", before[3] if before else at)


def _container(
    workload: Workload, path: tuple[str | int, ...], c: Mapping[str, Any]
) -> dict[str, tuple[Decimal, Quantity, str, Origin]]:
    out: dict[str, tuple[Decimal, Quantity, str, Origin]] = {}
    resources = c.get("resources") if isinstance(c.get("resources"), dict) else {}
    assert isinstance(resources, dict)
    requests = resources.get("requests") if isinstance(resources.get("requests"), dict) else {}
    limits = resources.get("limits") if isinstance(resources.get("limits"), dict) else {}
    assert isinstance(requests, dict) and isinstance(limits, dict)
    name = c.get("name", "?")
    for key, source in (("limits", limits), ("requests", requests)):  # requests win over limits
        for r, v in source.items():
            q = _quantity(v)
            if q is None or (key == "limits" and r in requests):
                continue
            why = f"container {name}" + (" (limits, no requests)" if key == "limits" else "")
            out[r] = (q.value, q, why, workload.origin(*path, "resources", key, r))
    return out


def pod_requests(workload: Workload, ps: PodSet) -> dict[str, tuple[Quantity, str, Origin]]:
    """One pod's requests as `PodRequests` sums them (containers, sidecars, init containers, overhead)."""
    spec = ps.spec
    total: dict[str, tuple[Decimal, Quantity, str, Origin]] = {}
    for i, c in enumerate(spec.get("containers") or []):
        if isinstance(c, dict):
            for r, (v, q, why, at) in _container(workload, (*ps.path, "containers", i), c).items():
                _add(total, r, Quantity(v, q.format), why, at)
    sidecars: dict[str, Decimal] = {}
    init_max: dict[str, tuple[Decimal, Quantity, str, Origin]] = {}
    for i, c in enumerate(spec.get("initContainers") or []):
        if not isinstance(c, dict):
            continue
        asks = _container(workload, (*ps.path, "initContainers", i), c)
        if c.get("restartPolicy") == "Always":
            for r, (v, q, why, at) in asks.items():
                sidecars[r] = sidecars.get(r, Decimal(0)) + v
                _add(total, r, Quantity(v, q.format), f"sidecar {why.removeprefix('container ')}", at)
            continue
        for r, (v, q, why, at) in asks.items():
            need = v + sidecars.get(r, Decimal(0))
            if r not in init_max or need > init_max[r][0]:
                init_max[r] = (need, q, f"init {why}", at)
    for r, (v, q, why, at) in init_max.items():
        if r not in total or v > total[r][0]:
            total[r] = (v, q, why + (" (more than the containers)" if r in total else ""), at)
    overhead = spec.get("overhead") if isinstance(spec.get("overhead"), dict) else {}
    assert isinstance(overhead, dict)
    for r, v in overhead.items():
        extra = _quantity(v)
        if extra is not None:
            _add(total, r, extra, "pod overhead", workload.origin(*ps.path, "overhead", r))
    return {r: (Quantity(v, q.format), why, at) for r, (v, q, why, at) in total.items()}


def charge(
    workload: Workload,
    index: int,
    rules: Rules,
    templates: Templates,
    covers_pods: bool,
    missing: list[tuple[Origin, str]],
) -> PodSetCharge:
    """What Kueue charges one pod of pod set `index`; templates that do not exist go to `missing`."""
    ps = workload.pod_sets[index]
    where = workload.origin(*ps.path)
    asked = pod_requests(workload, ps)
    origins = {r: at for r, (_, _, at) in asked.items()}
    needs = transformed(
        {r: (q, why) for r, (q, why, _) in asked.items()},
        rules.transformations,
        retain_multiplied=rules.retain_multiplied,
    )
    charges: dict[str, Charge] = {}
    for r, (q, why) in needs.items():
        if r.startswith(rules.excluded) or q.value == 0:
            continue
        at = origins.get(r) or next((o for s, o in origins.items() if s in why), where)
        backed = rules.extended.get(r)
        if backed is not None:  # an extended resource a DeviceClass serves: charged as its mapping says
            r, why = backed[0], f"{why}, served by DeviceClass {backed[1]} (extendedResourceName)"
            earlier = charges.get(r)
            if earlier is not None:
                q, why = Quantity(q.value + earlier.amount.value, q.format), f"{earlier.why} + {why}"
        charges[r] = Charge(r, q, why, at)
    refusal: Refusal | None = None
    devices: dict[str, tuple[int, str, Origin]] = {}
    for j, claim in enumerate(ps.spec.get("resourceClaims") or []):
        name = claim.get("resourceClaimTemplateName") if isinstance(claim, dict) else None
        if not isinstance(name, str):
            continue
        at = workload.origin(*ps.path, "resourceClaims", j, "resourceClaimTemplateName")
        found = templates(workload.namespace, name)
        if found is None:
            missing.append((at, name))
            continue
        claim_spec, template_at = found
        counts, unsupported, _ = claim_device_classes(claim_spec)
        field = f"spec.podSets[{index}].template.spec.resourceClaims[{j}]"
        if unsupported is not None and refusal is None:
            refusal = Refusal(
                f"{field}: Invalid value: ResourceClaimTemplate {name}: {unsupported}",
                at,
                f"ask for devices by exact count in ResourceClaimTemplate {name} ({template_at})",
            )
        for device_class, count in counts.items():
            resource = rules.mappings.get(device_class)
            if resource is None:
                if refusal is None:
                    refusal = Refusal(
                        f'{field}.resourceClaimTemplateName: Not found: "DeviceClass {device_class} is not mapped '
                        f'in DRA configuration for podset {ps.name}"',
                        at,
                        f"map DeviceClass {device_class} to a quota resource in the Kueue Configuration "
                        "(resources.deviceClassMappings; the platform's deviceClasses[].resource), or use a "
                        "claim template of a mapped class",
                    )
                continue
            before = devices.get(resource)
            devices[resource] = (
                count + (before[0] if before else 0),
                f"claim template {name} ({device_class})" if before is None else f"{before[1]} + {name}",
                before[2] if before else at,
            )
    for resource, (count, why, at) in devices.items():
        if resource.startswith(rules.excluded):
            continue
        q = parse(count)
        before_charge = charges.get(resource)
        if before_charge is not None:
            q = Quantity(q.value + before_charge.amount.value, q.format)
            why = f"{before_charge.why} + {why}"
        charges[resource] = Charge(resource, q, why, at)
    if covers_pods and "pods" not in charges:
        charges["pods"] = Charge("pods", ONE, "one per pod (the ClusterQueue covers pods)", where)
    per_pod = tuple(charges[r] for r in sorted(charges) if charges[r].amount > ZERO)
    return PodSetCharge(ps.name, ps.count, per_pod, where, refusal)
