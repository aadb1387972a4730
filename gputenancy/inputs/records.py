"""The input records: Tenant, Platform, Cluster and the Model of a repository, frozen, each value with
the Origin it was read from."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from gputenancy.common.findings import Origin
from gputenancy.inputs import quantity
from gputenancy.inputs.amount import Amount as Amount
from gputenancy.inputs.document import Document
from gputenancy.inputs.frameworks import Frameworks
from gputenancy.inputs.hami import HamiBudget, HamiCapacity, HamiDevice, VgpuTemplate
from gputenancy.inputs.multikueue import MultiKueue
from gputenancy.inputs.queuepolicy import AdmissionCheckDef, QueuePolicy

API_VERSION = "gputenancy.io/v1"
DEFAULT_KUEUE_NAMESPACE = "kueue-system"
CORE_RESOURCES = ("cpu", "memory", "ephemeral-storage", "pods")


@dataclasses.dataclass(frozen=True)
class FlavorBudget:
    """Quota on one flavor. `devices` is keyed by DeviceClass, `resources` by resource name."""

    flavor: str
    devices: tuple[tuple[str, Amount], ...]
    resources: tuple[tuple[str, Amount], ...]
    origin: Origin
    hami: HamiBudget | None = None  # classic HAMi vGPUs (gputenancy.inputs.hami)
    group: str | None = None  # `resourceGroup`: the Kueue resource group it belongs to (None: the one group)
    group_origin: Origin | None = None


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
    capacity: tuple[tuple[str, quantity.Quantity], ...] = ()  # exactly.capacity.requests
    # MultiKueue workers deliberately without this template: (worker, reason, where it is stated)
    excluded_workers: tuple[tuple[str, str, Origin], ...] = ()


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
    vgpu_templates: tuple[VgpuTemplate, ...] = ()
    # what the file states of its queues' policy (inputs.queuepolicy)
    policy: QueuePolicy = dataclasses.field(default_factory=QueuePolicy)
    # namespaceSelector.matchLabels (None: the namespaces by name) and the labels its namespaces carry
    namespace_selector: Mapping[str, str] | None = None
    namespace_labels: Mapping[str, str] = dataclasses.field(default_factory=dict)
    selector_origin: Origin | None = None

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
    # (capacity name, driver): Kueue charges the claims' capacity requests instead of the device count
    capacity: tuple[str, str] | None = None

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
    # the quota the cohort itself holds (Kueue Cohort spec.resourceGroups), per cluster (`budgets.clusters`)
    cluster_budgets: Mapping[str, tuple[FlavorBudget, ...]] = dataclasses.field(default_factory=dict)
    parent_origin: Origin | None = None  # of `parent`, when set

    def budget_for(self, cluster: str) -> tuple[FlavorBudget, ...]:
        """The quota the cohort holds on `cluster` (none: an empty tuple)."""
        return self.cluster_budgets.get(cluster, ())


@dataclasses.dataclass(frozen=True)
class ArgoCD:
    """Where Argo CD reads the generated tree (`argocd:` in base/platform.yaml)."""

    repo_url: str
    target_revision: str
    project: str
    namespace: str
    path: str
    origin: Origin
    clusters: tuple[str, ...] | None = None  # names registered in the hub (`clusters:`), when listed


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
    # the least a pod asks for: (resource, quantity, where it is stated); DEFAULT_POD_REQUESTS when unset
    pod_requests: tuple[tuple[str, quantity.Quantity, Origin], ...] = ()
    reserved_namespaces: tuple[str, ...] = ()  # tenantNamespaces.reserved: added to the built-in set
    allowed_namespaces: tuple[str, ...] = ()  # tenantNamespaces.allowed: exempt from it
    hami: Mapping[str, HamiDevice] = dataclasses.field(default_factory=dict)
    kueue_manifests_url: str | None = None  # `schemas fetch` URL template ({version})
    frameworks: Frameworks | None = None  # job frameworks installed on every cluster, unless it says
    # `queueDefaults`: every tenant's unless it states its own
    queue_defaults: QueuePolicy = dataclasses.field(default_factory=QueuePolicy)
    default_weight: quantity.Quantity | None = None  # queueDefaults.fairSharingWeight
    admission_checks: Mapping[str, AdmissionCheckDef] = dataclasses.field(default_factory=dict)


DEFAULT_POD_REQUESTS = (("cpu", "100m"), ("memory", "128Mi"))


@dataclasses.dataclass(frozen=True)
class InventoryDevice:
    """Devices of one kind on a flavor's nodes (`capacity[].inventory[]`), as the DRA driver publishes
    them: attribute and capacity names as written (bare or domain/name); None where not stated."""

    device_class: str
    count: int | None
    driver: str | None
    attributes: tuple[tuple[str, str | int | bool], ...]
    capacity: tuple[tuple[str, quantity.Quantity], ...]
    origin: Origin


@dataclasses.dataclass(frozen=True)
class Capacity:
    flavor: str
    devices: tuple[tuple[str, quantity.Quantity, Origin], ...]
    resources: tuple[tuple[str, quantity.Quantity, Origin], ...]
    origin: Origin
    hami: HamiCapacity | None = None
    inventory: tuple[InventoryDevice, ...] | None = None  # None: not declared
    topology: str | None = None  # `topologyName`: the flavor's ResourceFlavor is bound to that Topology here
    topology_origin: Origin | None = None


@dataclasses.dataclass(frozen=True)
class Topology:
    """A Kueue Topology of one cluster (`topologies[]` in cluster.yaml): node labels, widest level first."""

    name: str
    levels: tuple[str, ...]
    origin: Origin


@dataclasses.dataclass(frozen=True)
class ManifestsInstall:
    """`kueue.manifests`: the Argo CD Application installing Kueue from its release manifests."""

    repo_url: str  # Kueue's repository (or a mirror of it)
    image: str  # the manager image repository; tagged with the Kueue version
    project: str | None  # explicit project; None: the platform's argocd.project (render/hub.py)
    argocd_namespace: str | None  # explicit argocdNamespace; None: the hub's (render/hub.py)
    destination_server: str | None  # explicit destinationServer; None: the cluster's destination


@dataclasses.dataclass(frozen=True)
class HelmInstall:
    repo_url: str
    chart: str
    release_name: str
    project: str | None  # explicit project; None: the platform's argocd.project (render/hub.py)
    argocd_namespace: str | None  # explicit argocdNamespace; None: the hub's (render/hub.py)
    destination_server: str | None  # explicit destinationServer; None: the cluster's destination
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
    manifests: ManifestsInstall | None = None  # with install: manifests
    multikueue: MultiKueue | None = None  # a MultiKueue manager (gputenancy.inputs.fleet)
    frameworks: Frameworks | None = None  # job frameworks installed here (else the platform's)
    topologies: tuple[Topology, ...] = ()  # Topology Aware Scheduling: the cluster's Topology objects


@dataclasses.dataclass(frozen=True)
class Model:
    root: Path
    platform: Platform
    clusters: Mapping[str, Cluster]
    tenants: tuple[Tenant, ...]
    # (tenant, manager): the tenant's budget on that MultiKueue manager is its workers' sum (inputs.fleet)
    summed_budgets: frozenset[tuple[str, str]] = frozenset()

    def tenants_on(self, cluster: str) -> list[Tenant]:
        return [t for t in self.tenants if t.placed_on(cluster)]
