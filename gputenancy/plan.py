"""plan: what render would write vs what Argo CD syncs, object by object, in Kubernetes terms.

Objects are matched by (group, kind, namespace, name), never by file path. Files with identical bytes
at the same path are equal without parsing; the others are parsed, and only objects whose serialised
bytes differ go through deepdiff. Lists of mappings with unique `name`s (ClusterQueue flavors and
resources, deviceClassMappings, device requests) are compared by name, their order separately; an
embedded YAML document (the Kueue Configuration in a ConfigMap or in helm values) is compared as YAML.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml
from deepdiff import DeepDiff

from gputenancy import engine, output, report, rules
from gputenancy.findings import Finding, PipelineError, Severity
from gputenancy.objects import ObjectKey, key_of, to_yaml
from gputenancy.quantity import Quantity, QuantityError, parse

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
    capacity-overcommitted"""

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
        docs = list(yaml.load_all(data, Loader=_Loader))
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
    return objects, [f for f in files if f[2:] not in same | covered], {k: b for k, (_, b) in olds.items()}


# ------------------------------------------------------------------------------ risks, capacity


def _cluster_queues(where: str, tree: Tree) -> dict[str, dict[str, Any]]:
    found = (
        b
        for rel, d in tree.items()
        if b"ClusterQueue" in d and rel.endswith((".yaml", ".yml"))
        for b in _load(f"{where}/{rel}", d)
    )
    return {str(b["metadata"]["name"]): b for b in found if b.get("kind") == "ClusterQueue"}


def _before(cqs: Mapping[str, Mapping[str, Any]]) -> dict[tuple[str, str], Quantity]:
    total: dict[tuple[str, str], Quantity] = {}
    for cq in cqs.values():
        for group in (cq.get("spec") or {}).get("resourceGroups") or []:
            for flavor in group.get("flavors") or []:
                for res in flavor.get("resources") or []:
                    key = (str(flavor.get("name")), str(res.get("name")))
                    try:
                        total[key] = total.get(key, parse(0)) + parse(res.get("nominalQuota"))
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
                _value_change(c).removeprefix("Kueue Configuration ") for c in (named or config)[:8]
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
        cqs = _cluster_queues(f"{label}/{name}", old)
        clusters.append(
            ClusterPlan(name, tuple(objects), tuple(files), tuple(capacity_rows(result, name, cqs)))
        )
        risks += _risks(name, objects, olds, cqs)
        findings += [] if allow_delete else _refusals(name, objects, olds)
    for f in result.findings:
        if f.rule == "capacity":
            m = re.search(r"cluster '([^']+)'", f.message)
            risks.append(Risk(m.group(1) if m else "", "capacity-overcommitted", "", f.message))
    return Plan(label, tuple(clusters), tuple(risks), tuple(sorted(findings)), tuple(result.notes))


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
    from gputenancy import gitrepo

    return gitrepo.trees_at_ref(root, against, output.GENERATED)


# ------------------------------------------------------------------------------------ formats

MAX_COMMENT = 65536
_BLOCKS = " ▏▎▍▌▋▊▉█"
_COLOURS = {"+": "\033[32m", "-": "\033[31m", "~": "\033[33m", "!": "\033[1;31m"}
_SIGN = {"added": "+", "removed": "-", "changed": "~"}
_OPS = {"+": "added", "-": "removed", "~": "changed"}


def _show(value: Any, present: bool = True, limit: int = 120) -> str:
    if not present:
        return "(unset)"
    text = (
        value
        if isinstance(value, str)
        else json.dumps(value, separators=(", ", ": "), ensure_ascii=False, default=str)
    )
    text = text.replace("\n", "↵")
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _value_change(c: Change) -> str:
    return f"{c.description}: {_show(c.old, c.op != 'added')} → {_show(c.new, c.op != 'removed')}"


def change_line(o: ObjectChange, c: Change) -> str:
    """`prod ClusterQueue vision: nvidia.com/gpu nominalQuota on flavor h100: 8 → 6`"""
    return f"{o.title}: {_value_change(c)}"


def _bar(used: Quantity | None, cap: Quantity | None, width: int = 10) -> str:
    if used is None or cap is None or cap.value <= 0:
        return ""
    ratio = float(used.value / cap.value)
    eighths = round(min(ratio, 1.0) * width * 8)
    bar = ("█" * (eighths // 8) + (_BLOCKS[eighths % 8] if eighths % 8 else "")).ljust(width)
    return f"{bar} {ratio:.0%}{' over capacity' if ratio > 1 else ''}"


def _q(q: Quantity | None) -> str:
    return q.canonical() if q is not None else "-"


def _budget(row: CapacityRow) -> str:
    return _q(row.after) if row.before == row.after else f"{_q(row.before)} → {_q(row.after)}"


def summary(plan: Plan) -> str:
    if not plan.changed:
        return "no changes"
    counts = ", ".join(f"{sum(c.count(a) for c in plan.clusters)} {a}" for a in ACTIONS)
    return f"{counts} on {', '.join(c.name for c in plan.clusters if c.changed)}; {len(plan.risks)} risk(s)"


def format_text(plan: Plan, *, color: bool = False, max_lines: int | None = None) -> str:
    def paint(sign: str, text: str) -> str:
        return f"{_COLOURS[sign]}{text}\033[0m" if color else text

    lines = [f"plan against {plan.against}"]
    for c in plan.clusters:
        counts = ", ".join(f"{c.count(a)} {a}" for a in ACTIONS) + (
            f", {len(c.files)} files moved" if c.files else ""
        )
        tenants = f" (tenants: {', '.join(c.tenants)})" if c.tenants else ""
        lines.append(f"{c.name}: {counts}{tenants}" if c.changed else f"{c.name}: no changes")
        for o in c.objects:
            s = _SIGN[o.action]
            lines += [paint(s, f"  {s} {change_line(o, ch)}") for ch in o.changes] or [
                paint(s, f"  {s} {o.title} ({o.action}, {o.path})")
            ]
        lines += [paint(f[0], f"  {f[0]} {c.name} file {f[2:]}") for f in c.files]
        lines += [f"  nominal budget vs capacity on {c.name}:"] if c.changed and c.capacity else []
        for r in c.capacity if c.changed else ():
            row = f"{r.flavor} {r.resource}: {_budget(r)} of {_q(r.capacity)}"
            lines.append(f"    {row}  {_bar(r.after, r.capacity)}".rstrip())
    lines += (
        ["risks:", *(paint("!", f"  ! {r.cluster or '*'} {r.risk}: {r.message}") for r in plan.risks)]
        if plan.risks
        else []
    )
    lines.append(summary(plan))
    if max_lines is not None and len(lines) > max_lines:
        lines = [
            *lines[: max_lines - 1],
            f"… {len(lines) - max_lines + 1} more lines: run `python pipeline.py plan`",
            lines[-1],
        ]
    return "\n".join(lines) + "\n"


def _md(text: str) -> str:
    return text.replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;")


def _code(text: str) -> str:
    text = text.replace("|", "\\|")
    return f"`` {text} ``" if "`" in text else f"`{text}`"


def _details(o: ObjectChange) -> str:
    tenant = f" (tenant {_md(o.tenant)})" if o.tenant else ""
    head = f"<b>{_md(o.cluster)}</b> {_md(o.key.kind)} <code>{_md(o.title.split(' ', 2)[2])}</code>{tenant}"
    if o.action != "changed":
        return f"- **{o.action}** {head} (`{o.path}`)\n"
    rows = [
        f"| {_md(c.description)} | {_code(_show(c.old, c.op != 'added'))} | "
        f"{_code(_show(c.new, c.op != 'removed'))} |"
        for c in o.changes
    ]
    table = "\n".join(["| field | before | after |", "| --- | --- | --- |", *rows])
    return f"<details><summary>changed {head}: {len(o.changes)} field(s)</summary>\n\n{table}\n\n</details>\n"


_CUT = (
    "> **Note:** the details of {} of {} changed objects and files were cut to keep this comment under "
    "GitHub's 65,536-character limit; run `python pipeline.py plan --format text` for all of them.\n\n"
)


def format_markdown(plan: Plan, *, limit: int = MAX_COMMENT) -> str:
    """The PR comment: summary, risks, capacity and findings first (never cut); per-object details
    after, cut with a note when the comment would exceed `limit` characters."""
    head = ["## gputenancy plan", "", f"Against `{plan.against}`: **{summary(plan)}**", ""]
    head += ["| cluster | changed | added | removed | tenants |", "| --- | ---: | ---: | ---: | --- |"]
    head += [
        f"| {c.name} | {' | '.join(str(c.count(a)) for a in ACTIONS)} | {_md(', '.join(c.tenants)) or '-'} |"
        for c in plan.clusters
    ]
    if plan.risks:
        head += [
            "",
            "### ⚠️ Risks",
            "",
            *(f"- **{_md(r.cluster or 'all')}** `{r.risk}`: {_md(r.message)}" for r in plan.risks),
        ]
    for c in (c for c in plan.clusters if c.changed and c.capacity):
        head += [
            "",
            f"### Capacity on {c.name}",
            "",
            "| flavor | resource | nominal budget | capacity | use |",
        ]
        head += ["| --- | --- | ---: | ---: | --- |"]
        for r in c.capacity:
            bar = _code(_bar(r.after, r.capacity)) if r.capacity else ""
            head.append(f"| {r.flavor} | {_md(r.resource)} | {_budget(r)} | {_q(r.capacity)} | {bar} |")
    if plan.findings:
        head += ["", "### Findings", "", "```", *(f.format() for f in plan.findings), "```"]
    blocks = [_details(o) for c in plan.clusters for o in c.objects]
    blocks += [f"- **{_OPS[f[0]]}** <b>{c.name}</b> file `{f[2:]}`\n" for c in plan.clusters for f in c.files]
    text = "\n".join(head) + "\n" + ("\n### Changes\n\n" if blocks else "")
    budget = limit - len(text) - len(_CUT) - 40
    shown: list[str] = []
    for block in blocks:
        if len(block) + 1 > budget:
            text += _CUT.format(len(blocks) - len(shown), len(blocks))
            break
        shown.append(block)
        budget -= len(block) + 1
    return text + "\n".join(shown)


def _json_fields(fields: list[tuple[str, Any]]) -> Any:
    """dataclasses.asdict's factory: Quantities as canonical strings, Named segments as {name} / {order}."""
    d = dict(fields)
    if d.keys() == {"value", "format"}:
        return Quantity(d["value"], d["format"]).canonical()
    if d.keys() == {"name", "order"}:
        return {"order": True} if d["order"] else {"name": d["name"]}
    return d


def _cluster_json(c: ClusterPlan) -> dict[str, Any]:
    data: dict[str, Any] = dataclasses.asdict(c, dict_factory=_json_fields)
    data["files"] = [{"op": _OPS[f[0]], "path": f[2:]} for f in c.files]
    return {
        **data,
        "changed": c.changed,
        "counts": {a: c.count(a) for a in ACTIONS},
        "tenants": list(c.tenants),
    }


def to_json(plan: Plan) -> dict[str, Any]:
    """The JSON document (schema `gputenancy.plan/v1`, documented in README.md)."""
    return {
        "schema": "gputenancy.plan/v1",
        "against": plan.against,
        "changed": plan.changed,
        "summary": summary(plan),
        "clusters": [_cluster_json(c) for c in plan.clusters],
        "risks": [dataclasses.asdict(r) for r in plan.risks],
        "findings": [{**dataclasses.asdict(f), "severity": f.severity.value} for f in plan.findings],
        "notes": list(plan.notes),
    }


def render(plan: Plan, fmt: str, *, color: bool = False) -> str:
    if fmt == "json":
        return json.dumps(to_json(plan), indent=2, ensure_ascii=False, default=str) + "\n"
    return format_markdown(plan) if fmt == "markdown" else format_text(plan, color=color)


def make(
    root: Path, *, cluster: str | None, against: str | None, schemas: Path | None, allow_delete: bool
) -> tuple[engine.Result, Plan | None]:
    """Render in memory and compare; the plan is None when the render failed (see result.findings)."""
    result = engine.run(root, cluster=cluster, schemas=schemas)
    if result.failed:
        return result, None
    trees, label = read_against(root, against)
    return result, build(result, trees, label=label, cluster=cluster, allow_delete=allow_delete)


def command(
    root: Path,
    *,
    cluster: str | None,
    against: str | None,
    schemas: Path | None,
    fmt: str,
    output_file: Path | None,
    allow_delete: bool,
    color: bool,
    findings_format: str,
    emit: Callable[[str], Any],
) -> int:
    """`pipeline.py plan`: 0 no change, 2 changes, 1 errors (findings printed as for validate)."""
    result, plan = make(root, cluster=cluster, against=against, schemas=schemas, allow_delete=allow_delete)
    if plan is None:
        found = list(result.findings)
        text = report.format_findings(found, "json" if fmt == "json" else findings_format, result.notes)
        if output_file is not None:
            listed = report.format_findings(found, "text")
            failed = f"## gputenancy plan\n\n**validation failed**\n\n```\n{listed}```\n"
            output_file.write_text(failed if fmt == "markdown" else text, encoding="utf-8")
        emit(text)
        return 1
    text = render(plan, fmt, color=color and output_file is None)
    if output_file is not None:
        output_file.write_text(text, encoding="utf-8")
    emit(f"plan written to {output_file}: {summary(plan)}\n" if output_file is not None else text)
    if fmt != "json" or output_file is not None:  # findings and notes as validate prints them
        emit(report.format_findings(list(plan.findings), findings_format, plan.notes))
    return 1 if plan.failed else 2 if plan.changed else 0
