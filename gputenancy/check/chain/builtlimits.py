"""Capacity and the Kueue install, held on the BUILT objects: what kustomize built obeys the capacity,
version and gate rules the model was checked against.

The model rules check the inputs; a tenant Component or an overlay patch can still raise a
ClusterQueue's `nominalQuota`, point the install Application at another Kueue release, or add a gate
to the chart values after those rules ran. These rules compare the build with what the inputs meant,
and name the kustomization (and the line of its transformer key) that built the changed object.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from gputenancy.check.chain.builtview import ARGO, KUEUE, Built, View, spec_of
from gputenancy.check.config import helmgates
from gputenancy.common.findings import Severity
from gputenancy.common.objects import FieldPath
from gputenancy.inputs.quantity import ZERO, Quantity, QuantityError, parse
from gputenancy.inputs.spec import Tenant
from gputenancy.policy import cohorts
from gputenancy.policy.capacity import capacity_by_flavor
from gputenancy.versions import kueue as kueue_versions

BuiltRule = Callable[[View], Iterator[Any]]
RULES: dict[str, BuiltRule] = {}
_FIELD_KEYS = ("patches", "patchesStrategicMerge", "patchesJson6902", "replacements", "transformers")


def _rule(rule_id: str) -> Callable[[BuiltRule], BuiltRule]:
    def register(fn: BuiltRule) -> BuiltRule:
        RULES[rule_id] = fn
        return fn

    return register


def _quotas(view: View) -> Iterator[tuple[Built, FieldPath, str, str, Quantity]]:
    """(ClusterQueue or Cohort, path of nominalQuota, flavor as the inputs name it, resource, quantity)
    of every quota of the build (a Cohort's own quota counts toward the capacity like a queue's)."""
    flavors = view.named(KUEUE, "ResourceFlavor")
    for cq in (*view.of(KUEUE, "ClusterQueue"), *view.of(KUEUE, "Cohort")):
        for gi, group in enumerate(spec_of(cq).get("resourceGroups") or []):
            for fi, flavor in enumerate(group.get("flavors") or [] if isinstance(group, dict) else []):
                name = flavor.get("name") if isinstance(flavor, dict) else None
                if not isinstance(name, str):
                    continue
                original = flavors[name].original_name if name in flavors else name
                for ri, res in enumerate(flavor.get("resources") or []):
                    if not isinstance(res, dict) or not isinstance(res.get("name"), str):
                        continue
                    try:
                        q = parse(res.get("nominalQuota", 0))
                    except QuantityError:
                        continue  # not a quantity: the CRD schema check reports it
                    path = ("spec", "resourceGroups", gi, "flavors", fi, "resources", ri, "nominalQuota")
                    yield cq, path, original, res["name"], q


@_rule("built-capacity")
def built_capacity(view: View) -> Iterator[Any]:
    """After kustomize, the ClusterQueues' (and Cohorts') nominal quotas still fit the cluster's capacity, per flavor
    and resource, as the tenants' budgets had to (a warning with `overcommit: true`). Reported at each
    quota kustomize changed, naming the kustomization that built it.

    Passes: a tenant Component that adds a label to the ClusterQueues.
    Fails: a Component patch raising nlp's h100 nominalQuota from 6 to 601 on a cluster with 16.
    """
    cluster = view.cluster
    have = capacity_by_flavor(cluster, view.catalog)
    meant = _meant(view, view.model.tenants_on(cluster.name))
    totals: dict[tuple[str, str], Quantity] = {}
    changed: dict[tuple[str, str], list[tuple[Built, FieldPath, Quantity, Quantity | None]]] = {}
    for cq, path, flavor, resource, q in _quotas(view):
        key = (flavor, resource)
        totals[key] = totals.get(key, ZERO) + q
        want = _want(meant, cq, flavor, resource)
        if _changed(q, want):
            changed.setdefault(key, []).append((cq, path, q, want))
    severity = Severity.WARNING if cluster.overcommit else Severity.ERROR
    for key, total in sorted(totals.items()):
        cap = have.get(key)
        if cap is None or key not in changed or not total > cap[0]:
            continue
        flavor, resource = key
        for cq, path, q, want in changed[key]:
            said = (
                f"the inputs say {want.canonical()}" if want is not None else "the inputs have no such quota"
            )
            yield cq.at(path).finding(
                "built-capacity",
                f"{cq.key.kind} {cq.name!r} on cluster {cluster.name!r} is built with nominalQuota "
                f"{q.canonical()} {resource} on flavor {flavor!r} ({said}){cq.changed_by(*_FIELD_KEYS)}: the "
                f"built total {total.canonical()} exceeds the capacity {cap[0].canonical()} "
                f"({cap[1].path}:{cap[1].line}); change the budget in "
                f"{'base/platform.yaml' if cq.key.kind == 'Cohort' else 'the tenant file'} instead",
                severity,
            )


def _want(
    meant: Mapping[tuple[str, str, str], Quantity], b: Built, flavor: str, resource: str
) -> Quantity | None:
    """What the inputs meant a built quota to be: a tenant's by tenant, a cohort's as `cohort/<name>`."""
    if b.key.kind == "Cohort":
        return meant.get((f"cohort/{b.original_name}", flavor, resource))
    return meant.get((b.tenant.name, flavor, resource)) if b.tenant is not None else None


def _changed(q: Quantity, want: Quantity | None) -> bool:
    """A built nominal quota that is not what the inputs meant (a 0 the inputs have no quota for is)."""
    return q != want if want is not None else q != ZERO


def _meant(view: View, tenants: Iterable[Tenant]) -> dict[tuple[str, str, str], Quantity]:
    """The nominal quota each of `tenants` budgets on the view's cluster, by (tenant, flavor, quota
    resource): what its ClusterQueue is meant to be built with."""
    name = view.cluster.name
    out = {
        (tenant.name, fb.flavor, resource): amount.nominal
        for tenant in tenants
        for fb in tenant.budget_for(name) or ()
        for resource, amount in view.catalog.amounts(fb, name)
    }
    for co, fb in cohorts.held(view.model, name):
        for resource, amount in view.catalog.amounts(fb, name):
            out[(f"cohort/{co.name}", fb.flavor, resource)] = amount.nominal
    return out


def capacity_changed(view: View) -> bool:
    """Whether a ClusterQueue of the view is built with a nominal quota its tenant's budget does not
    state (`built-capacity` then adds up the quotas of the whole cluster)."""
    tenants = {cq.tenant.name: cq.tenant for cq in view.of(KUEUE, "ClusterQueue") if cq.tenant is not None}
    meant = _meant(view, tenants.values())
    return any(
        _changed(q, _want(meant, cq, flavor, resource)) for cq, _, flavor, resource, q in _quotas(view)
    )


def _install_expected(view: View) -> dict[str, str]:
    cluster = view.cluster
    if cluster.install == "helm" and cluster.helm is not None:
        return {
            "targetRevision": cluster.kueue_version.lstrip("v"),
            "chart": cluster.helm.chart,
            "repoURL": cluster.helm.repo_url,
        }
    if cluster.manifests is not None:
        try:
            release = kueue_versions.for_version(cluster.kueue_version).release
        except ValueError:
            return {}
        return {
            "targetRevision": cluster.kueue_version,
            "repoURL": cluster.manifests.repo_url,
            "path": release.kustomize_path,
        }
    return {}


def _chart_gates(source: Mapping[str, Any]) -> Any:
    values = (source.get("helm") or {}).get("valuesObject") if isinstance(source.get("helm"), dict) else None
    manager = values.get("controllerManager") if isinstance(values, dict) else None
    return manager.get("featureGates") if isinstance(manager, dict) else None


@_rule("built-kueue-install")
def built_install(view: View) -> Iterator[Any]:
    """After kustomize, the Kueue install Application installs the release everything was checked
    for: its `targetRevision`, chart or path and repository are those of `kueue.version`, the manager
    image (install: manifests) has that version's tag, and the chart's `controllerManager.featureGates`
    pass the gate rules of that version.

    Passes: a patch that adds an annotation to the install Application.
    Fails: an overlay patch changing targetRevision from v0.19.2 to v0.18.1.
    """
    cluster = view.cluster
    apps = [b for b in view.of(ARGO, "Application") if b.original_name == f"kueue-{cluster.name}"]
    if not apps:
        return
    app = apps[0]
    source = spec_of(app).get("source")
    source = source if isinstance(source, dict) else {}
    by = app.changed_by(*_FIELD_KEYS)
    checked = (
        f"everything was checked for Kueue {cluster.kueue_version} (overlays/{cluster.name}/cluster.yaml)"
    )
    for field, want in _install_expected(view).items():
        got = source.get(field)
        if got != want:
            yield app.at(("spec", "source", field)).finding(
                "built-kueue-install",
                f"the Kueue install Application {app.name!r} is built with spec.source.{field} {got!r}, not "
                f"{want!r}{by}: {checked}; change kueue.version there instead",
            )
    if cluster.install != "helm":
        images = (
            (source.get("kustomize") or {}).get("images")
            if isinstance(source.get("kustomize"), dict)
            else None
        )
        for i, image in enumerate(images or []):
            if not isinstance(image, str) or not image.endswith(f":{cluster.kueue_version}"):
                yield app.at(("spec", "source", "kustomize", "images", i)).finding(
                    "built-kueue-install",
                    f"the Kueue install Application {app.name!r} is built with image {image!r}{by}: {checked}; "
                    f"the manager image must be tagged {cluster.kueue_version}",
                )
        return
    built = _chart_gates(source)
    meant = None
    if cluster.helm is not None:
        manager = cluster.helm.values.get("controllerManager")
        meant = manager.get("featureGates") if isinstance(manager, dict) else None
    if built == meant:
        return  # the inputs' own gates: checked (and reported) at the overlay
    for index, rule_id, message in helmgates.gate_list_problems(built, cluster.kueue_version):
        path = ("spec", "source", "helm", "valuesObject", "controllerManager", "featureGates")
        yield app.at((*path, *(() if index is None else (index,)))).finding(
            "built-kueue-install", f"the built chart values{by}: {message} ({rule_id})"
        )
