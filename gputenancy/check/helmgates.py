"""Feature gates given twice to a Kueue installed from its Helm chart.

The chart passes `--feature-gates` to the manager when `controllerManager.featureGates` is set in its
values; Kueue then refuses a Configuration that has `featureGates` too. The values are what the overlay
author added, so the finding is anchored there (`kueue.helm.values.controllerManager.featureGates`),
naming where the Configuration's gates come from.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable

from gputenancy.check.configcontext import RULE_GATE_CONFLICT
from gputenancy.findings import Finding, Origin
from gputenancy.inputs.spec import Cluster

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
