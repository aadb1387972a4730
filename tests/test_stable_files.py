"""Generated files change only where the inputs did: adding or removing one tenant changes that
tenant's line of .github/CODEOWNERS and nothing in argocd/hub.yaml; a cluster, nothing in either (its
Applications are in its own directory, which the hub's app-of-apps follows)."""

from __future__ import annotations

import difflib
from pathlib import Path

import pytest
import trees

from gputenancy.cli import main

FILES = (".github/CODEOWNERS", "argocd/hub.yaml")


def rendered(root: Path) -> dict[str, list[str]]:
    assert main(["--root", str(root), "render"]) == 0
    return {rel: (root / rel).read_text().splitlines() for rel in FILES}


def changed_lines(before: list[str], after: list[str]) -> list[str]:
    return [
        line
        for line in difflib.unified_diff(before, after, lineterm="", n=0)
        if line[:1] in "+-" and not line.startswith(("+++", "---"))
    ]


@pytest.mark.parametrize("name", ["a", "robotics-and-autonomous-systems-research"])
def test_adding_and_removing_a_tenant_changes_its_own_line_only(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    root = trees.example(tmp_path)
    before = rendered(root)
    trees.write(root, f"tenants/{name}.yaml", trees.tenant(name))
    after = rendered(root)
    assert changed_lines(before[".github/CODEOWNERS"], after[".github/CODEOWNERS"]) == [
        f"+/tenants/{name}.yaml @acme/{name}"
    ]
    assert changed_lines(before["argocd/hub.yaml"], after["argocd/hub.yaml"]) == []
    (root / "tenants/vision.yaml").unlink()
    (root / f"tenants/{name}.yaml").unlink()
    gone = rendered(root)
    assert changed_lines(before[".github/CODEOWNERS"], gone[".github/CODEOWNERS"]) == [
        "-/tenants/vision.yaml @acme/vision-leads"
    ]
    capsys.readouterr()


def test_adding_a_cluster_changes_neither_file(tmp_path: Path) -> None:
    root = trees.example(tmp_path)
    before = rendered(root)
    staging = trees.read(root, "overlays/lab/cluster.yaml")
    staging.update(name="staging", argocd={"name": "staging"})
    trees.write(root, "overlays/staging/cluster.yaml", staging)
    (root / "overlays/staging/kustomization.yaml").write_text(
        (root / "overlays/lab/kustomization.yaml").read_text()
    )
    after = rendered(root)
    assert changed_lines(before[".github/CODEOWNERS"], after[".github/CODEOWNERS"]) == []
    assert changed_lines(before["argocd/hub.yaml"], after["argocd/hub.yaml"]) == []
    hub = root / "generated/staging/_hub/application/argocd"
    assert sorted(p.name for p in hub.iterdir()) == ["gputenancy-staging.yaml", "kueue-staging.yaml"]
