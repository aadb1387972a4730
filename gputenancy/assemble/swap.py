"""generated/ is old or new, never between: the staged swap of every cluster directory at once.

`write_trees` stages every changed cluster tree in ``generated/.staging-<pid>/``, then, with SIGINT
and SIGTERM held back, renames each current directory (and each stale one, with `prune`) into
``generated/.old-<pid>/`` and each staged one into place. If a rename fails, or a signal arrived
meanwhile, the renames done so far are undone in reverse order, so the clusters are replaced all
together or not at all; the signal is then delivered (the command line turns it into a one-line
message). Only after that commit point is ``.old-<pid>`` removed: a removal that fails is reported
(`Unremoved`, `generated-cleanup`), never silent litter; the new trees are in place then. The
staging and old directories are made and removed through `interrupt`, so no signal leaves them.

Nothing here follows a link: generated/ must be a real directory inside the repository and every
entry of it a real directory (`generated-symlink`), so neither the swap nor pruning can reach a
directory outside the repository. Leftovers of an interrupted run (``.staging-*``, ``.old-*``: a
SIGKILL, a power cut) are removed by the next `render` and reported by `check`
(`generated-leftover`).
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import stat
import sys
from collections.abc import Mapping
from pathlib import Path

from gputenancy.assemble import output
from gputenancy.common import interrupt
from gputenancy.common.findings import Finding, Origin, PipelineError, Severity

LEFTOVER_PREFIXES = (".staging-", ".old-")

DOCS = {
    "generated-symlink": """generated/ (or publish's --path) is a real directory of the repository, and
each cluster directory in it is a real directory: render, check, plan and publish never follow a
link there, so a pull request cannot make the swap or pruning delete or overwrite anything outside
the repository, or make plan read it.

Passes: generated/prod/ a directory.
Fails: generated -> /home/ci; generated/old-cluster -> /var/lib.
""",
    "generated-swap": """render and publish replace every changed cluster directory or none: when one
directory cannot be renamed, the renames already made are undone and the error names it.

Passes: generated/ writable.
Fails: generated/prod immutable (chattr +i) while lab and prod both change: neither is replaced.
""",
    "generated-cleanup": """A file the swap must remove (the previous tree of a cluster, a pruned cluster,
leftovers of an interrupted run) that cannot be removed is reported by name, never silent litter.
Leftovers that cannot be removed before writing are an error and nothing is written. When the
previous tree cannot be removed after the swap, the new tree is in place: render says so in a
warning and exits 0 (its job is done), `check` fails on the leftover (`generated-leftover`) until
it is removed by hand; publish, which must not commit beside litter, fails.

Passes: generated/ writable by the user running render.
Fails: generated/prod/clusterqueue/a.yaml immutable (chattr +i) when prod changes.
""",
    "generated-leftover": """generated/ holds only cluster directories: `.staging-*` and `.old-*` left by an
interrupted run are removed by the next render, and check fails while they are there (Argo CD
would otherwise see them).

Passes: generated/{lab,prod}.
Fails: generated/.staging-1234/ after the render was killed.
""",
}


class Unremoved(PipelineError):
    """The swap is done (`changed` are the new trees, in place), but the previous trees could not be
    removed: `findings` name what is left (`generated-cleanup`)."""

    def __init__(self, findings: list[Finding], changed: list[str]) -> None:
        super().__init__(findings)
        self.changed = changed

    def warnings(self) -> list[Finding]:
        """The findings as warnings that say the new tree is in place (for `render`, whose job is done)."""
        return [
            dataclasses.replace(
                f,
                severity=Severity.WARNING,
                message=f"the new tree is in place, but {f.message}; `check` fails until it is gone",
            )
            for f in self.findings
        ]


def _rel(path: Path, root: Path) -> str:
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return path.as_posix()


def guard(root: Path, parent: Path) -> list[Finding]:
    """Findings when `parent` (generated/) or an entry of it is a link, or it leaves `root`."""
    findings: list[Finding] = []
    try:
        parts = parent.relative_to(root).parts
    except ValueError:
        parts = ()
    here = root
    for part in parts:
        here = here / part
        if here.is_symlink():
            findings.append(
                Origin(_rel(here, root)).finding(
                    "generated-symlink",
                    f"{_rel(here, root)} is a symlink; it must be a directory of the repository (remove the link)",
                )
            )
            return findings
    if not os.path.lexists(parent):
        return findings
    if not parent.is_dir():
        findings.append(
            Origin(_rel(parent, root)).finding(
                "generated-symlink", f"{_rel(parent, root)} is not a directory"
            )
        )
        return findings
    with os.scandir(parent) as entries:
        for entry in sorted(entries, key=lambda e: e.name):
            if entry.is_symlink():
                rel = _rel(parent / entry.name, root)
                findings.append(
                    Origin(rel).finding(
                        "generated-symlink",
                        f"{rel} is a symlink; the pipeline never follows links in {_rel(parent, root)}/"
                        " (remove it)",
                    )
                )
    return findings


def confined_file(root: Path, rel: str) -> Finding | None:
    """A finding when the file root/rel (one the pipeline writes, e.g. .github/CODEOWNERS) or a
    directory on the way to it is a link, or the file is not a regular file: such a path is never
    read or written."""
    here = root
    for part in rel.split("/"):
        here = here / part
        shown = _rel(here, root)
        if here.is_symlink():
            return Origin(shown).finding(
                "generated-symlink",
                f"{shown} is a symlink; the pipeline reads and writes {rel} only as a real file",
            )
    if os.path.lexists(here) and not here.is_file():
        return Origin(rel).finding("generated-symlink", f"{rel} is not a regular file")
    return None


def leftovers(parent: Path) -> list[str]:
    """Names of ``.staging-*`` / ``.old-*`` entries in `parent`."""
    if not parent.is_dir() or parent.is_symlink():
        return []
    return sorted(n for n in os.listdir(parent) if n.startswith(LEFTOVER_PREFIXES))


def _remove(path: Path, root: Path) -> Finding | None:
    """Remove a file, link or directory tree without following links; a finding when it fails."""
    problems: list[str] = []

    def note(_func: object, failed: str, exc: BaseException) -> None:
        problems.append(f"{_rel(Path(failed), root)}: {getattr(exc, 'strerror', None) or exc}")

    try:
        if stat.S_ISDIR(os.lstat(path).st_mode):
            if sys.version_info >= (3, 12):
                shutil.rmtree(path, onexc=note)
            else:
                shutil.rmtree(path, onerror=lambda f, p, e: note(f, p, e[1]))
        else:
            path.unlink()
    except FileNotFoundError:
        return None
    except OSError as exc:
        problems.append(f"{_rel(path, root)}: {exc.strerror or exc}")
    if not problems and not os.path.lexists(path):
        return None
    shown = problems[0] if problems else "still there"
    if len(problems) > 1:
        shown += f"; {len(problems) - 1} more"
    return Origin(_rel(path, root)).finding(
        "generated-cleanup", f"cannot remove {_rel(path, root)} ({shown}); remove it by hand"
    )


def clean(root: Path, parent: Path) -> tuple[list[str], list[Finding]]:
    """Remove leftovers of interrupted runs; returns their names and the removals that failed."""
    names = leftovers(parent)
    failed = [f for f in (_remove(parent / n, root) for n in names) if f is not None]
    return names, failed


def prepare(root: Path, parent: Path) -> list[str]:
    """Before writing: refuse links (`guard`), remove leftovers of interrupted runs; returns their
    names. Raises PipelineError, nothing changed, for a link or a leftover that cannot be removed."""
    problems = guard(root, parent)
    if problems:
        raise PipelineError(problems)
    cleaned, failed = clean(root, parent)
    if failed:
        raise PipelineError(failed)
    return cleaned


def write_trees(
    root: Path, parent: Path, trees: Mapping[str, output.Tree], *, prune: bool = False
) -> list[str]:
    """Replace parent/<name> by each tree, all or none (module docstring); with `prune`, remove the
    cluster directories not in `trees`. Returns the names that changed (and were removed), plus
    nothing for leftovers, which are cleaned first. Raises PipelineError (nothing changed) for a
    link, or after the commit point for a removal that failed."""
    prepare(root, parent)
    changed = [n for n, t in trees.items() if output.read_tree(parent / n) != dict(t)]
    stale = (
        sorted(
            e.name
            for e in os.scandir(parent)
            if e.is_dir(follow_symlinks=False) and not e.name.startswith(".") and e.name not in trees
        )
        if prune and parent.is_dir()
        else []
    )
    if not changed and not stale:
        return []
    parent.mkdir(parents=True, exist_ok=True)
    with output.staged(parent, {n: trees[n] for n in changed}) as staged:
        done: list[tuple[Path, Path]] = []  # renames made, in order (source, destination)
        with interrupt.deferred():
            old = interrupt.mkdtemp(f".old-{os.getpid()}-", parent)
            try:
                for name in sorted([*changed, *stale]):
                    target = parent / name
                    if os.path.lexists(target):
                        os.rename(target, old / name)
                        done.append((target, old / name))
                    if name in staged:
                        os.rename(staged[name], target)
                        done.append((staged[name], target))
                interrupt.checkpoint("swapping")
                if interrupt.pending():
                    raise InterruptedError("signal received during the swap")
            except BaseException as exc:
                for source, destination in reversed(done):
                    os.rename(destination, source)
                interrupt.rmtree(old)
                if isinstance(exc, OSError) and not isinstance(exc, InterruptedError):
                    culprit = Path(exc.filename) if exc.filename else parent
                    raise PipelineError(
                        [
                            Origin(_rel(culprit, root)).finding(
                                "generated-swap",
                                f"cannot replace {_rel(culprit, root)}: {exc.strerror or exc};"
                                f" every cluster directory is as it was",
                            )
                        ]
                    ) from None
                raise
        interrupt.checkpoint("swapped")  # the commit point is behind: the new trees are in place
        with interrupt.deferred():
            problem = _remove(old, root)
            interrupt.forget(old)
    if problem is not None:
        raise Unremoved([problem], sorted([*changed, *stale]))
    return sorted([*changed, *stale])
