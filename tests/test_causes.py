"""Findings at the cause, causes first: the capacity finding at every contributing tenant's amount line,
mistyped names and keys with a did-you-mean, knock-on findings folded into their root cause, root
causes printed first. Through the command line, on the suite's own repository."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import trees

from gputenancy.cli.app import main

LOCATED = re.compile(
    r"^(?P<path>[^:\s]+):(?P<line>\d+):(?P<col>\d+): (?P<sev>error|warning): (?P<msg>.+) \((?P<rule>[a-z0-9-]+)\)$"
)


def validate(root: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, list[dict[str, Any]]]:
    code = main(["--root", str(root), "--no-cache", "validate", "--format", "json"])
    return code, json.loads(capsys.readouterr().out)["findings"]


def line_of(root: Path, rel: str, needle: str, after: int = 0) -> int:
    for n, text in enumerate((root / rel).read_text().splitlines(), 1):
        if n > after and needle in text:
            return n
    raise AssertionError(f"{needle!r} not in {rel}")


def text_lines(root: Path, capsys: pytest.CaptureFixture[str]) -> list[str]:
    assert main(["--root", str(root), "--no-cache", "validate", "--format", "text"]) == 1
    return [line for line in capsys.readouterr().out.splitlines() if LOCATED.match(line)]


def test_capacity_is_reported_at_every_contributing_tenant_line_and_the_cluster(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = trees.example(tmp_path, generated=False)
    speech = root / "tenants/speech.yaml"
    speech.write_text(
        speech.read_text().replace("{nominal: 2, borrowingLimit: 2}", "{nominal: 4, borrowingLimit: 2}")
    )
    code, found = validate(root, capsys)
    assert code == 1
    capacity = [f for f in found if f["rule"] == "capacity"]
    places = {(f["path"], f["line"]) for f in capacity}
    assert places == {
        ("tenants/speech.yaml", line_of(root, "tenants/speech.yaml", "gpu.nvidia.com: {nominal: 4")),
        ("tenants/vision.yaml", line_of(root, "tenants/vision.yaml", "gpu.nvidia.com: {nominal: 8")),
        ("tenants/nlp.yaml", line_of(root, "tenants/nlp.yaml", "gpu.nvidia.com: {nominal: 6")),
        ("overlays/prod/cluster.yaml", line_of(root, "overlays/prod/cluster.yaml", "gpu.nvidia.com: 16")),
    }
    (at_speech,) = [f for f in capacity if f["path"] == "tenants/speech.yaml"]
    assert "speech's nominal 4 nvidia.com/gpu" in at_speech["message"]
    assert "total 18 exceeds capacity 16" in at_speech["message"]
    assert (
        f"overlays/prod/cluster.yaml:{places and line_of(root, 'overlays/prod/cluster.yaml', 'gpu.nvidia.com: 16')}"
        in at_speech["message"]
    )


def test_a_flavor_typo_is_one_finding_with_a_suggestion(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = trees.example(tmp_path, generated=False)
    vision = root / "tenants/vision.yaml"
    vision.write_text(vision.read_text().replace("flavor: h100", "flavor: h10"))
    code, found = validate(root, capsys)
    assert code == 1
    assert [(f["rule"], f["line"]) for f in found] == [
        ("flavor-unknown", line_of(root, "tenants/vision.yaml", "flavor: h10"))
    ]
    assert "did you mean 'h100'?" in found[0]["message"]


def test_a_flavor_not_offered_is_not_also_a_capacity_finding(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = trees.example(tmp_path, generated=False)
    sandbox = root / "tenants/sandbox.yaml"
    sandbox.write_text(sandbox.read_text().replace("flavor: t4", "flavor: h100"))
    code, found = validate(root, capsys)
    assert code == 1
    assert [f["rule"] for f in found] == ["flavor-unknown"]
    assert "not offered on cluster 'lab'" in found[0]["message"]


def test_a_resource_missing_from_an_offered_flavor_capacity_is_at_the_tenant_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = trees.example(tmp_path, generated=False)
    sandbox = root / "tenants/sandbox.yaml"
    sandbox.write_text(sandbox.read_text().replace("memory: 32Gi", "memory: 32Gi\n        pods: 10"))
    code, found = validate(root, capsys)
    assert code == 1
    places = {(f["path"], f["line"]) for f in found if f["rule"] == "capacity"}
    assert ("tenants/sandbox.yaml", line_of(root, "tenants/sandbox.yaml", "pods: 10")) in places
    at = line_of(root, "overlays/lab/cluster.yaml", "flavor: default-flavor")  # the CPU group's flavor
    assert ("overlays/lab/cluster.yaml", at) in places


def test_a_cluster_typo_is_one_finding_at_the_clusters_entry(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = trees.example(tmp_path, generated=False)
    trees.write(
        root,
        "tenants/robotics.yaml",
        trees.tenant(
            "robotics",
            clusters=["lab", "prdo"],
            budgets={
                "clusters": {
                    "lab": [{"flavor": "t4", "devices": {"gpu.nvidia.com": 0}}],
                    "prdo": [{"flavor": "h100", "devices": {"gpu.nvidia.com": 0}}],
                }
            },
            claimTemplates=[{"name": "one", "deviceClass": "gpu.nvidia.com", "clusters": ["prdo"]}],
        ),
    )
    code, found = validate(root, capsys)
    assert code == 1
    (only,) = found
    assert only["rule"] == "cluster-unknown"
    assert only["line"] == line_of(root, "tenants/robotics.yaml", "- prdo")
    assert "did you mean 'prod'?" in only["message"]
    assert "budgets.clusters.prdo at line" in only["message"] and "claim template 'one'" in only["message"]


def test_a_budget_under_a_mistyped_cluster_folds_the_missing_budget(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = trees.example(tmp_path, generated=False)
    trees.write(
        root,
        "tenants/robotics.yaml",
        trees.tenant(
            "robotics",
            clusters=["prod"],
            budgets={"clusters": {"prdo": [{"flavor": "h100", "devices": {"gpu.nvidia.com": 0}}]}},
            claimTemplates=[{"name": "one", "deviceClass": "gpu.nvidia.com", "clusters": ["prdo"]}],
        ),
    )
    code, found = validate(root, capsys)
    assert code == 1
    assert [f["rule"] for f in found] == ["cluster-unknown"]  # no tenant-no-budget, no claim-scope
    message = found[0]["message"]
    assert "did you mean 'prod'?" in message and "is placed on 'prod' and has no budget there" in message


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        (
            "borrowingLimit: 4, lendingLimit",
            "borrowLimit: 4, lendingLimit",
            "unknown key 'borrowLimit' at $.budgets.default[0].devices.gpu.nvidia.com; did you mean 'borrowingLimit'?",
        ),
        ("cohort: research", "cohrt: research", "unknown key 'cohrt' at $; did you mean 'cohort'?"),
        (
            "preemption: reclaim",
            "preemption: reclam",
            "'reclam' is not one of none, within-queue, reclaim, borrow; did you mean 'reclaim'?",
        ),
        ("cohort: research", "cohort: reserch", "did you mean 'research'?"),
        (
            "deviceClass: mig-1g.10gb.nvidia.com",
            "deviceClass: mig-1g.10gb.nvidia.co",
            "did you mean 'mig-1g.10gb.nvidia.com'?",
        ),
    ],
)
def test_every_mistyped_key_or_name_gets_a_suggestion_at_its_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], old: str, new: str, expected: str
) -> None:
    root = trees.example(tmp_path, generated=False)
    vision = root / "tenants/vision.yaml"
    assert old in vision.read_text()
    vision.write_text(vision.read_text().replace(old, new, 1))
    code, found = validate(root, capsys)
    assert code == 1
    (finding,) = [f for f in found if expected in f["message"]]
    assert finding["path"] == "tenants/vision.yaml"
    assert finding["line"] == line_of(root, "tenants/vision.yaml", new.split(",")[0])


def test_root_causes_are_printed_first(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A cohort typo in a file that sorts last and a quota error in one that sorts first: the typo
    comes first."""
    root = trees.example(tmp_path, generated=False)
    nlp = root / "tenants/nlp.yaml"
    nlp.write_text(nlp.read_text().replace("lendingLimit: 2}", "lendingLimit: 20}", 1))
    vision = root / "tenants/vision.yaml"
    vision.write_text(vision.read_text().replace("cohort: research", "cohort: reserch"))
    lines = text_lines(root, capsys)
    rules = [LOCATED.match(line)["rule"] for line in lines]  # type: ignore[index]
    assert rules[0] == "cohort-unknown" and "quota-limits" in rules[1:], lines


def test_helm_feature_gate_conflict_points_at_the_overlay_values(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = trees.example(tmp_path, generated=False)
    (root / "base/kueue-config.yaml").write_text(
        (root / "base/kueue-config.yaml").read_text() + "featureGates:\n  TopologyAwareScheduling: true\n"
    )
    lab = root / "overlays/lab/cluster.yaml"
    lab.write_text(
        lab.read_text().replace(
            "    releaseName: kueue\n",
            "    releaseName: kueue\n    values:\n      controllerManager:\n        featureGates:\n"
            "          - name: TopologyAwareScheduling\n            enabled: true\n",
        )
    )
    code, found = validate(root, capsys)
    assert code == 1
    (conflict,) = [f for f in found if f["rule"] == "kueue-feature-gate-conflict"]
    assert conflict["path"] == "overlays/lab/cluster.yaml"
    assert conflict["line"] == line_of(root, "overlays/lab/cluster.yaml", "featureGates:")
    assert "base/kueue-config.yaml:" in conflict["message"]


def test_a_mistyped_resource_name_gets_a_suggestion_at_the_budget_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = trees.example(tmp_path, generated=False)
    sandbox = root / "tenants/sandbox.yaml"
    sandbox.write_text(sandbox.read_text().replace("memory: 32Gi", "memroy: 32Gi"))
    code, found = validate(root, capsys)
    assert code == 1
    at_tenant = [f for f in found if f["path"] == "tenants/sandbox.yaml" and f["rule"] == "capacity"]
    assert [f["line"] for f in at_tenant] == [line_of(root, "tenants/sandbox.yaml", "memroy: 32Gi")]
    assert "did you mean 'memory'?" in at_tenant[0]["message"]


def test_a_device_class_typo_in_a_budget_folds_the_claim_coverage_findings(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = trees.example(tmp_path, generated=False)
    vision = root / "tenants/vision.yaml"
    vision.write_text(vision.read_text().replace("gpu.nvidia.com: {nominal: 8", "gpu.nvidia.co: {nominal: 8"))
    code, found = validate(root, capsys)
    assert code == 1
    assert [f["rule"] for f in found] == ["device-class-unknown"]  # no claim-coverage for h100-x1, h100-x8
    assert "did you mean 'gpu.nvidia.com'?" in found[0]["message"]
    assert "claim template(s) h100-x1, h100-x8 use gpu.nvidia.com" in found[0]["message"]
