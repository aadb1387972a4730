"""Records -> Kubernetes objects through jinja2 templates. Every value reaches the output through the `y`
filter (JSON, which is also YAML flow syntax), so no input string can add keys; the template output is
parsed back and checked before anything is returned.

Templates of objects rendered once per tenant (`*.json.j2`: ClusterQueue, LocalQueue,
ResourceClaimTemplate) write JSON, which `json.loads` parses about ten times faster than the YAML
reader: at 1,000 tenants that is 11,000 objects per run. Platform templates (`*.yaml.j2`, a handful of
objects per cluster) stay YAML.
"""

from __future__ import annotations

import functools
import json
from typing import Any

import jinja2
import yaml

from gputenancy.common import fastyaml
from gputenancy.common.findings import Finding, Origin, PipelineError
from gputenancy.common.objects import FieldPath, RenderedObject
from gputenancy.inputs import fleet, queuepolicy
from gputenancy.inputs.quantity import Quantity
from gputenancy.inputs.spec import Cluster, Model, Tenant
from gputenancy.policy import destinations
from gputenancy.policy.catalog import Catalog, claims_on, classes_used
from gputenancy.policy.cohorts import cohorts_on
from gputenancy.render import groups, hub, kueueapp, kueueconfig, multikueue
from gputenancy.versions import kueue as kueue_versions

MANAGED_BY = {"app.kubernetes.io/managed-by": "gputenancy"}
TENANT_LABEL = "gputenancy.io/tenant"
SOURCE_ANNOTATION = "gputenancy.io/source"
SYNC_WAVE = "argocd.argoproj.io/sync-wave"
SYNC_OPTIONS = "argocd.argoproj.io/sync-options"
_EXACTLY = ("spec", "spec", "devices", "requests", 0, "exactly")

# Argo CD sync waves: configuration and DeviceClasses, then flavors and cohorts, then ClusterQueues,
# then LocalQueues and ResourceClaimTemplates. The queues of a draining tenant (stopPolicy:
# HoldAndDrain) go last: Argo CD reports a held queue Suspended, and a wave waits until its objects
# are Healthy, so a held queue in an earlier wave would stall every later one (argocd/README.md).
WAVE_CONFIG = "-3"
WAVE_FLAVORS = "-2"
WAVE_CLUSTER_QUEUES = "-1"
WAVE_NAMESPACED = "0"
WAVE_HELD = "1"

PREEMPTION = queuepolicy.PRESETS
CORE_ORDER = groups.CORE_ORDER
_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _y(value: Any) -> str:
    return json.dumps(value, ensure_ascii=True)


@functools.cache
def environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("gputenancy.render", "templates"),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        auto_reload=False,  # package files: no stat() of the template on every render
        autoescape=False,  # noqa: S701 - YAML and JSON output; every value goes through the `y` serialising filter
    )
    env.filters["y"] = _y
    return env


def _render(template: str, **values: Any) -> dict[str, Any]:
    text = environment().get_template(template).render(**values)
    body = json.loads(text) if template.endswith(".json.j2") else fastyaml.load(text)
    if not isinstance(body, dict):
        raise PipelineError(
            [Origin(f"<template {template}>").finding("render", "template did not produce an object")]
        )
    return body


def _meta(source: Origin, wave: str, tenant: str | None = None, **extra: str) -> dict[str, Any]:
    labels = dict(MANAGED_BY)
    if tenant is not None:
        labels[TENANT_LABEL] = tenant
    annotations = {
        SOURCE_ANNOTATION: source.path,
        SYNC_WAVE: wave,
    }
    annotations.update(extra)
    return {"labels": labels, "annotations": annotations}


def render_tenant(
    tenant: Tenant,
    cluster: Cluster,
    catalog: Catalog,
    defaults: queuepolicy.QueuePolicy | None = None,
    default_weight: Quantity | None = None,
) -> list[RenderedObject]:
    """ClusterQueue, LocalQueues and ResourceClaimTemplates of one tenant on one cluster; `defaults` and
    `default_weight`: the platform's queueDefaults."""
    budget = tenant.budget_for(cluster.name) or ()
    rgroups, field_origins = groups.resource_groups(budget, cluster.name, catalog)
    policy = queuepolicy.effective(tenant.policy, defaults or queuepolicy.QueuePolicy())
    stop = "HoldAndDrain" if tenant.state == "draining" else (policy.stop_policy or "None")
    version_defaults = kueue_versions.for_version(cluster.kueue_version).object_defaults["ClusterQueue"]
    preemption = policy.preemption.body() if policy.preemption is not None else _preset(tenant.preemption)
    checks = multikueue.admission_checks(cluster) + [
        {"name": c.name, **({"onFlavors": list(c.on_flavors)} if c.on_flavors is not None else {})}
        for c in policy.admission_checks or ()
    ]
    held = stop != "None"
    namespaces = [ns for ns, _ in tenant.namespaces]
    cq = _render(
        "clusterqueue.json.j2",
        name=tenant.name,
        cohort=tenant.cohort,
        namespaces=sorted(namespaces),
        selector=dict(sorted(tenant.namespace_selector.items())) if tenant.namespace_selector else None,
        queueing_strategy=policy.queueing_strategy or tenant.queueing_strategy,
        stop_policy=stop,
        preemption=preemption,
        fungibility={**version_defaults["flavorFungibility"], **(policy.flavor_fungibility or {})},
        weight=weight.canonical()
        if (weight := tenant.fair_sharing_weight or default_weight) is not None
        else None,
        groups=rgroups,
        admission_checks=checks,
        **_meta(tenant.origin, WAVE_HELD if held else WAVE_CLUSTER_QUEUES, tenant.name),
    )
    cq["metadata"]["labels"].update(multikueue.quota_labels(cluster))
    field_origins[("spec", "cohortName")] = tenant.cohort_origin
    if tenant.selector_origin is not None:
        field_origins[("spec", "namespaceSelector")] = tenant.selector_origin
    if policy.preemption is not None:
        field_origins[("spec", "preemption")] = policy.preemption.origin
    if policy.fungibility_origin is not None:
        field_origins[("spec", "flavorFungibility")] = policy.fungibility_origin
    if policy.stop_origin is not None:
        field_origins[("spec", "stopPolicy")] = policy.stop_origin
    first = len(checks) - len(policy.admission_checks or ())
    for i, use in enumerate(policy.admission_checks or ()):
        field_origins[("spec", "admissionChecksStrategy", "admissionChecks", first + i)] = use.origin
    out = [RenderedObject(cluster.name, cq, tenant.origin, field_origins)]
    for ns, origin in tenant.namespaces:
        lq = _render(
            "localqueue.json.j2",
            name=tenant.local_queue,
            namespace=ns,
            cluster_queue=tenant.name,
            stop_policy=stop,
            **_meta(origin, WAVE_HELD if held else WAVE_NAMESPACED, tenant.name),
        )
        out.append(RenderedObject(cluster.name, lq, origin))
    manager = cluster.multikueue is not None
    for ct in claims_on(tenant, cluster.name):
        # on a MultiKueue manager without CEL selectors: it has no GPU nodes to match them, and charges
        # the same class and count as the workers, which keep the selectors
        selectors = () if manager else ct.selectors
        for ns in ct.namespaces or namespaces:
            rct = _render(
                "resourceclaimtemplate.json.j2",
                name=ct.name,
                namespace=ns,
                claim_labels={TENANT_LABEL: tenant.name},
                request="gpu",
                device_class=ct.device_class,
                count=ct.count,
                selectors=list(selectors),
                capacity={name: q.canonical() for name, q in ct.capacity},
                **_meta(ct.origin, WAVE_NAMESPACED, tenant.name, **{SYNC_OPTIONS: "Force=true,Replace=true"}),
            )
            out.append(
                RenderedObject(
                    cluster.name,
                    rct,
                    ct.origin,
                    {
                        (*_EXACTLY, "deviceClassName"): ct.class_origin,
                        **{
                            (*_EXACTLY, "selectors", i): o
                            for i, o in enumerate(ct.selector_origins[: len(selectors)])
                        },
                    },
                )
            )
    return out


def _preset(name: str) -> dict[str, Any]:
    preset = PREEMPTION[name]
    return {
        "reclaimWithinCohort": preset["reclaimWithinCohort"],
        "withinClusterQueue": preset["withinClusterQueue"],
        "borrowWithinCohort": {"policy": preset["borrowWithinCohort"]},
    }


def render_platform(
    model: Model, cluster: Cluster, catalog: Catalog
) -> tuple[list[RenderedObject], kueueconfig.KueueConfig, list[Finding]]:
    """DeviceClasses, ResourceFlavors, Cohorts and the Kueue Configuration delivery of one cluster."""
    out: list[RenderedObject] = []
    used = classes_used(model, cluster.name)
    for cap in cluster.capacity:
        for name, _, _ in cap.devices:
            used.setdefault(name, cap.origin)
    for name in sorted(used):
        entry = catalog.classes.get(name)
        if entry is None or not entry.rendered:
            continue
        body = _render(
            "deviceclass.yaml.j2",
            name=name,
            selectors=list(entry.selectors),
            **_meta(entry.origin, WAVE_CONFIG),
        )
        out.append(RenderedObject(cluster.name, body, entry.origin))
    for cap in cluster.capacity:
        flavor = model.platform.flavors.get(cap.flavor)
        if flavor is None:
            continue
        body = _render(
            "resourceflavor.yaml.j2",
            name=flavor.name,
            node_labels=dict(flavor.node_labels),
            node_taints=[dict(t) for t in flavor.node_taints],
            tolerations=[dict(t) for t in flavor.tolerations],
            topology=cap.topology,
            **_meta(flavor.origin, WAVE_FLAVORS),
        )
        where: dict[FieldPath, Origin] = {}
        if cap.topology_origin is not None:
            where[("spec", "topologyName")] = cap.topology_origin
        out.append(RenderedObject(cluster.name, body, flavor.origin, where))
    for topology in cluster.topologies:
        body = _render(
            "topology.yaml.j2",
            name=topology.name,
            levels=list(topology.levels),
            **_meta(topology.origin, WAVE_CONFIG),
        )
        out.append(RenderedObject(cluster.name, body, topology.origin))
    for name in cohorts_on(model, cluster.name):
        co = model.platform.cohorts[name]
        held = co.budget_for(cluster.name)
        rgroups, field_origins = groups.resource_groups(held, cluster.name, catalog) if held else ([], {})
        body = _render(
            "cohort.yaml.j2",
            name=name,
            parent=co.parent,
            weight=co.weight.canonical() if co.weight is not None else None,
            groups=rgroups,
            **_meta(co.origin, WAVE_FLAVORS),
        )
        if co.parent_origin is not None:
            field_origins[("spec", "parentName")] = co.parent_origin
        out.append(RenderedObject(cluster.name, body, co.origin, field_origins))
    out.extend(_admission_checks(model, cluster))
    if cluster.multikueue is not None:
        meta = _meta(cluster.multikueue.origin, WAVE_FLAVORS)
        out.extend(multikueue.manager_objects(cluster, meta, environment()))
    for manager in fleet.fleets_of(model, cluster.name):  # this cluster is a worker of `manager`
        assert manager.multikueue is not None
        frameworks = (
            kueueconfig.build(model, manager, catalog)[0].body.get("integrations", {}).get("frameworks")
        )
        meta = _meta(dict(manager.multikueue.workers)[cluster.name], WAVE_CONFIG)
        out.extend(multikueue.worker_objects(cluster, manager, list(frameworks or ()), meta, environment()))
    config, findings = kueueconfig.build(model, cluster, catalog)
    argocd_namespace = hub.namespace(model.platform, cluster)
    out.extend(_deliver_config(cluster, config, argocd_namespace, hub.project(model.platform, cluster)))
    if model.platform.argocd is not None:
        settings = model.platform.argocd
        meta = _hub_meta(cluster, settings.origin, WAVE_NAMESPACED)  # after kueue-<cluster>
        app = multikueue.with_automated_quota(
            cluster, hub.spoke_application(settings, cluster, meta, argocd_namespace)
        )
        out.append(
            RenderedObject(cluster.name, app, settings.origin, {("spec", "destination"): cluster.origin})
        )
    return out, config, findings


def _admission_checks(model: Model, cluster: Cluster) -> list[RenderedObject]:
    """The AdmissionChecks (and ProvisioningRequestConfigs) the queues of `cluster` use."""
    used = sorted(
        {
            use.name
            for t in model.tenants_on(cluster.name)
            for use in queuepolicy.effective(t.policy, model.platform.queue_defaults).admission_checks or ()
        }
    )
    out = []
    for name in used:
        check = model.platform.admission_checks.get(name)
        if check is None:
            continue  # admission-check-unknown
        text = (
            environment()
            .get_template("admissioncheck.yaml.j2")
            .render(
                name=name,
                controller=check.controller,
                parameters=dict(check.parameters) if check.parameters else None,
                provisioning=dict(check.provisioning) if check.provisioning else None,
                config=check.parameters["name"] if check.parameters else name,
                **_meta(check.origin, WAVE_FLAVORS),
            )
        )
        out += [RenderedObject(cluster.name, body, check.origin) for body in fastyaml.load_all(text) if body]
    return out


def _hub_meta(cluster: Cluster, source: Origin | None = None, wave: str = WAVE_CONFIG) -> dict[str, Any]:
    """Labels and annotations of an Application in the hub: `gputenancy.io/cluster` says which
    cluster it delivers to (`argocd app list -l gputenancy.io/cluster=prod`)."""
    meta = _meta(source or cluster.origin, wave)
    meta["labels"][hub.CLUSTER_LABEL] = cluster.name
    return meta


def _deliver_config(
    cluster: Cluster, config: kueueconfig.KueueConfig, argocd_namespace: str, project: str
) -> list[RenderedObject]:
    if cluster.install == "helm" and cluster.helm is not None:
        helm = cluster.helm
        values = json.loads(json.dumps(dict(helm.values)))
        values.setdefault("managerConfig", {})["controllerManagerConfigYaml"] = config.text
        app = _render(
            "kueue-helm-application.yaml.j2",
            name=f"kueue-{cluster.name}",
            argocd_namespace=argocd_namespace,
            project=project,
            repo_url=helm.repo_url,
            chart=helm.chart,
            version=cluster.kueue_version.lstrip("v"),
            release_name=helm.release_name,
            values=values,
            destination={**destinations.install_destination(cluster), "namespace": cluster.kueue_namespace},
            **_hub_meta(cluster),
        )
        return [
            RenderedObject(
                cluster.name,
                app,
                cluster.origin,
                {("spec", "source", "helm", "valuesObject", "managerConfig"): config.origin},
            )
        ]
    assert cluster.manifests is not None
    app = kueueapp.application(cluster, config, _hub_meta(cluster), argocd_namespace, project)
    patch = ("spec", "source", "kustomize", "patches", kueueapp.CONFIG_PATCH)
    return [RenderedObject(cluster.name, app, cluster.origin, {patch: config.origin})]
