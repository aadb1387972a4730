"""The one subprocess wrapper (kustomize, and git where GitPython cannot)."""

from __future__ import annotations

import dataclasses
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path

from gputenancy.common.findings import Finding, PipelineError, Severity


@dataclasses.dataclass(frozen=True)
class Result:
    rc: int
    out: str
    err: str


def _fail(tool: str, message: str) -> PipelineError:
    return PipelineError([Finding(tool, 0, 0, Severity.ERROR, "tool", message)])


_running: set[subprocess.Popen[str]] = set()
_stopping = False


def stop_all() -> None:
    """Kill every process started by `run` that is still running, and refuse new ones, so that a
    signal ends a run without waiting for kustomize. Safe in a signal handler: no lock is taken."""
    global _stopping
    _stopping = True
    for process in list(_running):
        process.kill()


def resume() -> None:
    """Allow `run` again (at the start of a command, after an earlier one was stopped)."""
    global _stopping
    _stopping = False


def run(cmd: Sequence[str], *, cwd: Path | None = None, check: bool = True, timeout: float = 600) -> Result:
    """Run a command; on failure raise PipelineError showing command, rc, stdout and stderr."""
    exe = shutil.which(cmd[0])
    if exe is None:
        raise _fail(cmd[0], f"command not found: {cmd[0]}")
    if _stopping:
        raise _fail(cmd[0], "not started: the run is stopping")
    process = subprocess.Popen(  # noqa: S603 - argv list, no shell
        [exe, *cmd[1:]], cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    _running.add(process)
    try:
        out, err = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.communicate()
        raise _fail(cmd[0], f"timed out after {timeout:.0f}s: {' '.join(cmd)}") from None
    finally:
        _running.discard(process)
    done = subprocess.CompletedProcess(process.args, process.returncode, out, err)
    result = Result(done.returncode, done.stdout, done.stderr)
    if check and result.rc != 0:
        raise _fail(
            cmd[0],
            f"`{' '.join(cmd)}` exited {result.rc}\nstdout:\n{result.out.strip()}\nstderr:\n{result.err.strip()}",
        )
    return result


def kustomize_command() -> list[str]:
    """`kustomize build` when on PATH, else `kubectl kustomize`; a clear error when neither exists."""
    if shutil.which("kustomize"):
        return ["kustomize", "build"]
    if shutil.which("kubectl"):
        return ["kubectl", "kustomize"]
    raise _fail(
        "kustomize",
        "neither `kustomize` nor `kubectl` is on PATH: install kustomize v5 "
        "(https://kubectl.docs.kubernetes.io/installation/kustomize/) or kubectl >= 1.27",
    )
