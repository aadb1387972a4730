"""A budget list (a tenant's or a cohort's, on one cluster) as Kueue `spec.resourceGroups`: the flavor
budgets grouped by their `resourceGroup` (all in one group when none is named), each group covering the
quota resources its flavors budget (core resources first, then by name), every flavor listing every
covered resource in that order (a 0 where it budgets none), quantities canonical."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from gputenancy.common.findings import Origin
from gputenancy.common.objects import FieldPath
from gputenancy.inputs.spec import FlavorBudget
from gputenancy.policy.catalog import Catalog

CORE_ORDER = ("cpu", "memory", "ephemeral-storage", "pods")


def ordered(resources: Sequence[str]) -> list[str]:
    """Quota resources in the order the pipeline writes coveredResources."""
    return sorted(resources, key=lambda r: (CORE_ORDER.index(r) if r in CORE_ORDER else len(CORE_ORDER), r))


def partition(budget: Sequence[FlavorBudget]) -> list[list[FlavorBudget]]:
    """The flavor budgets per resource group, groups in the order each is first named."""
    groups: dict[str | None, list[FlavorBudget]] = {}
    for fb in budget:
        groups.setdefault(fb.group, []).append(fb)
    return list(groups.values())


def resource_groups(
    budget: Sequence[FlavorBudget], cluster: str, catalog: Catalog
) -> tuple[list[dict[str, Any]], dict[FieldPath, Origin]]:
    """The groups as the templates write them ({covered, flavors: [{name, resources: [{name, nominal,
    borrowing, lending}]}]}) and the input line of each flavor and quota."""
    out: list[dict[str, Any]] = []
    origins: dict[FieldPath, Origin] = {}
    for gi, members in enumerate(partition(budget)):
        amounts = [dict(catalog.amounts(fb, cluster)) for fb in members]
        covered = ordered(list(dict.fromkeys(r for per in amounts for r in per)))
        flavors = []
        for fi, (fb, per) in enumerate(zip(members, amounts, strict=True)):
            resources = []
            for ri, res in enumerate(covered):
                a = per.get(res)
                origins[("spec", "resourceGroups", gi, "flavors", fi, "resources", ri)] = (
                    a.origin if a is not None else fb.origin
                )
                resources.append(
                    {
                        "name": res,
                        "nominal": a.nominal.canonical() if a is not None else "0",
                        "borrowing": a.borrowing.canonical()
                        if a is not None and a.borrowing is not None
                        else None,
                        "lending": a.lending.canonical() if a is not None and a.lending is not None else None,
                    }
                )
            origins[("spec", "resourceGroups", gi, "flavors", fi)] = fb.origin
            flavors.append({"name": fb.flavor, "resources": resources})
        out.append({"covered": covered, "flavors": flavors})
    return out or [{"covered": [], "flavors": []}], origins
