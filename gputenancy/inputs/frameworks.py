"""The job frameworks installed on a cluster (`frameworks:` of its overlay, else of base/platform.yaml):
Kueue's integration names whose CRDs the cluster has. A leaf of the inputs stage.

Kueue's Configuration enables frameworks (`integrations.frameworks`); a framework whose CRD is missing
is tolerated by a single cluster (Kueue waits for it), not by a MultiKueue fleet: the manager watches
the kind of each framework it enables on every worker, and one missing CRD fails the worker's connection
for every kind (`fleet-frameworks`). Kinds built into Kubernetes are always there.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Protocol

from gputenancy.common.findings import Origin
from gputenancy.inputs.document import Document

BUILT_IN = frozenset({"batch/job", "pod", "deployment", "statefulset"})
"""Integration names of kinds every cluster serves: no CRD to install."""


@dataclasses.dataclass(frozen=True)
class Frameworks:
    """What a cluster declares installed (built-in kinds are always installed), and where it says so."""

    names: tuple[str, ...]
    origin: Origin  # the `frameworks` key
    document: Document = dataclasses.field(repr=False, compare=False)

    def has(self, framework: str) -> bool:
        return framework in BUILT_IN or framework in self.names

    def at(self, index: int) -> Origin:
        return self.document.origin("frameworks", index)

    @property
    def where(self) -> str:
        """`overlays/w1/cluster.yaml:12`: where the list is written."""
        return f"{self.origin.path}:{self.origin.line}"


def build(doc: Document, data: Any) -> Frameworks | None:
    """The record of a schema-valid `frameworks` list (None without one)."""
    if not isinstance(data, list):
        return None
    return Frameworks(tuple(str(f) for f in data), doc.key_origin("frameworks"), doc)


def needs_crd(framework: str) -> bool:
    """A framework whose kind comes from a CRD (not built into Kubernetes)."""
    return framework not in BUILT_IN


class _Declares(Protocol):
    """A Platform or a Cluster record."""

    @property
    def frameworks(self) -> Frameworks | None: ...


def installed(platform: _Declares, cluster: _Declares) -> Frameworks | None:
    """What `cluster` has installed: its own `frameworks`, else the platform's; None where neither says
    (the cluster is taken to have what its Configuration enables)."""
    return cluster.frameworks if cluster.frameworks is not None else platform.frameworks
