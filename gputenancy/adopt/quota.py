"""Quota as a tenant or cohort file writes it: Kueue resourceGroups -> flavor budgets."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from gputenancy.adopt.records import amount_value


def budget(groups: Sequence[Any], by_resource: Mapping[str, str]) -> list[dict[str, Any]]:
    """Flavor budgets (a queue's or a cohort's), flavors in the live order; devices by DeviceClass where
    the catalog maps the resource, the others as resources. Several live resource groups: each flavor
    budget names its group (`resourceGroup: group-N`). In each group a resource zero in every flavor
    is written once, so the group still covers it."""
    out: list[dict[str, Any]] = []
    named = sum(1 for g in groups if isinstance(g, dict)) > 1
    for gi, group in enumerate(g for g in groups if isinstance(g, dict)):
        covered = [r for r in group.get("coveredResources") or [] if isinstance(r, str)]
        written: set[str] = set()
        entries: list[dict[str, Any]] = []
        for flavor in group.get("flavors") or []:
            entry: dict[str, Any] = {"flavor": flavor.get("name")}
            if named:
                entry["resourceGroup"] = f"group-{gi + 1}"
            for res in flavor.get("resources") or []:
                name = res.get("name")
                amount = _amount(res)
                if amount == 0:
                    continue
                written.add(name)
                _put_amount(entry, name, amount, by_resource)
            entries.append(entry)
        for name in covered:
            if name not in written and entries:
                _put_amount(entries[0], name, 0, by_resource)
        for entry in entries:  # a flavor with nothing but zeros: one of them written, so it is listed
            if not (entry.keys() - {"flavor", "resourceGroup"}) and covered:
                _put_amount(entry, covered[0], 0, by_resource)
        out += entries
    return out


def _put_amount(entry: dict[str, Any], name: str, amount: Any, by_resource: Mapping[str, str]) -> None:
    section = "devices" if name in by_resource else "resources"
    entry.setdefault(section, {})[by_resource.get(name, name)] = amount


def _amount(res: Mapping[str, Any]) -> Any:
    nominal = amount_value(res.get("nominalQuota", "0"))
    borrowing, lending = res.get("borrowingLimit"), res.get("lendingLimit")
    if borrowing is None and lending is None:
        return nominal
    out: dict[str, Any] = {"nominal": nominal}
    if borrowing is not None:
        out["borrowingLimit"] = amount_value(borrowing)
    if lending is not None:
        out["lendingLimit"] = amount_value(lending)
    return out
