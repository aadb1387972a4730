"""What reviewers see, in a real browser: the `report` page and the PR comment's Mermaid pies, opened
in headless Chromium with no network. Every chart renders with the right number of marks, no console
error, nothing fetched from outside; the screenshots stay under tmp_path."""

from __future__ import annotations

import re
from pathlib import Path

import browserkit
import pytest
import trees

from gputenancy.cli.app import main
from gputenancy.deliver import budgets, htmlreport
from gputenancy.inputs.spec import load_model


def test_the_report_renders_every_chart_in_chromium(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    browserkit.require()
    root = trees.example(tmp_path, generated=False)
    trees.write(
        root,
        "tenants/solo.yaml",
        trees.tenant("solo", budgets={"default": [{"flavor": "h100", "devices": {"gpu.nvidia.com": 0}}]}),
    )
    page = tmp_path / "report.html"
    assert main(["--root", str(root), "report", "--output", str(page)]) == 0
    assert "report written to" in capsys.readouterr().out
    pools = htmlreport.ordered(budgets.pools(load_model(root)[0]))  # per cluster, GPU pools first
    seen = browserkit.render(page, tmp_path, "report")
    assert seen["errors"] == [] and seen["blocked"] == []
    charts = seen["charts"]
    assert [(c["data"]["cluster"], c["data"]["flavor"], c["data"]["resource"]) for c in charts] == [
        (p.cluster, p.flavor, p.resource) for p in pools
    ]
    for chart, pool in zip(charts, pools, strict=True):
        assert chart["svg"] == 1 and chart["width"] > 200 and chart["height"] > 50, chart
        assert chart["rects"] == 2 * len(pool.grants), chart  # nominal and reach per tenant
        assert chart["rules"] == (1 if pool.capacity is not None else 0), chart
    (gpus,) = [
        c
        for c in charts
        if c["data"]["cluster"] == "prod"
        and c["data"]["resource"] == "nvidia.com/gpu"
        and c["data"]["flavor"] == "h100"
    ]
    assert set(gpus["legend"]) >= {"research", "(no cohort)"}  # cohorts tell the colours apart
    colours = {
        (label, fill)
        for c in charts
        if c["data"]["cluster"] == "prod"
        for label, fill in zip(c["legend"], c["swatches"], strict=True)
    }
    assert len(colours) == 2, colours  # one colour per cohort in every chart of the cluster


def test_the_pr_comment_pies_render_with_mermaid_in_chromium(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    browserkit.require()
    root = trees.example(tmp_path)
    trees.committed(root).close()
    path = root / "overlays/prod/cluster.yaml"
    path.write_text(path.read_text().replace("gpu.nvidia.com: 16 ", "gpu.nvidia.com: 20 ", 1))
    vision = root / "tenants/vision.yaml"
    vision.write_text(vision.read_text().replace("{nominal: 8,", "{nominal: 6,", 1))
    assert main(["--root", str(root), "plan", "--against", "HEAD", "--format", "markdown"]) == 2
    blocks = re.findall(r"```mermaid\n(.*?)```", capsys.readouterr().out, re.S)
    slices = [sum(1 for line in b.splitlines() if line.startswith('    "')) for b in blocks]
    assert slices == [3, 4]  # before: nlp, speech, vision; after: the same and 6 free
    page = browserkit.mermaid_page(blocks, tmp_path / "comment.html")
    seen = browserkit.render(page, tmp_path, "comment")
    assert seen["errors"] == [] and seen["blocked"] == []
    assert [c["svg"] for c in seen["charts"]] == [1, 1]
    assert [c["slices"] for c in seen["charts"]] == slices


def test_a_broken_mermaid_block_is_caught(tmp_path: Path) -> None:
    """The check above can fail: a block Mermaid cannot parse draws no slice and logs an error."""
    browserkit.require()
    page = browserkit.mermaid_page(['pie title broken\n    "a" 3'], tmp_path / "broken.html")
    seen = browserkit.render(page, tmp_path, "broken")
    assert seen["errors"] and [c["slices"] for c in seen["charts"]] == [0]


def test_the_report_against_a_ref_renders_both_sides_in_chromium(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    browserkit.require()
    root = trees.example(tmp_path, generated=False)
    trees.committed(root).close()
    trees.replace(
        root,
        "tenants/vision.yaml",
        "gpu.nvidia.com: {nominal: 8, borrowingLimit: 4, lendingLimit: 4}",
        "gpu.nvidia.com: {nominal: 6, borrowingLimit: 4, lendingLimit: 4}",
    )
    page = tmp_path / "report.html"
    assert main(["--root", str(root), "report", "--against", "HEAD", "--output", str(page)]) == 0
    seen = browserkit.render(page, tmp_path, "report-against")
    assert seen["errors"] == [] and seen["blocked"] == []
    sides = [
        c["data"].get("when")
        for c in seen["charts"]
        if (c["data"]["cluster"], c["data"]["flavor"], c["data"]["resource"])
        == ("prod", "h100", "nvidia.com/gpu")
    ]
    assert sides == ["before", "after"], seen["charts"]
    assert all(c["svg"] == 1 and c["width"] > 200 for c in seen["charts"])
