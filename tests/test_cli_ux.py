"""The command line explains itself: COMMAND --help, rules and rules ID, global options before or after
the command, the repository root found from a subdirectory, results on stdout and notes on stderr,
progress and colour only on a terminal. Run as a user runs it: `python pipeline.py ...` in a
subprocess (a pseudo-terminal where a terminal matters)."""

from __future__ import annotations

import os
import pty
import re
import select
import subprocess
import sys
from pathlib import Path

import pytest
import trees

from gputenancy.check.webhook import webhooks
from gputenancy.cli import helptext as clihelp
from gputenancy.cli import ruleindex
from gputenancy.cli.app import main
from gputenancy.policy import rules

PIPELINE = str(trees.REPO / "pipeline.py")


def env(**extra: str) -> dict[str, str]:
    out = {**os.environ, "PYTHONPATH": str(trees.REPO), "GPUTENANCY_CACHE": "off", **extra}
    for key in ("NO_COLOR", "GPUTENANCY_PROGRESS", "GPUTENANCY_PROGRESS_AFTER", "GITHUB_ACTIONS"):
        if key not in extra:
            out.pop(key, None)
    return out


def pipeline(*args: str, cwd: Path, **extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, PIPELINE, *args],
        cwd=cwd,
        env=env(**extra),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def on_terminal(args: list[str], cwd: Path, *, stream: str, **extra: str) -> tuple[int, str, str]:
    """Run with `stream` (stdout or stderr) on a pseudo-terminal; returns (exit, terminal, the other)."""
    master, slave = pty.openpty()
    other = cwd.parent / f"other-{stream}.txt"
    with other.open("wb") as sink:
        proc = subprocess.Popen(
            [sys.executable, PIPELINE, *args],
            cwd=cwd,
            env=env(**extra),
            stdout=slave if stream == "stdout" else sink,
            stderr=slave if stream == "stderr" else sink,
            stdin=subprocess.DEVNULL,
        )
        os.close(slave)
        seen = b""
        while True:
            ready, _, _ = select.select([master], [], [], 0.2)
            if ready:
                try:
                    chunk = os.read(master, 65536)
                except OSError:  # the terminal closed: the process is done
                    chunk = b""
                if not chunk:
                    break
                seen += chunk
            elif proc.poll() is not None:
                break
        os.close(master)
        code = proc.wait(timeout=300)
    return code, seen.decode(errors="replace"), other.read_text(errors="replace")


# ------------------------------------------------------------------------------------------ help


@pytest.mark.parametrize("command", sorted(clihelp.COMMANDS))
def test_every_command_has_help_with_exit_codes_and_an_example(
    command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as done:
        main([command, "--help"])
    assert done.value.code == 0
    out = capsys.readouterr().out
    h = clihelp.COMMANDS[command]
    assert f"usage: pipeline.py {command}" in out
    assert " ".join(h.description.split()[:6]) in " ".join(out.split())
    assert "exit codes:" in out and "example:" in out and f"python pipeline.py {command}" in out
    for code, _ in h.exits:
        assert re.search(rf"^  {code}  ", out, re.M), code


def test_the_main_help_lists_the_commands(tmp_path: Path) -> None:
    done = pipeline("--help", cwd=tmp_path)
    assert done.returncode == 0
    for command, h in clihelp.COMMANDS.items():
        assert command in done.stdout and h.summary[:30] in " ".join(done.stdout.split())


# ------------------------------------------------------------------------------------------ rules


def test_rules_lists_every_registered_rule_and_the_others(tmp_path: Path) -> None:
    done = pipeline("rules", cwd=tmp_path)
    assert done.returncode == 0
    listed = set(re.findall(r"^  (\S+)  ", done.stdout, re.M))
    assert set(rules.RULES) <= listed
    assert {r.id for r in webhooks.RULES} <= listed
    assert {
        "source-syntax",
        "tenant-schema",
        "quantity",
        "crd-schema",
        "tenant-removal",
        "publish-stale",
    } <= listed


def test_every_rule_id_the_package_emits_is_documented() -> None:
    """Every quoted rule-like id in the package (by the prefixes rule ids use) is listed by `rules`,
    so a new finding cannot carry an undocumented rule id."""
    prefixes = (
        "source-", "crd-", "k8s-", "dra-", "kueue-config-", "kueue-feature-gate-", "kueue-webhook-",
        "kueue-lq-", "tenant-", "cluster-", "platform-", "publish-", "plan-", "budget-", "catalog-",
        "claim-", "cohort-", "flavor-", "device-class-", "namespace-", "mapping-", "quota-", "argocd-",
    )  # fmt: skip
    risks = {
        "kueue-config-changed",
        "claim-template-replaced",
        "namespace-removed",
        "clusterqueue-replaced",
        "kueue-feature-gate-default-changed",
        "kueue-feature-gate-removed",
        "cluster-renamed",
    }
    # plan's risk names, a prefix, a cache-entry kind, Argo CD's ConfigMap (render/hubproject.py)
    not_rules = {*risks, "source-", "source-pack", "argocd-cm"}
    not_rules.add("argocd-controller")  # Argo CD's field manager, as managedFields name it (live/owners.py)
    not_rules.add("budget-tree")  # the report page's table class (deliver/htmlreport.py)
    found: set[str] = set()
    for path in (trees.REPO / "gputenancy").rglob("*.py"):
        for literal in re.findall(r'"([a-z0-9]+(?:-[a-z0-9]+)+-?)"', path.read_text()):
            if literal.startswith(prefixes) and literal not in not_rules:
                found.add(literal)
    documented = set(ruleindex.ids())
    assert found - documented == set(), "undocumented rule ids; add them to gputenancy/cli/ruleindex.py"


def test_rules_id_explains_one_with_examples(tmp_path: Path) -> None:
    for rule_id in ("capacity", "kueue-webhook-cq-flavor-order", "source-tab", "tenant-removal"):
        done = pipeline("rules", rule_id, cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        assert done.stdout.startswith(f"{rule_id} (")
        assert re.search(r"^Fails:  \S", done.stdout, re.M) and re.search(r"^Passes: \S", done.stdout, re.M)
    bad = pipeline("rules", "capacty", cwd=tmp_path)
    assert bad.returncode == 1 and "did you mean 'capacity'?" in bad.stderr and bad.stdout == ""


# ------------------------------------------------------------------------------ options and root


def test_global_options_before_or_after_the_command(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = trees.example(tmp_path)
    assert main(["--root", str(root), "--no-cache", "render"]) == 0  # CODEOWNERS and the ApplicationSet
    cache_dir = Path(os.environ["GPUTENANCY_CACHE"])
    assert main(["validate", "--root", str(root), "--no-cache"]) == 0
    assert "ok: 4 tenants" in capsys.readouterr().out
    assert not cache_dir.exists()  # --no-cache after the command was honoured
    assert main(["--root", str(root), "validate"]) == 0
    assert cache_dir.exists()
    assert (
        main(["--root", str(tmp_path / "nowhere"), "check", "--root", str(root)]) == 0
    )  # the later one wins


def test_the_root_is_found_from_a_subdirectory(tmp_path: Path) -> None:
    root = trees.example(tmp_path)
    assert pipeline("render", cwd=root).returncode == 0
    done = pipeline("validate", cwd=root / "tenants")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "ok: 4 tenants, 2 clusters" in done.stdout
    deep = pipeline("check", cwd=root / "overlays" / "prod" / "tenants")
    assert deep.returncode == 0 and "up to date" in deep.stdout
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    lost = pipeline("validate", cwd=outside)
    assert lost.returncode == 1 and "platform.yaml" in lost.stdout


def test_results_on_stdout_notes_on_stderr(tmp_path: Path) -> None:
    root = trees.example(tmp_path)
    trees.edit(
        root,
        "tenants/vision.yaml",
        lambda d: d["budgets"]["default"][0]["devices"].update({"gpu.nvidia.com": 6}),
    )
    done = pipeline("plan", "--format", "markdown", cwd=root)
    assert done.returncode == 2
    assert done.stdout.startswith("## gputenancy plan")
    assert "note:" not in done.stdout and "note: prod: Kueue CRD schema validation skipped" in done.stderr
    ok = pipeline("validate", cwd=root)
    assert ok.stdout.startswith("ok: ") and "note:" in ok.stderr and "note:" not in ok.stdout


# ------------------------------------------------------------------------- terminal: progress, colour


def test_progress_on_stderr_only_on_a_terminal(tmp_path: Path) -> None:
    root = trees.example(tmp_path)
    code, terminal, out = on_terminal(["validate"], root, stream="stderr", GPUTENANCY_PROGRESS_AFTER="0")
    assert code == 0
    assert "pipeline.py validate: working… " in terminal and "\x1b[K" in terminal  # cleared at the end
    assert "ok: 4 tenants" in out and "working" not in out
    piped = pipeline("validate", cwd=root, GPUTENANCY_PROGRESS_AFTER="0")
    assert "working" not in piped.stderr + piped.stdout


def test_validate_is_coloured_on_a_terminal_unless_no_color(tmp_path: Path) -> None:
    root = trees.example(tmp_path)
    vision = root / "tenants/vision.yaml"
    vision.write_text(vision.read_text().replace("cohort: research", "cohort: reserch"))
    code, terminal, _ = on_terminal(["validate"], root, stream="stdout")
    assert code == 1
    assert "\x1b[1;31merror\x1b[0m" in terminal and "cohort 'reserch'" in terminal
    code, terminal, _ = on_terminal(["validate"], root, stream="stdout", NO_COLOR="1")
    assert code == 1 and "\x1b[" not in terminal and ": error: cohort 'reserch'" in terminal
    piped = pipeline("validate", cwd=root)
    assert "\x1b[" not in piped.stdout
