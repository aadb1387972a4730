"""The suite does not depend on the live example content: after the edits a platform team makes first
(a new tenant, a new cluster overlay, changed and removed budgets, a removed tenant, all rendered), the
tests still pass. tools/adoption_check.py runs the whole suite that way; here a representative part."""

from __future__ import annotations

import importlib.util
import re
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest
import trees

from gputenancy.cli.app import main


def _tool() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "adoption_check", trees.REPO / "tools" / "adoption_check.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def test_the_suite_passes_after_a_team_changes_tenants_and_overlays() -> None:
    result = subprocess.run(
        [
            sys.executable,
            str(trees.REPO / "tools" / "adoption_check.py"),
            "tests/test_rules.py",
            "tests/test_ownership.py",
            "-x",
        ],
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    out = result.stdout + result.stderr
    assert "$ pipeline.py render" in out and re.search(r"ok: \d+ tenants, \d+ clusters", out), out
    assert result.returncode == 0, out
    assert "the test suite passed" in out


def test_no_test_reads_the_live_example_content() -> None:
    """The checkout's own tenants/, base/, overlays/, generated/, CODEOWNERS and argocd/hub.yaml are the
    team's; tests use tests/fixtures/repo (trees.FIXTURE, trees.example) instead."""
    import re

    live = re.compile(
        r"(?:\bREPO|trees\.REPO)\s*/\s*(?:\"(?:tenants|base|overlays|generated)\b|ownership\.PATH|appset\.PATH|"
        r"\"\.github\"\s*/\s*\"CODEOWNERS|\"argocd\"\s*/\s*\"(?:applicationset|hub))|"
        r"(?:engine\.run|load_model|check_only)\(\s*(?:trees\.)?REPO\b|\"--root\",\s*str\(\s*trees\.REPO\b"
    )
    offenders = []
    for path in sorted((trees.REPO / "tests").glob("*.py")):
        text = path.read_text()
        if path.name == "test_render.py":  # its REPO is the fixture
            assert "REPO = trees.FIXTURE" in text
            continue
        offenders += [f"{path.name}: {m.group(0)}" for m in live.finditer(text)]
    assert offenders == []


def test_the_check_leaves_itself_out_of_the_suite_it_runs() -> None:
    """No recursion: the check deselects, in its copy, exactly the test that runs the check."""
    tool = _tool()
    path, _, name = tool.SELF_TEST.partition("::")
    assert (trees.REPO / path).resolve() == Path(__file__).resolve()
    assert name == test_the_suite_passes_after_a_team_changes_tenants_and_overlays.__name__


def test_the_added_cluster_and_tenant_take_names_nobody_uses(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A repository that already has a `staging` overlay (the README's example), a tenant named like the
    one the check adds and a namespace named like its next try: the check adds `staging-2` and
    `adopted-team-3`, and the result renders."""
    tool = _tool()
    root = trees.example(tmp_path, generated=False)
    source = sorted(p.parent.name for p in (root / "overlays").glob("*/cluster.yaml"))[0]
    shutil.copytree(root / "overlays" / source, root / "overlays" / "staging")
    trees.edit(
        root, "overlays/staging/cluster.yaml", lambda c: c.update(name="staging", argocd={"name": "staging"})
    )
    first = sorted((root / "tenants").glob("*.yaml"))[0]
    body = trees.read(root, f"tenants/{first.name}")
    body.update(name="adopted-team", owners=["@acme/adopted-team"])
    body["namespaces"] = [*body["namespaces"], "adopted-team-2"]  # the next name is taken too
    first.unlink()
    trees.write(root, "tenants/adopted-team.yaml", body)
    assert main(["--root", str(root), "--no-cache", "render"]) == 0, capsys.readouterr().out
    names = tool._names(root)
    assert {"staging", "adopted-team", "adopted-team-2"} <= names
    adopted = tool.adopt(root)
    assert (adopted.cluster, adopted.team) == ("staging-2", "adopted-team-3")
    assert trees.read(root, "overlays/staging-2/cluster.yaml")["name"] == "staging-2"
    assert trees.read(root, "tenants/adopted-team-3.yaml")["clusters"][-1] == "staging-2"
    assert main(["--root", str(root), "--no-cache", "render"]) == 0, capsys.readouterr().out
    assert (root / "generated" / "staging-2").is_dir() and (root / "generated" / "staging").is_dir()


def test_a_budget_the_claims_need_is_left_and_the_next_one_lowered(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An ordinary adoption: a copy of `lab` as `staging`, and `newteam` copied from `sandbox` and placed
    there, with its 1-GPU budget and its 1-GPU claim template. newteam's GPU is the first count the
    check could lower; at 0 the claim fits no flavor (claim-admissible), so the check leaves it, lowers
    the next one, and the repository still validates."""
    tool = _tool()
    root = trees.example(tmp_path, generated=False)
    shutil.copytree(root / "overlays" / "lab", root / "overlays" / "staging")
    trees.edit(
        root, "overlays/staging/cluster.yaml", lambda c: c.update(name="staging", argocd={"name": "staging"})
    )
    body = trees.read(root, "tenants/sandbox.yaml")
    body.update(name="newteam", owners=["@acme/newteam"], clusters=["staging"], namespaces=["newteam"])
    trees.write(root, "tenants/newteam.yaml", body)
    assert tool.validate(root) == []
    assert sorted((root / "tenants").glob("*.yaml"))[0].name == "newteam.yaml"  # the first candidate
    adopted = tool.adopt(root)
    assert tool.validate(root) == []
    assert trees.read(root, "tenants/newteam.yaml")["budgets"] == body["budgets"]
    out = capsys.readouterr().out
    assert "not lowering tenants/newteam.yaml: budgets.default[0].devices.gpu.nvidia.com: 1 -> 0" in out
    assert "(claim-admissible)" in out
    assert adopted.lowered is not None and adopted.lowered.startswith("tenants/nlp.yaml: "), out
    assert f"adoption check: lowered {adopted.lowered}" in out
    assert adopted.removed is not None and not (root / adopted.removed).exists()


def test_an_edit_that_breaks_the_repository_is_undone(tmp_path: Path) -> None:
    """attempt() keeps an edit the repository validates with, and puts back every file an edit that
    breaks it changed, added or removed (tenants and overlays)."""
    tool = _tool()
    root = trees.example(tmp_path, generated=False)
    before = {p: p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}

    def breaking() -> None:
        (root / "tenants" / "vision.yaml").unlink()
        trees.write(root, "tenants/extra.yaml", {"kind": "Tenant"})
        trees.edit(root, "tenants/nlp.yaml", lambda t: t.update(namespaces=["speech"]))
        shutil.copytree(root / "overlays" / "lab", root / "overlays" / "copy")

    errors = tool.attempt(root, breaking, tool.validate)
    assert errors, "the edit breaks the repository"
    assert {p: p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()} == before
    assert tool.attempt(root, (root / "tenants" / "vision.yaml").unlink, tool.validate) == []
    assert not (root / "tenants" / "vision.yaml").exists()
