"""Editors and local runs: the schema modelines, the published JSON Schemas, the pre-commit hooks."""

from __future__ import annotations

import copy
import importlib
import json
import re
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

REPO = Path(__file__).resolve().parent.parent
SCHEMAS = REPO / "gputenancy" / "schemas"
MODELINE = re.compile(r"^# yaml-language-server: \$schema=(?P<ref>\S+)$")
# The suite's own example repository (the live tenants/ and overlays/ are checked by `validate`).
FIXTURE = REPO / "tests" / "fixtures" / "repo"
TENANTS = sorted((FIXTURE / "tenants").glob("*.yaml"))
INPUTS = [
    *TENANTS,
    FIXTURE / "base" / "platform.yaml",
    *sorted((FIXTURE / "overlays").glob("*/cluster.yaml")),
]


def schema(name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((SCHEMAS / f"{name}.schema.json").read_text())
    return loaded


def validator(name: str) -> jsonschema.Draft202012Validator:
    s = schema(name)
    jsonschema.Draft202012Validator.check_schema(s)
    return jsonschema.Draft202012Validator(s)


def kind_schema(path: Path) -> str:
    return (
        "tenant"
        if path.parent.name == "tenants"
        else "platform"
        if path.name == "platform.yaml"
        else "cluster"
    )


def test_there_are_example_tenants() -> None:
    assert len(TENANTS) >= 2


@pytest.mark.parametrize("path", INPUTS, ids=lambda p: str(p.relative_to(FIXTURE)))
def test_every_input_names_its_schema_for_the_editor(path: Path) -> None:
    first = path.read_text().splitlines()[0]
    m = MODELINE.match(first)
    rel = path.relative_to(FIXTURE)
    assert m, f"{rel}: the first line must be '# yaml-language-server: $schema=...'"
    target = (REPO / rel.parent / m["ref"]).resolve()  # where the file sits in a repository root
    assert target == (SCHEMAS / f"{kind_schema(path)}.schema.json").resolve()
    assert target.is_file()


@pytest.mark.parametrize("path", INPUTS, ids=lambda p: str(p.relative_to(FIXTURE)))
def test_the_published_schema_accepts_every_example(path: Path) -> None:
    data = yaml.safe_load(path.read_text())
    errors = [e.message for e in validator(kind_schema(path)).iter_errors(data)]
    assert errors == []


@pytest.mark.parametrize("path", TENANTS, ids=lambda p: p.name)
def test_the_tenant_schema_rejects_unknown_keys(path: Path) -> None:
    data = yaml.safe_load(path.read_text())
    v = validator("tenant")
    top = copy.deepcopy(data)
    top["nameSpaces"] = ["x"]
    assert any(
        e.validator == "additionalProperties" and "nameSpaces" in e.message for e in v.iter_errors(top)
    )
    nested = copy.deepcopy(data)
    budget = nested["budgets"].get("default") or next(iter(nested["budgets"]["clusters"].values()))
    budget[0]["flavour"] = budget[0]["flavor"]
    assert any("flavour" in e.message for e in v.iter_errors(nested))


def test_the_schemas_have_ids_and_titles_for_editors() -> None:
    for name in ("tenant", "platform", "cluster"):
        s = schema(name)
        assert s["$schema"] == "https://json-schema.org/draft/2020-12/schema"
        assert s["$id"].endswith(f"/{name}.schema.json") and s["title"]
        assert s["additionalProperties"] is False


# ---------------------------------------------------------------- pre-commit


def hooks() -> list[dict[str, Any]]:
    data = yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text())
    assert isinstance(data, list) and data
    return data


def console_scripts() -> dict[str, str]:
    scripts: dict[str, str] = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["scripts"]
    return scripts


def test_pre_commit_hooks_parse_and_name_an_existing_entry_point() -> None:
    by_id = {h["id"]: h for h in hooks()}
    assert "gputenancy-validate" in by_id
    for hook in hooks():
        assert {"id", "name", "entry", "language"} <= set(hook)
        assert hook["language"] == "python"  # pre-commit installs this package and runs its script
        assert hook["pass_filenames"] is False  # the pipeline reads the whole repository
        command = hook["entry"].split()[0]
        target = console_scripts().get(command)
        assert target, f"{hook['id']}: entry {command!r} is not in [project.scripts] of pyproject.toml"
        module, _, attr = target.partition(":")
        assert callable(getattr(importlib.import_module(module), attr))
        files = re.compile(hook["files"])
        assert files.search("tenants/nlp.yaml") and files.search("overlays/prod/cluster.yaml")
        assert files.search("base/platform.yaml")
        assert not files.search("README.md") and not files.search("gputenancy/cli/app.py")
    validate = by_id["gputenancy-validate"]
    assert validate["entry"] == "gputenancy validate"
    assert validate["files"] == "^(tenants|base|overlays)/"


def test_the_console_script_runs_the_pipeline(tmp_path: Path) -> None:
    """What pre-commit runs: `gputenancy validate` from the repository root (here through the same
    function the installed script calls, and through the installed script itself)."""
    code = "import sys; from gputenancy.cli.app import main_entry; sys.argv[0] = 'gputenancy'; main_entry()"
    ok = subprocess.run(
        [sys.executable, "-c", code, "validate"],
        cwd=FIXTURE,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert ok.returncode == 0 and "ok:" in ok.stdout, ok.stdout + ok.stderr
    bad = subprocess.run(
        [sys.executable, "-c", code, "--root", str(tmp_path), "validate"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert bad.returncode == 1 and "base/platform.yaml is required" in bad.stdout, bad.stdout + bad.stderr
    script = Path(sys.executable).parent / "gputenancy"
    assert script.is_file(), (
        f"{script} missing: reinstall the package (pip install -e .) to get the console script"
    )
    rules = subprocess.run([str(script), "rules"], capture_output=True, text=True, timeout=60, check=False)
    assert rules.returncode == 0 and "tenant-duplicate" in rules.stdout
