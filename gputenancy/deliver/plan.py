"""plan: what render would write vs what Argo CD syncs, object by object, in Kubernetes terms.

The comparison itself (objects matched by (group, kind, namespace, name), never by file path; named
lists by name; embedded YAML as YAML) is `gputenancy.deliver.objectdiff`; this module adds the risks
of a change, the capacity table, the refusals, and builds the Plan of every cluster.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from gputenancy import engine
from gputenancy.assemble import output
from gputenancy.caching import memo
from gputenancy.cluster.dump import Dump
from gputenancy.common.findings import Finding, PipelineError, Severity
from gputenancy.common.objects import ObjectKey
from gputenancy.deliver import baseline, budgetdiff, budgets, fleetrisks, fleetview, rename
from gputenancy.deliver import risks as more_risks
from gputenancy.deliver.objectdiff import CONFIG_PATHS, Change, ObjectChange, Tree, compare
from gputenancy.deliver.plancapacity import (
    QUEUES,
    CapacityRow,
    capacity_moved,
    capacity_rows,
    synced_queues,
    units_on,
)
from gputenancy.inputs.spec import Model
from gputenancy.live import drain
from gputenancy.policy import destinations

Trees = Mapping[str, Tree]
DRAINED = more_risks.HELD
ACTIONS = ("changed", "added", "removed")


@dataclasses.dataclass(frozen=True)
class Risk:
    """risk: queue-deleted | localqueue-replaced | claim-template-replaced | kueue-config-changed |
    capacity-overcommitted | queue-draining | localqueue-renamed | namespace-removed (deliver/risks.py) |
    cluster-renamed | destination-changed (deliver/rename.py) | fleet-worker-added | fleet-worker-removed
    (deliver/fleetrisks.py) | immutable-field | topology-set (deliver/risks.py)"""

    cluster: str
    risk: str
    subject: str
    message: str


@dataclasses.dataclass(frozen=True)
class ClusterPlan:
    name: str
    objects: tuple[ObjectChange, ...]
    files: tuple[str, ...]  # `+ path`, `- path`, `~ path`: files that differ without an object change
    capacity: tuple[CapacityRow, ...]
    units: Mapping[str, str] = dataclasses.field(default_factory=dict)  # quota name -> "MiB" | "percent"
    destination: str = ""  # where the hub delivers its objects: `name prod`, `server https://…`
    renamed_from: str = ""  # the cluster this one is, under its old name (deliver/rename.py)
    renamed_to: str = ""
    prerequisites: tuple[str, ...] = ()  # what must exist before Argo CD syncs (an added tenant's namespaces)

    def count(self, action: str) -> int:
        return sum(o.action == action for o in self.objects)

    @property
    def tenants(self) -> tuple[str, ...]:
        return tuple(sorted({o.tenant for o in self.objects if o.tenant}))

    @property
    def changed(self) -> bool:
        """Objects, files or capacity change; or the cluster is renamed away (its directory leaves the
        deploy branch while its objects stay with the new name's Applications)."""
        return bool(self.objects or self.files or self.capacity_changed or self.renamed_to)

    @property
    def capacity_changed(self) -> bool:
        return any(r.capacity_changed for r in self.capacity)


@dataclasses.dataclass(frozen=True)
class Plan:
    against: str
    clusters: tuple[ClusterPlan, ...]
    risks: tuple[Risk, ...]
    findings: tuple[Finding, ...]  # engine warnings, and errors when the plan is refused
    notes: tuple[str, ...] = ()
    grants: tuple[budgets.Grant, ...] = ()  # the effective budgets of the tenants the plan changes
    upgrades: tuple[Any, ...] = ()  # deliver.upgrade.Upgrade: kueue.version changes (planview adds them)
    grant_diffs: tuple[budgetdiff.GrantDiff, ...] = ()  # grants before -> after, affected tenants too
    # the pools of changed clusters whose holders change (when known_before)
    pools: tuple[budgetdiff.PoolDiff, ...] = ()
    known_before: bool = False  # the inputs at the base were read: grant_diffs replace grants
    basis: str = ""  # without --against: what the plan compares with, and why

    @property
    def changed(self) -> bool:
        return any(c.changed for c in self.clusters)

    @property
    def failed(self) -> bool:
        return any(f.severity is Severity.ERROR for f in self.findings)


# ------------------------------------------------------------------------------ risks, capacity


def _stop_policy(body: Mapping[str, Any] | None) -> str:
    return str(((body or {}).get("spec") or {}).get("stopPolicy", "None"))


_DRAINED = (
    "it is held and drained (synced stopPolicy: HoldAndDrain); nothing here can see the cluster, so "
    "check that the queue is empty (`kubectl get workloads -A`: no pending or admitted workload of it) "
    "before merging"
)
_DRAIN_FIRST = "drain it first (stopPolicy: HoldAndDrain, from `state: draining` in the tenant file)"
_RETARGET = (
    "spec.clusterQueue {old} → {new} is immutable: the LocalQueue is replaced (deleted and recreated; "
    "a plain apply fails with 'field is immutable'); jobs in namespace {ns} have no queue meanwhile"
)
_CLAIM = (
    "spec is immutable: the ResourceClaimTemplate is replaced (deleted and recreated); pods waiting for "
    "claims from it fail while it is missing (FailedResourceClaimCreation)"
)
_RESTART = (
    "the Kueue Configuration {action} ({subject}): kueue-controller-manager restarts, new mappings and "
    "feature gates apply only after the restart, and Kueue's webhooks reject queue changes while it restarts"
)
_REMOVAL = (
    "tenant {tenant!r}: ClusterQueue {name} would be deleted from cluster {cluster!r}, but it is not "
    "drained (synced stopPolicy: {policy}) and its jobs would lose their queue; drain it first: set "
    "`state: draining` in tenants/{tenant}.yaml, merge and publish, wait until the queue is empty (no "
    "pending or admitted workloads), then delete the file (or take the cluster out of `clusters`); "
    "or pass --allow-delete"
)

_STILL_HELD = (
    "tenant {tenant!r} is drained on cluster {cluster!r}, but {seen}: deleting its queues now drops them "
    "(pending jobs are never admitted, admitted ones lose their quota accounting); wait until they "
    "finish or are deleted, then plan again with a fresh dump (`--live`); or pass --allow-delete"
)


def _risks(
    cluster: str,
    objects: Sequence[ObjectChange],
    olds: Mapping[ObjectKey, Any],
    cqs: Mapping[str, Any],
    live: Dump | None = None,
) -> list[Risk]:
    out: list[Risk] = []
    for o in objects:
        subject, kind = o.title.removeprefix(f"{cluster} "), o.key.kind
        if o.action == "removed" and kind in ("ClusterQueue", "LocalQueue"):
            body = olds.get(o.key)
            cq = (
                o.key.name
                if kind == "ClusterQueue"
                else str(((body or {}).get("spec") or {}).get("clusterQueue"))
            )
            drained = DRAINED in (_stop_policy(body), _stop_policy(cqs.get(cq)))
            seen = drain.held(live, cq).describe(live.path) if live is not None else ""
            out.append(
                Risk(
                    cluster,
                    "queue-deleted",
                    subject,
                    f"{subject} is deleted: jobs lose their queue; "
                    + (seen if drained and seen else _DRAINED if drained else _DRAIN_FIRST),
                )
            )
        for c in o.changes:
            if kind == "LocalQueue" and c.path == ("spec", "clusterQueue"):
                out.append(
                    Risk(
                        cluster,
                        "localqueue-replaced",
                        subject,
                        _RETARGET.format(old=c.old, new=c.new, ns=o.key.namespace),
                    )
                )
        if kind == "ResourceClaimTemplate" and any(c.path[:1] == ("spec",) for c in o.changes):
            out.append(Risk(cluster, "claim-template-replaced", subject, f"{subject}: {_CLAIM}"))
        config = [c for c in o.changes if any(c.path[: len(p)] == p for p in CONFIG_PATHS)]
        carrier = o.action != "changed" and kind in ("ConfigMap", "Application") and "kueue" in o.key.name
        if config or carrier:
            named = [
                c
                for c in config
                if re.match(r"Kueue Configuration (deviceClassMapping|feature gate) ", c.description)
            ]
            what = "; ".join(
                value_change(c).removeprefix("Kueue Configuration ") for c in (named or config)[:8]
            )
            message = _RESTART.format(action=o.action if carrier else "changed", subject=subject)
            out.append(
                Risk(
                    cluster, "kueue-config-changed", subject, message + (f"; changed: {what}" if what else "")
                )
            )
    return out


def _refusals(
    cluster: str, objects: Sequence[ObjectChange], olds: Mapping[ObjectKey, Any], live: Dump | None = None
) -> list[Finding]:
    """Removals refused: a ClusterQueue not drained; with the live cluster (`plan --live`), a drained one
    that still holds workloads (an empty one is allowed)."""
    out = []
    for o in objects:
        policy = _stop_policy(olds.get(o.key))
        if o.action != "removed" or o.key.kind != "ClusterQueue":
            continue
        tenant = o.tenant or o.key.name
        held = drain.held(live, o.key.name) if live is not None else None
        if policy != DRAINED:
            message = _REMOVAL.format(tenant=tenant, name=o.key.name, cluster=cluster, policy=policy)
            message += f" ({held.describe(live.path)})" if held is not None and live is not None else ""
        elif held is not None and live is not None and not held.empty:
            message = _STILL_HELD.format(tenant=tenant, cluster=cluster, seen=held.describe(live.path))
        else:
            continue
        out.append(Finding(f"tenants/{tenant}.yaml", 0, 0, Severity.ERROR, "tenant-removal", message))
    return out


def build(
    result: engine.Result,
    against: Trees,
    *,
    label: str,
    cluster: str | None = None,
    allow_delete: bool = False,
    before: Model | None = None,
    all_capacity: bool = False,
    live: Mapping[str, Dump] | None = None,
) -> Plan:
    """The plan from an engine result that did not fail and the synced trees ({cluster: tree});
    `before`: the model of the inputs at the base of the change (capacity, grants and reach before).

    The capacity table of a cluster (`ClusterPlan.capacity`) is made when the cluster changes, the
    only clusters the text and Markdown views show it for; with `all_capacity` (the JSON view) for
    every cluster. Whether a cluster changes never depends on it: a cluster without object or file
    changes changes only when its capacity does, and that is read from the models alone."""
    names = sorted(set(result.clusters) | {n for n in against if cluster in (None, n)})
    clusters: list[ClusterPlan] = []
    risks: list[Risk] = []
    findings = [f for f in result.findings if f.severity is not Severity.ERROR]
    dests = {n: destinations.destination(c) for n, c in result.model.clusters.items()}
    moved = (
        rename.renames({n: c.tree for n, c in result.clusters.items()}, against, dests)
        if cluster is None
        else {}
    )
    gone = {old: new for new, old in moved.items()}
    for name in names:
        was = moved.get(name, name)  # its name in the synced tree and the inputs before
        old = against.get(was, {})
        dest = dests.get(name) or rename.old_destination(name, old)
        # renamed away: every object stays, adopted by the new name's Applications (whose swap the
        # new name's plan counts once)
        objects, files, olds = (
            ([], [], {})
            if name in gone
            else compare(name, result.clusters[name].tree if name in result.clusters else {}, old, label)
        )
        shown = name not in gone and (
            all_capacity or bool(objects or files) or capacity_moved(result, name, before, was)
        )
        removes_queue = any(o.action == "removed" and o.key.kind in QUEUES for o in objects)
        cqs = synced_queues(result, name, old, label) if shown or removes_queue else {}
        clusters.append(
            ClusterPlan(
                name,
                tuple(objects),
                tuple(files),
                tuple(capacity_rows(result, name, cqs, before, was)) if shown else (),
                units_on(result, name),
                destinations.shown(dest) if dest else "",
                moved.get(name, ""),
                gone.get(name, ""),
                prerequisites(result.model, name, objects),
            )
        )
        if name in gone:  # renamed: its objects stay on the cluster under the new name's Applications
            continue
        if name in moved:
            risks.append(Risk(name, "cluster-renamed", moved[name], rename.message(moved[name], name, dest)))
            continue
        retargeted = rename.retargeted(name, old, dest) if name in result.clusters else None
        risks += [Risk(name, "destination-changed", name, retargeted)] if retargeted else []
        extra, replaced = more_risks.more(name, objects, olds)
        seen = (live or {}).get(name)
        risks += [r for r in _risks(name, objects, olds, cqs, seen) if r.subject not in replaced]
        risks += [Risk(name, *r) for r in extra]
        risks += [Risk(name, *r) for r in fleetrisks.more(name, objects)]
        findings += [] if allow_delete else _refusals(name, objects, olds, seen)
    for f in result.findings:
        if f.rule == "capacity":
            m = re.search(r"cluster '([^']+)'", f.message)
            risks.append(Risk(m.group(1) if m else "", "capacity-overcommitted", "", f.message))
    touched = {c.name: c.tenants for c in clusters}
    changed = [c.name for c in clusters if c.changed and c.name not in gone]
    grant_diffs: tuple[budgetdiff.GrantDiff, ...] = ()
    pools: tuple[budgetdiff.PoolDiff, ...] = ()
    if before is not None:  # the pools of the changed clusters, before and after, each made once
        after = budgets.pools(result.model, [c for c in changed if c in result.model.clusters])
        had = _renamed(
            budgets.pools(before, [moved.get(c, c) for c in changed if moved.get(c, c) in before.clusters]),
            moved,
        )
        grants = budgets.grants_for(result.model, touched, after)
        grant_diffs, pools = budgetdiff.grants(had, after, touched), budgetdiff.pools(had, after)
    else:
        grants = budgets.grants_for(result.model, touched)
    return Plan(
        label,
        tuple(clusters),
        tuple(risks),
        tuple(sorted(findings)),
        (*result.notes, *fleetview.notes(result.model, names)),
        grants,
        grant_diffs=grant_diffs,
        pools=pools,
        known_before=before is not None,
    )


def _renamed(found: Sequence[budgets.Pool], moved: Mapping[str, str]) -> list[budgets.Pool]:
    """The pools before, a renamed cluster's under its new name (`moved`: {new: old}): compared with
    the same cluster's pools after, not as one cluster removed and another added."""
    new = {old: name for name, old in moved.items()}
    return [
        dataclasses.replace(
            p,
            cluster=new[p.cluster],
            grants=tuple(dataclasses.replace(g, cluster=new[p.cluster]) for g in p.grants),
        )
        if p.cluster in new
        else p
        for p in found
    ]


def prerequisites(model: Model, cluster: str, objects: Sequence[ObjectChange]) -> tuple[str, ...]:
    """An added tenant's namespaces: Argo CD syncs with CreateNamespace=false, so they must exist; an
    added Topology's level labels on the nodes of its flavors."""
    added = sorted(
        {o.tenant for o in objects if o.action == "added" and o.key.kind == "ClusterQueue" and o.tenant}
    )
    tenants = {t.name: t for t in model.tenants}
    out = []
    for name in added:
        spaces = [n for n, _ in tenants[name].namespaces] if name in tenants else []
        if spaces:
            settings = model.platform.argocd
            project = (
                f"; and apply argocd/hub.yaml again on the hub (AppProject {settings.project!r} permits "
                "the new namespaces)"
                if settings is not None and settings.project != "default"
                else ""
            )
            out.append(
                f"tenant {name!r} is new on {cluster}: create its namespace(s) {', '.join(spaces)} there "
                "before Argo CD syncs (its Applications sync with CreateNamespace=false, so the "
                f"LocalQueues and claim templates in them fail to apply until they exist){project}"
            )
    return (*out, *more_risks.topology_labels(model.clusters.get(cluster), objects))


def read_against(root: Path, against: str | None) -> tuple[dict[str, dict[str, bytes]], str]:
    """The synced trees: generated/ of the work tree, a directory of <cluster>/ trees, or generated/
    at a git ref of the root's repository."""
    directory = root / output.GENERATED if against is None else Path(against)
    if against is None:
        from gputenancy.assemble import swap

        refused = swap.guard(root, directory)  # a linked generated/ is never read
        if refused:
            raise PipelineError(refused)
    if directory.is_dir():
        found = {
            d.name: output.read_tree(d)
            for d in sorted(directory.iterdir())
            if d.is_dir() and d.name[0] != "."
        }
        return found, str(directory if against is not None else output.GENERATED)
    if against is None:
        return {}, output.GENERATED
    from gputenancy.deliver import gitrepo

    return gitrepo.trees_at_ref(root, against, output.GENERATED)


def show_value(value: Any, present: bool = True, limit: int = 120) -> str:
    if not present:
        return "(unset)"
    text = (
        value
        if isinstance(value, str)
        else json.dumps(value, separators=(", ", ": "), ensure_ascii=False, default=str)
    )
    text = text.replace("\n", "↵")
    return text if len(text) <= limit else text[: limit - 1] + "…"


def value_change(c: Change) -> str:
    return f"{c.description}: {show_value(c.old, c.op != 'added')} → {show_value(c.new, c.op != 'removed')}"


def _live_of(root: Path, model: Model, cluster: str | None, live: Dump | None) -> dict[str, Dump] | None:
    """`plan --live`: the dump under the name of the cluster it is of (an error when it is of none)."""
    if live is None:
        return None
    from gputenancy.live import status

    return {status.identify(live, model, cluster, root): live}


def make(
    root: Path,
    *,
    cluster: str | None,
    against: str | None,
    schemas: Path | None,
    allow_delete: bool,
    all_capacity: bool = False,
    live: Dump | None = None,
) -> tuple[engine.Result, Plan | None]:
    """Render in memory and compare; the plan is None when the render failed (see result.findings).
    `all_capacity`: the capacity table of every cluster, not only of those that change (`build`)."""
    result = engine.run(root, cluster=cluster, schemas=schemas)
    if result.failed:
        return result, None
    inputs_ref, note = against, ""
    if against is None:
        local = baseline.local_base(root)
        against, inputs_ref, note = local.against, local.inputs_ref, local.note
    elif Path(against).is_dir():
        inputs_ref = None
    trees, label = read_against(root, against)
    before = (
        baseline.model_before(
            root,
            inputs_ref,
            current=result.model if cluster is None else None,  # --cluster loads one cluster only
            cache=memo.open_cache(root, "auto"),
        )
        if inputs_ref is not None
        else None
    )
    made = build(
        result,
        trees,
        label=label,
        cluster=cluster,
        allow_delete=allow_delete,
        before=before,
        all_capacity=all_capacity,
        live=_live_of(root, result.model, cluster, live),
    )
    return result, dataclasses.replace(made, basis=note) if note else made
