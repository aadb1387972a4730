"""The commands end to end through main(argv): validate, render, check; bad input loses nothing."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import trees

from gputenancy.assemble import output, swap
from gputenancy.cli.app import main

LOCATED = re.compile(
    r"^(?P<path>[^:\s]+):(?P<line>\d+):(?P<col>\d+): error: .+ \((?P<rule>[a-z0-9-]+)\)$", re.M
)


def snapshot(root: Path) -> dict[str, bytes]:
    return output.read_tree(root / "generated")


def test_check_passes_on_the_golden_fixture(capsys: pytest.CaptureFixture[str]) -> None:
    """tests/fixtures/repo holds what render writes; refresh it with
    `python pipeline.py --root tests/fixtures/repo render`."""
    assert main(["--root", str(trees.FIXTURE), "check"]) == 0
    assert "up to date" in capsys.readouterr().out


def test_render_then_check(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = trees.example(tmp_path, generated=False)
    assert main(["--root", str(root), "check"]) == 1
    assert "out of date" in capsys.readouterr().out
    assert main(["--root", str(root), "render"]) == 0
    assert snapshot(root) == snapshot(trees.FIXTURE)
    assert main(["--root", str(root), "check"]) == 0


def test_render_removes_stale_files_and_clusters(tmp_path: Path) -> None:
    root = trees.example(tmp_path)
    (root / "tenants/speech.yaml").unlink()
    (root / "generated/gone/clusterqueue").mkdir(parents=True)
    (root / "generated/gone/clusterqueue/x.yaml").write_text("x: 1\n")
    assert main(["--root", str(root), "render"]) == 0
    assert not (root / "generated/prod/clusterqueue/speech.yaml").exists()
    assert not (root / "generated/prod/localqueue/speech").exists()
    assert not (root / "generated/gone").exists()
    assert (root / "generated/prod/clusterqueue/vision.yaml").exists()


def test_broken_tenant_exit_1_located_nothing_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = trees.example(tmp_path)
    before = snapshot(root)
    path = root / "tenants/vision.yaml"
    path.write_text(
        path.read_text()
        .replace("lendingLimit: 4}", "lendingLimit: 40}", 1)
        .replace("cohort: research", "cohort: nope")
    )
    for command in ("validate", "render", "check"):
        assert main(["--root", str(root), command]) == 1
        out = capsys.readouterr().out
        located = {(m["path"], m["rule"]) for m in LOCATED.finditer(out)}
        assert ("tenants/vision.yaml", "quota-limits") in located, out
        assert ("tenants/vision.yaml", "cohort-unknown") in located, out
        assert "Traceback" not in out
        assert re.search(r"^\d+ errors?, \d+ warnings?$", out, re.M)
    assert snapshot(root) == before


def test_findings_as_github_annotations_under_actions(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    root = trees.example(tmp_path)
    trees.edit(root, "tenants/vision.yaml", lambda d: d.update(cohort="nope"))
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    assert main(["--root", str(root), "validate"]) == 1
    out = capsys.readouterr().out
    assert re.search(
        r"^::error file=tenants/vision.yaml,line=\d+,col=\d+,title=cohort-unknown::cohort 'nope'", out, re.M
    ), out


def test_findings_as_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = trees.example(tmp_path)
    trees.edit(root, "tenants/vision.yaml", lambda d: d.update(cohort="nope"))
    assert main(["--root", str(root), "validate", "--format", "json"]) == 1
    data = json.loads(capsys.readouterr().out)
    assert data["findings"][0]["rule"] == "cohort-unknown" and data["findings"][0]["line"] > 0


def test_unknown_cluster(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = trees.example(tmp_path)
    assert main(["--root", str(root), "validate", "--cluster", "nope"]) == 1
    assert "no cluster 'nope'" in capsys.readouterr().out


def test_render_one_cluster_leaves_the_others(tmp_path: Path) -> None:
    root = trees.example(tmp_path)
    (root / "generated/prod/extra.yaml").write_text("x: 1\n")
    assert main(["--root", str(root), "render", "--cluster", "lab"]) == 0
    assert (root / "generated/prod/extra.yaml").exists()


def test_interrupted_write_leaves_generated_as_it_was(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = trees.example(tmp_path)
    trees.edit(
        root,
        "tenants/speech.yaml",
        lambda d: d["budgets"]["default"][0]["devices"].update({"gpu.nvidia.com": 1}),
    )
    before = snapshot(root)
    written = []
    real_fill = output._fill

    def failing_fill(directory: Path, tree: dict[str, bytes]) -> None:
        written.append(directory)
        real_fill(directory, dict(list(tree.items())[:3]))
        raise OSError("disk full")

    monkeypatch.setattr(output, "_fill", failing_fill)
    assert main(["--root", str(root), "render"]) == 1
    assert written
    assert snapshot(root) == before
    assert not [p for p in (root / "generated").iterdir() if p.name.startswith(".")]


def test_no_kustomize_is_a_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    root = trees.example(tmp_path)
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))
    assert main(["--root", str(root), "validate"]) == 1
    assert "neither `kustomize` nor `kubectl` is on PATH" in capsys.readouterr().out


def test_rules_command_lists_every_rule(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["rules"]) == 0
    out = capsys.readouterr().out
    for rule_id in ("capacity", "source-syntax", "tenant-schema", "quantity", "kueue-feature-gate-conflict"):
        assert f"  {rule_id} " in out, rule_id
    assert main(["rules", "capacity"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("capacity (model)") and "Fails:" in out and "Passes:" in out


def test_large_trees_are_written_and_replaced_whole(tmp_path: Path) -> None:
    def tree(version: int, n: int) -> dict[str, bytes]:
        return {f"kind{i % 3}/ns-{i % 97}/obj-{i}.yaml": f"v: {version}\ni: {i}\n".encode() for i in range(n)}

    parent = tmp_path / "generated"
    first = {"a": tree(1, 3000), "b": tree(1, 10)}
    assert swap.write_trees(tmp_path, parent, first) == ["a", "b"]
    assert {n: output.read_tree(parent / n) for n in first} == first
    second = {"a": tree(2, 2000), "b": tree(1, 10)}
    assert swap.write_trees(tmp_path, parent, second) == ["a"]
    assert {n: output.read_tree(parent / n) for n in second} == second
    assert sorted(p.name for p in parent.iterdir()) == ["a", "b"]


def test_a_failing_writer_thread_leaves_generated_as_it_was(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    parent = tmp_path / "generated"
    before = {"a": {f"k/obj-{i}.yaml": b"v: 1\n" for i in range(1000)}}
    swap.write_trees(tmp_path, parent, before)
    real_write = output._write_files
    calls = []

    def failing_write(base: str, items: list[tuple[str, bytes]]) -> None:
        calls.append(len(items))
        if len(calls) == 2:
            raise OSError("disk full")
        real_write(base, items)

    monkeypatch.setattr(output, "_write_files", failing_write)
    after = {"a": {f"k/obj-{i}.yaml": b"v: 2\n" for i in range(1000)}}
    with pytest.raises(OSError, match="disk full"):
        swap.write_trees(tmp_path, parent, after)
    assert len(calls) > 1
    assert output.read_tree(parent / "a") == before["a"]
    assert [p.name for p in parent.iterdir()] == ["a"]


def test_missing_dependencies_give_one_line_and_exit_1(tmp_path: Path) -> None:
    """An interpreter without the installed packages (-S: no site-packages) gets the set-up command, not a traceback."""
    import subprocess
    import sys

    proc = subprocess.run(
        [sys.executable, "-S", str(trees.REPO / "pipeline.py"), "check"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr
    assert "is not installed" in proc.stderr and "pip install -e ." in proc.stderr, proc.stderr
