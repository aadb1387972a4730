"""The resource transformations that make Kueue charge classic HAMi vGPUs in quota units.

For each HAMi device kind behind a flavor of the cluster, two transformations: per-vGPU memory and
cores, each multiplied by the vGPU count (`multiplyBy`, Kueue v0.16+) and replaced (`strategy: Replace`,
written out: Kueue's default Retain would charge the raw per-vGPU inputs too) by the total names the
ClusterQueues cover. The rules in `gputenancy.policy.hami` have refused every Configuration these could
collide with before this runs.
"""

from __future__ import annotations

from typing import Any

from gputenancy.common.findings import Origin
from gputenancy.policy.catalog import Catalog
from gputenancy.policy.hami import devices_on


def transformations(catalog: Catalog, cluster: str) -> list[tuple[dict[str, Any], Origin]]:
    """The transformations for the HAMi devices on `cluster`, sorted by input, with their input place."""
    out: list[tuple[dict[str, Any], Origin]] = []
    for device in devices_on(catalog, cluster).values():
        for source, output, key in (
            (device.resource_cores, device.cores_quota, "resourceCores"),
            (device.resource_mem, device.memory_quota, "resourceMem"),
        ):
            body = {
                "input": source,
                "strategy": "Replace",
                "multiplyBy": device.resource_name,
                "outputs": {output: "1"},
            }
            out.append((body, device.origin_of(key)))
    return sorted(out, key=lambda item: str(item[0]["input"]))
