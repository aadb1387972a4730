"""HAMi vGPUs without sizes: what Kueue charges the pod a tenant submits with only `nvidia.com/gpu`, and
what a LimitRange of per-vGPU defaults would change.

The Kueue Configuration comes from the pipeline through the real kustomize; the charge follows Kueue's
own steps (pkg/workload/resources.go at v0.18.1 and v0.19.2: LimitRange container defaults, then limits
as missing requests; the pod's requests, then `resources.transformations`) and first reproduces what
real Kueue charged on a live API server (hami-kueue-verified.md in the shared docs)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from decimal import Decimal
from pathlib import Path
from typing import Any

import hamitree
import pytest
import repokit
import yaml

from gputenancy import engine
from gputenancy.inputs.quantity import parse

GPU, MEM, CORES = "nvidia.com/gpu", "nvidia.com/gpumem", "nvidia.com/gpucores"
TOTAL_MEM, TOTAL_CORES = "nvidia.com/total-gpumem", "nvidia.com/total-gpucores"
Container = Mapping[str, Any]  # {"limits": {...}} and/or {"requests": {...}}


def charged(
    containers: Sequence[Container],
    config: Mapping[str, Any],
    limit_ranges: Sequence[Mapping[str, Any]] = (),
    init: Sequence[Container] = (),
) -> dict[str, Decimal]:
    """What Kueue charges one pod: LimitRange defaults (keep what the container states), limits as missing
    requests, the pod's requests (containers summed, the largest init container if larger), then each
    transformation (Replace drops the input; the output per unit times the input, times the pod's
    `multiplyBy` resource when it has one)."""
    defaults: dict[str, str] = {}
    default_requests: dict[str, str] = {}
    for lr in limit_ranges:
        for item in lr["spec"]["limits"]:
            if item["type"] == "Container":
                defaults = {**item.get("default", {}), **defaults}
                default_requests = {**item.get("defaultRequest", {}), **default_requests}

    def requests(c: Container) -> dict[str, Decimal]:
        limits = {**defaults, **c.get("limits", {})}
        asked = {**default_requests, **c.get("requests", {})}
        return {k: parse(v).value for k, v in {**limits, **asked}.items()}

    pod: dict[str, Decimal] = {}
    for c in containers:
        for k, v in requests(c).items():
            pod[k] = pod.get(k, Decimal(0)) + v
    for c in init:
        for k, v in requests(c).items():
            pod[k] = max(pod.get(k, Decimal(0)), v)
    out = dict(pod)
    for t in config.get("resources", {}).get("transformations", []):
        if t["input"] not in pod:
            continue
        if t.get("strategy", "Retain") == "Replace":
            out.pop(t["input"], None)
        factor = pod.get(t["multiplyBy"], Decimal(1)) if "multiplyBy" in t else Decimal(1)
        for name, per_unit in t["outputs"].items():
            out[name] = out.get(name, Decimal(0)) + pod[t["input"]] * parse(per_unit).value * factor
    return out


def _built(root: Path) -> tuple[dict[str, Any], dict[str, list[dict[str, Any]]]]:
    result = engine.run(root, cache=None)
    assert not result.failed, [f.format() for f in result.findings]
    tree = result.clusters["site"].tree
    bodies = [yaml.safe_load(data) for data in tree.values()]
    config = repokit.configuration(bodies)
    ranges: dict[str, list[dict[str, Any]]] = {}
    for b in bodies:
        if b["kind"] == "LimitRange":
            ranges.setdefault(b["metadata"]["namespace"], []).append(b)
    return config, ranges


def limit_range(memory: int, cores: int) -> dict[str, Any]:
    """The LimitRange an administrator would write: per-vGPU defaults for every container (the API
    server stores `defaultRequest` equal to `default` when it is not given)."""
    values = {MEM: str(memory), CORES: str(cores)}
    item = {"type": "Container", "default": dict(values), "defaultRequest": dict(values)}
    return {"apiVersion": "v1", "kind": "LimitRange", "spec": {"limits": [item]}}


def requests_above_limits(
    containers: Sequence[Container], limit_ranges: Sequence[Mapping[str, Any]]
) -> list[str]:
    """Resources whose request Kueue computes above the limit (v0.18.1, v0.19.2: LimitRange defaults before
    limits become missing requests), which it refuses: "requests must not exceed its limits"."""
    out = []
    for lr in limit_ranges:
        for item in lr["spec"]["limits"]:
            for c in containers:
                for name, value in c.get("limits", {}).items():
                    request = c.get("requests", {}).get(name, item.get("defaultRequest", {}).get(name))
                    if request is not None and parse(request).value > parse(value).value:
                        out.append(name)
    return sorted(out)


@pytest.fixture(scope="module")
def plain(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    config, ranges = _built(hamitree.build(tmp_path_factory.mktemp("plain")))
    assert ranges == {}  # the pipeline writes no LimitRange
    return config


def test_the_charge_model_reproduces_real_kueue(plain: dict[str, Any]) -> None:
    """The rows of the live measurement, charged by the model with the Configuration the pipeline writes."""
    sized = {"limits": {GPU: 2, MEM: 3000, CORES: 30}}
    assert charged([sized], plain) == {GPU: 2, TOTAL_MEM: 6000, TOTAL_CORES: 60}
    assert charged([{"limits": {MEM: 3000, CORES: 30}}], plain) == {TOTAL_MEM: 3000, TOTAL_CORES: 30}
    two = [{"limits": {GPU: 1, MEM: 3000, CORES: 30}}, {"limits": {GPU: 1, MEM: 1000, CORES: 10}}]
    assert charged(two, plain) == {GPU: 2, TOTAL_MEM: 8000, TOTAL_CORES: 80}
    init = [{"limits": {GPU: 1, MEM: 8000, CORES: 100}}]
    assert charged([sized], plain, init=init) == {GPU: 2, TOTAL_MEM: 16000, TOTAL_CORES: 200}


def test_without_sizes_a_pod_is_charged_vgpus_only(plain: dict[str, Any]) -> None:
    # the walk-around: one vGPU charged, no memory and no cores, whatever HAMi then gives the pod
    assert charged([{"limits": {GPU: 1}}], plain) == {GPU: 1}


def test_a_limit_range_would_charge_sizeless_pods_but_refuses_sized_ones(plain: dict[str, Any]) -> None:
    """Why the pipeline does not write a LimitRange: Kueue applies its defaults (pkg/workload/resources.go
    AdjustResources), which charges a pod without sizes what HAMi gives it, but at v0.18.1 and v0.19.2 it
    applies them before it copies limits into missing requests. A pod that states its sizes as limits
    only, as HAMi documents, is then charged the defaults and refused: its requests exceed its limits."""
    limits = [limit_range(15360, 100)]
    # the walk-around closed: a whole T4's memory and compute per vGPU
    assert charged([{"limits": {GPU: 1}}], plain, limits) == {GPU: 1, TOTAL_MEM: 15360, TOTAL_CORES: 100}
    assert charged([{"limits": {GPU: 2}}], plain, limits) == {GPU: 2, TOTAL_MEM: 30720, TOTAL_CORES: 200}
    # the sizes a pod states in requests and limits are kept
    both = {"limits": {GPU: 1, MEM: 3000, CORES: 25}, "requests": {GPU: 1, MEM: 3000, CORES: 25}}
    assert charged([both], plain, limits) == {GPU: 1, TOTAL_MEM: 3000, TOTAL_CORES: 25}
    assert requests_above_limits([both], limits) == []
    # but sizes in limits only (HAMi's own examples) get the default requests: refused by Kueue
    sized = {"limits": {GPU: 1, MEM: 3000, CORES: 25}}
    assert charged([sized], plain, limits) == {GPU: 1, TOTAL_MEM: 15360, TOTAL_CORES: 100}
    assert requests_above_limits([sized], limits) == [CORES, MEM]
    # and a container without vGPUs in the namespace is charged the defaults once
    assert charged([{"requests": {"cpu": 1}}], plain, limits) == {
        "cpu": 1,
        TOTAL_MEM: 15360,
        TOTAL_CORES: 100,
    }
