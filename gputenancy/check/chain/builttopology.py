"""Topology Aware Scheduling on the built objects: every TAS flavor's Topology is in the build.

kustomize may rename or drop objects after the model rules ran (`namePrefix`, a patch on a ResourceFlavor's
topologyName); a flavor bound to a Topology the cluster does not get leaves every ClusterQueue with quota
on it inactive (Kueue: "there is no Topology ... for TAS flavor", pkg/cache/scheduler/clusterqueue.go).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from gputenancy.check.chain.builtview import KUEUE, View, spec_of

BuiltRule = Callable[[View], Iterator[Any]]
_NAME_KEYS = ("namePrefix", "nameSuffix", "patches", "replacements", "transformers")


def topology_reference(view: View) -> Iterator[Any]:
    """After kustomize, the `topologyName` of every ResourceFlavor names a Topology of the build (Kueue
    keeps the ClusterQueues with quota on the flavor inactive until it exists).

    Passes: Topology h100-nvlink and ResourceFlavor h100 with topologyName: h100-nvlink.
    Fails: `namePrefix: prod-` in the overlay (Topology prod-h100-nvlink, the flavor still names h100-nvlink).
    """
    topologies = view.named(KUEUE, "Topology")
    for flavor in view.of(KUEUE, "ResourceFlavor"):
        name = spec_of(flavor).get("topologyName")
        if not isinstance(name, str) or name in topologies:
            continue
        moved = [t for t in topologies.values() if t.original_name == name and t.moved]
        via = (moved[0] if moved else flavor).changed_by(*_NAME_KEYS)
        now = f" (the Topology is now named {moved[0].name!r})" if moved else ""
        yield flavor.at(("spec", "topologyName")).finding(
            "built-topology-reference",
            f"ResourceFlavor {flavor.name!r} on cluster {view.cluster.name!r} is bound to topology {name!r}, "
            f"which is not a Topology of the build{now}{via}: Kueue keeps every ClusterQueue with quota on "
            "the flavor inactive until it exists",
        )


RULES: dict[str, BuiltRule] = {"built-topology-reference": topology_reference}
