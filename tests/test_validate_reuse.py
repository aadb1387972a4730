"""What validate_objects reuses between objects and calls gives the findings of a fresh evaluation."""

from __future__ import annotations

import copy
import types
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from gputenancy.check.kubernetes import crdschema
from gputenancy.check.validate import ValidationReport, validate_objects
from gputenancy.common.findings import Origin
from gputenancy.common.objects import RenderedObject

Body = dict[str, Any]


def crds(shared: Path, version: str = "v0.19.2") -> Path:
    return shared / "kueue" / version / "crds"


def cluster_queue(name: str, **spec: Any) -> Body:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ClusterQueue",
        "metadata": {"name": name, "labels": {"gputenancy.io/tenant": name}},
        "spec": {
            "cohortName": "research",
            "resourceGroups": [
                {
                    "coveredResources": ["cpu", "nvidia.com/gpu"],
                    "flavors": [
                        {
                            "name": "h100",
                            "resources": [
                                {"name": "cpu", "nominalQuota": "8"},
                                {"name": "nvidia.com/gpu", "nominalQuota": "1"},
                            ],
                        }
                    ],
                }
            ],
            **spec,
        },
    }


def variants() -> list[Body]:
    """ClusterQueues whose CEL-checked parts repeat, with values that differ only in type."""
    out = []
    for i, value in enumerate(["TryNextFlavor", 1, True, 1.0, None, "TryNextFlavor", True]):
        ff = {
            "whenCanBorrow": value,
            "whenCanPreempt": "TryNextFlavor",
            "preference": "BorrowingOverPreemption",
        }
        out.append(cluster_queue(f"ff-{i}", flavorFungibility=ff))
    for i, policy in enumerate(["LowerPriority", "Never", 0, False, "LowerPriority"]):
        preemption = {"reclaimWithinCohort": "Never", "borrowWithinCohort": {"policy": policy}}
        out.append(cluster_queue(f"pre-{i}", preemption=preemption))
    for i, limit in enumerate(["1", 1, "1", None]):
        body = cluster_queue(f"borrow-{i}")
        del body["spec"]["cohortName"]
        body["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["borrowingLimit"] = limit
        out.append(body)
    short = cluster_queue("short")
    short["spec"]["resourceGroups"][0]["flavors"][0]["resources"].pop()
    out.extend([short, copy.deepcopy(short)])
    twice = cluster_queue("twice")
    flavors = twice["spec"]["resourceGroups"][0]["flavors"]
    flavors.append(copy.deepcopy(flavors[0]))
    twice["spec"]["admissionChecksStrategy"] = {
        "admissionChecks": [{"name": "c", "onFlavors": ["h100", "h100"]}]
    }
    out.append(twice)
    return out


def proxied(value: Any) -> Any:
    """The same data behind read-only mapping proxies and tuples."""
    if isinstance(value, Mapping):
        return types.MappingProxyType({k: proxied(v) for k, v in value.items()})
    if isinstance(value, list):
        return tuple(proxied(v) for v in value)
    return value


def run(bodies: list[Any], crd_dir: Path | None, first_line: int = 1) -> ValidationReport:
    objects = [
        RenderedObject("prod", b, Origin("tenants/a.yaml", first_line + i, 1)) for i, b in enumerate(bodies)
    ]
    return validate_objects(objects, kueue_version="v0.19.2", kubernetes_version="1.35", crd_dir=crd_dir)


def test_repeated_objects_get_the_findings_of_objects_checked_afresh(shared: Path) -> None:
    bodies = variants() * 3
    together = run(bodies, crds(shared))
    # Read-only proxies and tuples take the path that reuses no CEL result.
    assert run([proxied(b) for b in bodies], crds(shared)) == together
    one_by_one = {f for i, b in enumerate(bodies) for f in run([b], crds(shared), first_line=i + 1).findings}
    assert set(together.findings) == one_by_one
    rules = {f.rule for f in together.findings}
    assert {"crd-cel", "crd-schema", "crd-list-duplicate"} <= rules


def test_reused_cel_results_are_those_of_the_program() -> None:
    rule = crdschema.cel_rule({"rule": "self.a == 1 && size(self.b) > 0"})
    assert rule.program is not None
    values: list[Any] = [{"a": 1, "b": "x"}, {"a": True, "b": "x"}, {"a": 1.0, "b": "x"}, {"a": "1", "b": ""}]
    values += [
        {"a": 1, "b": []},
        {"a": 1, "b": [0]},
        {"b": "x"},
        {"a": -0.0, "b": "x"},
        {"a": 2**70, "b": "x"},
    ]

    def outcome(run: Any) -> tuple[str, Any]:
        try:
            return "value", run()
        except Exception as exc:
            return type(exc).__name__, str(exc)

    program = rule.program
    for _ in range(3):
        for value in values:
            reused = outcome(lambda v=value: rule.execute(program, v, True))
            direct = outcome(lambda v=value: program.execute(rule.activation(v)))
            assert reused == direct, value


def test_relative_crd_dir_follows_the_working_directory(
    shared: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "without").mkdir()
    (tmp_path / "with").mkdir()
    (tmp_path / "with" / "crds").symlink_to(crds(shared))
    lq = {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "LocalQueue",
        "metadata": {"name": "team-a", "namespace": "team-a"},
        "spec": {"clusterQueue": "team-a"},
    }
    for _ in range(2):
        monkeypatch.chdir(tmp_path / "without")
        assert run([lq], Path("crds")).skipped == (
            "Kueue CRD schema validation skipped: crds is not a directory",
        )
        monkeypatch.chdir(tmp_path / "with")
        report = run([lq], Path("crds"))
        assert report.skipped == ()
        assert report.schema_dirs_used[0] == str(crds(shared).resolve())
