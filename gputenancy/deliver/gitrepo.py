"""Git through GitPython: trees at a revision, the source commit, trailers, commits built from a
temporary index (the user's index and the rest of the tree are never touched).

GitPython (40-50 ms to import) is imported by the functions that use it: `plan` outside a git
repository finds that out without it (`open_repo_if_any`)."""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Iterator, Sequence
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

from gputenancy.common import interrupt
from gputenancy.common.findings import Finding, Origin, PipelineError, Severity

if TYPE_CHECKING:
    import git

NAME = "gputenancy"
EMAIL = "gputenancy@users.noreply.github.com"
_SYMLINK = 0o120000
_ZERO = "0" * 40


def fail(message: str, *, path: str = "git", rule: str = "git") -> PipelineError:
    return PipelineError([Finding(path, 0, 0, Severity.ERROR, rule, message)])


@contextlib.contextmanager
def errors(what: str) -> Iterator[None]:
    """Turn GitPython's exceptions into a PipelineError that says what was being done."""
    import git

    try:
        yield
    except git.GitCommandError as exc:
        detail = (exc.stderr or exc.stdout or "").strip().removeprefix("stderr:").strip(" '\n")
        raise fail(
            f"{what}: `git {' '.join(map(str, exc.command[1:]))}` exited {exc.status}: {detail}"
        ) from None
    except (git.InvalidGitRepositoryError, git.NoSuchPathError) as exc:
        raise fail(f"{what}: not a git repository: {exc}") from None
    except (git.BadName, ValueError) as exc:
        raise fail(f"{what}: {exc}") from None


def open_repo(root: Path) -> git.Repo:
    import git

    with errors(f"{root} is not inside a git repository"):
        return git.Repo(root, search_parent_directories=True)


def open_repo_if_any(root: Path) -> git.Repo | None:
    """root's repository, or None when root is not inside one (`outside_repositories` first)."""
    if outside_repositories(root):
        return None
    try:
        return open_repo(root)
    except PipelineError:
        return None


def outside_repositories(root: Path) -> bool:
    """True when GitPython would surely find no repository holding root: no `.git` and no `HEAD` (a
    bare repository's) at root or above it (the directories GitPython looks in), found without
    importing GitPython. False: ask GitPython."""
    path = os.fspath(root)
    if "$" in path or path.startswith("~"):  # GitPython expands these
        return False
    current = os.path.abspath(path)
    if not os.path.isdir(current):
        return False
    while True:
        if os.path.lexists(os.path.join(current, ".git")) or os.path.lexists(os.path.join(current, "HEAD")):
            return False
        current, tail = os.path.split(current)
        if not tail:
            return True


def relative(repo: git.Repo, root: Path, *parts: str) -> str:
    """The repo-relative POSIX path of root/parts (root may be a subdirectory of the repository)."""
    top = Path(str(repo.working_tree_dir)).resolve()
    return PurePosixPath(root.resolve().relative_to(top).as_posix(), *parts).as_posix().removeprefix("./")


def resolve(repo: git.Repo, rev: str) -> git.Commit | None:
    import git

    try:
        return repo.commit(rev)
    except (git.BadName, ValueError, git.GitCommandError):
        return None


def read_trees_at(commit: git.Commit, directory: str) -> dict[str, dict[str, bytes]]:
    """{cluster: {path under directory/<cluster>/: bytes}} from a commit; {} when the directory is absent."""
    import git

    try:
        tree = commit.tree / directory if directory not in ("", ".") else commit.tree
    except KeyError:
        return {}
    if not isinstance(tree, git.Tree):  # a symlink or a file committed in place of the directory
        raise PipelineError(
            [
                Origin(directory).finding(
                    "generated-symlink", f"{directory} is not a directory at {commit.hexsha[:12]}"
                )
            ]
        )
    out: dict[str, dict[str, bytes]] = {}
    strip = len(str(tree.path)) + 1 if tree.path else 0
    for item in tree.traverse():
        if not isinstance(item, git.Blob) or item.mode == _SYMLINK:
            continue
        cluster, _, rest = str(item.path)[strip:].partition("/")
        if rest and not cluster.startswith("."):
            out.setdefault(cluster, {})[rest] = item.data_stream.read()
    return {c: dict(sorted(t.items())) for c, t in sorted(out.items())}


def trees_at_ref(root: Path, ref: str, directory: str) -> tuple[dict[str, dict[str, bytes]], str]:
    """The <cluster>/ trees under root/directory at a git ref of root's repository, and a label."""
    repo = open_repo_if_any(root)
    if repo is None:
        raise fail(
            f"--against {ref!r} is neither a directory nor a git ref: {root} is not in a git repository",
            rule="plan-against",
        )
    with repo:
        commit = resolve(repo, ref)
        if commit is None:
            raise fail(
                f"--against {ref!r} is neither a directory nor a git ref of {repo.working_tree_dir}",
                rule="plan-against",
            )
        sub = relative(repo, root, directory)
        return read_trees_at(commit, sub), f"{ref}:{sub} ({commit.hexsha[:12]})"


def dirty(repo: git.Repo, paths: Sequence[Path]) -> list[str]:
    """Uncommitted (staged, unstaged or untracked) files under paths, as `git status --porcelain` lines."""
    with errors("reading the working tree status"):
        out = repo.git.status("--porcelain", "--untracked-files=all", "--", *map(str, paths))
    return [line for line in out.splitlines() if line.strip()]


def public_url(url: str) -> str:
    """A remote URL without credentials (https://user:token@host/x -> https://host/x)."""
    return re.sub(r"^([a-z][a-z0-9+.-]*://)[^/@]+@", r"\1", url)


def source_url(repo: git.Repo) -> str:
    import git

    for remote in repo.remotes:
        if remote.name == "origin":
            with contextlib.suppress(git.GitCommandError, StopIteration):
                return public_url(next(iter(remote.urls)))
    return str(repo.working_tree_dir)


def trailer(message: str, key: str) -> str | None:
    """The last `Key: value` trailer of a commit message."""
    found = re.findall(rf"^{re.escape(key)}:[ \t]*(\S+)[ \t]*$", message, re.M)
    return str(found[-1]) if found else None


def descends(repo: git.Repo, descendant: str, ancestor: str) -> bool | None:
    """Whether `descendant` has `ancestor` in its history; None when `descendant` is unknown here even
    after fetching the repository's remotes."""
    import git

    if resolve(repo, descendant) is None:
        for remote in repo.remotes:
            with contextlib.suppress(git.GitCommandError):
                remote.fetch()
        if resolve(repo, descendant) is None:
            return None
    with errors("ordering source commits"):
        return bool(repo.is_ancestor(repo.commit(ancestor), repo.commit(descendant)))


def commit_paths(
    repo: git.Repo,
    *,
    branch: str,
    parent: git.Commit | None,
    pathspecs: Sequence[str],
    message: str,
    identity: git.Actor,
) -> git.Commit | None:
    """Commit the working-tree state of `pathspecs` on top of `parent` (None: a root commit) and move
    refs/heads/<branch> from `parent` to it (compare-and-swap). Built in a temporary index, so the
    user's index and every other path keep their committed state. None when nothing differs."""
    import git

    env = {"GIT_COMMITTER_NAME": identity.name or NAME, "GIT_COMMITTER_EMAIL": identity.email or EMAIL}
    with interrupt.temporary_directory("gputenancy-index-") as tmp, errors(f"committing to {branch}"):
        with repo.git.custom_environment(GIT_INDEX_FILE=str(tmp / "index"), **env):
            repo.git.read_tree(parent.hexsha if parent is not None else "--empty")
            repo.git.rm("-r", "-q", "--cached", "--ignore-unmatch", "--", *pathspecs)
            present = [p for p in pathspecs if (Path(str(repo.working_tree_dir)) / p).exists()]
            if present:
                repo.git.add("-f", "-A", "--", *present)
            tree_sha = repo.git.write_tree()
        if parent is not None and parent.tree.hexsha == tree_sha:
            return None
        commit = git.Commit.create_from_tree(
            repo,
            repo.tree(tree_sha),
            message,
            parent_commits=[parent] if parent is not None else [],
            head=False,
            author=identity,
            committer=identity,
        )
        with repo.git.custom_environment(**env):
            repo.git.update_ref(
                "-m",
                f"{NAME}: publish",
                f"refs/heads/{branch}",
                commit.hexsha,
                parent.hexsha if parent else _ZERO,
            )
    return commit
