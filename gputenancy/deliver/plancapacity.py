"""The plan's capacity table: per cluster, flavor and quota resource, the nominal quota Argo CD has
synced (ClusterQueues and Cohorts) before the change and the budgets after it, against the capacity
(before and after, when the inputs at the base are known)."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Mapping
from typing import Any

from gputenancy import engine
from gputenancy.assemble import output
from gputenancy.deliver.objectdiff import Tree, load_objects
from gputenancy.inputs.quantity import ZERO, Quantity, QuantityError, parse
from gputenancy.inputs.spec import Model
from gputenancy.policy import hami
from gputenancy.policy.capacity import capacity_by_flavor, usage_by_flavor
from gputenancy.policy.catalog import effective_catalog


@dataclasses.dataclass(frozen=True)
class CapacityRow:
    flavor: str
    resource: str
    before: Quantity | None  # sum of nominalQuota in the synced ClusterQueues and Cohorts
    after: Quantity | None  # sum of nominal budgets in the model
    capacity: Quantity | None
    unit: str = ""  # "MiB" or "percent" for HAMi memory and cores quotas (shown in GiB and percent)
    capacity_before: Quantity | None = None  # in the inputs at the base of the change (when known)
    known_before: bool = False  # the inputs before were read: capacity_before is meaningful

    @property
    def capacity_changed(self) -> bool:
        return self.known_before and self.capacity_before != self.capacity

    @property
    def headroom_before(self) -> Quantity | None:
        if self.capacity_before is None:
            return None
        return self.capacity_before - (self.before if self.before is not None else ZERO)

    @property
    def headroom(self) -> Quantity | None:
        if self.capacity is None:
            return None
        return self.capacity - (self.after if self.after is not None else ZERO)


def cluster_queues(
    where: str, tree: Tree, new: Tree, rendered: Mapping[str, Mapping[str, Any]]
) -> dict[str, dict[str, Any]]:
    """The synced ClusterQueues by name, and the Cohorts (their own quota counts toward the nominal
    total) as `cohort/<name>`. A file whose bytes equal the new tree's is the rendered object
    (`rendered`, by path) and is not parsed again."""
    found: list[Mapping[str, Any]] = []
    for rel, d in tree.items():
        if (b"ClusterQueue" not in d and b"Cohort" not in d) or not rel.endswith((".yaml", ".yml")):
            continue
        same = rendered.get(rel) if new.get(rel) == d else None
        found += [same] if same is not None else load_objects(f"{where}/{rel}", d)
    out = {str(b["metadata"]["name"]): dict(b) for b in found if b.get("kind") == "ClusterQueue"}
    out.update({f"cohort/{b['metadata']['name']}": dict(b) for b in found if b.get("kind") == "Cohort"})
    return out


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
                        total[key] = total.get(key, ZERO) + quantity(res.get("nominalQuota"))
                    except (QuantityError, TypeError):
                        continue
    return total


def _capacity(model: Model, cluster: str) -> dict[tuple[str, str], Quantity]:
    record = model.clusters.get(cluster)
    if record is None:
        return {}
    return {k: v[0] for k, v in capacity_by_flavor(record, effective_catalog(model)).items()}


QUEUES = ("ClusterQueue", "LocalQueue")


def synced_queues(result: engine.Result, name: str, synced: Tree, label: str) -> dict[str, dict[str, Any]]:
    """The synced ClusterQueues of cluster `name` (those whose bytes equal the render's not parsed)."""
    made = result.clusters.get(name)
    rendered = {
        output.object_path(o): o.body
        for o in (made.objects if made is not None else ())
        if str(o.body.get("kind", "")) in ("ClusterQueue", "Cohort")  # o.key.kind, without an ObjectKey
    }
    return cluster_queues(f"{label}/{name}", synced, made.tree if made is not None else {}, rendered)


def capacity_moved(
    result: engine.Result, cluster: str, before_model: Model | None, was: str | None = None
) -> bool:
    """Whether the capacity of the cluster differs between the inputs before (where it was named
    `was`: a renamed cluster) and the model (what makes a row's `capacity_changed`; a cluster whose
    capacities are all alike changes no row)."""
    if before_model is None:
        return False
    have = _capacity(result.model, cluster) if cluster in result.clusters else {}
    return have != _capacity(before_model, was or cluster)


def capacity_rows(
    result: engine.Result,
    cluster: str,
    synced: Mapping[str, Mapping[str, Any]],
    before_model: Model | None = None,
    was: str | None = None,
) -> list[CapacityRow]:
    """Per flavor and resource: synced nominal quota (before), model budgets (after), capacity (and
    the capacity in the inputs at the base of the change, when they were read: of cluster `was` there,
    the old name of a renamed cluster)."""
    before, after, have = _before(synced), {}, {}
    record = result.model.clusters.get(cluster)
    units = units_on(result, cluster)
    if record is not None and cluster in result.clusters:
        after = usage_by_flavor(result.model, record, effective_catalog(result.model))
        have = _capacity(result.model, cluster)
    had = _capacity(before_model, was or cluster) if before_model is not None else {}
    rows = [
        CapacityRow(
            *k,
            before.get(k),
            after.get(k),
            have.get(k),
            units.get(k[1], ""),
            had.get(k),
            before_model is not None,
        )
        for k in sorted(before.keys() | after.keys() | have.keys() | had.keys())
    ]
    return [
        r
        for r in rows
        if any(q is not None and q.value for q in (r.before, r.after, r.capacity, r.capacity_before))
    ]


def units_on(result: engine.Result, cluster: str) -> dict[str, str]:
    """HAMi quota names of the cluster that are shown in GiB and percent."""
    if cluster not in result.model.clusters:
        return {}
    return hami.quota_units(effective_catalog(result.model), cluster)
