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


def test_a_draining_tenant_reaches_nothing_and_the_rule_sits_at_the_capacity() -> None:
    """The capacity rule is drawn at the declared capacity (16), not at the sum of the budgets (10), and
    only when a capacity is declared; a draining tenant's reach bar is empty, another's is its reach."""
    from gputenancy.inputs.quantity import parse

    def grant(tenant: str, n: int, reach: int, *, draining: bool = False) -> budgets.Grant:
        return budgets.Grant(
            "prod",
            tenant,
            "h100",
            "nvidia.com/gpu",
            parse(n),
            None,
            None,
            "research",
            parse(reach),
            draining=draining,
        )

    grants = (grant("a", 6, 10), grant("b", 4, 8, draining=True))
    pool = budgets.Pool("prod", "h100", "nvidia.com/gpu", parse(16), parse(10), grants)
    assert [(r["tenant"], r["nominal"], r["reach"]) for r in htmlreport.rows(pool)] == [
        ("a", 6.0, 10.0),
        ("b", 4.0, 0.0),
    ]
    chart = htmlreport.spec(pool)
    layers = chart["layer"]
    assert len(layers) == 3 and layers[2]["mark"]["type"] == "rule"
    assert chart["datasets"][layers[2]["data"]["name"]] == [{"capacity": 16.0}]
    undeclared = budgets.Pool("prod", "h100", "nvidia.com/gpu", None, parse(10), grants)
    assert len(htmlreport.spec(undeclared)["layer"]) == 2
    # with what the tenants use (`report --from`): their ticks, and still one capacity rule
    used = {("prod", "a", "h100", "nvidia.com/gpu"): (parse(5), parse(5), parse(0))}
    marks = [layer["mark"]["type"] for layer in htmlreport.spec(pool, used=used)["layer"]]
    assert sorted(marks) == ["bar", "bar", "rule", "tick"]


def _figures(text: str) -> list[str]:
    return re.findall(r'<figure class="pool"[^>]*>', text)


def test_against_a_ref_draws_each_changed_pool_before_and_after(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`report --against REF`, as the plan: a pool the change moves is drawn before and after, side
    by side; a pool it leaves alone once. A ref that cannot be read writes nothing."""
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
    assert "1 pool(s) changed since HEAD" in capsys.readouterr().out
    text = page.read_text()
    moved = [f for f in _figures(text) if 'data-flavor="h100"' in f and 'data-resource="nvidia.com/gpu"' in f]
    assert [re.search(r'data-when="(\w+)"', f).group(1) for f in moved] == ["before", "after"], moved  # type: ignore[union-attr]
    assert "prod h100 nvidia.com/gpu before: nominal 16 of 16, headroom 0" in text
    assert "prod h100 nvidia.com/gpu after: nominal 14 of 16, headroom 2" in text
    still = [f for f in _figures(text) if 'data-flavor="h100"' in f and 'data-resource="cpu"' in f]
    assert len(still) == 1 and 'data-when="now"' in still[0], still
    capsys.readouterr()
    page.unlink()
    assert main(["--root", str(root), "report", "--against", "no-such-ref", "--output", str(page)]) == 1
    assert "no-such-ref" in capsys.readouterr().out and not page.exists()


def test_gpu_charts_are_apart_from_cpu_and_memory(tmp_path: Path) -> None:
    root = trees.example(tmp_path, generated=False)
    page = tmp_path / "report.html"
    assert main(["--root", str(root), "report", "--cluster", "prod", "--output", str(page)]) == 0
    text = page.read_text()
    section = text.split('id="cluster-prod"', 1)[1].split("</section>", 1)[0]
    gpu, rest = section.split('<div class="pools gpu">', 1)[1].split('<div class="pools other">', 1)
    assert "<h3>GPUs</h3>" in section and "<h3>CPU and memory</h3>" in section
    assert 'data-resource="nvidia.com/gpu"' in gpu and 'data-resource="cpu"' not in gpu
    assert 'data-resource="cpu"' in rest and 'data-resource="nvidia.com/gpu"' not in rest


def test_the_page_is_titled_after_the_repository_and_its_clusters(tmp_path: Path) -> None:
    """Not after the folder it was checked out in: the repository Argo CD reads (argocd.repoURL)."""
    root = trees.example(tmp_path / "some-checkout-folder", generated=False)
    page = tmp_path / "report.html"
    assert main(["--root", str(root), "report", "--output", str(page)]) == 0
    text = page.read_text()
    title = re.search(r"<title>(.*)</title>", text).group(1)  # type: ignore[union-attr]
    assert title == "GPU budgets of acme/gpu-tenancy: lab, prod", title
    assert "some-checkout-folder" not in text and root.name not in title
    assert "<h1>GPU budgets of acme/gpu-tenancy</h1>" in text
