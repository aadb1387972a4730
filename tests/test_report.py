"""`report`: one self-contained HTML page, a chart per cluster, flavor and quota resource; nothing
written when the inputs have errors. (tests/test_browser.py opens it in Chromium.)"""

from __future__ import annotations

import re
from pathlib import Path

import hamitree
import pytest
import trees

from gputenancy.cli.app import main
from gputenancy.deliver import budgets, htmlreport
from gputenancy.inputs.quantity import ZERO
from gputenancy.inputs.spec import load_model


def test_the_page_holds_a_chart_per_pool_and_needs_no_network(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = trees.example(tmp_path, generated=False)
    page = tmp_path / "out" / "report.html"
    page.parent.mkdir()
    assert main(["--root", str(root), "report", "--cluster", "prod", "--output", str(page)]) == 0
    pools = budgets.pools(load_model(root)[0], ["prod"])
    assert capsys.readouterr().out == f"report written to {page}: {len(pools)} charts, 1 cluster(s)\n"
    text = page.read_text()
    assert text.count('<figure class="pool"') == len(pools) == text.count("<svg")
    assert "<script" not in text and not re.search(r"""(src|href)=["']?(https?:)?//""", text)
    assert 'id="cluster-lab"' not in text
    assert "prod h100 nvidia.com/gpu: nominal 16 of 16, headroom 0" in text
    assert "<td>research</td><td>nlp, speech, vision</td>" in text  # the cohorts of the cluster
    assert [p.name for p in page.parent.iterdir()] == ["report.html"]  # no temporary file left


def test_hami_pools_are_drawn_in_gib_and_percent() -> None:
    pool = budgets.Pool("site", "t4-hami", "nvidia.com/total-gpumem", None, ZERO, (), "MiB")
    assert htmlreport.spec(pool)["layer"][0]["encoding"]["x"]["title"] == "GiB"
    cores = budgets.Pool("site", "t4-hami", "nvidia.com/total-gpucores", None, ZERO, (), "percent")
    assert htmlreport.spec(cores)["layer"][0]["encoding"]["x"]["title"] == "percent of a card"


def test_hami_rows_are_in_gib(tmp_path: Path) -> None:
    root = hamitree.build(tmp_path)
    (memory,) = [p for p in budgets.pools(load_model(root)[0]) if p.unit == "MiB"]
    for row, grant in zip(htmlreport.rows(memory), memory.grants, strict=True):
        assert row["nominal"] == float(grant.nominal.value) / 1024


def test_inputs_with_errors_write_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = trees.example(tmp_path, generated=False)
    trees.edit(root, "tenants/vision.yaml", lambda d: d.update(cohort="no-such-cohort"))
    page = tmp_path / "report.html"
    assert main(["--root", str(root), "report", "--output", str(page)]) == 1
    out = capsys.readouterr().out
    assert re.search(r"^tenants/vision\.yaml:\d+:\d+: error: .*\(cohort-unknown\)$", out, re.M), out
    assert "Traceback" not in out and not page.exists()
