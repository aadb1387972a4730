"""Every model rule: the example content passes, and a targeted change fails with the rule's id at
the input line that causes it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import trees

from gputenancy import engine
from gputenancy.common.findings import Finding, PipelineError, Severity
from gputenancy.policy import rules


def findings_for(root: Path) -> list[Finding]:
    try:
        _, found = engine.check_only(root)
    except PipelineError as exc:
        return exc.findings
    return found


def line_of(root: Path, rel: str, needle: str) -> int:
    for n, text in enumerate((root / rel).read_text().splitlines(), 1):
        if needle in text:
            return n
    raise AssertionError(f"{needle!r} not in {rel}")


def test_examples_pass_every_rule(tmp_path: Path) -> None:
    assert findings_for(trees.example(tmp_path)) == []


def test_every_rule_is_documented_with_examples() -> None:
    for rule_id, fn in rules.RULES.items():
        doc = fn.__doc__ or ""
        assert "Passes:" in doc and "Fails:" in doc, rule_id
    assert set(rules.RULES) >= {
        "capacity",
        "quota-limits",
        "cohort-required",
        "device-class-unknown",
        "claim-coverage",
        "namespace-owner",
        "mapping-limits",
        "device-class-conflict",
        "flavor-unknown",
        "cohort-unknown",
    }


def _vision(change: Callable[[dict[str, Any]], None]) -> Callable[[Path], str]:
    def apply(root: Path) -> str:
        trees.edit(root, "tenants/vision.yaml", change)
        return "tenants/vision.yaml"

    return apply


def _h100(data: dict[str, Any]) -> dict[str, Any]:
    result: dict[str, Any] = data["budgets"]["default"][0]
    return result


CASES: list[tuple[str, Callable[[Path], str], str, str]] = [
    # (rule, change -> file that is blamed, expected rule id, text on the blamed line)
    (
        "capacity",
        _vision(lambda d: _h100(d)["devices"].update({"gpu.nvidia.com": {"nominal": 9}})),
        "capacity",
        "gpu.nvidia.com: 16",
    ),
    (
        "quota-limits",
        _vision(lambda d: _h100(d)["devices"].update({"gpu.nvidia.com": {"nominal": 4, "lendingLimit": 6}})),
        "quota-limits",
        "lendingLimit: 6",
    ),
    ("cohort-required", _vision(lambda d: d.pop("cohort")), "cohort-required", "borrowingLimit: 4"),
    ("cohort-unknown", _vision(lambda d: d.update(cohort="reserch")), "cohort-unknown", "cohort: reserch"),
    (
        "device-class-unknown",
        _vision(lambda d: d["claimTemplates"][0].update(deviceClass="gpu.example.com")),
        "device-class-unknown",
        "deviceClass: gpu.example.com",
    ),
    (
        "claim-coverage",
        _vision(lambda d: d["budgets"]["default"].pop(1)),
        "claim-coverage",
        "deviceClass: mig-1g.10gb.nvidia.com",
    ),
    (
        "namespace-owner",
        _vision(lambda d: d["namespaces"].append("nlp-serve")),
        "namespace-owner",
        "nlp-serve",
    ),
    ("flavor-unknown", _vision(lambda d: _h100(d).update(flavor="t4")), "flavor-unknown", "flavor: t4"),
    (
        "claim-scope",
        _vision(lambda d: d["claimTemplates"][0].update(namespaces=["nlp-serve"])),
        "claim-scope",
        "name: h100-x1",
    ),
    (
        "budget-duplicate-flavor",
        _vision(
            lambda d: d["budgets"]["default"].append({"flavor": "h100", "devices": {"gpu.nvidia.com": 0}})
        ),
        "budget-duplicate-flavor",
        None,
    ),  # type: ignore[list-item]
    (
        "budget-duplicate-resource",
        _vision(lambda d: _h100(d)["resources"].update({"nvidia.com/gpu": 1})),
        "budget-duplicate-resource",
        "nvidia.com/gpu: 1",
    ),
    (
        "cluster-unknown",
        _vision(lambda d: d.update(clusters=["prod", "staging"])),
        "cluster-unknown",
        "- staging",
    ),
    (
        "tenant-no-budget",
        _vision(
            lambda d: (
                d.update(clusters=["prod", "lab"]),
                d["budgets"].update(clusters={"prod": d["budgets"].pop("default")}),
            )
        ),
        "tenant-no-budget",
        "name: vision",
    ),
    (
        "device-class-conflict",
        _vision(
            lambda d: d.update(deviceClasses=[{"name": "gpu.nvidia.com", "resource": "example.com/gpu"}])
        ),
        "device-class-conflict",
        "name: gpu.nvidia.com",
    ),
]


@pytest.mark.parametrize(("name", "change", "rule_id", "line_text"), CASES, ids=[c[0] for c in CASES])
def test_rule_fails(
    tmp_path: Path, name: str, change: Callable[[Path], str], rule_id: str, line_text: str | None
) -> None:
    root = trees.example(tmp_path)
    blamed = change(root)
    if rule_id == "capacity":
        blamed = "overlays/prod/cluster.yaml"
    found = [f for f in findings_for(root) if f.rule == rule_id and f.path == blamed]
    assert found, f"expected {rule_id} in {blamed}, got {findings_for(root)}"
    f = found[0]
    assert f.severity is Severity.ERROR
    if line_text is not None:
        assert f.line == line_of(root, blamed, line_text), f.format()


def test_overcommit_turns_capacity_into_a_stated_warning(tmp_path: Path) -> None:
    root = trees.example(tmp_path)
    trees.edit(root, "tenants/vision.yaml", lambda d: _h100(d)["devices"].update({"gpu.nvidia.com": 12}))
    assert any(f.rule == "capacity" and f.severity is Severity.ERROR for f in findings_for(root))
    trees.edit(root, "overlays/prod/cluster.yaml", lambda d: d.update(overcommit=True))
    found = [f for f in findings_for(root) if f.rule == "capacity"]
    assert found and all(f.severity is Severity.WARNING for f in found)
    assert "overcommit allowed" in found[0].message
    assert "exceeds capacity 16" in found[0].message


def test_mapping_limits(tmp_path: Path) -> None:
    root = trees.example(tmp_path)
    classes = [
        {
            "name": f"mig-p{i}.nvidia.com",
            "resource": "nvidia.com/mig",
            "selectors": [f"device.attributes['gpu.nvidia.com'].profile == 'p{i}'"],
        }
        for i in range(9)
    ]
    trees.edit(root, "base/platform.yaml", lambda d: d["deviceClasses"].extend(classes))
    trees.edit(
        root,
        "overlays/prod/cluster.yaml",
        lambda d: d["capacity"][1]["devices"].update({c["name"]: 1 for c in classes}),
    )
    trees.edit(
        root,
        "tenants/vision.yaml",
        lambda d: d["budgets"]["default"][1]["devices"].update({c["name"]: 1 for c in classes}),
    )
    found = [f for f in findings_for(root) if f.rule == "mapping-limits"]
    assert found and "9 device classes map to nvidia.com/mig" in found[0].message
    assert found[0].path == "tenants/vision.yaml"


def test_two_files_for_one_tenant(tmp_path: Path) -> None:
    root = trees.example(tmp_path)
    (root / "tenants" / "vision.yml").write_text((root / "tenants" / "vision.yaml").read_text())
    found = [f for f in findings_for(root) if f.rule == "tenant-duplicate"]
    assert len(found) == 1 and "already declared in tenants/vision.yaml" in found[0].message


def test_tenant_file_renaming_another_tenant(tmp_path: Path) -> None:
    root = trees.example(tmp_path)
    trees.edit(root, "tenants/speech.yaml", lambda d: d.update(name="vision"))
    found = [f for f in findings_for(root) if f.rule == "tenant-name-file"]
    assert found and found[0].path == "tenants/speech.yaml"
    assert found[0].line == line_of(root, "tenants/speech.yaml", "name: vision")


def test_unknown_key_with_did_you_mean(tmp_path: Path) -> None:
    root = trees.example(tmp_path)
    trees.edit(root, "tenants/vision.yaml", lambda d: d.update(namespace=["x"]))
    found = [f for f in findings_for(root) if f.rule == "tenant-schema"]
    assert (
        found
        and "unknown key 'namespace'" in found[0].message
        and "did you mean 'namespaces'" in found[0].message
    )
    assert found[0].line == line_of(root, "tenants/vision.yaml", "namespace:")


@pytest.mark.parametrize("shape", ["firstAvailable", "allocationMode", "adminAccess"])
def test_only_claim_shapes_kueue_admits(tmp_path: Path, shape: str) -> None:
    """Tenants cannot express firstAvailable, allocationMode All or adminAccess: the schema has no
    such keys, and the pipeline always renders exactly + ExactCount."""
    root = trees.example(tmp_path)
    trees.edit(root, "tenants/vision.yaml", lambda d: d["claimTemplates"][0].update({shape: "All"}))
    found = [f for f in findings_for(root) if f.rule == "tenant-schema"]
    assert found and f"unknown key {shape!r}" in found[0].message


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("four", "not a Kubernetes quantity"),
        (-1, "must not be negative"),
        (1.5, "whole numbers"),
        ("500m", "whole numbers"),
    ],
)
def test_device_counts_are_whole_non_negative_quantities(tmp_path: Path, value: Any, message: str) -> None:
    root = trees.example(tmp_path)
    trees.edit(root, "tenants/speech.yaml", lambda d: _h100(d)["devices"].update({"gpu.nvidia.com": value}))
    found = [f for f in findings_for(root) if f.rule == "quantity"]
    assert found and message in found[0].message, found
    assert found[0].line == line_of(root, "tenants/speech.yaml", "gpu.nvidia.com:")


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("name", "Team_A"),
        ("namespaces", ["ns/../etc"]),
        ("namespaces", ["a" * 64]),
        ("localQueueName", "UPPER"),
    ],
)
def test_names_must_be_valid(tmp_path: Path, field: str, value: Any) -> None:
    root = trees.example(tmp_path)
    trees.edit(root, "tenants/speech.yaml", lambda d: d.update({field: value}))
    assert any(f.rule == "tenant-schema" and f.path == "tenants/speech.yaml" for f in findings_for(root))


def test_all_findings_in_one_run(tmp_path: Path) -> None:
    root = trees.example(tmp_path)
    trees.edit(root, "tenants/vision.yaml", lambda d: d.update(cohort="nope"))
    trees.edit(
        root, "tenants/speech.yaml", lambda d: d["claimTemplates"][0].update(deviceClass="x.example.com")
    )
    (root / "tenants" / "broken.yaml").write_text("name: [\n")
    rule_ids = {f.rule for f in findings_for(root)}
    assert {"cohort-unknown", "device-class-unknown", "source-syntax"} <= rule_ids
