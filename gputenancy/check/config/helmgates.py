"""Feature gates given twice to a Kueue installed from its Helm chart.

The chart passes `--feature-gates` to the manager when `controllerManager.featureGates` is set in its
values; Kueue then refuses a Configuration that has `featureGates` too. The values are what the overlay
author added, so the finding is anchored there (`kueue.helm.values.controllerManager.featureGates`),
naming where the Configuration's gates come from.

The chart's gates themselves are held to the rules of the Configuration's, for the cluster's Kueue
version (`chart_gate_problems`): a list of `{name, enabled}`, each name a gate that version has
(`kueue-feature-gate-unknown`), a locked gate only at its default (`kueue-feature-gate-locked`);
the manager exits at start-up otherwise.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable
from typing import Any

from gputenancy.check.config.configcontext import RULE_GATE_CONFLICT, RULE_GATE_LOCKED, RULE_GATE_UNKNOWN
from gputenancy.common.findings import Finding, Origin
from gputenancy.inputs.spec import Cluster
from gputenancy.versions import gates as kueuegates

VALUES_PATH = ("kueue", "helm", "values", "controllerManager", "featureGates")


def chart_passes_feature_gates(cluster: Cluster) -> bool:
    """True when the chart values make the manager start with --feature-gates."""
    if cluster.install != "helm" or cluster.helm is None:
        return False
    manager = cluster.helm.values.get("controllerManager") or {}
    return isinstance(manager, dict) and bool(manager.get("featureGates"))


def at_the_overlay(
    cluster: Cluster, findings: Iterable[Finding], origin_of: Callable[[tuple[str, ...]], Origin]
) -> list[Finding]:
    """`findings` with the gate conflict moved to the overlay's chart values."""
    out = []
    for f in findings:
        if f.rule == RULE_GATE_CONFLICT and chart_passes_feature_gates(cluster):
            source = origin_of(("featureGates",))
            here = cluster.document.key_origin(*VALUES_PATH)
            f = dataclasses.replace(
                f,
                path=here.path,
                line=here.line,
                col=here.col,
                message=f"{'.'.join(VALUES_PATH)} makes the chart start Kueue with --feature-gates, and "
                f"the Configuration has featureGates too (from {source.path}:{source.line}): Kueue refuses "
                "to start with both; remove it and set the gates in kueue.featureGates",
            )
        out.append(f)
    return out


def chart_gate_problems(cluster: Cluster) -> list[Finding]:
    """What the manager refuses in the chart's `controllerManager.featureGates` (module docstring)."""
    if cluster.install != "helm" or cluster.helm is None:
        return []
    manager = cluster.helm.values.get("controllerManager")
    listed = manager.get("featureGates") if isinstance(manager, dict) else None
    return [
        cluster.document.origin(*VALUES_PATH, *(() if i is None else (i,))).finding(rule, message)
        for i, rule, message in gate_list_problems(listed, cluster.kueue_version)
    ]


def gate_list_problems(listed: Any, version: str) -> list[tuple[int | None, str, str]]:
    """(index or None for the whole list, rule, message) for each entry of a chart's
    `controllerManager.featureGates` that Kueue `version` refuses at start-up."""
    if not listed:
        return []
    where = ".".join(VALUES_PATH)
    if not isinstance(listed, list):
        return [(None, RULE_GATE_UNKNOWN, f"{where} must be a list of {{name, enabled}} (the chart's form)")]
    try:
        known = kueuegates.gates_for(version)
    except ValueError:
        return []  # an unsupported version is reported where it is declared
    found: list[tuple[int | None, str, str]] = []
    for i, entry in enumerate(listed):
        name = entry.get("name") if isinstance(entry, dict) else None
        enabled = entry.get("enabled") if isinstance(entry, dict) else None
        if not isinstance(name, str) or not isinstance(enabled, bool):
            found.append(
                (i, RULE_GATE_UNKNOWN, f"{where}[{i}] must be {{name: <gate>, enabled: true|false}}")
            )
            continue
        gate = known.get(name)
        if gate is None:
            found.append(
                (
                    i,
                    RULE_GATE_UNKNOWN,
                    f"{where}[{i}]: unrecognized feature gate: {name} (Kueue {version}); the chart passes "
                    "it as --feature-gates and the manager exits at start-up",
                )
            )
        elif gate.locked and enabled != gate.default:
            found.append(
                (
                    i,
                    RULE_GATE_LOCKED,
                    f"{where}[{i}]: cannot set feature gate {name} to {str(enabled).lower()}, feature is "
                    f"locked to {str(gate.default).lower()} ({gate.stage} in Kueue {version}); the manager "
                    "exits at start-up",
                )
            )
    return found
