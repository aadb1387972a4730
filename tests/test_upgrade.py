"""`plan` on a kueue.version change: the two releases' manifests from the schemas cache (fetched from a
release server on 127.0.0.1), the CRD and manager changes, and what the upgrade needs."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import minirepo
import pytest
import yaml

from gputenancy.cli import app as cli
from gputenancy.deliver import upgrade

_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def main(root: Path, *args: str) -> int:
    return cli.main(["--root", str(root), "--no-cache", *args])


@pytest.fixture
def upgraded(tmp_path: Path, shared: Path, capsys: pytest.CaptureFixture[str]) -> tuple[Path, Path]:
    """c1 rendered at v0.18.1 (generated/), then kueue.version set to v0.19.2; both releases fetched."""
    served = tmp_path / "served"
    for tag in ("v0.18.1", "v0.19.2"):
        (served / tag).mkdir(parents=True)
        shutil.copyfile(shared / "kueue" / tag / "manifests.yaml", served / tag / "manifests.yaml")
    schemas = tmp_path / "schemas"
    with minirepo.serve(served) as url:
        root = minirepo.make(
            tmp_path / "repo",
            [minirepo.cluster("c1", kueue="v0.18.1")],
            url=f"{url}/{{version}}/manifests.yaml",
        )
        assert main(root, "schemas", "fetch", "--update", "--schemas", str(schemas)) == 0
        assert main(root, "render", "--schemas", str(schemas)) == 0
        minirepo.dump(root / "overlays" / "c1" / "cluster.yaml", minirepo.cluster("c1", kueue="v0.19.2"))
        assert main(root, "schemas", "fetch", "--update", "--schemas", str(schemas)) == 0
    lock = json.loads((root / "schemas.lock").read_text())["kueue"]
    assert sorted(lock) == ["v0.18.1", "v0.19.2"]  # the lock keeps the version upgraded from
    capsys.readouterr()
    return root, schemas


def test_plan_lists_the_upgrades_crd_and_manager_changes_and_risks(
    upgraded: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    root, schemas = upgraded
    assert main(root, "plan", "--schemas", str(schemas), "--format", "json") == 2
    data = json.loads(capsys.readouterr().out)
    (u,) = data["upgrades"]
    assert (u["cluster"], u["old"], u["new"], u["compared"]) == ("c1", "v0.18.1", "v0.19.2", True)
    changes = "\n".join(u["changes"])
    assert "CRD workloads.kueue.x-k8s.io v1beta2: validation changed: " in changes
    assert "spec.podSets maxItems: 10 → 18" in changes
    # a CEL rule rewritten: the words that change, not two texts cut alike at their 60th character
    assert (
        "(root) x-kubernetes-validations: rule changed: {+(+}(has(oldSelf.status) && … && c.status == 'True'))"
        "{+)+} [-&&-]{+?+} {+((+}has(oldSelf.spec.queueName) [-&&-]{+==+} has(self.spec.queueName)"
    ) in changes
    assert "ConfigMap: 0 added, 0 removed, 1 changed (changed: kueue-manager-config)" in changes
    assert "compared: the release manifests" not in changes  # installed from them: nothing to say
    assert 'spec.clusters x-kubernetes-list-type: "set" → "atomic"' in changes  # multikueueconfigs
    assert (
        'Deployment kueue-controller-manager: container manager image: "registry.k8s.io/kueue/kueue:v0.18.1"'
        ' → "registry.k8s.io/kueue/kueue:v0.19.2"' in changes
    )
    kinds = {r["risk"]: r for r in data["risks"]}
    assert kinds["kueue-upgrade"]["subject"] == "Kueue v0.18.1 → v0.19.2"
    assert "QuotaCheckStrategy false → true" in kinds["kueue-feature-gate-default-changed"]["message"]
    assert "LendingLimit" in kinds["kueue-feature-gate-removed"]["message"]
    assert {r["subject"] for r in data["risks"] if r["risk"] == "kueue-crd-validation-changed"} == {
        "CustomResourceDefinition multikueueconfigs.kueue.x-k8s.io",
        "CustomResourceDefinition workloads.kueue.x-k8s.io",
    }
    # The same in the pull-request comment.
    assert main(root, "plan", "--schemas", str(schemas), "--format", "markdown") == 2
    captured = capsys.readouterr()
    text = captured.out + captured.err  # the plan on stdout, notes on stderr
    assert "### Kueue upgrade on c1: v0.18.1 → v0.19.2" in text
    assert "`kueue-crd-validation-changed`" in text
    assert "c1: Kueue CRD schema and CEL validation ran (Kueue v0.19.2" in text


def test_a_gate_set_in_the_cluster_is_not_reported_as_a_changed_default(
    upgraded: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    root, schemas = upgraded
    minirepo.dump(
        root / "overlays" / "c1" / "cluster.yaml",
        minirepo.cluster("c1", kueue="v0.19.2", featureGates={"QuotaCheckStrategy": True}),
    )
    assert main(root, "plan", "--schemas", str(schemas), "--format", "json") == 2
    (risk,) = [
        r
        for r in json.loads(capsys.readouterr().out)["risks"]
        if r["risk"] == "kueue-feature-gate-default-changed"
    ]
    assert "QuotaCheckStrategy" not in risk["message"] and "AdmissionGatedBy false → true" in risk["message"]


def test_without_the_old_release_the_plan_says_what_is_missing(
    upgraded: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    root, schemas = upgraded
    shutil.rmtree(schemas / "kueue" / "v0.18.1")
    assert main(root, "plan", "--schemas", str(schemas), "--format", "json") == 2
    data = json.loads(capsys.readouterr().out)
    (u,) = data["upgrades"]
    assert u["compared"] is False and u["changes"] == []
    assert any("release manifests of Kueue v0.18.1 are not in the schemas cache" in n for n in data["notes"])
    assert "kueue-upgrade" in {r["risk"] for r in data["risks"]}


@pytest.mark.parametrize(
    ("hostile", "expected"),
    [
        (
            "---\nkind: ConfigMap\nmetadata: {name: bomb}\ndata:\n  a: &a [x, x, x, x]\n  b: [*a, *a, *a, *a]\n",
            "anchors and aliases are not allowed (source-alias)",
        ),
        (
            "---\napiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n"
            "  name: extras.kueue.x-k8s.io\nspec:\n  group: kueue.x-k8s.io\n  names: {kind: Extra}\n"
            "  versions: v1beta1\n",
            "spec.versions must be a list of versions, each with a name (schemas-release)",
        ),
    ],
    ids=["alias-bomb", "versions-a-string"],
)
def test_a_release_in_the_schemas_directory_that_cannot_be_walked_is_a_finding_naming_it(
    upgraded: tuple[Path, Path], capsys: pytest.CaptureFixture[str], hostile: str, expected: str
) -> None:
    """Put there by hand, past `schemas fetch`: plan names the file instead of a MemoryError or a
    KeyError, and writes nothing."""
    root, schemas = upgraded
    manifests = schemas / "kueue" / "v0.18.1" / "manifests.yaml"
    manifests.write_text(manifests.read_text() + hostile)
    before = sorted((p, p.read_bytes()) for p in root.rglob("*") if p.is_file())
    assert main(root, "plan", "--schemas", str(schemas), "--format", "text") == 1
    captured = capsys.readouterr()
    text = captured.out + captured.err
    assert f"{manifests}" in text and expected in text
    assert "Traceback" not in text
    assert sorted((p, p.read_bytes()) for p in root.rglob("*") if p.is_file()) == before


def _crd(docs: list[dict[str, Any]], plural: str) -> dict[str, Any]:
    (crd,) = [
        d for d in docs if d["kind"] == "CustomResourceDefinition" and d["spec"]["names"]["plural"] == plural
    ]
    return crd


def test_storage_version_served_versions_and_removed_fields(tmp_path: Path, shared: Path) -> None:
    """A next release as Kueue v0.20 makes it: v1beta1 no longer served, and (made up here) a removed
    API version, a storage version change and a removed field."""
    old = shared / "kueue" / "v0.19.2" / "manifests.yaml"
    docs = [d for d in yaml.load_all(old.read_text(), Loader=_Loader) if d]
    for d in docs:
        if d["kind"] == "CustomResourceDefinition":
            for v in d["spec"]["versions"]:
                if v["name"] == "v1beta1":
                    v["served"] = False
    cohorts = _crd(docs, "cohorts")
    cohorts["spec"]["versions"] = [v for v in cohorts["spec"]["versions"] if v["name"] != "v1beta1"]
    flavors = _crd(docs, "resourceflavors")
    for v in flavors["spec"]["versions"]:
        v["storage"] = v["name"] == "v1beta1"
        v["served"] = True
    queues = _crd(docs, "clusterqueues")
    (v1beta2,) = [v for v in queues["spec"]["versions"] if v["name"] == "v1beta2"]
    del v1beta2["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["stopPolicy"]
    new = tmp_path / "manifests.yaml"
    new.write_text(yaml.safe_dump_all(docs))
    lines, risks = upgrade.compare_releases(old, new, "c1")
    by_risk: dict[str, set[str]] = {}
    for r in risks:
        by_risk.setdefault(r.risk, set()).add(r.subject.split(" ", 1)[1])
    assert "clusterqueues.kueue.x-k8s.io" in by_risk["kueue-crd-version-not-served"]
    assert by_risk["kueue-crd-version-removed"] == {"cohorts.kueue.x-k8s.io"}
    assert by_risk["kueue-crd-storage-version"] == {"resourceflavors.kueue.x-k8s.io"}
    assert by_risk["kueue-crd-field-removed"] == {"clusterqueues.kueue.x-k8s.io"}
    assert "CRD resourceflavors.kueue.x-k8s.io: storage version v1beta2 → v1beta1" in lines
    assert "CRD cohorts.kueue.x-k8s.io: API version v1beta1 removed" in lines
    assert any(
        x.startswith("CRD clusterqueues.kueue.x-k8s.io v1beta2: ") and "removed (spec.stopPolicy)" in x
        for x in lines
    )
    # The same release on both sides: nothing to say.
    assert upgrade.compare_releases(old, old, "c1") == ([], [])


def test_a_helm_installed_kueue_upgrade_is_compared_too(
    tmp_path: Path, shared: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = minirepo.make(tmp_path / "repo", [minirepo.cluster("c1", kueue="v0.18.1", install="helm")])
    assert main(root, "render") == 0
    minirepo.dump(
        root / "overlays" / "c1" / "cluster.yaml", minirepo.cluster("c1", kueue="v0.19.2", install="helm")
    )
    capsys.readouterr()
    assert main(root, "plan", "--schemas", str(shared), "--format", "json") == 2
    data = json.loads(capsys.readouterr().out)
    (u,) = data["upgrades"]
    assert (u["old"], u["new"], u["compared"]) == ("v0.18.1", "v0.19.2", True)
    assert any(c.startswith("CRD workloads.kueue.x-k8s.io v1beta2: validation changed") for c in u["changes"])
    assert u["changes"][0].startswith(
        "compared: the release manifests (manifests.yaml) of Kueue v0.18.1 and v0.19.2, which hold the CRDs "
        "and the manager the Helm chart installs"
    )


def test_edits_show_what_changes_in_long_texts() -> None:
    before = "has(self.a) && self.a.size() <= 8 && self.b.all(x, x in ['one', 'two', 'three', 'four'])"
    after = "has(self.a) && self.a.size() <= 16 && self.b.all(x, x in ['one', 'two', 'three', 'four'])"
    assert upgrade.edits(before, after) == (
        "….a) && self.a.size() <= [-8-]{+16+} && self.b.all(x, x in […'two', 'three', 'four'])"
    )
    old, new = upgrade.differing(before, after)
    assert old != new and "8" in old and "16" in new
