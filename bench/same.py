"""Byte-for-byte: the command line of two checkouts of the pipeline on the same inputs.

    python -m bench.same --other /path/to/other/checkout [--tenants 60] [--schemas DIR]

For the example repository (this checkout's base/, overlays/, tenants/) and for a `bench.fleet` fleet,
each checkout gets its own copy of the inputs and its own cache, and runs, in order: `rules`, `validate`,
`render` (cold cache: writes generated/), `check`, `render` again (warm cache), then after
`fleet.edit_one` (the example: one tenant's budget changed) `plan` in text, Markdown and JSON, and
`validate` with `--no-cache`; then with the root committed to a git repository and one more edit, the
plans again (now with the inputs at HEAD read from git) and `plan --against HEAD`. Every command's exit code, stdout and stderr and the generated/ tree after
each render must be the same bytes. Prints each difference and exits 1 on any; 0 when all are the same.
Used to show that a reorganisation of the package changed nothing a user sees (docs/performance.md).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from bench import fleet

HERE = Path(__file__).resolve().parent.parent
STEPS: tuple[tuple[str, ...], ...] = (
    ("rules",),
    ("validate",),
    ("render",),
    ("check",),
    ("render",),
    ("edit",),
    ("plan", "--format", "text"),
    ("plan", "--format", "markdown"),
    ("plan", "--format", "json"),
    ("--no-cache", "validate"),
    ("commit",),
    ("edit",),
    ("plan", "--format", "text"),
    ("plan", "--format", "markdown"),
    ("plan", "--format", "json"),
    ("plan", "--against", "HEAD", "--format", "markdown"),
)
"""Steps that run no command: `edit` changes the inputs, `commit` makes the root a git repository
with everything committed (fixed author and dates, so both checkouts make the same commit); the
plans after it read the inputs at the base from git."""
_GIT = {
    "GIT_AUTHOR_NAME": "bench",
    "GIT_AUTHOR_EMAIL": "bench@example.invalid",
    "GIT_COMMITTER_NAME": "bench",
    "GIT_COMMITTER_EMAIL": "bench@example.invalid",
    "GIT_AUTHOR_DATE": "2026-01-01T00:00:00Z",
    "GIT_COMMITTER_DATE": "2026-01-01T00:00:00Z",
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": os.devnull,
}


def _tree(root: Path) -> dict[str, bytes]:
    top = root / "generated"
    return {p.relative_to(top).as_posix(): p.read_bytes() for p in sorted(top.rglob("*")) if p.is_file()}


def _edit_example(root: Path) -> None:
    path = root / "tenants" / "speech.yaml"
    text = path.read_text()
    changed = text.replace("nominal: 2", "nominal: 1", 1)
    path.write_text(changed if changed != text else text + "description: edited\n")


def _runs(code: Path, inputs: Path, work: Path, schemas: Path | None, example: bool) -> list[bytes]:
    """What one checkout does on a copy of `inputs`: one record per step."""
    root = work / "root"
    shutil.copytree(inputs, root)
    env = {
        **os.environ,
        "PYTHONPATH": str(code),
        "GPUTENANCY_CACHE": str(work / "cache"),
        "PYTHONHASHSEED": "0",
    }
    env.pop("GITHUB_ACTIONS", None)
    out = []
    for step in STEPS:
        if step == ("edit",):
            _edit_example(root) if example else fleet.edit_one(root)
            continue
        if step == ("commit",):
            for git in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", "inputs"]):
                subprocess.run(["git", *git], cwd=root, env={**env, **_GIT}, check=True)
            continue
        flags, command = [s for s in step if s == "--no-cache"], [s for s in step if s != "--no-cache"]
        extra = ["--schemas", str(schemas)] if schemas is not None and command != ["rules"] else []
        argv = [sys.executable, str(code / "pipeline.py"), "--root", str(root), *flags, *command, *extra]
        done = subprocess.run(argv, capture_output=True, env=env, check=False, cwd=work)
        text = done.stdout.replace(str(root).encode(), b"<root>") + b"\n--stderr--\n" + done.stderr
        out.append(b"%s -> %d\n%s" % (" ".join(step).encode(), done.returncode, text))
        if step[0] == "render":
            out.append(b"".join(b"%s\n%s" % (k.encode(), v) for k, v in _tree(root).items()))
    return out


def compare(other: Path, inputs: Path, schemas: Path | None, example: bool) -> list[str]:
    with tempfile.TemporaryDirectory(prefix="gputenancy-same-") as tmp:
        mine = _runs(HERE, inputs, Path(tmp) / "this", schemas, example)
        theirs = _runs(other, inputs, Path(tmp) / "other", schemas, example)
    problems = []
    for a, b in zip(mine, theirs, strict=True):
        if a != b:
            problems.append(f"differs: {a.splitlines()[0]!r} / {b.splitlines()[0]!r}")
    return problems


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.same", description=__doc__.split("\n\n")[0])
    p.add_argument("--other", type=Path, required=True, help="the other checkout (its pipeline.py)")
    p.add_argument("--tenants", type=int, default=60, help="fleet size (default 60)")
    p.add_argument("--schemas", type=Path, default=None, help="Kueue CRDs as kueue/<version>/crds/")
    args = p.parse_args(argv)
    schemas = args.schemas
    if schemas is None and (HERE.parent / "shared" / "kueue").is_dir():
        schemas = HERE.parent / "shared"
    failed = False
    with tempfile.TemporaryDirectory(prefix="gputenancy-inputs-") as tmp:
        example = Path(tmp) / "example"
        for sub in ("base", "overlays", "tenants"):
            shutil.copytree(HERE / sub, example / sub)
        fleet_root = Path(tmp) / "fleet"
        fleet.generate(fleet_root, args.tenants, seed=1)
        for label, inputs, is_example in (
            ("example", example, True),
            (f"fleet of {args.tenants}", fleet_root, False),
        ):
            problems = compare(args.other.resolve(), inputs, schemas, is_example)
            steps = sum(1 for s in STEPS if s not in (("edit",), ("commit",))) + sum(
                1 for s in STEPS if s[0] == "render"
            )
            print(f"{label}: {'same bytes' if not problems else 'DIFFERENT'} ({steps} outputs compared)")
            for problem in problems:
                print(f"  {problem}")
            failed = failed or bool(problems)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
