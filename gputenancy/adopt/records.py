"""The records of an adoption: what a dump's objects become (tenants, platform entries, the overlay's
settings) and what the input model cannot express (gaps), with the kinds `import` reads."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from gputenancy.cluster.dump import POLICY_KINDS, LiveObject
from gputenancy.inputs import quantity

KUEUE = "kueue.x-k8s.io"
KUEUE_VERSIONS = ("v1beta1", "v1beta2")
IMPORTED = POLICY_KINDS
"""The kinds `import` reads; the manager ConfigMap and Deployment in the Kueue namespace too."""
NOT_OWNED = (
    "Namespace",
    "ResourceSlice",
    "ResourceClaim",
    "Workload",
    "Node",
    "Pod",
    "Job",
    "Event",
    "ProvisioningRequestConfig",
    "MultiKueueConfig",
    "MultiKueueCluster",
)
"""Kinds a dump may hold that the pipeline does not render: read where they help (ResourceSlices:
capacity), never imported."""
CARRIED_KINDS = ("WorkloadPriorityClass", "AdmissionCheck", "Topology")
"""Kinds the input model has no file for: carried verbatim in the cluster's overlay as kustomize
resources, so the round trip is exact and the post-build checks judge them."""
SELECTOR_KEY = "kubernetes.io/metadata.name"
RULE = "import-input"


@dataclasses.dataclass(frozen=True)
class Gap:
    """A field of a live object the input model cannot express: carried as a patch, or a difference."""

    kind: str
    namespace: str
    name: str
    field: str  # dotted path, "spec.namespaceSelector"
    why: str


@dataclasses.dataclass(frozen=True)
class TenantPlan:
    name: str
    settings: Mapping[str, Any]  # tenant keys but budgets (namespaces, localQueueName, cohort, ...)
    budget: tuple[Mapping[str, Any], ...]  # flavor budgets on this cluster
    claims: tuple[Mapping[str, Any], ...]
    queue: LiveObject


@dataclasses.dataclass(frozen=True)
class Adoption:
    cluster: str
    tenants: tuple[TenantPlan, ...]
    flavors: tuple[Mapping[str, Any], ...]
    device_classes: tuple[Mapping[str, Any], ...]
    cohorts: tuple[Mapping[str, Any], ...]
    allowed_namespaces: tuple[str, ...]
    cluster_settings: Mapping[str, Any]  # kubernetesVersion, kueue, capacity, overcommit
    config: Mapping[str, Any] | None  # the live Configuration (None: the dump holds none)
    carried: tuple[tuple[LiveObject, str], ...]  # kept verbatim as overlay resources, and why
    skipped: tuple[tuple[LiveObject, str], ...]  # not imported, and why
    gaps: tuple[Gap, ...]
    notes: tuple[str, ...]
    capacity_known: bool
    common: Mapping[str, Mapping[str, Mapping[str, str]]] = dataclasses.field(default_factory=dict)
    """"tenant" / "platform" -> "labels" / "annotations" -> what most such live objects carry alike (an
    overlay's or tenant Component's transformers put it there): the imported kustomizations set it."""
    grouped: Mapping[str, tuple[str, ...]] = dataclasses.field(default_factory=dict)  # team -> its queues


def shown(o: LiveObject) -> str:
    """`ClusterQueue team-a`, `LocalQueue ns/name`."""
    return f"{o.kind} {o.namespace}/{o.name}" if o.namespace else f"{o.kind} {o.name}"


def amount_value(value: Any) -> Any:
    """A quantity as a tenant file writes it: a whole number plain, the rest in canonical form."""
    try:
        text = quantity.canonical(value)
    except (quantity.QuantityError, TypeError):
        return str(value)
    return int(text) if text.isdigit() and len(text) < 19 else text
