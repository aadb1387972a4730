"""`status`: one cluster as it runs against Git. Reads the dump (or the real `kubectl`, read verbs only,
through `gputenancy.cluster.kubectl`), the model of the repository (no render) and generated/<cluster>/
(what Argo CD syncs), and assembles the parts: objects (live/drift.py), the Kueue manager
(live/manager.py), devices (live/devices.py), teams (live/teams.py)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path

from gputenancy import engine
from gputenancy.check import cluster as checks
from gputenancy.cluster import kubectl
from gputenancy.cluster.dump import Dump, LiveObject, read_dump
from gputenancy.common.findings import Finding, Origin, PipelineError, Severity
from gputenancy.inputs.quantity import Quantity
from gputenancy.inputs.spec import Model
from gputenancy.live import devices, drift, git, manager, teams
from gputenancy.live.devices import DeviceRow
from gputenancy.live.manager import ManagerState
from gputenancy.policy.catalog import Catalog, effective_catalog
from gputenancy.render import hub, kueueconfig

RULE = "dump-cluster"
CLUSTER_LABEL = "gputenancy.io/cluster"
MANAGED = ("app.kubernetes.io/managed-by", "gputenancy")


@dataclasses.dataclass(frozen=True)
class Status:
    cluster: str
    source: str  # the dump as shown, or the kubectl context
    git: str  # generated/<cluster>
    objects: tuple[drift.ObjectState, ...]
    manager: ManagerState | None
    devices: tuple[DeviceRow, ...]
    usage: tuple[teams.Usage, ...]
    queues: tuple[teams.QueueState, ...]
    waiting: tuple[teams.Waiting, ...]
    workloads: Mapping[str, int]
    findings: tuple[Finding, ...]
    notes: tuple[str, ...] = ()
    cohorts: tuple[teams.CohortRow, ...] = ()  # quota of a cohort on the cluster that is not Git's

    @property
    def drifted(self) -> tuple[drift.ObjectState, ...]:
        return tuple(o for o in self.objects if o.differs)

    @property
    def short_devices(self) -> tuple[DeviceRow, ...]:
        return tuple(r for r in self.devices if r.short > 0)

    @property
    def differs(self) -> bool:
        """The cluster does not run what Git says: objects, the manager's Configuration, or fewer devices
        than the capacity declares."""
        return bool(self.drifted or (self.manager and self.manager.differs) or self.short_devices)

    @property
    def inactive(self) -> tuple[teams.QueueState, ...]:
        return tuple(q for q in self.queues if not q.active)


def read(source: Path | None, context: str | None, *, shown: str | None = None) -> Dump:
    """The dump of --from FILE, or what the real kubectl reads with --context (get only)."""
    if source is not None:
        return read_dump(source, shown=shown if shown is not None else str(source))
    return kubectl.read_live(context)


def _labels(o: LiveObject) -> Mapping[str, str]:
    return (o.body.get("metadata") or {}).get("labels") or {}


def identify(
    dump: Dump, model: Model, cluster: str | None, root: Path, sides: dict[str, git.GitSide] | None = None
) -> str:
    """The cluster the dump is of. The pipeline's objects in it (`app.kubernetes.io/managed-by:
    gputenancy`) say so: by the `gputenancy.io/cluster` label where the overlay adds it, else by their
    names, matched against each cluster's generated/ tree. A dump that --cluster names wrongly is an
    error naming the cluster it is of. `sides`: the generated/ trees read on the way, by cluster."""
    sides = {} if sides is None else sides
    where = Origin(dump.path)
    if not dump.of_kind("Namespace"):
        raise PipelineError(
            [
                where.finding(
                    RULE,
                    "not what `kubectl get` prints for a cluster: it holds no Namespace (every cluster has "
                    f"kube-system); write it with: {kubectl.command_line()}",
                )
            ]
        )
    ours = [o for o in dump.objects if o.kind in drift.KINDS and _labels(o).get(MANAGED[0]) == MANAGED[1]]
    labelled: dict[str, LiveObject] = {}
    for o in ours:
        if _labels(o).get(CLUSTER_LABEL):
            labelled.setdefault(str(_labels(o)[CLUSTER_LABEL]), o)
    if len(labelled) > 1:
        names = ", ".join(f"{n!r} ({o.kind} {o.name} at line {o.line})" for n, o in sorted(labelled.items()))
        raise PipelineError([where.finding(RULE, f"objects of several clusters in one dump: {names}")])
    found = next(iter(labelled), None)
    if found is None and ours and (cluster is None or _fit(root, cluster, ours, sides) * 2 < len(ours)):
        fits = {c: _fit(root, c, ours, sides) for c in sorted(model.clusters)}
        best = max(fits, key=lambda c: fits[c])
        found = best if fits[best] * 2 >= len(ours) else None
        if found is None and cluster is not None:
            raise PipelineError(
                [
                    where.finding(
                        RULE,
                        f"not a dump of cluster {cluster!r}: {len(ours)} objects the pipeline rendered are "
                        f"on it and only {fits.get(cluster, 0)} of them are in generated/{cluster}/",
                    )
                ]
            )
    if cluster is not None and found is not None and found != cluster:
        o = labelled.get(found) or ours[0]
        how = f"carry {CLUSTER_LABEL}: {found}" if found in labelled else f"are those of generated/{found}/"
        raise PipelineError(
            [
                o.origin.finding(
                    RULE,
                    f"a dump of cluster {found!r}, not of {cluster!r}: the pipeline's objects in it {how} "
                    f"({o.kind} {o.name}); pass --cluster {found} or the dump of {cluster}",
                )
            ]
        )
    name = cluster or found
    if name is None:
        if len(model.clusters) == 1:
            return next(iter(model.clusters))
        raise PipelineError(
            [
                where.finding(
                    RULE,
                    "no object of the pipeline in the dump says which cluster it is of: pass --cluster "
                    f"(one of {', '.join(sorted(model.clusters))})",
                )
            ]
        )
    if name not in model.clusters:
        raise PipelineError(
            [
                where.finding(
                    RULE,
                    f"cluster {name!r} is not in overlays/ (clusters: {', '.join(sorted(model.clusters))})",
                )
            ]
        )
    return name


def _fit(root: Path, cluster: str, ours: list[LiveObject], sides: dict[str, git.GitSide]) -> int:
    """How many of the pipeline's live objects generated/<cluster>/ holds (0 without the directory)."""
    try:
        side = sides.get(cluster) or sides.setdefault(cluster, git.read(root, cluster))
    except PipelineError:
        return 0
    held = {o.key for o in side.objects}
    return sum(o.key in held for o in ours)


def expected_namespaces(model: Model, cluster: str) -> set[str]:
    """Namespaces a cluster has from outside Git by design: its tenants', Kueue's and Argo CD's."""
    record = model.clusters[cluster]
    out = {n for t in model.tenants_on(cluster) for n, _ in t.namespaces}
    out |= {record.kueue_namespace, hub.namespace(model.platform, record)}
    return out


def driver_classes(catalog: Catalog) -> set[str]:
    """DeviceClasses the catalog names but does not render: the drivers install them."""
    return {name for name, entry in catalog.classes.items() if not entry.rendered}


def build(root: Path, dump: Dump, *, cluster: str | None = None, schemas: Path | None = None) -> Status:
    model, found = engine.check_only(root, cluster)
    errors = [f for f in found if f.severity is Severity.ERROR]
    if errors:
        raise PipelineError(errors)
    return of(root, model, dump, cluster=cluster, schemas=schemas)


def of(
    root: Path, model: Model, dump: Dump, *, cluster: str | None = None, schemas: Path | None = None
) -> Status:
    sides: dict[str, git.GitSide] = {}
    name = identify(dump, model, cluster, root, sides)
    record = model.clusters[name]
    catalog = effective_catalog(model)
    side = sides.get(name) or git.read(root, name)
    crd_dir = checks.crd_dir_for(schemas, record.kueue_version)
    notes: list[str] = []
    if crd_dir is None:
        notes.append(
            "no Kueue CRDs (--schemas, $GPUTENANCY_SCHEMAS or .gputenancy-schemas/): defaults the API "
            "server writes are not filled in before comparing; `python pipeline.py schemas fetch` gets them"
        )
    objects, unread = drift.compare_objects(
        side,
        dump,
        expected_namespaces=expected_namespaces(model, name),
        driver_classes=driver_classes(catalog),
        crd_dir=crd_dir,
        tenant_namespaces={n: t.path for t in model.tenants_on(name) for n, _ in t.namespaces},
    )
    if unread:
        kinds = ", ".join(f"{n} {k}" for k, n in sorted(unread.items()))
        notes.append(f"not compared, the dump does not hold these kinds: {kinds} of {side.directory}")
    built, _ = kueueconfig.build(model, record, catalog)
    kueue = manager.state(
        name,
        side.config,
        dump,
        built if built.text == (side.config.text if side.config else None) else None,
        self_heal=side.self_heal,
    )
    if side.config is not None and built.text != side.config.text:
        notes.append(
            f"the Configuration in {side.directory} is not the one the inputs render: run `python pipeline.py "
            "check`; the manager is compared with generated/ (what Argo CD syncs)"
        )
    flavors = {
        o.name: dict((o.body.get("spec") or {}).get("nodeLabels") or {})
        for o in side.objects
        if o.kind == "ResourceFlavor"
    }
    rows, findings = devices.rows(record, catalog, dump, flavors)
    if not dump.of_kind("ResourceSlice") and record.capacity:
        notes.append("the dump holds no ResourceSlice: no DRA driver publishes devices on this cluster")
    return Status(
        name,
        dump.path,
        side.directory,
        tuple(objects),
        kueue,
        tuple(rows),
        tuple(teams.usage(dump)),
        tuple(teams.queues(dump)),
        tuple(teams.waiting(dump, catalog)),
        teams.counts(dump),
        tuple(sorted(findings)),
        (*notes, *(kueue.notes if kueue else ())),
        tuple(teams.cohorts(dump, [o.body for o in side.objects if o.kind == "ClusterQueue"])),
    )


def usage_of(
    source: Path, model: Model, cluster: str | None, root: Path
) -> tuple[dict[tuple[str, str, str, str], tuple[Quantity, Quantity, Quantity]], str]:
    """`--from FILE` of `budgets` and `report`: what each tenant uses, reserves and borrows on the
    cluster the dump is of, and that cluster's name; PipelineError when the dump is not one."""
    from gputenancy.live import teams

    dump = read(source, None)
    name = identify(dump, model, cluster, root)
    return teams.used(dump, name), name
