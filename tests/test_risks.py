"""Risk flags that match what the cluster does: draining evicts admitted workloads, a renamed
LocalQueue or a removed namespace strands the jobs labelled kueue.x-k8s.io/queue-name, and held
queues go in the last Argo CD sync wave (argocd/README.md: a Suspended queue stalls later waves)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import trees

from gputenancy.cli.app import main
from gputenancy.render import manifests


def plan_json(root: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    assert main(["--root", str(root), "plan", "--format", "json"]) == 2
    doc: dict[str, Any] = json.loads(capsys.readouterr().out)
    return doc


def risks(doc: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    return [r for r in doc["risks"] if r["risk"] == kind]


def test_draining_is_a_risk_that_says_admitted_workloads_are_evicted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = trees.example(tmp_path)
    trees.edit(root, "tenants/speech.yaml", lambda d: d.update(state="draining"))
    doc = plan_json(root, capsys)
    (draining,) = risks(doc, "queue-draining")
    assert draining["cluster"] == "prod" and draining["subject"] == "ClusterQueue speech"
    assert "evicts every workload it admitted" in draining["message"]
    assert not doc["summary"].endswith("0 risk(s)")
    assert main(["--root", str(root), "plan"]) == 2
    assert (
        "! prod queue-draining: ClusterQueue speech gets stopPolicy: HoldAndDrain" in capsys.readouterr().out
    )


def test_held_queues_go_in_the_last_sync_wave(tmp_path: Path) -> None:
    root = trees.example(tmp_path)
    trees.edit(root, "tenants/speech.yaml", lambda d: d.update(state="draining"))
    assert main(["--root", str(root), "render"]) == 0
    waves: dict[str, int] = {}
    for path in (root / "generated/prod").rglob("*.yaml"):
        body = trees.read(root, str(path.relative_to(root)))
        wave = int(body["metadata"].get("annotations", {}).get(manifests.SYNC_WAVE, 0))
        waves[f"{body['kind']}/{body['metadata'].get('namespace', '')}/{body['metadata']['name']}"] = wave
    held = {k: w for k, w in waves.items() if k in ("ClusterQueue//speech", "LocalQueue/speech/speech")}
    assert held == {
        "ClusterQueue//speech": int(manifests.WAVE_HELD),
        "LocalQueue/speech/speech": int(manifests.WAVE_HELD),
    }
    assert max(w for k, w in waves.items() if k not in held) < int(manifests.WAVE_HELD)
    readme = " ".join((trees.REPO / "argocd" / "README.md").read_text().split())
    assert "Keep held queues in the last wave" in readme  # the rule the render follows
    assert "draining tenant (`stopPolicy: HoldAndDrain`) are rendered in sync wave 1" in readme


def test_a_renamed_local_queue_names_the_label_that_breaks(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = trees.example(tmp_path)
    trees.edit(root, "tenants/speech.yaml", lambda d: d.update(localQueueName="speech-jobs"))
    doc = plan_json(root, capsys)
    (renamed,) = risks(doc, "localqueue-renamed")
    assert renamed["subject"] == "LocalQueue speech/speech"
    assert "kueue.x-k8s.io/queue-name: speech are left without a queue" in renamed["message"]
    assert "relabel them kueue.x-k8s.io/queue-name: speech-jobs" in renamed["message"]
    assert [r for r in risks(doc, "queue-deleted") if r["subject"] == "LocalQueue speech/speech"] == []


def test_a_removed_namespace_names_the_label_that_breaks(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = trees.example(tmp_path)

    def drop(d: dict[str, Any]) -> None:
        d["namespaces"].remove("vision-eval")
        d["claimTemplates"] = [c for c in d["claimTemplates"] if c.get("namespaces") != ["vision-eval"]]

    trees.edit(root, "tenants/vision.yaml", drop)
    doc = plan_json(root, capsys)
    (removed,) = risks(doc, "namespace-removed")
    assert removed["subject"] == "LocalQueue vision-eval/vision"
    assert "labelled kueue.x-k8s.io/queue-name: vision are no longer admitted" in removed["message"]
    assert risks(doc, "queue-deleted") == []


def test_a_removed_tenant_still_says_drain_first(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = trees.example(tmp_path)
    (root / "tenants/speech.yaml").unlink()
    assert main(["--root", str(root), "plan", "--format", "json", "--allow-delete"]) == 2
    doc = json.loads(capsys.readouterr().out)
    subjects = {r["subject"] for r in risks(doc, "queue-deleted")}
    assert {"ClusterQueue speech", "LocalQueue speech/speech"} <= subjects
    assert risks(doc, "namespace-removed") == [] and risks(doc, "localqueue-renamed") == []


@pytest.mark.parametrize("keep_queue_name", [True, False])
def test_a_renamed_tenant_replaces_its_cluster_queue(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], keep_queue_name: bool
) -> None:
    root = trees.example(tmp_path)
    body = trees.read(root, "tenants/speech.yaml")
    body.update(
        name="voice", owners=["@acme/voice"], **({"localQueueName": "speech"} if keep_queue_name else {})
    )
    trees.write(root, "tenants/voice.yaml", body)
    (root / "tenants/speech.yaml").unlink()
    assert main(["--root", str(root), "plan", "--format", "json", "--allow-delete"]) == 2
    doc = json.loads(capsys.readouterr().out)
    (replaced,) = risks(doc, "clusterqueue-replaced")
    assert replaced["subject"] == "ClusterQueue speech"
    assert "replaced by voice (LocalQueues in speech move to it)" in replaced["message"]
    assert "kueue.x-k8s.io/resource-in-use finalizer" in replaced["message"]
    if keep_queue_name:
        assert [r["subject"] for r in risks(doc, "localqueue-replaced")] == ["LocalQueue speech/speech"]
    else:
        assert [r["subject"] for r in risks(doc, "localqueue-renamed")] == ["LocalQueue speech/speech"]
