"""One hub, many clusters: destinations checked before anything is written, shown in the plan, and a
cluster whose overlay moved planned as a rename (no drain, no restart, no refusal)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
import trees

from gputenancy.cli.app import main
from gputenancy.deliver import plan, planview


def _rename_lab(root: Path, new: str = "dev") -> None:
    """`git mv overlays/lab overlays/<new>`, the cluster's name and the tenant placed on it."""
    shutil.move(root / "overlays/lab", root / f"overlays/{new}")
    trees.edit(root, f"overlays/{new}/cluster.yaml", lambda d: d.update(name=new))
    trees.edit(root, "tenants/sandbox.yaml", lambda d: d.update(clusters=[new]))

    def cohort(d: dict[str, Any]) -> None:  # the quota a cohort holds on the cluster moves with it
        for co in d["cohorts"]:
            held = co.get("budgets", {}).get("clusters", {})
            if "lab" in held:
                held[new] = held.pop("lab")

    trees.edit(root, "base/platform.yaml", cohort)


def _argocd(root: Path, cluster: str, **dest: str) -> None:
    """Set `argocd:` (the destination) in overlays/<cluster>/cluster.yaml."""
    trees.edit(root, f"overlays/{cluster}/cluster.yaml", lambda d: d.update(argocd=dest))


def _plan(root: Path) -> plan.Plan:
    result, made = plan.make(root, cluster=None, against=None, schemas=None, allow_delete=False)
    assert made is not None, result.findings
    return made


def test_a_moved_overlay_is_planned_as_a_rename(tmp_path: Path) -> None:
    root = trees.example(tmp_path)
    _rename_lab(root)
    p = _plan(root)
    assert not p.failed, p.findings  # no tenant-removal refusal: nothing is drained
    by_name = {c.name: c for c in p.clusters}
    assert by_name["dev"].renamed_from == "lab" and by_name["lab"].renamed_to == "dev"
    assert by_name["lab"].changed, "the old directory still leaves the deploy branch"
    assert [r.risk for r in p.risks] == ["cluster-renamed"]  # no queue-deleted, no kueue-config-changed
    # only the hub's Applications change names; the cluster's objects are the same
    changed = {(o.action, o.key.name) for o in by_name["dev"].objects}
    assert changed == {
        ("added", "gputenancy-dev"),
        ("added", "kueue-dev"),
        ("removed", "gputenancy-lab"),
        ("removed", "kueue-lab"),
    }
    text = planview.format_text(p)
    assert "renamed from lab" in text and "destination: server https://kubernetes.default.svc" in text
    assert "without cascad" in text
    assert "- Argo CD delivers **dev** to `server https://kubernetes.default.svc` (renamed from lab)" in (
        planview.format_markdown(p).splitlines()
    )


def test_a_moved_overlay_with_another_destination_is_a_removal(tmp_path: Path) -> None:
    root = trees.example(tmp_path)
    _rename_lab(root)
    _argocd(root, "dev", name="dev")
    p = _plan(root)
    assert {f.rule for f in p.findings if f.severity.name == "ERROR"} == {"tenant-removal"}
    assert "cluster-renamed" not in {r.risk for r in p.risks}
    assert {"queue-deleted", "kueue-config-changed"} <= {r.risk for r in p.risks}
    assert {c.name: c.destination for c in p.clusters if c.changed} == {
        "dev": "name dev",
        "lab": "server https://kubernetes.default.svc",  # read from the synced Application
    }


def test_a_moved_overlay_with_other_objects_is_not_a_rename(tmp_path: Path) -> None:
    root = trees.example(tmp_path)
    _rename_lab(root)
    trees.edit(
        root,
        "overlays/dev/cluster.yaml",
        lambda d: d["kueue"]["config"]["waitForPodsReady"].update(timeout="20m"),
    )
    p = _plan(root)
    assert not any(c.renamed_from for c in p.clusters)
    assert "tenant-removal" in {f.rule for f in p.findings}


def test_the_plan_shows_the_destination_of_a_changed_cluster(tmp_path: Path) -> None:
    root = trees.example(tmp_path)
    trees.edit(root, "tenants/sandbox.yaml", lambda d: d.update(description="changed"))
    _argocd(root, "prod", name="prod-eu")
    p = _plan(root)
    prod = next(c for c in p.clusters if c.name == "prod")
    assert prod.destination == "name prod-eu"
    (moved,) = [r for r in p.risks if r.risk == "destination-changed"]
    assert moved.cluster == "prod" and "now delivered to name prod-eu (was name prod)" in moved.message
    assert "  destination: name prod-eu" in planview.format_text(p).splitlines()
    assert "- Argo CD delivers **prod** to `name prod-eu`" in planview.format_markdown(p).splitlines()


def _validate(root: Path, capsys: pytest.CaptureFixture[str]) -> str:
    capsys.readouterr()
    assert main(["--root", str(root), "validate", "--format", "text"]) == 1
    assert not list((root / "generated").glob("*/_hub/application/*/kueue-staging.yaml"))
    return capsys.readouterr().out


def _copy_lab(root: Path, name: str = "staging") -> None:
    """The "Add a cluster" how-to: copy overlays/lab/, keeping its `argocd:` block."""
    shutil.copytree(root / "overlays/lab", root / f"overlays/{name}")
    trees.edit(root, f"overlays/{name}/cluster.yaml", lambda d: d.update(name=name))


def test_a_copied_overlay_that_keeps_its_destination_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = trees.example(tmp_path)
    _copy_lab(root)
    out = _validate(root, capsys)
    assert "overlays/staging/cluster.yaml:" in out and "(argocd-destination-duplicate)" in out
    assert "same Argo CD destination as cluster 'lab' (server https://kubernetes.default.svc)" in out
    assert "Traceback" not in out
    # in-cluster by name is the same cluster
    _argocd(root, "staging", name="in-cluster")
    assert "(argocd-destination-duplicate)" in _validate(root, capsys)
    _argocd(root, "staging", name="staging")
    capsys.readouterr()
    assert main(["--root", str(root), "validate"]) == 0, capsys.readouterr().out


def test_a_destination_that_is_neither_a_server_nor_a_registered_name_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = trees.example(tmp_path)
    _copy_lab(root)
    _argocd(root, "staging", name="https://10.0.0.9:6443")
    out = _validate(root, capsys)
    assert "(argocd-destination-unknown)" in out and "write `argocd: {server: https://10.0.0.9:6443}`" in out
    # with the hub's registered clusters listed, a name must be one of them (the default name too)
    _argocd(root, "staging", name="stagng")
    trees.edit(root, "base/platform.yaml", lambda d: d["argocd"].update(clusters=["staging"]))
    out = _validate(root, capsys)
    lines = [line for line in out.splitlines() if "(argocd-destination-unknown)" in line]
    assert len(lines) == 2, out  # staging's typo, and prod (`name: prod`, not registered)
    assert any("did you mean 'staging'" in line for line in lines)
    assert all(line.split(":")[1].isdigit() for line in lines), "file:line:col"
    trees.edit(root, "base/platform.yaml", lambda d: d["argocd"].update(clusters=["staging", "prod"]))
    _argocd(root, "staging", name="staging")
    capsys.readouterr()
    assert main(["--root", str(root), "validate"]) == 0, capsys.readouterr().out


def test_an_install_destination_elsewhere_than_the_cluster_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = trees.example(tmp_path)
    trees.edit(
        root,
        "overlays/prod/cluster.yaml",
        lambda d: (
            d["kueue"].setdefault("manifests", {}).update(destinationServer="https://kubernetes.default.svc")
        ),
    )
    capsys.readouterr()
    assert main(["--root", str(root), "validate"]) == 1
    out = capsys.readouterr().out
    assert "overlays/prod/cluster.yaml:" in out and "(argocd-destination-split)" in out


def test_a_rename_publishes_without_drain_and_the_hub_follows_it(tmp_path: Path) -> None:
    """On the deploy branch the old directory goes and the new one comes in one commit, without
    --allow-delete; the app-of-apps then syncs the new cluster's Applications, not the old ones."""
    import git
    import test_appset
    import test_publish

    root, remote = test_publish.source(tmp_path), test_publish.bare(tmp_path)
    assert test_publish.run(root, "--repo", str(remote), "--branch", "deploy") == 0
    _rename_lab(root)
    test_publish.commit(root, "lab is dev now")
    assert test_publish.run(root, "--repo", str(remote), "--branch", "deploy") == 0
    _, message, published, count = test_publish.tip(remote, "deploy")
    assert count == 2 and set(published) == {"dev", "prod"}
    assert "cluster-renamed" in message
    checkout = tmp_path / "deploy"
    git.Repo.clone_from(str(remote), checkout, branch="deploy").close()
    assert main(["--root", str(root), "render"]) == 0  # writes argocd/hub.yaml
    (checkout / "argocd").mkdir()
    shutil.copyfile(root / "argocd/hub.yaml", checkout / "argocd/hub.yaml")
    apps = test_appset.hub_sync(checkout, tmp_path / "hub")
    assert set(apps) == {"gputenancy-dev", "kueue-dev", "gputenancy-prod", "kueue-prod"}
    assert apps["kueue-dev"]["spec"]["destination"]["server"] == "https://kubernetes.default.svc"


def test_a_rename_counts_the_application_swap_once_and_keeps_the_objects(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`git mv overlays/lab overlays/dev`, planned against the commit before it: the two Applications
    swapped once (under dev), nothing of lab's counted as removed (dev keeps it), and capacity and
    grants compared with lab's, so nothing moves; the JSON says the same."""
    import json

    root = trees.example(tmp_path)
    trees.committed(root).close()
    _rename_lab(root)
    assert main(["--root", str(root), "render"]) == 0
    capsys.readouterr()
    assert main(["--root", str(root), "plan", "--against", "HEAD"]) == 2
    text = capsys.readouterr().out
    assert "dev: 0 changed, 2 added, 2 removed" in text, text
    assert "lab: renamed to dev" in text and "lab ClusterQueue" not in text, text
    assert text.splitlines()[-1] == "0 changed, 2 added, 2 removed on dev, lab; 1 risk(s)", text
    assert "capacity changed" not in text and "(added)" not in text and "(removed)" not in text, text
    assert main(["--root", str(root), "plan", "--against", "HEAD", "--format", "json"]) == 2
    doc = json.loads(capsys.readouterr().out)
    counts = {c["name"]: c["counts"] for c in doc["clusters"] if c["changed"]}
    assert counts["dev"] == {"changed": 0, "added": 2, "removed": 2}
    assert counts["lab"] == {"changed": 0, "added": 0, "removed": 0}
