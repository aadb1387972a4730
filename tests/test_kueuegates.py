"""Kueue feature-gate table: generated data matches the upstream facts, and the lookup API."""

from __future__ import annotations

import importlib.util
import json
import sys
from importlib import resources
from pathlib import Path
from types import ModuleType

import pytest

from gputenancy.versions import gates as kueuegates
from gputenancy.versions.gates import Gate

REPO = Path(__file__).resolve().parent.parent
TOOL = REPO / "tools" / "extract_feature_gates.py"
DATA = REPO / "gputenancy" / "versions" / "data" / "kueue_feature_gates.json"


def _load_tool() -> ModuleType:
    spec = importlib.util.spec_from_file_location("extract_feature_gates", TOOL)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("extract_feature_gates", module)
    spec.loader.exec_module(module)
    return module


tool = _load_tool()


# --- the committed data file against the upstream tables -------------------------------------------------


def test_data_file_matches_shared_feature_gate_tables(shared: Path) -> None:
    tables = {}
    for path in sorted((shared / "kueue").glob("v*/FEATURE_GATES.md")):
        minor = tool.minor_of_tag(path.parent.name)
        tables[minor] = tool.parse_feature_gates_md(path.read_text(encoding="utf-8"))
    assert tables, "no FEATURE_GATES.md found"
    assert json.loads(DATA.read_text(encoding="utf-8")) == tables
    assert DATA.read_text(encoding="utf-8") == tool.render(tool.extract(shared / "kueue"))


def test_data_file_is_sorted_with_trailing_newline() -> None:
    text = DATA.read_text(encoding="utf-8")
    assert text.endswith("}\n")
    assert text == json.dumps(json.loads(text), indent=2, sort_keys=True) + "\n"


def test_tool_check_mode(shared: Path, tmp_path: Path) -> None:
    out = tmp_path / "gates.json"
    assert tool.main([str(shared / "kueue"), "--output", str(out), "--check"]) == 1
    assert tool.main([str(shared / "kueue"), "--output", str(out)]) == 0
    assert out.read_text(encoding="utf-8") == DATA.read_text(encoding="utf-8")
    assert tool.main([str(shared / "kueue"), "--output", str(out), "--check"]) == 0


def test_package_data_is_the_committed_file() -> None:
    packaged = resources.files("gputenancy.versions").joinpath("data", "kueue_feature_gates.json")
    assert packaged.read_text(encoding="utf-8") == DATA.read_text(encoding="utf-8")


# --- tool parsing ----------------------------------------------------------------------------------------

_MD = """# Kueue v9.9.9 feature gates

Total gates defined: 2 (stages of the effective spec: Alpha 1, Beta 1, GA 0, Deprecated 0).

## DRA-related gates (highlighted)

| Feature gate | Stage | Default | Locked to default | Effective since | History |
|---|---|---|---|---|---|
| **KueueDRAIntegration** | Beta | true | no | 0.18 | 0.18: Beta/true |

## All gates (in the order they appear in the map; DRA gates in bold)

| Feature gate | Stage | Default | Locked to default | Effective since | History |
|---|---|---|---|---|---|
| PartialAdmission | Alpha | false | no | 0.5 | 0.4: Alpha/false |
| **KueueDRAIntegration** | Beta | true | no | 0.18 | 0.18: Beta/true |

## Differences
"""


def test_tool_parses_all_gates_table() -> None:
    assert tool.parse_feature_gates_md(_MD) == {
        "PartialAdmission": {"stage": "Alpha", "default": False, "locked": False},
        "KueueDRAIntegration": {"stage": "Beta", "default": True, "locked": False},
    }


@pytest.mark.parametrize(
    ("old", "new", "problem"),
    [
        ("Total gates defined: 2", "Total gates defined: 3", "total says 3"),
        ("Alpha 1, Beta 1", "Alpha 2, Beta 0", "Alpha"),
        (
            "| **KueueDRAIntegration** | Beta | true | no | 0.18 | 0.18: Beta/true |\n\n## All",
            "| **KueueDRAIntegration** | Beta | false | no | 0.18 | x |\n\n## All",
            "disagrees",
        ),
        ("| PartialAdmission | Alpha |", "| PartialAdmission | Gamma |", "unknown stage"),
        (
            "| PartialAdmission | Alpha | false | no |",
            "| PartialAdmission | Alpha | maybe | no |",
            "default/locked",
        ),
        ("## All gates", "## Every gate", "section"),
    ],
)
def test_tool_rejects_inconsistent_tables(old: str, new: str, problem: str) -> None:
    assert old in _MD
    with pytest.raises(tool.ExtractError, match=problem):
        tool.parse_feature_gates_md(_MD.replace(old, new))


def test_tool_rejects_patch_releases_that_disagree(tmp_path: Path) -> None:
    for tag, default in (("v9.9.1", "false"), ("v9.9.2", "true")):
        (tmp_path / tag).mkdir()
        text = _MD.replace(
            "| PartialAdmission | Alpha | false |", f"| PartialAdmission | Alpha | {default} |"
        )
        (tmp_path / tag / "FEATURE_GATES.md").write_text(text, encoding="utf-8")
    with pytest.raises(tool.ExtractError, match=r"v9\.9"):
        tool.extract(tmp_path)


def test_tool_merges_identical_patch_releases(tmp_path: Path) -> None:
    for tag in ("v9.9.1", "v9.9.2"):
        (tmp_path / tag).mkdir()
        (tmp_path / tag / "FEATURE_GATES.md").write_text(_MD, encoding="utf-8")
    assert list(tool.extract(tmp_path)) == ["v9.9"]


# --- lookup API ------------------------------------------------------------------------------------------


def test_supported_versions() -> None:
    assert kueuegates.supported_versions() == ["v0.18", "v0.19"]


@pytest.mark.parametrize(
    ("version", "minor"),
    [("v0.19.2", "v0.19"), ("0.19.2", "v0.19"), ("v0.19", "v0.19"), ("0.18", "v0.18"), ("v0.18.6", "v0.18")],
)
def test_minor_of(version: str, minor: str) -> None:
    assert kueuegates.minor_of(version) == minor


@pytest.mark.parametrize("version", ["v0.20.0", "v0.17.3", "1.0"])
def test_minor_of_unsupported(version: str) -> None:
    with pytest.raises(ValueError, match=r"unsupported Kueue version .*supported: v0\.18, v0\.19"):
        kueuegates.minor_of(version)


@pytest.mark.parametrize("version", ["", "latest", "v0", "v0.19.2.1", "v0.19.x", "0.19-rc"])
def test_minor_of_garbage(version: str) -> None:
    with pytest.raises(ValueError, match=r"not a Kueue version.*supported: v0\.18, v0\.19"):
        kueuegates.minor_of(version)


def test_gates_for_known_facts() -> None:
    v18, v19 = kueuegates.gates_for("v0.18.1"), kueuegates.gates_for("v0.19.2")
    assert v18["DynamicResourceAllocation"] == Gate("DynamicResourceAllocation", "Deprecated", False, True)
    assert "DynamicResourceAllocation" not in v19
    assert "DRAExtendedResources" not in v19
    assert "KueueDRAIntegrationConsumableCapacity" not in v18
    assert v19["KueueDRAIntegrationConsumableCapacity"] == Gate(
        "KueueDRAIntegrationConsumableCapacity", "Alpha", False, False
    )
    assert (
        v18["KueueDRAIntegration"]
        == v19["KueueDRAIntegration"]
        == Gate("KueueDRAIntegration", "Beta", True, False)
    )
    assert v18["KueueDRAIntegrationPartitionableDevices"].default is False
    assert v19["KueueDRAIntegrationPartitionableDevices"].default is True
    assert (len(v18), len(v19)) == (66, 89)


def test_gate_table_is_read_only() -> None:
    gates = kueuegates.gates_for("v0.19")
    with pytest.raises(TypeError):
        gates["New"] = Gate("New", "Alpha", False, False)  # type: ignore[index]
    with pytest.raises(AttributeError):
        gates["KueueDRAIntegration"].default = False  # type: ignore[misc]


def test_effective_gates_defaults_and_overrides() -> None:
    defaults = kueuegates.effective_gates("v0.19.2", {})
    assert defaults["KueueDRAIntegration"] is True
    assert defaults["KueueDRAIntegrationConsumableCapacity"] is False
    changed = kueuegates.effective_gates("v0.19.2", {"KueueDRAIntegrationConsumableCapacity": True})
    assert changed["KueueDRAIntegrationConsumableCapacity"] is True
    changed["KueueDRAIntegration"] = False
    assert kueuegates.effective_gates("v0.19.2", {})["KueueDRAIntegration"] is True
    assert set(defaults) == set(kueuegates.gates_for("v0.19"))


def test_effective_gates_locked_gate_at_default_is_accepted() -> None:
    assert (
        kueuegates.effective_gates("v0.18", {"DynamicResourceAllocation": False})["DynamicResourceAllocation"]
        is False
    )


@pytest.mark.parametrize(
    ("version", "overrides", "message"),
    [
        ("v0.19", {"DynamicResourceAllocation": True}, "unrecognized feature gate"),
        ("v0.18", {"KueueDRAIntegrationConsumableCapacity": True}, "unrecognized feature gate"),
        ("v0.18", {"DynamicResourceAllocation": True}, "locked to false"),
        ("v0.18", {"LendingLimit": False}, "locked to true"),
        ("v0.19", {"KueueDRAIntegration": "true"}, "must be a bool"),
    ],
)
def test_effective_gates_rejects(version: str, overrides: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        kueuegates.effective_gates(version, overrides)  # type: ignore[arg-type]
