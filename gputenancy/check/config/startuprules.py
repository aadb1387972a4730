"""Kueue's start-up feature-gate rules and the DRA gate behind deviceClassMappings, per Kueue version.

The facts live in `gputenancy.versions.startup` (one entry per minor version, each citing the Kueue
source it mirrors); `gputenancy.check.config.configcheck` calls these with the effective gate values.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any

from gputenancy.versions import startup

# (field path inside the Configuration, message)
Problem = tuple[tuple[str | int, ...], str]


def gate_dependency_problems(
    version: str,
    effective: Mapping[str, bool],
    declared: Mapping[Any, Any],
    default_on: Callable[[str], bool],
) -> Iterator[Problem]:
    """Every dependency Kueue checks at start-up that the effective gates break. The finding goes on the
    gate that was written: the dependent gate when it is declared, else the dependency that was turned
    off (with a note that the dependent gate is on by default)."""
    rules = startup.rules_for(version)
    if rules is None:
        return
    for dep in rules.dependencies:
        if not effective.get(dep.gate, False) or effective.get(dep.requires, False):
            continue
        if dep.gate in declared:
            yield ("featureGates", dep.gate), dep.text()
        else:
            note = (
                f" ({dep.gate} is on by default in Kueue {rules.minor}; set it to false too)"
                if default_on(dep.gate)
                else ""
            )
            yield ("featureGates", dep.requires), dep.text() + note


def mappings_gate_problem(version: str, effective: Mapping[str, bool]) -> str | None:
    """Why deviceClassMappings would be dead on this Kueue version, or None."""
    rules = startup.rules_for(version)
    if rules is None or effective.get(rules.mappings_gate, True):
        return None
    if effective.get(rules.reject_gate, False):
        outcome = (
            f'Kueue marks every workload that uses DRA Inadmissible ("Workload uses DRA resources but the '
            f'{rules.mappings_gate} feature gate is not enabled")'
        )
    else:
        outcome = "Kueue ignores deviceClassMappings and counts no DRA device against any quota"
    return (
        f"{rules.mappings_gate} is disabled while deviceClassMappings is set: {outcome}; "
        f"enable {rules.mappings_gate} or remove the claim templates and device budgets"
    )
