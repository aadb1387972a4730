"""Tenant files are read from tenants/<tenant>.yaml (or .yml) only: a tenant file in a subdirectory or
with a suffix in other letter case is never silently ignored, but refused with a finding that says
where it must be (`tenant-file-place`), and nothing is written."""

from __future__ import annotations

import shutil
from pathlib import Path

import trees
from test_cli_ux import pipeline


def test_misplaced_tenant_files_are_findings_that_say_where_they_belong(tmp_path: Path) -> None:
    root = trees.example(tmp_path)
    before = {p: p.read_bytes() for p in (root / "generated").rglob("*") if p.is_file()}
    (root / "tenants" / "ml").mkdir()
    shutil.move(root / "tenants" / "speech.yaml", root / "tenants" / "ml" / "speech.yaml")
    shutil.move(root / "tenants" / "nlp.yaml", root / "tenants" / "nlp.YAML")
    (root / "tenants" / "ml" / "README.md").write_text("not a tenant file\n")
    (root / "tenants" / ".hidden").mkdir()
    (root / "tenants" / ".hidden" / "x.yaml").write_text("ignored: true\n")
    for command in ("validate", "render"):
        done = pipeline(command, cwd=root)
        assert done.returncode == 1, done.stdout
        assert "Traceback" not in done.stderr
        lines = done.stdout.splitlines()
        assert (
            "tenants/ml/speech.yaml:1:1: error: not read: files in tenants/ are read only directly in it, not"
            " in subdirectories; move it to tenants/speech.yaml (tenant-file-place)"
        ) in lines
        assert (
            "tenants/nlp.YAML:1:1: error: not read: file names in tenants/ end in .yaml or .yml, in lower"
            " case; move it to tenants/nlp.yaml (tenant-file-place)"
        ) in lines
        assert "README.md" not in done.stdout and ".hidden" not in done.stdout
    assert {p: p.read_bytes() for p in (root / "generated").rglob("*") if p.is_file()} == before


def test_yml_files_are_read_and_a_name_taken_twice_says_so(tmp_path: Path) -> None:
    root = trees.example(tmp_path)
    shutil.move(root / "tenants" / "speech.yaml", root / "tenants" / "speech.yml")
    done = pipeline("validate", cwd=root)
    assert done.returncode == 0, done.stdout
    assert done.stdout.startswith("ok: 4 tenants"), done.stdout
    (root / "tenants" / "ml").mkdir()
    shutil.copy(root / "tenants" / "nlp.yaml", root / "tenants" / "ml" / "nlp.yaml")
    done = pipeline("validate", cwd=root)
    assert done.returncode == 1
    assert "move it to tenants/nlp.yaml (a file of that name exists: merge the two) (tenant-file-place)" in (
        done.stdout
    )
