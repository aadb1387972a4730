"""Kueue's quota tree: what a ClusterQueue or a Cohort can reach through its cohorts, as Kueue's scheduler
computes it (pkg/cache/scheduler/resource_node.go), for one flavor and resource at a time.

Every node (a ClusterQueue or a Cohort) has its own quota per flavor and resource (nominal,
borrowingLimit, lendingLimit; a Cohort's from its `spec.resourceGroups`). Kueue derives:
- `subtree`: what a node holds with its children. A ClusterQueue's is its nominal quota; a Cohort's is
  its own nominal quota plus, from each child, the child's subtree less what the child keeps to itself;
- `local` ("localQuota"): what a node keeps to itself and never lends its parent: its subtree less its
  lendingLimit when one is set (never below 0), else 0;
- `potential` ("potentialAvailable", what the flavor assigner calls the maximum capacity): at the root,
  its subtree; below, its local quota plus its parent's potential, at most its subtree plus its
  borrowingLimit when one is set.
A Cohort in a cycle of parents (or below one) is not computed: Kueue deactivates it (None here).

Both the checks of built objects (`check.chain.admissible`) and `budgets` (from the inputs) use this one
model: the first reads the Cohorts and ClusterQueues kustomize built, the second the tenant and platform
files.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from decimal import Decimal

Quota = tuple[Decimal, Decimal | None, Decimal | None]  # nominal, borrowingLimit, lendingLimit
Key = tuple[str, str]  # (flavor, resource)
_ZERO = Decimal(0)


def lendable(quota: Quota) -> Decimal:
    """What a ClusterQueue with `quota` adds to its cohort's subtree: nominal less its local quota."""
    nominal, _, lending = quota
    return nominal - _local(nominal, lending)


def _local(subtree: Decimal, lending: Decimal | None) -> Decimal:
    return max(_ZERO, subtree - lending) if lending is not None else _ZERO


class Tree:
    """The cohorts of one cluster: `parents` (cohort -> parent), `quotas` (cohort -> its own quota per
    (flavor, resource)) and `lent` (cohort -> what its member ClusterQueues add, per (flavor, resource):
    the sum of `lendable` over them). A cohort named only as a parent or a queue's cohort is implicit:
    no quota, no parent, as Kueue creates it."""

    def __init__(
        self,
        parents: Mapping[str, str],
        quotas: Mapping[str, Mapping[Key, Quota]],
        lent: Mapping[str, Mapping[Key, Decimal]],
    ) -> None:
        self.parents = dict(parents)
        self.quotas = quotas
        self.lent = lent
        self.children: dict[str, list[str]] = {}
        for child, parent in sorted(self.parents.items()):
            self.children.setdefault(parent, []).append(child)
        self.cyclic = _cyclic(self.parents)
        self._subtree: dict[tuple[str, Key], Decimal] = {}
        self._potential: dict[tuple[str, Key], Decimal | None] = {}
        self._described: dict[str, str] = {}

    def root(self, cohort: str) -> str:
        seen = {cohort}
        while cohort in self.parents and self.parents[cohort] not in seen:
            cohort = self.parents[cohort]
            seen.add(cohort)
        return cohort

    def members(self, root: str) -> list[str]:
        """`root` and every cohort below it, parents first."""
        out, todo = [], [root]
        while todo:
            name = todo.pop(0)
            if name in out:
                continue
            out.append(name)
            todo.extend(self.children.get(name, ()))
        return out

    def own(self, cohort: str, key: Key) -> Quota:
        return self.quotas.get(cohort, {}).get(key, (_ZERO, None, None))

    def keys(self, cohort: str) -> set[Key]:
        """Every (flavor, resource) the cohort's subtree holds any quota of."""
        out: set[Key] = set()
        for name in self.members(cohort):
            out.update(self.quotas.get(name, {}))
            out.update(self.lent.get(name, {}))
        return out

    def subtree(self, cohort: str, key: Key) -> Decimal:
        """SubtreeQuota of a cohort (0 for one in a cycle)."""
        if cohort in self.cyclic:
            return _ZERO
        found = self._subtree.get((cohort, key))
        if found is None:
            total = self.own(cohort, key)[0] + self.lent.get(cohort, {}).get(key, _ZERO)
            for child in self.children.get(cohort, ()):
                total += self.subtree(child, key) - self.local(child, key)
            found = self._subtree[(cohort, key)] = total
        return found

    def local(self, cohort: str, key: Key) -> Decimal:
        """localQuota of a cohort: what its subtree keeps from its parent (its lendingLimit)."""
        return _local(self.subtree(cohort, key), self.own(cohort, key)[2])

    def potential(self, cohort: str, key: Key) -> Decimal | None:
        """potentialAvailable of a cohort; None in (or below) a cycle."""
        if cohort in self.cyclic:
            return None
        if (cohort, key) not in self._potential:
            parent = self.parents.get(cohort)
            if parent is None:
                value: Decimal | None = self.subtree(cohort, key)
            else:
                above = self.potential(parent, key)
                value = None if above is None else self.local(cohort, key) + above
                borrowing = self.own(cohort, key)[1]
                if value is not None and borrowing is not None:
                    value = min(value, self.subtree(cohort, key) + borrowing)
            self._potential[(cohort, key)] = value
        return self._potential[(cohort, key)]

    def reach(self, cohort: str | None, quota: Quota, key: Key) -> Decimal | None:
        """The most a ClusterQueue with `quota` in `cohort` (None: none) can hold of `key`, usage aside:
        Kueue's maximum capacity. None when its cohort is in a cycle."""
        nominal, borrowing, lending = quota
        if cohort is None:
            return nominal
        above = self.potential(cohort, key)
        if above is None:
            return None
        value = _local(nominal, lending) + above
        return min(value, nominal + borrowing) if borrowing is not None else value

    def describe(self, root: str) -> str:
        """Everything the reach of a queue in `root`'s tree depends on, as text (part of a cache key),
        worked out once per tree."""
        found = self._described.get(root)
        if found is not None:
            return found
        parts = []
        for name in self.members(root):
            quotas = sorted((k, tuple(map(str, q))) for k, q in self.quotas.get(name, {}).items())
            lent = sorted((k, str(v)) for k, v in self.lent.get(name, {}).items())
            parts.append((name, self.parents.get(name), name in self.cyclic, quotas, lent))
        found = self._described[root] = repr(parts)
        return found


def _cyclic(parents: Mapping[str, str]) -> frozenset[str]:
    """Cohorts on a cycle of parents or below one (Kueue deactivates them)."""
    out: set[str] = set()
    for start in parents:
        seen: list[str] = []
        name: str | None = start
        while name is not None and name not in seen:
            seen.append(name)
            name = parents.get(name)
        if name is not None:  # came back to a cohort already on the path
            out.update(seen)
    return frozenset(out)


def summed(pairs: Iterable[tuple[str, Key, Decimal]]) -> dict[str, dict[Key, Decimal]]:
    """(cohort, key, amount) summed per cohort and key: the `lent` of a Tree."""
    out: dict[str, dict[Key, Decimal]] = {}
    for cohort, key, value in pairs:
        per = out.setdefault(cohort, {})
        per[key] = per.get(key, _ZERO) + value
    return out
