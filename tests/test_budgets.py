"""What a pull request grants: `budgets` (who holds what, capacity and headroom) and the effective
budgets in `plan` for every added or changed tenant, with unlimited borrowing in a cohort visible."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import hamitree
import pytest
import trees

from gputenancy.cli.app import main


def budgets_json(root: Path, capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict[str, Any]]:
    code = main(["--root", str(root), "budgets", "--format", "json", *args])
    return code, json.loads(capsys.readouterr().out)


def pool(doc: dict[str, Any], cluster: str, flavor: str, resource: str) -> dict[str, Any]:
    (found,) = [
        p for p in doc["pools"] if (p["cluster"], p["flavor"], p["resource"]) == (cluster, flavor, resource)
    ]
    return found


def grant(p: dict[str, Any], tenant: str) -> dict[str, Any]:
    (found,) = [g for g in p["grants"] if g["tenant"] == tenant]
    return found


def test_budgets_shows_capacity_headroom_and_what_each_tenant_can_reach(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = trees.example(tmp_path, generated=False)
    trees.edit(
        root,
        "tenants/vision.yaml",
        lambda d: d["budgets"]["default"][0]["devices"].update(
            {"gpu.nvidia.com": {"nominal": 6, "borrowingLimit": 4, "lendingLimit": 4}}
        ),
    )
    code, doc = budgets_json(root, capsys)
    assert code == 0 and doc["schema"] == "gputenancy.budgets/v1"
    gpus = pool(doc, "prod", "h100", "nvidia.com/gpu")
    assert (gpus["capacity"], gpus["nominal"], gpus["headroom"]) == ("16", "14", "2")
    assert [g["tenant"] for g in gpus["grants"]] == ["nlp", "speech", "vision"]
    vision = grant(gpus, "vision")
    # nominal 6 + borrowingLimit 4, and the rest of cohort research lends nlp's 2 + speech's 2 = 4
    assert (vision["nominal"], vision["borrowingLimit"], vision["lendingLimit"], vision["reach"]) == (
        "6",
        "4",
        "4",
        "10",
    )
    nlp = grant(gpus, "nlp")
    assert (nlp["borrowingLimit"], nlp["reach"]) == ("8", "12")  # 6 + what others lend (4 + 2), under 8
    mig = grant(pool(doc, "prod", "a100-mig", "nvidia.com/mig-1g.10gb"), "nlp")
    assert mig["borrowingLimit"] is None and mig["unlimitedBorrowing"] is True and mig["cohort"] == "research"
    assert mig["reach"] == "18"  # 8 + speech lends 6 + vision lends 4
    sandbox = grant(pool(doc, "lab", "t4", "nvidia.com/gpu"), "sandbox")
    # sandbox's 1 and the 1 cohort lab-pool holds itself and keeps for its members (lendingLimit 0)
    assert (
        sandbox["cohort"] == "lab-pool" and sandbox["unlimitedBorrowing"] is True and sandbox["reach"] == "2"
    )


def test_budgets_text_and_markdown(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = trees.example(tmp_path, generated=False)
    assert main(["--root", str(root), "budgets", "--cluster", "prod"]) == 0
    text = capsys.readouterr().out
    assert text.startswith("prod:\n") and "lab:" not in text
    assert "  h100 nvidia.com/gpu: nominal 16 of capacity 16, headroom 0" in text
    assert "    vision: nominal 8, borrowing 4, lending 4; reaches 12" in text
    assert "    speech: nominal 2, borrowing 2, lending all (2); reaches 4" in text
    assert "borrowing unlimited (cohort research)" in text
    assert main(["--root", str(root), "budgets", "--format", "markdown"]) == 0
    md = capsys.readouterr().out
    assert "### prod" in md and "| h100 | nvidia.com/gpu | 16 | 16 | 0 |" in md
    assert (
        "| nlp | a100-mig | nvidia.com/mig-1g.10gb | 8 | unlimited (cohort research) | all (8) | 18 |" in md
    )


def test_budgets_over_capacity_still_shows_who_holds_what(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = trees.example(tmp_path, generated=False)
    trees.edit(
        root,
        "tenants/speech.yaml",
        lambda d: d["budgets"]["default"][0]["devices"].update({"gpu.nvidia.com": 4}),
    )
    assert main(["--root", str(root), "budgets"]) == 1
    out, err = capsys.readouterr()
    assert "h100 nvidia.com/gpu: nominal 18 of capacity 16, headroom -2" in out
    assert "tenants/speech.yaml:" in err and "(capacity)" in err


def test_plan_shows_what_an_added_and_a_changed_tenant_are_granted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = trees.example(tmp_path)
    trees.edit(
        root,
        "tenants/vision.yaml",
        lambda d: d["budgets"]["default"][0]["devices"].update(
            {"gpu.nvidia.com": {"nominal": 6, "borrowingLimit": 4, "lendingLimit": 4}}
        ),
    )
    trees.write(
        root,
        "tenants/robotics.yaml",
        trees.tenant(
            "robotics",
            cohort="research",
            budgets={"default": [{"flavor": "h100", "devices": {"gpu.nvidia.com": 2}}]},
        ),
    )
    assert main(["--root", str(root), "plan"]) == 2
    text = capsys.readouterr().out
    assert "  what it grants on prod (effective budgets):" in text
    assert (
        "    robotics h100 nvidia.com/gpu: nominal 2, borrowing unlimited (cohort research), lending all (2); reaches 10"
        in text
    )
    assert "    vision h100 nvidia.com/gpu: nominal 6, borrowing 4, lending 4; reaches 10" in text
    assert "nlp h100" not in text  # unchanged tenants are not listed
    assert main(["--root", str(root), "plan", "--format", "markdown"]) == 2
    md = capsys.readouterr().out
    assert "### What it grants on prod" in md
    assert "| robotics | h100 | nvidia.com/gpu | 2 | unlimited (cohort research) | all (2) | 10 |" in md
    assert md.index("### What it grants on prod") < md.index("### Changes")
    assert main(["--root", str(root), "plan", "--format", "json"]) == 2
    doc = json.loads(capsys.readouterr().out)
    (prod,) = [c for c in doc["clusters"] if c["name"] == "prod"]
    (robotics,) = [g for g in prod["grants"] if g["tenant"] == "robotics"]
    assert robotics == {
        "cluster": "prod",
        "tenant": "robotics",
        "flavor": "h100",
        "resource": "nvidia.com/gpu",
        "nominal": "2",
        "borrowingLimit": None,
        "lendingLimit": None,
        "cohort": "research",
        "unlimitedBorrowing": True,
        "reach": "10",
    }
    (lab,) = [c for c in doc["clusters"] if c["name"] == "lab"]
    assert lab["grants"] == []


def test_budgets_count_hami_vgpus_memory_and_compute(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """HAMi budgets are held like any other: vGPUs, GPU memory (MiB, shown in GiB) and compute (percent)."""
    root = hamitree.build(tmp_path)
    code, doc = budgets_json(root, capsys)
    assert code == 0
    vgpus = pool(doc, "site", "t4-hami", "nvidia.com/gpu")
    assert grant(vgpus, "notebooks")["nominal"] == "4" and vgpus["capacity"] == "8"
    memory = pool(doc, "site", "t4-hami", "nvidia.com/total-gpumem")
    assert grant(memory, "notebooks")["nominal"] == "16k" and memory["unit"] == "MiB"
    assert memory["capacity"] == "30720"
    cores = pool(doc, "site", "t4-hami", "nvidia.com/total-gpucores")
    assert grant(cores, "notebooks")["nominal"] == "150" and cores["unit"] == "percent"
    assert main(["--root", str(root), "budgets"]) == 0
    text = capsys.readouterr().out
    assert "nvidia.com/total-gpumem: nominal" in text and "of capacity 30720 (30Gi)" in text, text
