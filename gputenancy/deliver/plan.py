"""plan: what render would write vs what Argo CD syncs, object by object, in Kubernetes terms.

Objects are matched by (group, kind, namespace, name), never by file path. Files with identical bytes
at the same path are equal without parsing; the others are parsed, and only objects whose serialised
bytes differ go through deepdiff. Lists of mappings with unique `name`s (ClusterQueue flavors and
resources, deviceClassMappings, device requests) are compared by name, their order separately; an
embedded YAML document (the Kueue Configuration in a ConfigMap or in helm values) is compared as YAML.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from gputenancy import engine, fastyaml
from gputenancy.build import output
from gputenancy.deliver import budgets
from gputenancy.deliver import risks as more_risks
from gputenancy.findings import Finding, PipelineError, Severity
from gputenancy.inputs.quantity import Quantity, QuantityError, parse
from gputenancy.objects import ObjectKey, key_of, to_yaml
from gputenancy.policy import rules

Tree = Mapping[str, bytes]
Trees = Mapping[str, Tree]
Segment = Any  # a mapping key (str), a list index (int) or a Named list item
TENANT_LABEL = "gputenancy.io/tenant"
DRAINED = "HoldAndDrain"
CONFIG_PATHS = (
    ("data", "controller_manager_config.yaml"),
    ("spec", "source", "helm", "valuesObject", "managerConfig", "controllerManagerConfigYaml"),
)
ACTIONS = ("changed", "added", "removed")
_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@dataclasses.dataclass(frozen=True, order=True)
class Named:
    """A list item keyed by its `name` (with `order`: the order of the names in that list)."""

    name: str
    order: bool = False


ORDER = Named("", order=True)


@dataclasses.dataclass(frozen=True)
class Change:
    """One field of one object: `op` changed | added | removed; `old`/`new` are None when absent."""

    op: str
    path: tuple[Segment, ...]
    field: str
    description: str
    old: Any
    new: Any


@dataclasses.dataclass(frozen=True)
class ObjectChange:
    cluster: str
    action: str  # added | removed | changed
    key: ObjectKey
    path: str  # file under generated/<cluster>/ (the synced side's for removed objects)
    tenant: str  # the gputenancy.io/tenant label, "" for platform objects
    changes: tuple[Change, ...] = ()

    @property
    def title(self) -> str:
        ns = f"{self.key.namespace}/" if self.key.namespace else ""
        return f"{self.cluster} {self.key.kind} {ns}{self.key.name}"


@dataclasses.dataclass(frozen=True)
class Risk:
    """risk: queue-deleted | localqueue-replaced | claim-template-replaced | kueue-config-changed |
    capacity-overcommitted | queue-draining | localqueue-renamed | namespace-removed (deliver/risks.py)"""

    cluster: str
    risk: str
    subject: str
    message: str


@dataclasses.dataclass(frozen=True)
class CapacityRow:
    flavor: str
    resource: str
    before: Quantity | None  # sum of nominalQuota in the synced ClusterQueues
    after: Quantity | None  # sum of nominal budgets in the model
    capacity: Quantity | None


@dataclasses.dataclass(frozen=True)
class ClusterPlan:
    name: str
    objects: tuple[ObjectChange, ...]
    files: tuple[str, ...]  # `+ path`, `- path`, `~ path`: files that differ without an object change
    capacity: tuple[CapacityRow, ...]

    def count(self, action: str) -> int:
        return sum(o.action == action for o in self.objects)

    @property
    def tenants(self) -> tuple[str, ...]:
        return tuple(sorted({o.tenant for o in self.objects if o.tenant}))

    @property
    def changed(self) -> bool:
        return bool(self.objects or self.files)


@dataclasses.dataclass(frozen=True)
class Plan:
    against: str
    clusters: tuple[ClusterPlan, ...]
    risks: tuple[Risk, ...]
    findings: tuple[Finding, ...]  # engine warnings, and errors when the plan is refused
    notes: tuple[str, ...] = ()
    grants: tuple[budgets.Grant, ...] = ()  # the effective budgets of the tenants the plan changes

    @property
    def changed(self) -> bool:
        return any(c.changed for c in self.clusters)

    @property
    def failed(self) -> bool:
        return any(f.severity is Severity.ERROR for f in self.findings)


# ------------------------------------------------------------------------------------ comparing


def _normalise(value: Any, key: Any = None) -> Any:
    """Named lists -> {Named: item, ..., ORDER: 'a, b'}; embedded YAML documents -> their mapping."""
    if isinstance(value, Mapping):
        return {k: _normalise(v, k) for k, v in value.items()}
    if isinstance(value, list):
        items = [_normalise(v) for v in value]
        names = [str(v["name"]) for v in value if isinstance(v, Mapping) and isinstance(v.get("name"), str)]
        if value and len(names) == len(value) == len(set(names)):
            return {Named(n): item for n, item in zip(names, items, strict=True)} | {ORDER: ", ".join(names)}
        return items
    if isinstance(value, str) and "\n" in value and re.search(r"(\.ya?ml|Yaml)$", str(key)):
        try:
            doc = yaml.load(value, Loader=_Loader)  # noqa: S506 - the safe loader
        except yaml.YAMLError:
            return value
        return _normalise(doc) if isinstance(doc, Mapping) else value
    return value


def _plain(value: Any) -> Any:
    if isinstance(value, Mapping):
        if any(isinstance(k, Named) for k in value):
            return [_plain(v) for k, v in value.items() if k != ORDER]
        return {str(k): _plain(v) for k, v in value.items()}
    return [_plain(v) for v in value] if isinstance(value, list) else value


def _get(body: Any, path: Sequence[Segment]) -> Any:
    for seg in path:
        try:
            body = body[seg]
        except (KeyError, IndexError, TypeError):
            return None
    return body


def field_path(path: Sequence[Segment]) -> str:
    """spec.resourceGroups[0].flavors[name=h100].resources[name=cpu].nominalQuota"""
    out = ""
    for seg in path:
        if isinstance(seg, Named):
            out += "[order]" if seg.order else f"[name={seg.name}]"
        elif isinstance(seg, int):
            out += f"[{seg}]"
        elif re.fullmatch(r"[A-Za-z_][A-Za-z0-9_-]*", str(seg)):
            out += f".{seg}" if out else str(seg)
        else:
            out += f"[{json.dumps(str(seg))}]"
    return out


def describe(kind: str, path: Sequence[Segment]) -> str:
    """A field in Kubernetes terms, e.g. `nvidia.com/gpu nominalQuota on flavor h100`."""
    p = list(path)
    for prefix in CONFIG_PATHS:
        if tuple(p[: len(prefix)]) == prefix:
            rest = p[len(prefix) :]
            if (
                rest[:2] == ["resources", "deviceClassMappings"]
                and len(rest) > 2
                and isinstance(rest[2], Named)
            ):
                tail = f" {field_path(rest[3:])}" if rest[3:] else ""
                what = (
                    "deviceClassMappings order"
                    if rest[2].order
                    else f"deviceClassMapping {rest[2].name}{tail}"
                )
            elif len(rest) == 2 and rest[0] == "featureGates":
                what = f"feature gate {rest[1]}"
            else:
                what = field_path(rest) or "(whole document)"
            return f"Kueue Configuration {what}"
    if (
        kind == "ClusterQueue"
        and p[:2] == ["spec", "resourceGroups"]
        and p[3:4] == ["flavors"]
        and len(p) > 4
    ):
        flavor, res = p[4], p[6] if len(p) > 6 and p[5] == "resources" else None
        if not isinstance(flavor, Named):
            return field_path(p)
        if flavor.order:
            return "flavor order"
        if isinstance(res, Named):
            what = "resource order" if res.order else f"{res.name} {field_path(p[7:])}".rstrip()
            return f"{what} on flavor {flavor.name}"
        if len(p) == 5:
            return f"flavor {flavor.name}"
    return field_path(p)


def _scalars(value: Any) -> bool:
    return isinstance(value, list) and not any(isinstance(x, Mapping | list) for x in value)


def _reordered(old: Any, new: Any) -> bool:
    a, b = str(old).split(", "), str(new).split(", ")
    return [n for n in a if n in b] != [n for n in b if n in a]


def _leaves(value: Any, path: tuple[Segment, ...] = ()) -> list[tuple[Segment, ...]]:
    if isinstance(value, Mapping) and value and not any(isinstance(k, Named) for k in value):
        return [leaf for k, v in value.items() for leaf in _leaves(v, (*path, k))]
    return [path]


def _changes(kind: str, old: Any, new: Any) -> list[Change]:
    """Field changes; lists of scalars as one value, a mapping added or removed as its leaves."""
    from deepdiff import DeepDiff  # imported only when two objects differ: it costs ~0.1 s to import

    a, b = _normalise(old), _normalise(new)
    found: dict[tuple[Segment, ...], Change] = {}
    for report_type, levels in DeepDiff(a, b, view="tree").items():
        for level in levels:
            path = tuple(level.path(output_format="list"))
            op = "added" if "added" in report_type else "removed" if "removed" in report_type else "changed"
            if (
                path
                and isinstance(path[-1], int)
                and (_scalars(_get(a, path[:-1])) or _scalars(_get(b, path[:-1])))
            ):
                path = path[:-1]
                op = op if _get(a, path) is None or _get(b, path) is None else "changed"
            if path and path[-1] == ORDER and not _reordered(_get(a, path), _get(b, path)):
                continue
            leaves = _leaves(_get(b if op == "added" else a, path)) if op != "changed" else [()]
            for sub in leaves if path and isinstance(path[-1], str) and len(leaves) <= 20 else [()]:
                at = (*path, *sub)
                found[at] = Change(
                    op, at, field_path(at), describe(kind, at), _plain(_get(a, at)), _plain(_get(b, at))
                )
    return sorted(found.values(), key=lambda c: c.field)


def _unreadable(where: str, message: str, line: int = 0, col: int = 0) -> PipelineError:
    return PipelineError([Finding(where, line, col, Severity.ERROR, "plan-read", message)])


def _load(where: str, data: bytes) -> list[dict[str, Any]]:
    try:
        docs = fastyaml.load_all(data.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise _unreadable(where, f"not UTF-8: {exc}") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        raise _unreadable(
            where, f"not valid YAML: {exc}", *((mark.line + 1, mark.column + 1) if mark else ())
        ) from None
    return [
        d for d in docs if isinstance(d, dict) and d.get("kind") and (d.get("metadata") or {}).get("name")
    ]


def _index(where: str, tree: Tree) -> dict[ObjectKey, tuple[str, dict[str, Any]]]:
    out: dict[ObjectKey, tuple[str, dict[str, Any]]] = {}
    for rel, data in tree.items():
        for body in _load(f"{where}/{rel}", data) if rel.endswith((".yaml", ".yml")) else ():
            if key_of(body) in out:
                raise _unreadable(f"{where}/{rel}", f"{key_of(body)} is also in {out[key_of(body)][0]}")
            out[key_of(body)] = (rel, body)
    return out


def _tenant(*bodies: Mapping[str, Any] | None) -> str:
    for body in bodies:
        labels = ((body or {}).get("metadata") or {}).get("labels") or {}
        if labels.get(TENANT_LABEL):
            return str(labels[TENANT_LABEL])
    return ""


def compare(
    cluster: str, new: Tree, old: Tree, where: str = "against"
) -> tuple[list[ObjectChange], list[str], dict[ObjectKey, dict[str, Any]]]:
    """Object changes, the files that differ without an object change, the synced side's parsed bodies."""
    same = {p for p in new if old.get(p) == new[p]}
    olds = _index(f"{where}/{cluster}", {p: d for p, d in old.items() if p not in same})
    news = _index(f"generated/{cluster}", {p: d for p, d in new.items() if p not in same})
    objects: list[ObjectChange] = []
    covered: set[str] = set()
    for key in sorted(olds.keys() | news.keys(), key=lambda k: (k.kind, k.namespace, k.name, k.group)):
        (opath, obody), (npath, nbody) = olds.get(key, ("", None)), news.get(key, ("", None))
        if obody is None or nbody is None:
            action = "added" if obody is None else "removed"
            objects.append(ObjectChange(cluster, action, key, npath or opath, _tenant(nbody, obody)))
        elif to_yaml(obody) != to_yaml(nbody) and (changes := _changes(key.kind, obody, nbody)):
            objects.append(
                ObjectChange(cluster, "changed", key, npath, _tenant(nbody, obody), tuple(changes))
            )
        else:
            continue  # the same object: a moved or re-serialised file shows in `files`
        covered.update(p for p in (opath, npath) if p)
    files = [
        f"{'+' if p not in old else '-' if p not in new else '~'} {p}"
        for p in sorted(old.keys() | new.keys())
    ]
    listed = same | covered
    return objects, [f for f in files if f[2:] not in listed], {k: b for k, (_, b) in olds.items()}


# ------------------------------------------------------------------------------ risks, capacity


def _cluster_queues(
    where: str, tree: Tree, new: Tree, rendered: Mapping[str, Mapping[str, Any]]
) -> dict[str, dict[str, Any]]:
    """The synced ClusterQueues by name. A file whose bytes equal the new tree's is the rendered object
    (`rendered`, by path) and is not parsed again."""
    found: list[Mapping[str, Any]] = []
    for rel, d in tree.items():
        if b"ClusterQueue" not in d or not rel.endswith((".yaml", ".yml")):
            continue
        same = rendered.get(rel) if new.get(rel) == d else None
        found += [same] if same is not None else _load(f"{where}/{rel}", d)
    return {str(b["metadata"]["name"]): dict(b) for b in found if b.get("kind") == "ClusterQueue"}


def _before(cqs: Mapping[str, Mapping[str, Any]]) -> dict[tuple[str, str], Quantity]:
    """Sum of nominalQuota per (flavor, resource). A fleet repeats a few dozen quota values
    thousands of times, so each distinct value is parsed once (by type: 1 and True differ)."""
    quantity = functools.lru_cache(maxsize=None, typed=True)(parse)
    total: dict[tuple[str, str], Quantity] = {}
    for cq in cqs.values():
        for group in (cq.get("spec") or {}).get("resourceGroups") or []:
            for flavor in group.get("flavors") or []:
                for res in flavor.get("resources") or []:
                    key = (str(flavor.get("name")), str(res.get("name")))
                    try:  # TypeError: a value that is not a quantity at all (a list, say)
                        total[key] = total.get(key, parse(0)) + quantity(res.get("nominalQuota"))
                    except (QuantityError, TypeError):
                        continue
    return total


def capacity_rows(
    result: engine.Result, cluster: str, synced: Mapping[str, Mapping[str, Any]]
) -> list[CapacityRow]:
    """Per flavor and resource: synced nominal quota (before), model budgets (after), capacity."""
    before, after, have = _before(synced), {}, {}
    record = result.model.clusters.get(cluster)
    if record is not None and cluster in result.clusters:
        catalog = rules.effective_catalog(result.model)
        after = rules.usage_by_flavor(result.model, record, catalog)
        have = {k: v[0] for k, v in rules.capacity_by_flavor(record, catalog).items()}
    rows = [
        CapacityRow(*k, before.get(k), after.get(k), have.get(k))
        for k in sorted(before.keys() | after.keys() | have.keys())
    ]
    return [r for r in rows if any(q is not None and q.value for q in (r.before, r.after, r.capacity))]


def _stop_policy(body: Mapping[str, Any] | None) -> str:
    return str(((body or {}).get("spec") or {}).get("stopPolicy", "None"))


_DRAINED = "it was drained (synced stopPolicy: HoldAndDrain)"
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


def _risks(
    cluster: str, objects: Sequence[ObjectChange], olds: Mapping[ObjectKey, Any], cqs: Mapping[str, Any]
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
            out.append(
                Risk(
                    cluster,
                    "queue-deleted",
                    subject,
                    f"{subject} is deleted: jobs lose their queue; {_DRAINED if drained else _DRAIN_FIRST}",
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


def _refusals(cluster: str, objects: Sequence[ObjectChange], olds: Mapping[ObjectKey, Any]) -> list[Finding]:
    out = []
    for o in objects:
        policy = _stop_policy(olds.get(o.key))
        if o.action == "removed" and o.key.kind == "ClusterQueue" and policy != DRAINED:
            tenant = o.tenant or o.key.name
            message = _REMOVAL.format(tenant=tenant, name=o.key.name, cluster=cluster, policy=policy)
            out.append(Finding(f"tenants/{tenant}.yaml", 0, 0, Severity.ERROR, "tenant-removal", message))
    return out


def build(
    result: engine.Result,
    against: Trees,
    *,
    label: str,
    cluster: str | None = None,
    allow_delete: bool = False,
) -> Plan:
    """The plan from an engine result that did not fail and the synced trees ({cluster: tree})."""
    names = sorted(set(result.clusters) | {n for n in against if cluster in (None, n)})
    clusters: list[ClusterPlan] = []
    risks: list[Risk] = []
    findings = [f for f in result.findings if f.severity is not Severity.ERROR]
    for name in names:
        old = against.get(name, {})
        objects, files, olds = compare(
            name, result.clusters[name].tree if name in result.clusters else {}, old, label
        )
        new_tree = result.clusters[name].tree if name in result.clusters else {}
        rendered = {
            output.object_path(o): o.body
            for o in (result.clusters[name].objects if name in result.clusters else ())
            if str(o.body.get("kind", "")) == "ClusterQueue"  # o.key.kind, without an ObjectKey per object
        }
        cqs = _cluster_queues(f"{label}/{name}", old, new_tree, rendered)
        clusters.append(
            ClusterPlan(name, tuple(objects), tuple(files), tuple(capacity_rows(result, name, cqs)))
        )
        extra, replaced = more_risks.more(name, objects, olds)
        risks += [r for r in _risks(name, objects, olds, cqs) if r.subject not in replaced]
        risks += [Risk(name, *r) for r in extra]
        findings += [] if allow_delete else _refusals(name, objects, olds)
    for f in result.findings:
        if f.rule == "capacity":
            m = re.search(r"cluster '([^']+)'", f.message)
            risks.append(Risk(m.group(1) if m else "", "capacity-overcommitted", "", f.message))
    grants = budgets.grants_for(result.model, {c.name: c.tenants for c in clusters})
    return Plan(label, tuple(clusters), tuple(risks), tuple(sorted(findings)), tuple(result.notes), grants)


def read_against(root: Path, against: str | None) -> tuple[dict[str, dict[str, bytes]], str]:
    """The synced trees: generated/ of the work tree, a directory of <cluster>/ trees, or generated/
    at a git ref of the root's repository."""
    directory = root / output.GENERATED if against is None else Path(against)
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


def make(
    root: Path, *, cluster: str | None, against: str | None, schemas: Path | None, allow_delete: bool
) -> tuple[engine.Result, Plan | None]:
    """Render in memory and compare; the plan is None when the render failed (see result.findings)."""
    result = engine.run(root, cluster=cluster, schemas=schemas)
    if result.failed:
        return result, None
    trees, label = read_against(root, against)
    return result, build(result, trees, label=label, cluster=cluster, allow_delete=allow_delete)
