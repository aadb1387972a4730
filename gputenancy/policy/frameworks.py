"""The job frameworks a cluster declares installed (`frameworks:`, `gputenancy.inputs.frameworks`) are
names Kueue knows: a mistyped one would leave the framework out of the cluster's Configuration, or let a
fleet pass that cannot connect."""

from __future__ import annotations

import difflib
from collections.abc import Iterator

from gputenancy.common.findings import Finding
from gputenancy.inputs import frameworks
from gputenancy.inputs.spec import Model
from gputenancy.policy.catalog import Catalog
from gputenancy.versions import kueue


def framework_unknown(model: Model, catalog: Catalog) -> Iterator[Finding]:
    """Each entry of `frameworks` (in base/platform.yaml or a cluster's overlay) is one of Kueue's
    integration names (`integrations.frameworks`) at the Kueue version of every cluster it applies to.

    Passes: `frameworks: [batch/job, jobset.x-k8s.io/jobset, ray.io/rayjob]`.
    Fails: `frameworks: [jobset]` (the name is `jobset.x-k8s.io/jobset`); `ray.io/RayJob`.
    """
    seen: set[tuple[str, int]] = set()
    for cluster in sorted(model.clusters.values(), key=lambda c: c.name):
        have = frameworks.installed(model.platform, cluster)
        if have is None:
            continue
        try:
            known = kueue.for_version(cluster.kueue_version).frameworks
        except kueue.UnsupportedVersion:
            continue
        for i, name in enumerate(have.names):
            origin = have.at(i)
            if name in known or (origin.path, origin.line) in seen:
                continue
            seen.add((origin.path, origin.line))
            close = difflib.get_close_matches(name, sorted(known), n=1, cutoff=0.5)
            hint = f' (did you mean "{close[0]}"?)' if close else ""
            yield origin.finding(
                "framework-unknown",
                f"{name!r} is not a Kueue {kueue.minor_of(cluster.kueue_version)} integration name{hint}; "
                f"known: {', '.join(sorted(known))}",
            )
