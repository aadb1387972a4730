"""Real SIGINT and SIGTERM at precise moments of render, publish and schemas fetch.

Each run is stopped at a checkpoint ($GPUTENANCY_PAUSE_AT=<point>=<file>: the process writes its pid
to <file> there and waits for the signal), so the signal lands at the same place on every run, whatever
the load of the machine. Whatever the moment, the command ends with 128 + n after one line on stderr,
and leaves nothing it created: no kustomize staging tree (the system temporary directory is a
directory of the test, which must be empty afterwards), no generated/.staging-*, no generated/.old-*,
no publish clone, no .fetch-* staging. generated/ is as before, or complete when the signal came after
the swap's commit point."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import git
import minirepo
import pytest
import trees
from test_negative_trees import snapshot
from test_publish import bare, source
from test_trust_environment import add_tenant

from gputenancy.common import interrupt

REPO = Path(__file__).resolve().parent.parent
STOPPED = (
    "interrupted by {}: stopped; generated/ is as before, or complete if the signal came after the swap,"
    " never half-written"
)
BOTH = pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])


def stop_at(
    tmp_path: Path, root: Path, point: str, signum: signal.Signals, *args: str
) -> subprocess.CompletedProcess[str]:
    """Run `pipeline.py --root root args` until it reaches `point`, send `signum`, wait for the end."""
    scratch, flag = tmp_path / "scratch", tmp_path / f"at-{point}"
    scratch.mkdir(exist_ok=True)
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "TMPDIR": str(scratch),
        "GPUTENANCY_CACHE": "off",
        interrupt.PAUSE_AT: f"{point}={flag}",
    }
    cmd = [sys.executable, str(REPO / "pipeline.py"), "--root", str(root), *args]
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, text=True) as proc:
        deadline = time.monotonic() + 300  # a guard against a hang, not a timing assertion
        while not flag.exists() or not flag.read_text().endswith("\n"):
            if proc.poll() is not None:
                out, err = proc.communicate()
                pytest.fail(f"ended (exit {proc.returncode}) before reaching {point}:\n{out}{err}")
            assert time.monotonic() < deadline, f"{point} not reached"
            time.sleep(0.01)
        assert int(flag.read_text()) == proc.pid
        proc.send_signal(signum)
        out, err = proc.communicate(timeout=300)
    assert os.listdir(scratch) == [], "temporary directories left behind"
    assert "Traceback" not in out + err
    assert proc.returncode == 128 + signum, out + err
    *notes, last = err.strip().splitlines()
    assert last == STOPPED.format(signum.name)
    assert all(n.startswith("note: ") for n in notes), err  # notes of the render's progress, then one line
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err)


def hidden(directory: Path) -> list[str]:
    return sorted(n for n in os.listdir(directory) if n.startswith("."))


@BOTH
@pytest.mark.parametrize("point", ["kustomize", "staged", "swapping"])
def test_a_signal_before_the_commit_point_leaves_the_repository_as_before(
    tmp_path: Path, point: str, signum: signal.Signals
) -> None:
    root = trees.example(tmp_path)
    add_tenant(root, "extra")  # prod changes: its tree is staged and swapped
    before = snapshot(root)
    stop_at(tmp_path, root, point, signum, "render")
    assert snapshot(root) == before


@BOTH
def test_a_signal_after_the_commit_point_leaves_the_new_tree_whole(
    tmp_path: Path, signum: signal.Signals
) -> None:
    root = trees.example(tmp_path)
    add_tenant(root, "extra")
    stop_at(tmp_path, root, "swapped", signum, "render")
    assert hidden(root / "generated") == []  # the old trees went with the stop
    assert (root / "generated" / "prod" / "clusterqueue" / "extra.yaml").is_file()
    done = subprocess.run(
        [sys.executable, str(REPO / "pipeline.py"), "--root", str(root), "--no-cache", "check"],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        check=False,
    )
    # generated/ matches the inputs (the files render writes after the swap, CODEOWNERS and the
    # ApplicationSet, were not reached)
    assert "generated/ is out of date" not in done.stdout, done.stdout


def test_a_signal_while_publishing_removes_the_clone(tmp_path: Path) -> None:
    root, remote = source(tmp_path), bare(tmp_path)
    stop_at(tmp_path, root, "cloned", signal.SIGTERM, "publish", "--repo", str(remote))
    with git.Repo(remote) as repo:
        assert repo.heads == []  # nothing pushed


def test_a_signal_while_installing_schemas_removes_the_staging(tmp_path: Path, shared: Path) -> None:
    root = minirepo.make(tmp_path / "repo", [minirepo.cluster("c0")])
    schemas = tmp_path / "schemas"
    url = f"file://{shared}/kueue/{{version}}/manifests.yaml"
    stop_at(
        tmp_path,
        root,
        "installing",
        signal.SIGINT,
        "schemas",
        "fetch",
        "--update",
        "--schemas",
        str(schemas),
        "--url",
        url,
    )
    assert [n for n in os.listdir(schemas) if n.startswith(".fetch-")] == []
