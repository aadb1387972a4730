"""A mutation run: small deliberate bugs in the core behaviours, one at a time, each in a copy of the
tree; a mutant is killed when the tests that concern it fail (or time out), and survives when they pass.

    python tools/mutate.py                     # every mutant in tools/mutants.py and mutants_delivery.py
    python tools/mutate.py quota-limits-equal  # some of them, by id
    python tools/mutate.py --list              # ids, files and tests
    python tools/mutate.py --markdown out.md   # also write the result table (docs/testing.md)

Mutants are found by their source text, not by line number: each names a file, the exact text to
change (which must occur exactly once, or the run stops and says which mutant lost its anchor) and
its replacement. The working tree is never modified: the files git knows (tracked and untracked, not
ignored) are copied into a temporary directory, the unmutated copy's tests must pass first (the
baseline), then each mutant gets its own copy. Tests run with this Python, `CI=true` and the
reference data of $GPUTENANCY_SHARED (or ../shared), so a test that needs it cannot skip.

Exit 0 when at least --min percent (default 95) of the mutants were killed, 1 otherwise, 2 when a
mutant's anchor is missing or the baseline fails.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import contextlib
import dataclasses
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from mutants import Mutant, all_mutants

MUTANTS = all_mutants()

REPO = Path(__file__).resolve().parent.parent
TIMEOUT = 600.0


class AnchorError(Exception):
    """A mutant's text is not in its file exactly once."""


@dataclasses.dataclass(frozen=True)
class Outcome:
    mutant: Mutant
    status: str  # killed | survived | timeout
    seconds: float
    detail: str = ""


def files_of(repo: Path) -> list[str]:
    out = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=repo,
        check=True,
        capture_output=True,
    ).stdout
    return sorted(p for p in out.decode().split("\0") if p and (repo / p).is_file())


def copy_tree(repo: Path, files: Sequence[str], target: Path) -> Path:
    for rel in files:
        dest = target / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(repo / rel, dest, follow_symlinks=False)
    return target


def apply(mutant: Mutant, tree: Path) -> None:
    path = tree / mutant.path
    if not path.is_file():
        raise AnchorError(f"{mutant.id}: {mutant.path} does not exist")
    text = path.read_text(encoding="utf-8")
    count = text.count(mutant.old)
    if count != 1:
        where = "is not in" if count == 0 else f"occurs {count} times in"
        raise AnchorError(f"{mutant.id}: its anchor {mutant.old!r} {where} {mutant.path}")
    path.write_text(text.replace(mutant.old, mutant.new, 1), encoding="utf-8")


def check_anchors(repo: Path, mutants: Sequence[Mutant]) -> list[str]:
    problems = []
    for m in mutants:
        path = repo / m.path
        count = path.read_text(encoding="utf-8").count(m.old) if path.is_file() else 0
        if count != 1:
            problems.append(
                f"{m.id}: anchor {'not found' if count == 0 else f'found {count} times'} in {m.path}: {m.old!r}"
            )
    return problems


def environment(tree: Path, shared: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "GPUTENANCY_"))}
    env.update(
        PYTHONPATH=str(tree),
        GPUTENANCY_SHARED=str(shared),
        CI="true",
        PYTHONHASHSEED="0",
        PYTHONDONTWRITEBYTECODE="1",
    )
    return env


def imports_from(tree: Path, shared: Path) -> Path:
    """Where the package is imported from in a copy: the copy itself, or the mutants would not count."""
    out = subprocess.run(
        [sys.executable, "-c", "import gputenancy; print(gputenancy.__file__)"],
        cwd=tree,
        env=environment(tree, shared),
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return Path(out.strip()).resolve()


RUNNING: set[subprocess.Popen[bytes]] = set()
"""Test runs in progress, each in its own process group: killed when the run is interrupted."""


def run_tests(tree: Path, tests: Sequence[str], shared: Path, timeout: float) -> tuple[str, float, str]:
    """('passed' | 'failed' | 'timeout', seconds, the last line of output)."""
    argv = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", "--no-header", *tests]
    start = time.monotonic()
    proc = subprocess.Popen(
        argv,
        cwd=tree,
        env=environment(tree, shared),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    RUNNING.add(proc)
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        return "timeout", time.monotonic() - start, ""
    finally:
        RUNNING.discard(proc)
    text = out.decode(errors="replace").strip().splitlines()
    tail = text[-1] if text else ""
    return ("passed" if proc.returncode == 0 else "failed"), time.monotonic() - start, tail


def stop_all(*_: object) -> None:
    for proc in list(RUNNING):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
    raise KeyboardInterrupt


def run_one(mutant: Mutant, pristine: Path, work: Path, shared: Path) -> Outcome:
    tree = Path(shutil.copytree(pristine, work / mutant.id, symlinks=True))
    try:
        apply(mutant, tree)
        status, seconds, tail = run_tests(tree, mutant.tests, shared, mutant.timeout or TIMEOUT)
    finally:
        shutil.rmtree(tree, ignore_errors=True)
    verdict = {"passed": "survived", "failed": "killed", "timeout": "timeout"}[status]
    return Outcome(mutant, verdict, seconds, tail)


def markdown(outcomes: Sequence[Outcome], total_seconds: float) -> str:
    killed = sum(o.status != "survived" for o in outcomes)
    lines = [
        f"{killed} of {len(outcomes)} mutants killed ({100 * killed / max(1, len(outcomes)):.1f}%) "
        f"in {total_seconds / 60:.1f} min.",
        "",
        "| mutant | file | change | result | s |",
        "| --- | --- | --- | --- | --- |",
    ]
    for o in outcomes:
        m = o.mutant
        lines.append(f"| `{m.id}` | `{m.path}` | {m.why} | {o.status} | {o.seconds:.0f} |")
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("ids", nargs="*", help="mutant ids (default: all)")
    parser.add_argument("--list", action="store_true", help="list the mutants and exit")
    parser.add_argument("--check", action="store_true", help="only check that every anchor is found")
    parser.add_argument("--jobs", type=int, default=1, help="mutants run at once (default 1)")
    parser.add_argument("--min", type=float, default=95.0, help="percent to kill for exit 0 (default 95)")
    parser.add_argument("--markdown", type=Path, help="write the result table to this file")
    parser.add_argument("--no-baseline", action="store_true", help="skip the run of the unmutated tree")
    args = parser.parse_args(argv)

    ids = {m.id for m in MUTANTS}
    unknown = sorted(set(args.ids) - ids)
    if unknown or len(ids) != len(MUTANTS):
        print(f"unknown or duplicate mutant ids: {unknown or 'duplicates in tools/mutants.py'}")
        return 2
    chosen = [m for m in MUTANTS if not args.ids or m.id in args.ids]
    if args.list:
        for m in chosen:
            print(f"{m.id:32} {m.path:40} {' '.join(m.tests)}")
        return 0
    problems = check_anchors(REPO, chosen)
    if problems:
        print("mutants whose anchor text is no longer in the source (update tools/mutants.py):")
        print("\n".join(f"  {p}" for p in problems))
        return 2
    if args.check:
        print(f"{len(chosen)} mutants, every anchor found once")
        return 0
    shared = Path(os.environ.get("GPUTENANCY_SHARED", REPO.parent / "shared")).resolve()
    if not (shared / "kueue").is_dir():
        print(f"upstream reference data not found at {shared} (set GPUTENANCY_SHARED)")
        return 2
    start = time.monotonic()
    signal.signal(signal.SIGTERM, stop_all)
    signal.signal(signal.SIGINT, stop_all)
    with tempfile.TemporaryDirectory(prefix="gputenancy-mutate-") as tmp:
        work = Path(tmp)
        # one snapshot of the working tree, taken now: later edits to it do not reach the run
        pristine = copy_tree(REPO, files_of(REPO), work / "pristine")
        if not args.no_baseline:
            tests = sorted({t for m in chosen for t in m.tests})
            base = Path(shutil.copytree(pristine, work / "baseline", symlinks=True))
            package = imports_from(base, shared)
            if not package.is_relative_to(base.resolve()):
                print(f"the copy imports gputenancy from {package}, not from itself")
                return 2
            status, seconds, tail = run_tests(base, tests, shared, TIMEOUT * 2)
            print(f"baseline: {status} in {seconds:.0f}s ({tail})", flush=True)
            if status != "passed":
                print("the unmutated tree must pass the tests the mutants use")
                return 2
            shutil.rmtree(base)
        outcomes: list[Outcome] = []
        pool = concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs))
        try:
            futures = [pool.submit(run_one, m, pristine, work, shared) for m in chosen]
            for future in futures:
                o = future.result()
                outcomes.append(o)
                print(f"{o.status:9} {o.seconds:5.0f}s  {o.mutant.id}  ({o.detail})", flush=True)
        except KeyboardInterrupt:
            pool.shutdown(wait=True, cancel_futures=True)  # the running test processes are killed
            print("interrupted")
            return 130
        pool.shutdown()
    total = time.monotonic() - start
    table = markdown(outcomes, total)
    print()
    print(table)
    survivors = [o.mutant.id for o in outcomes if o.status == "survived"]
    if survivors:
        print("survived: " + ", ".join(survivors))
    if args.markdown is not None:
        args.markdown.write_text(table, encoding="utf-8")
    killed = len(outcomes) - len(survivors)
    return 0 if 100 * killed >= args.min * max(1, len(outcomes)) else 1


if __name__ == "__main__":
    raise SystemExit(main())
