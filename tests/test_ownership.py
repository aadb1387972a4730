""".github/CODEOWNERS: rendered from the owners in the inputs, in the order GitHub needs, kept in sync."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import trees

from gputenancy.cli import main
from gputenancy.deliver import ownership
from gputenancy.inputs import spec

OWNER = re.compile(r"^@[A-Za-z0-9][A-Za-z0-9-]*(/[A-Za-z0-9][A-Za-z0-9._-]*)?$")
PLATFORM = ("@acme/gpu-platform",)


def text_of(root: Path) -> str:
    model, findings = spec.load_model(root)
    assert not findings
    return ownership.codeowners(model)


def entries(text: str) -> list[tuple[str, tuple[str, ...]]]:
    out = []
    for line in text.splitlines():
        if line.strip() and not line.startswith("#"):
            pattern, *owners = line.split()
            out.append((pattern, tuple(owners)))
    return out


def test_committed_codeowners_is_what_render_writes() -> None:
    assert (trees.FIXTURE / ownership.PATH).read_text() == text_of(trees.FIXTURE)


def test_every_tenant_file_is_owned_by_its_owners_and_the_rest_by_the_platform() -> None:
    text = (trees.FIXTURE / ownership.PATH).read_text()
    model, _ = spec.load_model(trees.FIXTURE)
    assert model.platform.owners == PLATFORM
    for tenant in model.tenants:
        assert ownership.owners_of(text, tenant.path) == tenant.owners, tenant.path
    for path in (
        "base/platform.yaml",
        "overlays/prod/cluster.yaml",
        "generated/prod/clusterqueue/nlp.yaml",
        ".github/workflows/pull-request.yaml",
        ".github/CODEOWNERS",
        "gputenancy/cli.py",
        "pipeline.py",
        "argocd/hub.yaml",
        "tenants/a-new-team.yaml",  # a new tenant's first pull request: the platform team reviews it
        "README.md",
    ):
        assert ownership.owners_of(text, path) == PLATFORM, path


def test_platform_lines_come_before_tenant_lines() -> None:
    """GitHub applies the last matching line: a later platform line would take tenant files away."""
    lines = entries((trees.FIXTURE / ownership.PATH).read_text())
    platform = [i for i, (_, owners) in enumerate(lines) if owners == PLATFORM]
    tenant = [i for i, (pattern, _) in enumerate(lines) if re.match(r"^/tenants/.+\.yaml$", pattern)]
    assert lines[0] == ("*", PLATFORM)
    assert {p for p, _ in lines if _ == PLATFORM} >= {
        "/base/",
        "/overlays/",
        "/generated/",
        "/.github/",
        "/gputenancy/",
        "/pipeline.py",
    }
    assert tenant and max(platform) < min(tenant)


def test_syntax_github_accepts() -> None:
    for pattern, owners in entries((trees.FIXTURE / ownership.PATH).read_text()):
        assert pattern == "*" or pattern.startswith("/"), pattern
        assert " " not in pattern and "\\" not in pattern
        assert owners and all(OWNER.match(o) for o in owners), (pattern, owners)


def test_without_platform_owners_only_tenant_files_have_owners(tmp_path: Path) -> None:
    root = trees.example(tmp_path)
    trees.edit(root, "base/platform.yaml", lambda d: d.pop("owners"))
    text = text_of(root)
    assert all(p.startswith("/tenants/") for p, _ in entries(text))
    assert ownership.owners_of(text, "base/platform.yaml") == ()
    assert ownership.owners_of(text, "tenants/nlp.yaml") == ("@acme/nlp", "@acme-alice")


def test_check_lists_stale_codeowners_and_render_fixes_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = trees.example(tmp_path)
    assert main(["--root", str(root), "check"]) == 1  # nothing rendered outside generated/ yet
    assert "+ .github/CODEOWNERS" in capsys.readouterr().out
    assert main(["--root", str(root), "render"]) == 0
    assert main(["--root", str(root), "check"]) == 0
    tenant = root / "tenants/speech.yaml"
    tenant.write_text(
        tenant.read_text().replace('owners: ["@acme/speech"]', 'owners: ["@acme/speech", "@acme-bob"]')
    )
    capsys.readouterr()
    assert main(["--root", str(root), "check"]) == 1
    out = capsys.readouterr().out
    assert "~ .github/CODEOWNERS" in out and "generated/ is out of date" not in out
    assert main(["--root", str(root), "render"]) == 0
    text = (root / ownership.PATH).read_text()
    assert ownership.owners_of(text, "tenants/speech.yaml") == ("@acme/speech", "@acme-bob")
    assert main(["--root", str(root), "check"]) == 0


def test_invalid_platform_owners_are_schema_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = trees.example(tmp_path)
    trees.edit(root, "base/platform.yaml", lambda d: d.update(owners=["acme/gpu-platform"]))
    assert main(["--root", str(root), "validate"]) == 1
    out = capsys.readouterr().out
    assert "base/platform.yaml" in out and "$.owners[0]" in out, out
    assert not (root / ownership.PATH).exists()
