"""A fleet in `budgets` and `plan`: per tenant the manager's quota beside each worker's and where it comes
from, and the risks of a worker joining or leaving a fleet."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import fleetrepo
import pytest

from gputenancy.cli.app import main


def budgets(root: Path, capsys: pytest.CaptureFixture[str], fmt: str, *args: str) -> str:
    assert main(["--root", str(root), "budgets", "--format", fmt, *args]) == 0
    return capsys.readouterr().out


def test_budgets_show_the_manager_quota_as_the_sum_of_each_workers(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = fleetrepo.write(tmp_path)
    doc = json.loads(budgets(root, capsys, "json"))
    gpus = {(r["tenant"], r["resource"]): r for r in doc["fleets"]}
    nlp = gpus[("nlp", "nvidia.com/gpu")]
    assert nlp["manager"] == "mgr" and nlp["managerQuota"] == "6" and nlp["source"] == "sum"
    assert nlp["workers"] == [
        {"cluster": "w1", "quota": "4", "reach": "5"},  # borrowing 1 from speech's 2 in the cohort
        {"cluster": "w2", "quota": "2", "reach": "3"},
    ]
    assert nlp["largestJob"] == "5"  # one worker's reach, not the sum 6
    assert doc["pools"]  # the per-cluster view is still there
    text = budgets(root, capsys, "text")
    assert "fleet mgr (MultiKueue manager of w1, w2):" in text
    assert "  nlp (manager quota: the sum of its workers' quotas):" in text
    assert "    nvidia.com/gpu: manager 6 = w1 4 + w2 2" in text
    markdown = budgets(root, capsys, "markdown")
    assert "| nlp | nvidia.com/gpu | 6 | 4 | 2 | the sum of its workers' quotas |" in markdown
    # a worker's view names the fleet it belongs to
    assert "manager 6 = w1 4 + w2 2" in budgets(root, capsys, "text", "--cluster", "w2")


def test_a_budget_declared_for_the_manager_is_used_and_said_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    nlp = fleetrepo.tenant("nlp", {"w1": 4, "w2": 2})
    nlp["budgets"]["clusters"]["mgr"] = fleetrepo.budget("h100", 3)
    root = fleetrepo.write(tmp_path, tenants=[nlp])
    doc = json.loads(budgets(root, capsys, "json"))
    (row,) = [r for r in doc["fleets"] if r["resource"] == "nvidia.com/gpu"]
    assert row["managerQuota"] == "3" and row["source"] == "declared"


def _plan(root: Path, capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, Any]:
    code = main(["--root", str(root), "plan", "--format", "json", *args])
    doc: dict[str, Any] = json.loads(capsys.readouterr().out)
    assert code == 2, doc
    return doc


def test_plan_names_the_risks_of_a_worker_joining_and_leaving(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    clusters = [fleetrepo.manager(workers=["w1"]), fleetrepo.worker("w1"), fleetrepo.worker("w2")]
    one = {"w1": 2}
    root = fleetrepo.write(tmp_path, clusters=clusters, tenants=[fleetrepo.tenant("nlp", one)])
    assert main(["--root", str(root), "render"]) == 0
    capsys.readouterr()
    clusters[0]["multiKueue"]["workers"] = ["w1", "w2"]
    fleetrepo.write(tmp_path, clusters=clusters, tenants=[fleetrepo.tenant("nlp", {"w1": 2, "w2": 2})])
    doc = _plan(root, capsys)
    (joined,) = [r for r in doc["risks"] if r["risk"] == "fleet-worker-added"]
    assert joined["cluster"] == "mgr" and joined["subject"] == "MultiKueueCluster w2"
    assert "create the Secret w2-kubeconfig" in joined["message"]
    assert any("manager of w1, w2; nlp's quota there is the sum" in n for n in doc["notes"])
    assert main(["--root", str(root), "render"]) == 0
    capsys.readouterr()
    clusters[0]["multiKueue"]["workers"] = ["w1"]
    fleetrepo.write(tmp_path, clusters=clusters, tenants=[fleetrepo.tenant("nlp", one)])
    doc = _plan(root, capsys, "--allow-delete")  # nlp's queues leave w2 with the fleet
    (left,) = [r for r in doc["risks"] if r["risk"] == "fleet-worker-removed"]
    assert left["subject"] == "MultiKueueCluster w2" and "drain it first" in left["message"]


def test_two_fleets_each_list_their_own_tenants_and_workers(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """mgr (w1, w2) with nlp and speech, mgr2 (w3) with asr: each fleet's section holds its own rows,
    each tenant's lines only its own quotas, and the markdown table the columns of its own workers."""
    clusters = [
        fleetrepo.manager(),
        fleetrepo.manager("mgr2", workers=["w3"], origin="fleet-2"),
        *(fleetrepo.worker(w) for w in ("w1", "w2", "w3")),
    ]
    asr = fleetrepo.tenant("asr", {"w3": 3}, on=("mgr2",))
    root = fleetrepo.write(tmp_path, clusters=clusters, tenants=[*fleetrepo.TEAMS, asr])
    text = budgets(root, capsys, "text")
    sum_ = "(manager quota: the sum of its workers' quotas):"
    note = (
        "  (The largest job is what one worker reaches, borrowing included (each job runs on one worker), "
        "not the fleet's sum: a larger one is admitted by the manager, holds its quota there and never runs.)"
    )
    assert text[text.index("fleet mgr (") :].splitlines() == [
        "fleet mgr (MultiKueue manager of w1, w2):",
        "  nlp " + sum_,
        "    cpu: manager 4 = w1 2 + w2 2; largest job 4 (one worker's reach: w1 4, w2 4)",
        "    memory: manager 16Gi = w1 8Gi + w2 8Gi; largest job 16Gi (one worker's reach: w1 16Gi, w2 16Gi)",
        "    nvidia.com/gpu: manager 6 = w1 4 + w2 2; largest job 5 (one worker's reach: w1 5, w2 3)",
        "  speech " + sum_,
        "    cpu: manager 4 = w1 2 + w2 2; largest job 4 (one worker's reach: w1 4, w2 4)",
        "    memory: manager 16Gi = w1 8Gi + w2 8Gi; largest job 16Gi (one worker's reach: w1 16Gi, w2 16Gi)",
        "    nvidia.com/gpu: manager 6 = w1 2 + w2 4; largest job 5 (one worker's reach: w1 3, w2 5)",
        note,
        "fleet mgr2 (MultiKueue manager of w3):",
        "  asr " + sum_,
        "    cpu: manager 2 = w3 2; largest job 2 (one worker's reach: w3 2)",
        "    memory: manager 8Gi = w3 8Gi; largest job 8Gi (one worker's reach: w3 8Gi)",
        "    nvidia.com/gpu: manager 3 = w3 3; largest job 3 (one worker's reach: w3 3)",
        note,
    ]
    markdown = budgets(root, capsys, "markdown")
    second = markdown[markdown.index("### Fleet mgr2") :].splitlines()
    assert second[2:5] == [
        "| tenant | resource | mgr2 | w3 | manager quota | largest job |",
        "| --- | --- | ---: | ---: | --- | ---: |",
        "| asr | cpu | 2 | 2 | the sum of its workers' quotas | 2 |",
    ]
    assert not any(line.startswith(("| nlp ", "| speech ")) for line in second)
