"""Cluster renames: an overlay moved (`git mv overlays/lab overlays/dev`) with the same destination and
the same objects is planned as a rename, not as a deletion and an addition.

A directory that disappears from the deploy branch while another appears is a rename when
- both reach the same Argo CD destination (the old one read from the synced tree: the `destination`
  of its `gputenancy-<old>` Application, or of `kueue-<old>`), and
- every object the cluster receives is the same, once the name of the cluster is taken out of the
  labels and annotations that carry it, and the Kueue install Application has the same spec (so the
  same Configuration: the manager does not restart).

The hub then deletes `gputenancy-<old>` and `kueue-<old>` (they carry no resources finalizer, so
nothing on the cluster is deleted) and creates the new ones, which adopt the same objects: nothing is
drained and no queue is deleted. The plan keeps both clusters (the old directory is still removed from
the deploy branch) but drops the risks and refusals of a removal for the old one.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gputenancy.deliver.objectdiff import Tree, load_objects
from gputenancy.policy import destinations
from gputenancy.render import hub

CLUSTER_ANNOTATIONS = ("gputenancy.io/source",)  # overlays/<cluster>/cluster.yaml


def old_destination(name: str, tree: Tree) -> dict[str, str] | None:
    """The destination the synced tree of cluster `name` was delivered to, when it says."""
    found: dict[str, dict[str, str]] = {}
    for rel, data in tree.items():
        if "application/" not in rel or not rel.endswith(".yaml"):
            continue
        for body in load_objects(rel, data):
            app = str(body["metadata"]["name"])
            if body.get("kind") == "Application" and app in (f"{hub.SPOKE_PREFIX}{name}", f"kueue-{name}"):
                dest = dict((body.get("spec") or {}).get("destination") or {})
                dest.pop("namespace", None)
                found[app] = {k: str(v) for k, v in dest.items() if v}
    return found.get(f"{hub.SPOKE_PREFIX}{name}") or found.get(f"kueue-{name}")


def _normal(name: str, tree: Tree) -> dict[tuple[str, str, str], Any]:
    """The cluster's objects by (kind, namespace, name), without what names the cluster: its label,
    its source annotation, the hub Applications' names and labels."""
    out: dict[tuple[str, str, str], Any] = {}
    for rel, data in tree.items():
        for body in load_objects(rel, data):
            meta = dict(body.get("metadata") or {})
            labels = {k: v for k, v in (meta.get("labels") or {}).items() if k != hub.CLUSTER_LABEL}
            notes = {k: v for k, v in (meta.get("annotations") or {}).items() if k not in CLUSTER_ANNOTATIONS}
            key_name = str(meta.get("name", ""))
            if body.get("apiVersion", "").startswith("argoproj.io/"):
                key_name = key_name.replace(name, "<cluster>")
                spec = dict(body.get("spec") or {})
                source = dict(spec.get("source") or {})
                if "path" in source and str(source["path"]).endswith(f"/{name}"):
                    source["path"] = str(source["path"])[: -len(name)] + "<cluster>"
                spec["source"] = source
                body = {**body, "spec": spec}
            meta.update(labels=labels, annotations=notes, name=key_name)
            out[(str(body.get("kind")), str(meta.get("namespace", "")), key_name)] = {
                **body,
                "metadata": meta,
            }
    return out


def renames(
    new: Mapping[str, Tree], old: Mapping[str, Tree], new_destinations: Mapping[str, dict[str, str]]
) -> dict[str, str]:
    """{new cluster: old cluster} for every added cluster that is a removed one under another name."""
    added = sorted(set(new) - set(old))
    removed = sorted(set(old) - set(new))
    out: dict[str, str] = {}
    for a in added:
        dest = new_destinations.get(a)
        if dest is None:
            continue
        for r in removed:
            if r in out.values():
                continue
            was = old_destination(r, old[r])
            if was is None or destinations.target(was) != destinations.target(dest):
                continue
            if _normal(a, new[a]) == _normal(r, old[r]):
                out[a] = r
                break
    return out


def message(old: str, new: str, dest: Mapping[str, str] | None) -> str:
    where = destinations.shown(dict(dest)) if dest else "the same destination"
    return (
        f"cluster {old!r} is renamed {new!r} ({where}, the same objects): the hub deletes "
        f"{hub.SPOKE_PREFIX}{old} and kueue-{old} without cascading (nothing on the cluster is deleted) "
        f"and creates {hub.SPOKE_PREFIX}{new} and kueue-{new}, which adopt the same objects; nothing is "
        "drained and Kueue does not restart (docs/argocd.md, Rename a cluster)"
    )


def retargeted(name: str, old: Tree, dest: Mapping[str, str] | None) -> str | None:
    """The risk message when cluster `name` keeps its directory but its destination changes."""
    was = old_destination(name, old)
    if not was or not dest or destinations.target(was) == destinations.target(dict(dest)):
        return None
    return (
        f"cluster {name!r} is now delivered to {destinations.shown(dict(dest))} (was {destinations.shown(was)}): "
        f"{hub.SPOKE_PREFIX}{name} and kueue-{name} are retargeted, the new destination receives Kueue and "
        "every object, and what was applied at the old one stays there (nothing cascades)"
    )
