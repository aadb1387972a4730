"""Writing an import's files (all or none, inside the repository) and printing its round trip."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from gputenancy.adopt import proof, records
from gputenancy.common.findings import Origin, PipelineError

RULE = records.RULE


def write(root: Path, files: Mapping[str, bytes]) -> list[str]:
    """All files or none: each to a temporary file beside its target, then renamed into place. Paths
    are repository paths built from valid names; none may leave `root`."""
    real = root.resolve()
    staged: list[tuple[str, Path]] = []
    try:
        for rel, data in sorted(files.items()):
            target = (root / rel).resolve()
            if real not in target.parents:
                raise PipelineError([Origin(rel).finding(RULE, "outside the repository: not written")])
            if (root / rel).is_symlink():
                raise PipelineError([Origin(rel).finding(RULE, "a symbolic link: not written")])
            target.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.chmod(tmp, 0o644)
            staged.append((tmp, target))
    except BaseException:
        for tmp, _ in staged:
            Path(tmp).unlink(missing_ok=True)
        raise
    changed = []
    for tmp, target in staged:
        os.replace(tmp, target)
        changed.append(str(target.relative_to(real)))
    return changed


def report(results: Sequence[proof.ObjectResult], emit: Callable[[str], object]) -> None:
    """Per object: its verdict, each field that differs (live -> rendered), why and where."""
    order = list(proof.Verdict)
    for r in sorted(results, key=lambda r: (order.index(r.verdict), r.kind, r.namespace, r.name)):
        line = f"{r.verdict.value:36}  {r.shown()}"
        if r.where:
            line += f"  ({r.where})"
        emit(line + "\n")
        if r.why:
            emit(f"      why: {r.why}\n")
        for d in r.diffs:
            emit(f"      {d.describe()}\n")
    counts = {v: sum(1 for r in results if r.verdict is v) for v in proof.Verdict}
    emit("summary: " + ", ".join(f"{n} {v.value}" for v, n in counts.items() if n) + "\n")
