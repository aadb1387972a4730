"""plan: the render vs the synced trees, object by object; formats, risk flags, safe tenant removal."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import git
import pytest
import trees
import yaml

from gputenancy.cli.app import main
from gputenancy.common.findings import PipelineError
from gputenancy.common.objects import ObjectKey
from gputenancy.deliver import objectdiff, plan, planview

VISION_8 = "gpu.nvidia.com: {nominal: 8, borrowingLimit: 4, lendingLimit: 4}"
VISION_6 = "gpu.nvidia.com: {nominal: 6, borrowingLimit: 4, lendingLimit: 4}"
LOWERED = "prod ClusterQueue vision: nvidia.com/gpu nominalQuota on flavor h100: 8 → 6"


def replace(root: Path, rel: str, old: str, new: str) -> None:
    """Edit a file in place, keeping its lines where they are (no re-serialisation)."""
    path = root / rel
    text = path.read_text()
    assert old in text, (rel, old)
    path.write_text(text.replace(old, new, 1))


def run(root: Path, *args: str) -> int:
    return main(["--root", str(root), "plan", *args])


def edit_synced(root: Path, rel: str, change: Any) -> None:
    """Change an object on the synced side (generated/), as if Argo CD synced something else."""
    trees.edit(root, f"generated/{rel}", change)


KUEUE_APP = "prod/_hub/application/argocd/kueue-prod.yaml"  # install: manifests (render/kueueapp.py)


def kueue_config(root: Path) -> dict[str, Any]:
    app = trees.read(root, f"generated/{KUEUE_APP}")
    patch = yaml.safe_load(app["spec"]["source"]["kustomize"]["patches"][0]["patch"])
    return dict(yaml.safe_load(patch["data"]["controller_manager_config.yaml"]))


def set_kueue_config(root: Path, change: Any) -> None:
    def apply(app: dict[str, Any]) -> None:
        entry = app["spec"]["source"]["kustomize"]["patches"][0]
        patch = yaml.safe_load(entry["patch"])
        config = yaml.safe_load(patch["data"]["controller_manager_config.yaml"])
        change(config)
        patch["data"]["controller_manager_config.yaml"] = yaml.safe_dump(config, sort_keys=False)
        entry["patch"] = yaml.safe_dump(patch, sort_keys=False)

    edit_synced(root, KUEUE_APP, apply)


def json_plan(root: Path, capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict[str, Any]]:
    code = run(root, "--format", "json", *args)
    return code, json.loads(capsys.readouterr().out)


def risks(data: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    return [r for r in data["risks"] if r["risk"] == kind]


# ------------------------------------------------------------------------------------ exit codes


def test_no_change_exits_0(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = trees.example(tmp_path)
    assert run(root) == 0
    out = capsys.readouterr().out
    assert "prod: no changes" in out and "lab: no changes" in out


def test_changes_exit_2_and_errors_exit_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = trees.example(tmp_path)
    replace(root, "tenants/vision.yaml", VISION_8, VISION_6)
    assert run(root) == 2
    capsys.readouterr()
    replace(root, "tenants/vision.yaml", "cohort: research", "cohort: nope")
    assert run(root) == 1
    out = capsys.readouterr().out
    assert "tenants/vision.yaml:" in out and "(cohort-unknown)" in out and "Traceback" not in out
    assert run(root, "--format", "json") == 1
    assert json.loads(capsys.readouterr().out)["findings"][0]["rule"] == "cohort-unknown"


def test_unknown_against_is_an_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = trees.example(tmp_path)
    assert run(root, "--against", str(tmp_path / "nowhere")) == 1
    assert "neither a directory nor a git ref" in capsys.readouterr().out


# --------------------------------------------------------------------- a lowered budget, 3 formats


def test_lowered_budget_in_text(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = trees.example(tmp_path)
    replace(root, "tenants/vision.yaml", VISION_8, VISION_6)
    assert run(root) == 2
    out = capsys.readouterr().out
    assert LOWERED in out
    assert "prod: 1 changed, 0 added, 0 removed (tenants: vision)" in out
    assert "h100 nvidia.com/gpu: 16 → 14 of 16" in out
    assert "\033[" not in out  # not a TTY: no colour
    assert "\033[33m" in planview.format_text(
        plan.make(root, cluster=None, against=None, schemas=None, allow_delete=False)[1], color=True
    )  # type: ignore[arg-type]


def test_lowered_budget_in_markdown(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = trees.example(tmp_path)
    replace(root, "tenants/vision.yaml", VISION_8, VISION_6)
    assert run(root, "--format", "markdown") == 2
    md = capsys.readouterr().out
    assert md.startswith("## gputenancy plan")
    assert "| prod | 1 | 0 | 0 | vision |" in md
    assert "### Capacity on prod" in md
    row = next(line for line in md.splitlines() if line.startswith("| h100 | nvidia.com/gpu |"))
    assert "16 → 14" in row and "| 16 |" in row and "█" in row and "88%" in row
    assert "<details><summary>changed <b>prod</b> ClusterQueue <code>vision</code> (tenant vision)" in md
    assert "| nvidia.com/gpu nominalQuota on flavor h100 | `8` | `6` |" in md
    assert md.index("### Capacity") < md.index("<details>")


def test_lowered_budget_in_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = trees.example(tmp_path)
    replace(root, "tenants/vision.yaml", VISION_8, VISION_6)
    code, data = json_plan(root, capsys)
    assert code == 2 and data["schema"] == "gputenancy.plan/v1" and data["changed"] is True
    prod = next(c for c in data["clusters"] if c["name"] == "prod")
    assert prod["counts"] == {"added": 0, "changed": 1, "removed": 0} and prod["tenants"] == ["vision"]
    (obj,) = prod["objects"]
    assert (obj["key"]["kind"], obj["key"]["group"], obj["key"]["name"], obj["path"]) == (
        "ClusterQueue",
        "kueue.x-k8s.io",
        "vision",
        "clusterqueue/vision.yaml",
    )
    (change,) = obj["changes"]
    assert (
        change["field"]
        == "spec.resourceGroups[0].flavors[name=h100].resources[name=nvidia.com/gpu].nominalQuota"
    )
    assert change["path"][3:7] == ["flavors", {"name": "h100"}, "resources", {"name": "nvidia.com/gpu"}]
    assert (change["op"], change["old"], change["new"]) == ("changed", "8", "6")
    gpu = next(r for r in prod["capacity"] if (r["flavor"], r["resource"]) == ("h100", "nvidia.com/gpu"))
    assert gpu == {
        "flavor": "h100",
        "resource": "nvidia.com/gpu",
        "before": "16",
        "after": "14",
        "capacity": "16",
    }
    assert data["risks"] == []


def test_output_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = trees.example(tmp_path)
    replace(root, "tenants/vision.yaml", VISION_8, VISION_6)
    assert run(root, "--format", "markdown", "--output", str(tmp_path / "plan.md")) == 2
    assert "plan written to" in capsys.readouterr().out
    assert "nominalQuota on flavor h100" in (tmp_path / "plan.md").read_text()


# -------------------------------------------------------------------------- what is compared


def test_against_a_git_ref(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = trees.example(tmp_path)
    repo = git.Repo.init(root, initial_branch="main")
    with repo, repo.config_writer() as cfg:
        cfg.set_value("user", "name", "Test").set_value("user", "email", "test@example.com")
    repo.git.add("-A")
    repo.git.commit("-q", "-m", "example")
    replace(root, "tenants/vision.yaml", VISION_8, VISION_6)
    assert main(["--root", str(root), "render"]) == 0
    capsys.readouterr()
    # generated/ holds the uncommitted output of that render: comparing with it would show nothing,
    # so the plan compares with the last commit, and says so
    assert run(root) == 2
    out = capsys.readouterr().out
    assert LOWERED in out and "HEAD:generated" in out
    assert "compares with the last commit (HEAD): generated/ holds uncommitted output" in out
    assert run(root, "--against", "HEAD") == 2
    out = capsys.readouterr().out
    assert LOWERED in out and "HEAD:generated" in out and "compares with" not in out
    repo.git.add("-A")
    repo.git.commit("-q", "-m", "vision gives two back")
    assert run(root) == 0  # committed: generated/ of the work tree, and it says so
    assert "(compares with generated/ of the work tree, as committed at HEAD)" in capsys.readouterr().out
    assert run(root, "--against", "no-such-ref") == 1


def test_against_a_directory(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = trees.example(tmp_path)
    synced = tmp_path / "synced"
    shutil.copytree(root / "generated", synced)
    replace(root, "tenants/vision.yaml", VISION_8, VISION_6)
    assert main(["--root", str(root), "render"]) == 0
    capsys.readouterr()
    assert run(root, "--against", str(synced)) == 2
    assert LOWERED in capsys.readouterr().out


def test_objects_are_matched_by_identity_not_path(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = trees.example(tmp_path)
    (root / "generated/prod/moved").mkdir()
    (root / "generated/prod/clusterqueue/vision.yaml").rename(root / "generated/prod/moved/queue.yaml")
    code, data = json_plan(root, capsys)
    prod = next(c for c in data["clusters"] if c["name"] == "prod")
    assert prod["objects"] == []  # the same object, elsewhere: no object change
    assert prod["files"] == [
        {"op": "added", "path": "clusterqueue/vision.yaml"},
        {"op": "removed", "path": "moved/queue.yaml"},
    ]
    assert code == 2  # the directory still differs from what publish writes


def test_identical_files_are_not_parsed(tmp_path: Path) -> None:
    """Bytes first: an identical file is equal even if it would not parse."""
    broken = {"x.yaml": b"a: [unclosed\n"}
    objects, files, _ = objectdiff.compare("prod", broken, dict(broken))
    assert objects == [] and files == []
    with pytest.raises(PipelineError):
        objectdiff.compare("prod", {"x.yaml": b"a: 1\n"}, broken)


def test_named_lists_by_name_and_order(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = trees.example(tmp_path)

    def swap(cq: dict[str, Any]) -> None:
        flavors = cq["spec"]["resourceGroups"][0]["flavors"]
        flavors.reverse()
        flavors[0]["resources"][0]["nominalQuota"] = "1"  # a100-mig cpu, now listed first

    edit_synced(root, "prod/clusterqueue/vision.yaml", swap)
    code, data = json_plan(root, capsys)
    (obj,) = next(c for c in data["clusters"] if c["name"] == "prod")["objects"]
    described = {c["description"]: (c["old"], c["new"]) for c in obj["changes"]}
    assert described["cpu nominalQuota on flavor a100-mig"] == ("1", "32")
    assert described["flavor order"] == ("a100-mig, h100", "h100, a100-mig")
    assert code == 2


# ------------------------------------------------------------------------------------ risk flags


def test_risk_queue_deleted(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = trees.example(tmp_path)
    replace(root, "tenants/vision.yaml", VISION_8, VISION_6)
    assert risks(json_plan(root, capsys)[1], "queue-deleted") == []
    (root / "tenants/speech.yaml").unlink()
    code, data = json_plan(root, capsys, "--allow-delete")
    deleted = {r["subject"] for r in risks(data, "queue-deleted")}
    assert deleted == {"ClusterQueue speech", "LocalQueue speech/speech"}
    assert all("HoldAndDrain" in r["message"] for r in risks(data, "queue-deleted"))
    assert code == 2


def test_risk_localqueue_replaced(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = trees.example(tmp_path)
    edit_synced(root, "prod/localqueue/speech/speech.yaml", lambda lq: lq["metadata"]["labels"].update(x="y"))
    assert risks(json_plan(root, capsys)[1], "localqueue-replaced") == []
    edit_synced(root, "prod/localqueue/speech/speech.yaml", lambda lq: lq["spec"].update(clusterQueue="old"))
    (risk,) = risks(json_plan(root, capsys)[1], "localqueue-replaced")
    assert risk["subject"] == "LocalQueue speech/speech"
    assert "old → speech is immutable" in risk["message"] and "replaced" in risk["message"]


def test_risk_claim_template_replaced(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = trees.example(tmp_path)
    edit_synced(
        root, "prod/resourceclaimtemplate/speech/gpu.yaml", lambda t: t["metadata"]["labels"].update(x="y")
    )
    assert risks(json_plan(root, capsys)[1], "claim-template-replaced") == []
    replace(
        root,
        "tenants/speech.yaml",
        "mig-1g-x2\n    deviceClass: mig-1g.10gb.nvidia.com\n    count: 2",
        "mig-1g-x2\n    deviceClass: mig-1g.10gb.nvidia.com\n    count: 3",
    )
    code, data = json_plan(root, capsys)
    (risk,) = risks(data, "claim-template-replaced")
    assert risk["subject"] == "ResourceClaimTemplate speech/mig-1g-x2"
    assert "immutable" in risk["message"] and "pods waiting for claims" in risk["message"]
    assert code == 2


def test_risk_kueue_config_changed_names_the_mapping(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = trees.example(tmp_path)
    replace(root, "tenants/vision.yaml", VISION_8, VISION_6)
    assert risks(json_plan(root, capsys)[1], "kueue-config-changed") == []
    mappings = kueue_config(root)["resources"]["deviceClassMappings"]
    set_kueue_config(root, lambda c: c["resources"].update(deviceClassMappings=mappings[:2]))
    (risk,) = risks(json_plan(root, capsys)[1], "kueue-config-changed")
    assert risk["subject"] == "Application argocd/kueue-prod"
    assert "kueue-controller-manager restarts" in risk["message"]
    assert "deviceClassMapping nvidia.com/mig-3g.40gb: (unset) →" in risk["message"]


def test_risk_kueue_config_changed_names_the_feature_gate(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = trees.example(tmp_path)
    replace(
        root,
        "overlays/prod/cluster.yaml",
        "  install: manifests\n",
        "  install: manifests\n  featureGates:\n    ConcurrentAdmission: true\n",
    )
    code, data = json_plan(root, capsys)
    (risk,) = risks(data, "kueue-config-changed")
    assert "feature gate ConcurrentAdmission: (unset) → true" in risk["message"]
    subjects = {o["key"]["kind"] for c in data["clusters"] for o in c["objects"]}
    assert subjects == {"Application"}  # the Configuration patch and the checksum that rolls the manager
    assert code == 2


def test_risk_kueue_config_in_helm_values(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = trees.example(tmp_path)
    replace(root, "overlays/lab/cluster.yaml", "timeout: 10m", "timeout: 20m")
    (risk,) = risks(json_plan(root, capsys)[1], "kueue-config-changed")
    assert risk["cluster"] == "lab" and risk["subject"] == "Application argocd/kueue-lab"
    assert "waitForPodsReady.timeout: 10m → 20m" in risk["message"]


def test_risk_capacity_overcommitted(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = trees.example(tmp_path)
    replace(root, "tenants/vision.yaml", VISION_8, VISION_6)
    assert risks(json_plan(root, capsys)[1], "capacity-overcommitted") == []
    replace(
        root,
        "tenants/vision.yaml",
        VISION_6,
        "gpu.nvidia.com: {nominal: 10, borrowingLimit: 4, lendingLimit: 4}",
    )
    replace(root, "overlays/prod/cluster.yaml", "capacity:\n", "overcommit: true\ncapacity:\n")
    code, data = json_plan(root, capsys)
    (risk,) = risks(data, "capacity-overcommitted")
    assert risk["cluster"] == "prod" and "exceeds capacity 16" in risk["message"]
    gpu = next(
        r
        for c in data["clusters"]
        for r in c["capacity"]
        if r["resource"] == "nvidia.com/gpu" and c["name"] == "prod"
    )
    assert (gpu["before"], gpu["after"], gpu["capacity"]) == ("16", "18", "16")
    assert code == 2
    capsys.readouterr()
    run(root, "--format", "markdown")
    md = capsys.readouterr().out
    assert "### ⚠️ Risks" in md and "`capacity-overcommitted`" in md and "over capacity" in md


# --------------------------------------------------------------------------- safe tenant removal


def test_removal_refused_without_drain(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = trees.example(tmp_path)
    (root / "tenants/speech.yaml").unlink()
    assert run(root) == 1
    out = capsys.readouterr().err  # findings after a plan go to stderr, the plan to stdout
    assert "tenants/speech.yaml: error: tenant 'speech': ClusterQueue speech would be deleted" in out
    assert "`state: draining`" in out and "wait until the queue is empty" in out and "(tenant-removal)" in out
    assert run(root, "--allow-delete") == 2


def test_removal_allowed_after_drain(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = trees.example(tmp_path)
    replace(root, "tenants/speech.yaml", "cohort: research", "state: draining\ncohort: research")
    assert run(root) == 2
    assert "stopPolicy: None → HoldAndDrain" in capsys.readouterr().out
    assert main(["--root", str(root), "render"]) == 0  # merged and synced: the queue drains
    capsys.readouterr()
    (root / "tenants/speech.yaml").unlink()
    code, data = json_plan(root, capsys)
    assert code == 2 and data["findings"] == []
    assert all("check that the queue is empty" in r["message"] for r in risks(data, "queue-deleted"))
    removed = {
        (o["key"]["kind"], o["key"]["name"])
        for c in data["clusters"]
        for o in c["objects"]
        if o["action"] == "removed"
    }
    assert ("ClusterQueue", "speech") in removed and ("ResourceClaimTemplate", "mig-1g-x2") in removed


# ------------------------------------------------------------------------------- the PR comment


def _big_plan(n: int) -> plan.Plan:
    def change(i: int) -> objectdiff.ObjectChange:
        path = (
            "spec",
            "resourceGroups",
            0,
            "flavors",
            objectdiff.Named("h100"),
            "resources",
            objectdiff.Named("cpu"),
            "nominalQuota",
        )
        c = objectdiff.Change(
            "changed",
            path,
            objectdiff.field_path(path),
            objectdiff.describe("ClusterQueue", path),
            str(i),
            str(i + 1),
        )
        return objectdiff.ObjectChange(
            "prod",
            "changed",
            ObjectKey("kueue.x-k8s.io", "ClusterQueue", "", f"team-{i:05d}"),
            f"clusterqueue/team-{i:05d}.yaml",
            f"team-{i:05d}",
            (c,),
        )

    risk = plan.Risk(
        "prod", "queue-deleted", "ClusterQueue gone", "ClusterQueue gone is deleted: jobs lose their queue"
    )
    return plan.Plan(
        "generated", (plan.ClusterPlan("prod", tuple(change(i) for i in range(n)), (), ()),), (risk,), ()
    )


def test_markdown_is_cut_under_the_comment_limit_with_a_note() -> None:
    md = planview.format_markdown(_big_plan(3000))
    assert len(md) < 65536
    assert "were cut to keep this comment under GitHub's 65,536-character limit" in md
    assert "| prod | 3000 | 0 | 0 |" in md and "`queue-deleted`" in md  # summary and risks kept
    assert md.count("<details>") == md.count("</details>") > 50
    small = planview.format_markdown(_big_plan(10))
    assert "were cut" not in small and small.count("<details>") == 10


def test_read_tree_is_every_regular_file_byte_for_byte(tmp_path: Path) -> None:
    """The synced tree as read for the plan: every regular file, empty and large ones included, by
    POSIX path, sorted; symlinks neither followed nor listed; an oversized file refused."""
    from gputenancy.assemble import output

    tree = tmp_path / "generated" / "prod"
    files = {
        "clusterqueue/a.yaml": b"kind: ClusterQueue\n",
        "empty.yaml": b"",
        "localqueue/ns/deep/b.yaml": bytes(range(256)) * 4096,  # 1 MiB, every byte value
        "z.txt": b"\xff\xfe not text",
    }
    for rel, data in files.items():
        (tree / rel).parent.mkdir(parents=True, exist_ok=True)
        (tree / rel).write_bytes(data)
    (tree / "link.yaml").symlink_to(tree / "clusterqueue" / "a.yaml")
    (tree / "linked-dir").symlink_to(tree / "localqueue")
    read = output.read_tree(tree)
    assert read == files and list(read) == sorted(files)
    assert output.read_tree(tmp_path / "missing") == {}
    with open(tree / "big.yaml", "wb") as f:
        f.truncate(output.MAX_TREE_FILE_BYTES + 1)
    with pytest.raises(PipelineError) as caught:
        output.read_tree(tree)
    assert [(f.rule, f.path) for f in caught.value.findings] == [("source-size", "generated/prod/big.yaml")]
