"""What the change starts from: the inputs (base/, overlays/, tenants/) at the base of the change.

The rendered trees say what Argo CD syncs, but not what the inputs said: a cluster's capacity is in no
rendered object, and a tenant the change does not touch may still reach more or less through its
cohort. `model_at` reads the model at a git ref, so the plan can show capacity, grants and reach
before and after. `local_base` decides what `plan` without `--against` compares with.
"""

from __future__ import annotations

import contextlib
import dataclasses
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from gputenancy.assemble import output
from gputenancy.caching.cache import Cache
from gputenancy.common.findings import PipelineError
from gputenancy.deliver import gitrepo
from gputenancy.inputs import fleet
from gputenancy.inputs.spec import Model, load_model

if TYPE_CHECKING:
    import git

INPUTS = ("base", "overlays", "tenants")
_SYMLINK = 0o120000


@dataclasses.dataclass(frozen=True)
class LocalBase:
    """What `plan` without --against compares with: `against` (None: generated/ of the work tree, else
    a git ref), the ref whose inputs are the model before (None: no git repository), and why."""

    against: str | None
    inputs_ref: str | None
    note: str


def local_base(root: Path) -> LocalBase:
    """generated/ of the work tree when it is committed (the inputs before are the last commit's);
    the last commit when generated/ holds uncommitted output, as a local `render` leaves it (comparing
    with what was just rendered would show no change)."""
    repo = gitrepo.open_repo_if_any(root)
    if repo is None:
        return LocalBase(None, None, "generated/ of the work tree (not a git repository: no inputs before)")
    with repo:
        if gitrepo.resolve(repo, "HEAD") is None:
            return LocalBase(None, None, "generated/ of the work tree (no commit yet: no inputs before)")
        dirty = gitrepo.dirty(repo, [root / output.GENERATED])
    if dirty:
        return LocalBase(
            "HEAD",
            "HEAD",
            f"the last commit (HEAD): generated/ holds uncommitted output ({len(dirty)} file(s)), "
            "so comparing with it would not show this change; pass --against to choose",
        )
    return LocalBase(None, "HEAD", "generated/ of the work tree, as committed at HEAD")


def model_at(root: Path, ref: str, cache: Cache | None = None) -> Model | None:
    """The model of the inputs at `ref` (None when root is not in a git repository, the ref does not
    exist or its inputs cannot be read at all). Findings in them do not matter here. With the run's
    `cache`, the files the change left alone are not parsed again (their path and bytes are the same)."""
    with _checkout(root, ref) as checkout:
        if checkout is None:
            return None
        repo, commit, tmp = checkout
        for sub in INPUTS:
            _export(commit, gitrepo.relative(repo, root, sub), tmp / sub)
        return _load(tmp, cache)


@contextlib.contextmanager
def _checkout(root: Path, ref: str) -> Iterator[tuple[git.Repo, git.Commit, Path] | None]:
    """The repository of root, the commit of `ref` and an empty temporary directory (None when root
    is not in a git repository or the ref does not exist)."""
    repo = gitrepo.open_repo_if_any(root)
    if repo is None:
        yield None
        return
    with repo, tempfile.TemporaryDirectory(prefix="gputenancy-base-") as tmp:
        commit = gitrepo.resolve(repo, ref)
        yield (repo, commit, Path(tmp)) if commit is not None else None


def _load(tmp: Path, cache: Cache | None) -> Model | None:
    try:
        return load_model(tmp, cache=cache)[0]
    except PipelineError:
        return None


def model_before(root: Path, ref: str, *, current: Model | None, cache: Cache | None) -> Model | None:
    """The model at `ref`: `current` (the work tree's model of every cluster) when no input file differs
    from `ref` (a plan with nothing changed reads nothing again); when some do, only they are read at
    `ref` (`_model_changed`); else `model_at`."""
    if current is not None:
        from gputenancy.deliver import authorview

        touched = authorview.touched_files(root, ref, INPUTS)
        if touched is not None and not any(path.split("/", 1)[0] in INPUTS for path in touched):
            return current
        if touched is not None and not fleet.managers(current):
            made = _model_changed(root, ref, current, touched)
            if made is not None:
                return made
    return model_at(root, ref, cache)


def _model_changed(root: Path, ref: str, current: Model, touched: set[str]) -> Model | None:
    """The model at `ref` from base/ and overlays/ at `ref` (a few files), the tenant files the change
    touches as they are at `ref`, and the work tree's records of the tenant files it leaves alone
    (their bytes are the same, and a tenant's record depends on its file alone). The models here have
    no MultiKueue manager, so their records are the files' own (`fleet.derive` changes nothing); None
    when that cannot be done (a manager at `ref`; `model_at` then reads everything)."""
    with _checkout(root, ref) as checkout:
        if checkout is None:
            return None
        repo, commit, tmp = checkout
        for sub in ("base", "overlays"):
            _export(commit, gitrepo.relative(repo, root, sub), tmp / sub)
        where = gitrepo.relative(repo, root, "tenants")
        tree = _tree(commit, where)
        names = [b.name for b in tree.blobs if b.mode != _SYMLINK] if tree is not None else []
        listed = sorted(n for n in names if not n.startswith(".") and n.endswith((".yaml", ".yml")))
        changed = {n for n in listed if f"tenants/{n}" in touched}
        _export(commit, where, tmp / "tenants", only=changed)
        # a few files, parsed without the run's cache: its pack of input files keeps only the
        # entries of the last load that used it, which must stay the work tree's
        read = _load(tmp, None)
        if read is None or fleet.managers(read):
            return None
        mine = {t.path: t for t in read.tenants}
        work = {t.path: t for t in current.tenants}
        tenants = [
            found
            for n in listed
            if (found := (mine if n in changed else work).get(f"tenants/{n}")) is not None
        ]
        return fleet.derive(Model(tmp, read.platform, read.clusters, tuple(tenants)))


def _tree(commit: git.Commit, directory: str) -> git.Tree | None:
    import git

    try:
        tree = commit.tree / directory
    except KeyError:
        return None
    return tree if isinstance(tree, git.Tree) else None


def _export(commit: git.Commit, directory: str, target: Path, only: set[str] | None = None) -> None:
    """Write the files under `directory` at `commit` to `target` (symlinks left out); with `only`,
    just those of the files directly in it."""
    tree = _tree(commit, directory)
    if tree is None:
        return
    if only is not None:
        for blob in tree.blobs:
            if blob.name in only and blob.mode != _SYMLINK:
                target.mkdir(parents=True, exist_ok=True)
                (target / blob.name).write_bytes(blob.data_stream.read())
        return
    import git

    strip = len(str(tree.path)) + 1
    for item in tree.traverse():
        if not isinstance(item, git.Blob) or item.mode == _SYMLINK:
            continue
        path = target / str(item.path)[strip:]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(item.data_stream.read())
