"""Kueue's quota tree of one cluster: what a ClusterQueue may use now and at most, per flavor and resource.

The cohort tree as Kueue's scheduler cache holds it (pkg/cache/scheduler/resource_node.go): a queue keeps
for itself the part of its nominal quota it does not lend (`guaranteed`: nominal minus lendingLimit, 0
without one) and stores the rest in its cohort; a cohort's quota is its own plus what its children store in
it, its usage what they use beyond what they keep. `available` is what a queue can take now (its unused
guaranteed part plus what its ancestors have free, bounded by its borrowingLimit), `potential` what it could
ever take (Kueue's `PotentialAvailable`, the "maximum capacity" of its messages). Usage comes from the
ClusterQueues' status (`flavorsReservation`, as the scheduler counts it) of a `kubectl get` dump, plus the
workloads judged before in the same run.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from decimal import Decimal
from typing import Any

from gputenancy.check.chain.admissible import queue_quotas
from gputenancy.inputs.quantity import QuantityError, parse

FR = tuple[str, str]  # flavor, resource
_ZERO = Decimal(0)


def _dec(value: Any) -> Decimal | None:
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        return None
    try:
        return parse(value).value
    except QuantityError:
        return None


class Node:
    """A ClusterQueue (`queue=True`) or a Cohort in the tree."""

    def __init__(self, name: str, queue: bool, spec: Mapping[str, Any]) -> None:
        self.name = name
        self.queue = queue
        self.parent: Node | None = None
        self.children: list[Node] = []
        self.nominal: dict[FR, Decimal] = {}
        self.borrowing: dict[FR, Decimal] = {}
        self.lending: dict[FR, Decimal] = {}
        self.usage: dict[FR, Decimal] = {}
        _, quotas = queue_quotas(spec)
        for fr, (nominal, borrowing, lending) in quotas.items():
            self.nominal[fr] = nominal.value
            if borrowing is not None:
                self.borrowing[fr] = borrowing.value
            if lending is not None:
                self.lending[fr] = lending.value


class Tree:
    """Every ClusterQueue and Cohort of a cluster, linked as Kueue links them."""

    def __init__(
        self, queues: Mapping[str, Mapping[str, Any]], cohorts: Mapping[str, Mapping[str, Any]]
    ) -> None:
        self.queues = {name: Node(name, True, spec) for name, spec in queues.items()}
        self.cohorts = {name: Node(name, False, spec) for name, spec in cohorts.items()}

        def cohort(name: str) -> Node:
            if name not in self.cohorts:
                self.cohorts[name] = Node(name, False, {})  # implicit: named by a queue only
            return self.cohorts[name]

        for name, spec in list(cohorts.items()):
            parent = spec.get("parentName")
            if isinstance(parent, str) and parent and parent != name:
                self._link(self.cohorts[name], cohort(parent))
        for name, spec in queues.items():
            parent = spec.get("cohortName")
            if isinstance(parent, str) and parent:
                self._link(self.queues[name], cohort(parent))
        self._subtree: dict[tuple[str, bool, FR], Decimal] = {}

    @staticmethod
    def _link(child: Node, parent: Node) -> None:
        seen: set[str] = {child.name}
        up: Node | None = parent
        while up is not None:  # refuse a cycle (the webhook would)
            if up.name in seen and not up.queue:
                return
            seen.add(up.name)
            up = up.parent
        child.parent = parent
        parent.children.append(child)

    # ------------------------------------------------------------------ quotas and usage

    def subtree_quota(self, node: Node, fr: FR) -> Decimal:
        key = (node.name, node.queue, fr)
        if key not in self._subtree:
            total = node.nominal.get(fr, _ZERO)
            for child in node.children:
                total += self.subtree_quota(child, fr) - self.guaranteed(child, fr)
            self._subtree[key] = total
        return self._subtree[key]

    def guaranteed(self, node: Node, fr: FR) -> Decimal:
        lending = node.lending.get(fr)
        return max(_ZERO, self.subtree_quota(node, fr) - lending) if lending is not None else _ZERO

    def usage(self, node: Node, fr: FR) -> Decimal:
        if node.queue:
            return node.usage.get(fr, _ZERO)
        return sum((max(_ZERO, self.usage(c, fr) - self.guaranteed(c, fr)) for c in node.children), _ZERO)

    def available(self, node: Node, fr: FR) -> Decimal:
        if node.parent is None:
            return self.subtree_quota(node, fr) - self.usage(node, fr)
        used = self.usage(node, fr)
        local = max(_ZERO, self.guaranteed(node, fr) - used)
        parent = self.available(node.parent, fr)
        limit = node.borrowing.get(fr)
        if limit is not None:
            stored = self.subtree_quota(node, fr) - self.guaranteed(node, fr)
            in_parent = max(_ZERO, used - self.guaranteed(node, fr))
            parent = min(stored - in_parent + limit, parent)
        return local + parent

    def potential(self, node: Node, fr: FR) -> Decimal:
        if node.parent is None:
            return self.subtree_quota(node, fr)
        most = self.guaranteed(node, fr) + self.potential(node.parent, fr)
        limit = node.borrowing.get(fr)
        return min(most, self.subtree_quota(node, fr) + limit) if limit is not None else most

    def root(self, node: Node) -> Node:
        while node.parent is not None:
            node = node.parent
        return node

    def leaves(self, node: Node) -> Iterable[Node]:
        if node.queue:
            yield node
        for c in node.children:
            yield from self.leaves(c)

    def lenders(self, queue: Node, fr: FR) -> list[tuple[str, Decimal]]:
        """Other queues of the tree with unused quota they lend for `fr`, and how much."""
        out = []
        for other in self.leaves(self.root(queue)):
            if other is queue:
                continue
            stored = self.subtree_quota(other, fr) - self.guaranteed(other, fr)
            free = stored - max(_ZERO, self.usage(other, fr) - self.guaranteed(other, fr))
            if free > 0:
                out.append((other.name, free))
        return out

    def add(self, queue: str, amounts: Mapping[FR, Decimal]) -> None:
        node = self.queues[queue]
        for fr, value in amounts.items():
            node.usage[fr] = node.usage.get(fr, _ZERO) + value


def status_usage(status: Any) -> dict[FR, Decimal]:
    """A ClusterQueue's usage from its status: `flavorsReservation` (quota reserved, as the scheduler
    counts it), else `flavorsUsage`."""
    if not isinstance(status, Mapping):
        return {}
    flavors = status.get("flavorsReservation") or status.get("flavorsUsage") or []
    out: dict[FR, Decimal] = {}
    for f in flavors if isinstance(flavors, list) else []:
        if not isinstance(f, Mapping) or not isinstance(f.get("name"), str):
            continue
        for r in f.get("resources") or []:
            if isinstance(r, Mapping) and isinstance(r.get("name"), str):
                total = _dec(r.get("total"))
                if total:
                    out[(f["name"], r["name"])] = total
    return out
