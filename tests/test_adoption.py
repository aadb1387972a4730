"""The suite does not depend on the live example content: after the edits a platform team makes first
(a new tenant, a new cluster overlay, changed and removed budgets, a removed tenant, all rendered), the
tests still pass. tools/adoption_check.py runs the whole suite that way; here a representative part."""

from __future__ import annotations

import re
import subprocess
import sys

import trees


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
