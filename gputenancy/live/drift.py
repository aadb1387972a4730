"""What Argo CD would change now: each object of generated/<cluster>/ against the live one, both
normalised as `gputenancy.cluster.normalise` does (server-owned fields and API defaults removed from the
comparison), and the objects of the pipeline's kinds on the cluster that Git does not hold.

States: `in-sync`; `changed` (fields, live -> Git, with the field managers that set the live value);
`missing` (Argo CD creates it); `adopted` (Git holds it and the cluster has one of that name that Argo CD
did not apply: its next sync takes it over, writing Git's fields over it); `extra` (on the cluster, not in
Git: Argo CD leaves it alone unless it applied it before, then `prune` deletes it). Objects a cluster
has from outside Git by design are not differences: namespaces of tenants and of the system, the
ResourceSlices the DRA drivers publish, the DeviceClasses of drivers the platform's catalog names.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from gputenancy.cluster.compare import FieldDiff, compare
from gputenancy.cluster.dump import POLICY_KINDS, Dump, LiveObject
from gputenancy.common.findings import Origin, PipelineError
from gputenancy.inputs.source import load_text
from gputenancy.live import owners
from gputenancy.live.git import GitObject, GitSide

KINDS = POLICY_KINDS
"""The kinds the pipeline renders onto a cluster that the dump holds: on the cluster and not in Git,
these are differences (workloads, claims and slices are the cluster's own)."""
SYSTEM_NAMESPACES = frozenset({"default", "kube-system", "kube-public", "kube-node-lease"})
TRACKING = ("argocd.argoproj.io/tracking-id", "app.kubernetes.io/instance")


@dataclasses.dataclass(frozen=True)
class FieldChange:
    """One field Argo CD would write: `live` -> `git`, the managers owning the live value, and where the
    Git value is (the generated file's line)."""

    path: str
    live: Any
    git: Any
    managers: tuple[owners.Manager, ...]
    origin: Origin

    @property
    def by(self) -> str:
        return ", ".join(m.shown() for m in self.managers) or "no field manager recorded"

    @property
    def by_hand(self) -> bool:
        return any(m.name != owners.ARGOCD for m in self.managers)


@dataclasses.dataclass(frozen=True)
class ObjectState:
    kind: str
    namespace: str
    name: str
    state: str  # in-sync | changed | missing | adopted | extra
    origin: Origin  # the generated file, or the dump's line for an object Git does not hold
    changes: tuple[FieldChange, ...] = ()
    managers: tuple[str, ...] = ()  # of the live object
    argocd: str = ""  # what Argo CD does with it
    source: str = ""  # the input it was rendered from

    @property
    def title(self) -> str:
        return f"{self.kind} {self.namespace + '/' if self.namespace else ''}{self.name}"

    @property
    def differs(self) -> bool:
        return self.state != "in-sync"


def compare_objects(
    git: GitSide,
    dump: Dump,
    *,
    expected_namespaces: set[str],
    driver_classes: set[str],
    crd_dir: Path | None,
    tenant_namespaces: Mapping[str, str] | None = None,
) -> tuple[list[ObjectState], dict[str, int]]:
    """Every Git object of a kind the dump was read for, and every live object Git lacks; and the kinds
    of Git's objects the dump does not hold (not compared), with their counts. `tenant_namespaces`
    (namespace -> tenant file): a namespace of a tenant missing on the cluster is a difference too."""
    live = {o.key: o for o in dump.objects}
    read = {o.kind for o in dump.objects} | set(KINDS)
    out: list[ObjectState] = []
    unread: dict[str, int] = {}
    for ns, source in sorted((tenant_namespaces or {}).items()):
        if ("Namespace", "", ns) not in live and any(g.namespace == ns for g in git.objects):
            out.append(
                ObjectState(
                    "Namespace",
                    "",
                    ns,
                    "missing",
                    Origin(source, 1, 1),
                    argocd="does not create it (its Applications sync with CreateNamespace=false): create it, "
                    "or the tenant's objects in it fail to apply",
                    source=source,
                )
            )
    for g in git.objects:
        if g.kind not in read:
            unread[g.kind] = unread.get(g.kind, 0) + 1
            continue
        found = live.get(g.key)
        if found is None:
            out.append(
                ObjectState(*g.key, "missing", Origin(g.file, 1, 1), argocd="creates it", source=g.source)
            )
            continue
        out.append(_compared(g, found, crd_dir))
    held = {g.key for g in git.objects}
    for o in dump.objects:
        if o.key in held:
            continue
        if o.kind in KINDS and not (o.kind == "DeviceClass" and o.name in driver_classes):
            out.append(_extra(o))
        elif o.kind == "Namespace" and o.name not in expected_namespaces and o.name not in SYSTEM_NAMESPACES:
            out.append(_extra(o, "no tenant's namespace and not the system's"))
    return sorted(
        out,
        key=lambda s: (
            s.state == "in-sync",
            KINDS.index(s.kind) if s.kind in KINDS else -1,
            s.namespace,
            s.name,
        ),
    ), unread


def _compared(g: GitObject, live: LiveObject, crd_dir: Path | None) -> ObjectState:
    diffs = compare(live.body, g.body, crd_dir=crd_dir)
    managers = owners.names(live.body)
    if owners.ARGOCD not in managers:
        return ObjectState(
            *g.key,
            "adopted",
            Origin(g.file, 1, 1),
            _changes(g, live, diffs),
            managers,
            "adopts it at its next sync: it was not applied by Argo CD (field managers: "
            f"{', '.join(managers) or 'none recorded'}); server-side apply writes Git's fields over it",
            g.source,
        )
    if not diffs:
        return ObjectState(*g.key, "in-sync", Origin(g.file, 1, 1), managers=managers, source=g.source)
    return ObjectState(
        *g.key,
        "changed",
        Origin(g.file, 1, 1),
        _changes(g, live, diffs),
        managers,
        "writes Git's values",
        g.source,
    )


def _changes(g: GitObject, live: LiveObject, diffs: Sequence[FieldDiff]) -> tuple[FieldChange, ...]:
    if not diffs:
        return ()
    try:
        doc = load_text(g.data, g.file) if g.data else None
    except PipelineError:  # the line is a convenience: the object was read once already
        doc = None
    out = []
    for d in diffs:
        walk = owners.steps(d.path, g.body, live.body)
        keys = tuple(s[1] for s in walk)
        origin = doc.origin(*keys) if doc is not None else Origin(g.file, 1, 1)
        out.append(
            FieldChange(d.path, d.live, d.rendered, owners.owners_of(live.body, d.path, g.body), origin)
        )
    return tuple(out)


def _extra(o: LiveObject, why: str = "") -> ObjectState:
    managers = owners.names(o.body)
    meta = o.body.get("metadata") or {}
    tracked = any(k in (meta.get("annotations") or {}) or k in (meta.get("labels") or {}) for k in TRACKING)
    if tracked or owners.ARGOCD in managers:
        what = "prunes it at its next sync (it applied it before: prune is on in the pipeline's Applications)"
    else:
        what = f"leaves it alone (not applied by Argo CD: field managers {', '.join(managers) or 'none recorded'})"
    return ObjectState(
        o.kind, o.namespace, o.name, "extra", o.origin, (), managers, what + (f"; {why}" if why else "")
    )
