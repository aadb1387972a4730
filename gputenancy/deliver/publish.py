"""publish: render -> plan -> write the Argo-synced directory -> commit (and push) with GitPython.

Two targets:

- the same repository (default): `<path>/` (default `generated/`) of the working tree is replaced
  atomically and committed on the current branch; only `<path>/<cluster>` paths go into the commit.
- a deploy repository (`--repo URL|PATH`): cloned into a temporary directory, `<path>/<cluster>/`
  written there, committed on `--branch` (created as a root commit when missing) and pushed. A lost
  push race is retried (fetch, re-read, re-plan, re-write) with bounded jittered backoff; nothing is
  ever force-pushed.

Only what is merged is published: HEAD must be on the source branch (`source_branch`), the branch
Argo CD's deploy follows, unless `--force`, which the output then says. The deploy branch never goes
backwards: the `Source-Commit` trailer of its newest commit is compared
with the source commit being published; a newer source refuses the publish as stale.
"""

from __future__ import annotations

import dataclasses
import os
import random
import re
import shutil
import time
from collections.abc import Callable
from pathlib import Path, PurePosixPath
from typing import Any

import git

from gputenancy import engine
from gputenancy.assemble import output, swap
from gputenancy.common import interrupt, report
from gputenancy.common.findings import PipelineError
from gputenancy.deliver import gitrepo, plan, planview

SOURCE_DIRS = ("tenants", "base", "overlays")
TRIES = 5
BACKOFF = 0.5  # seconds, doubled per retry, jittered, capped at BACKOFF_CAP
BACKOFF_CAP = 8.0


@dataclasses.dataclass(frozen=True)
class Outcome:
    """What publish did. status: committed | pushed | unchanged | superseded | dry-run."""

    status: str
    message: str
    commit: str = ""
    plan: plan.Plan | None = None
    target: str = ""
    note: str = ""  # what was let through: a publish from off the source branch (--force, --dry-run)


def identity() -> git.Actor:
    """The committer: gputenancy, or GPUTENANCY_GIT_NAME / GPUTENANCY_GIT_EMAIL; never the user's config."""
    return git.Actor(
        os.environ.get("GPUTENANCY_GIT_NAME", gitrepo.NAME),
        os.environ.get("GPUTENANCY_GIT_EMAIL", gitrepo.EMAIL),
    )


def title(p: plan.Plan) -> str:
    """`gputenancy: prod: 2 changed, 1 added (vision, nlp)`"""
    parts = []
    for c in p.clusters:
        if not c.changed:
            continue
        counts = ", ".join(f"{c.count(a)} {a}" for a in ("changed", "added", "removed") if c.count(a))
        tenants = ", ".join(c.tenants[:4]) + (f" and {len(c.tenants) - 4} more" if len(c.tenants) > 4 else "")
        parts.append(f"{c.name}: {counts or f'{len(c.files)} files'}" + (f" ({tenants})" if tenants else ""))
    return "gputenancy: " + "; ".join(parts)


def message(p: plan.Plan, *, source_url: str, source_commit: str, first_line: str | None = None) -> str:
    body = planview.format_text(p, max_lines=200).rstrip()
    trailers = f"Source-Repository: {source_url}\nSource-Commit: {source_commit}"
    return f"{first_line or title(p)}\n\n{body}\n\n{trailers}\n"


def _check_path(path: str) -> str:
    pure = PurePosixPath(path)
    if pure.is_absolute() or not pure.parts or ".." in pure.parts or pure.parts[0] in (".git", "."):
        raise gitrepo.fail(
            f"--path {path!r} must be a relative directory inside the repository", rule="publish"
        )
    return pure.as_posix()


def _trees(result: engine.Result) -> dict[str, dict[str, bytes]]:
    return {name: dict(c.tree) for name, c in result.clusters.items()}


def publish(
    root: Path,
    *,
    cluster: str | None = None,
    schemas: Path | None = None,
    repo: str | None = None,
    branch: str | None = None,
    path: str = output.GENERATED,
    dry_run: bool = False,
    allow_delete: bool = False,
    message_title: str | None = None,
    committer: git.Actor | None = None,
    tries: int = TRIES,
    backoff: float = BACKOFF,
    force: bool = False,
) -> Outcome:
    """Publish the render of `root` (its HEAD commit) to the Argo-synced directory; from off the source
    branch only with `force` (or as a dry run), said in the outcome's note."""
    path = _check_path(path)
    with gitrepo.open_repo(root) as source:
        changed = [] if dry_run else gitrepo.dirty(source, [root / d for d in SOURCE_DIRS])
        if changed:
            listed = "; ".join(changed[:5]) + (f" and {len(changed) - 5} more" if len(changed) > 5 else "")
            raise gitrepo.fail(
                f"uncommitted changes under {', '.join(SOURCE_DIRS)} ({listed}): commit them first, so "
                "that Source-Commit names what was rendered (or use --dry-run)",
                path=str(root),
                rule="publish-dirty",
            )
        head = gitrepo.resolve(source, "HEAD")
        if head is None:
            raise gitrepo.fail(
                "the repository has no commit yet: commit tenants/, base/ and overlays/ first "
                "(`git add tenants base overlays && git commit`)",
                path=str(root),
                rule="publish",
            )
        result = engine.run(root, cluster=cluster, schemas=schemas)
        if result.failed:
            raise PipelineError(result.findings)
        if repo is None and branch is not None:
            raise gitrepo.fail("--branch needs --repo (this repository commits on its current branch)")
        note = _off_source_branch(source, result, same_repo=repo is None, force=force, dry_run=dry_run)
        first_line = message_title
        job = _Job(
            root, source, head, result, path, cluster, allow_delete, first_line, committer or identity()
        )
        if repo is None:
            outcome = job.to_same_repo(dry_run=dry_run)
        else:
            url = repo if "://" in repo or "@" in repo.split("/")[0] else str(Path(repo).resolve())
            outcome = job.to_deploy_repo(url, branch, dry_run=dry_run, tries=tries, backoff=backoff)
        return dataclasses.replace(outcome, note=note)


def source_branch(source: git.Repo, result: engine.Result, *, same_repo: bool) -> str:
    """The branch publish deploys from. Into this repository: the branch Argo CD syncs
    (`argocd.targetRevision` of base/platform.yaml) when this repository has it, since generated/ is
    committed on the current branch; otherwise (and for a deploy repository) the repository's default
    branch: `origin/HEAD`, else `main` (or `master` when only that exists)."""
    settings = result.model.platform.argocd
    if same_repo and settings is not None and settings.target_revision != "HEAD":
        name = settings.target_revision
        if any(gitrepo.resolve(source, f"{ref}/{name}") for ref in ("refs/heads", "refs/remotes/origin")):
            return name
    with gitrepo.errors("reading the default branch"):
        ref = source.git.symbolic_ref("-q", "refs/remotes/origin/HEAD", with_exceptions=False)
    if ref:
        return str(ref).removeprefix("refs/remotes/origin/")
    known = [b for b in ("main", "master") if gitrepo.resolve(source, f"refs/heads/{b}") is not None]
    return known[0] if known else "main"


def _off_source_branch(
    source: git.Repo, result: engine.Result, *, same_repo: bool, force: bool, dry_run: bool
) -> str:
    """'' when HEAD is on the source branch (local or origin's); else a refusal, or with `force` or
    `dry_run` the note that says what is let through."""
    wanted = source_branch(source, result, same_repo=same_repo)
    head = source.head.commit.hexsha
    for ref in (f"refs/heads/{wanted}", f"refs/remotes/origin/{wanted}"):
        if gitrepo.resolve(source, ref) is not None and gitrepo.descends(source, ref, head):
            return ""
    here = "HEAD" if source.head.is_detached else source.active_branch.name
    if force:
        return f"--force: published from {here}, not merged into {wanted}"
    why = (
        f"{here} ({head[:12]}) is not merged into {wanted}, the branch publish deploys from: Argo CD "
        "would run what nobody merged"
    )
    if dry_run:
        return f"{why}; without --dry-run this publish would be refused (--force publishes anyway)"
    raise gitrepo.fail(
        f"{why}. Merge it first and publish from {wanted}, or publish anyway with --force",
        path=str(source.working_tree_dir),
        rule="publish-branch",
    )


@dataclasses.dataclass(frozen=True)
class _Job:
    """One publish: the source and its render; plans and commits against a target."""

    root: Path
    source: git.Repo
    head: git.Commit
    result: engine.Result
    path: str
    cluster: str | None
    allow_delete: bool
    first_line: str | None
    actor: git.Actor

    def plan_against(self, against: dict[str, dict[str, bytes]], label: str) -> plan.Plan:
        p = plan.build(
            self.result, against, label=label, cluster=self.cluster, allow_delete=self.allow_delete
        )
        if p.failed:
            raise PipelineError(p.findings)
        return p

    def commit_message(self, p: plan.Plan) -> str:
        url, sha = gitrepo.source_url(self.source), self.head.hexsha
        return message(p, source_url=url, source_commit=sha, first_line=self.first_line)

    def commit(
        self, repo: git.Repo, branch: str, parent: git.Commit | None, prefix: str, p: plan.Plan
    ) -> git.Commit | None:
        """Write <path>/<cluster>/ atomically, then commit the clusters that changed."""
        work_tree = Path(str(repo.working_tree_dir))
        swap.write_trees(work_tree, work_tree / prefix, _trees(self.result), prune=self.cluster is None)
        pathspecs = [f"{prefix}/{c.name}" for c in p.clusters if c.changed]
        return gitrepo.commit_paths(
            repo,
            branch=branch,
            parent=parent,
            pathspecs=pathspecs,
            message=self.commit_message(p),
            identity=self.actor,
        )

    def to_same_repo(self, *, dry_run: bool) -> Outcome:
        if self.source.head.is_detached:
            raise gitrepo.fail(
                "HEAD is detached: check out the branch to commit on (`git switch <branch>`), or publish "
                "to a deploy repository (--repo)",
                path=str(self.root),
                rule="publish",
            )
        branch = self.source.active_branch.name
        prefix = gitrepo.relative(self.source, self.root, self.path)
        p = self.plan_against(gitrepo.read_trees_at(self.head, prefix), f"HEAD:{prefix}")
        where = f"{branch} of {self.source.working_tree_dir}"
        if not p.changed or dry_run:
            status, text = (
                ("dry-run", self.commit_message(p))
                if p.changed
                else ("unchanged", f"{prefix}/ at HEAD is up to date")
            )
            return Outcome(status, text, plan=p, target=where)
        made = self.commit(self.source, branch, self.head, prefix, p)
        if made is None:
            return Outcome("unchanged", f"{prefix}/ at HEAD is up to date", plan=p, target=where)
        with gitrepo.errors("updating the index for the new commit"):  # the user's index follows HEAD there
            self.source.git.reset(
                "-q", made.hexsha, "--", *(f"{prefix}/{c.name}" for c in p.clusters if c.changed)
            )
        return Outcome("committed", str(made.message), made.hexsha, p, where)

    def to_deploy_repo(
        self, url: str, branch: str | None, *, dry_run: bool, tries: int, backoff: float
    ) -> Outcome:
        jitter = random.SystemRandom()
        with interrupt.temporary_directory("gputenancy-publish-") as tmp:
            with gitrepo.errors(f"cloning {url}"):
                clone = git.Repo.clone_from(url, tmp / "deploy", no_checkout=True)
            interrupt.checkpoint("cloned")
            with clone:
                branch = branch or _default_branch(clone)
                for attempt in range(tries):
                    if attempt:
                        delay = min(BACKOFF_CAP, backoff * 2 ** (attempt - 1))
                        time.sleep(jitter.uniform(delay / 2, delay))
                        with gitrepo.errors(f"fetching {url}"):
                            clone.remotes.origin.fetch(prune=True)
                    outcome = self._attempt(clone, url, branch, first=attempt == 0, dry_run=dry_run)
                    if outcome is not None:
                        return dataclasses.replace(outcome, target=f"{branch} of {url}")
        raise gitrepo.fail(
            f"gave up after {tries} tries: {branch} of {url} kept moving while publishing; "
            "nothing was force-pushed",
            path=url,
            rule="publish-push",
        )

    def _attempt(
        self, clone: git.Repo, url: str, branch: str, *, first: bool, dry_run: bool
    ) -> Outcome | None:
        """One read-plan-write-commit-push round; None when the push lost a race (retry)."""
        tip = gitrepo.resolve(clone, f"refs/remotes/origin/{branch}")
        with gitrepo.errors(f"checking out {branch}"):
            if tip is not None:
                clone.git.checkout("--force", "-B", branch, tip.hexsha)
                clone.git.clean("-ffdq", "--", self.path)
            else:  # a new branch: a root commit holding only <path>/
                shutil.rmtree(Path(str(clone.working_tree_dir)) / self.path, ignore_errors=True)
                if gitrepo.resolve(clone, f"refs/heads/{branch}") is not None:
                    clone.git.update_ref("-d", f"refs/heads/{branch}")
        theirs = gitrepo.trailer(str(tip.message), "Source-Commit") if tip is not None else None
        if tip is not None and theirs and theirs != self.head.hexsha:
            newer = gitrepo.descends(self.source, theirs, self.head.hexsha)
            if newer is None:
                raise gitrepo.fail(
                    f"{branch} of {url} was last published from source commit {theirs}, which this "
                    "repository does not have even after fetching: cannot tell whether it is newer; fetch "
                    f"it (`git fetch origin {theirs}`) and publish again",
                    path=str(self.root),
                    rule="publish-stale",
                )
            if newer and not first:  # a newer source was published while we retried: nothing to do
                text = f"superseded: {branch} was published from newer source commit {theirs} meanwhile"
                return Outcome("superseded", text, tip.hexsha)
            if newer:
                raise gitrepo.fail(
                    f"{branch} of {url} was already published from source commit {theirs}, which is newer "
                    f"than this checkout's HEAD {self.head.hexsha}: the deploy branch never goes backwards "
                    "(nothing pushed); update this checkout (`git pull`) and publish again",
                    path=str(self.root),
                    rule="publish-stale",
                )
        against = gitrepo.read_trees_at(tip, self.path) if tip is not None else {}
        p = self.plan_against(against, f"{branch}:{self.path} ({tip.hexsha[:12] if tip else 'new branch'})")
        if not p.changed or dry_run:
            if p.changed:
                return Outcome("dry-run", self.commit_message(p), plan=p)
            note = " (already published from this source commit)" if theirs == self.head.hexsha else ""
            return Outcome("unchanged", f"{branch}:{self.path} is up to date{note}", plan=p)
        made = self.commit(clone, branch, tip, self.path, p)
        if made is None:
            return Outcome("unchanged", f"{branch}:{self.path} is up to date", plan=p)
        try:  # a plain push, never forced: a lost race is a rejection, not an overwrite
            pushed = list(clone.remotes.origin.push(f"refs/heads/{branch}:refs/heads/{branch}"))
            failed = [i for i in pushed if i.flags & (i.ERROR | i.REJECTED | i.REMOTE_REJECTED)]
            why = "; ".join(i.summary.strip() for i in failed) if pushed else "no ref updated"
        except git.GitCommandError as exc:
            why = str(exc.stderr).strip() or str(exc)
        if not why:
            return Outcome("pushed", str(made.message), made.hexsha, p)
        with gitrepo.errors(f"fetching {url}"):
            clone.remotes.origin.fetch(prune=True)
        now = gitrepo.resolve(clone, f"refs/remotes/origin/{branch}")
        if (now.hexsha if now else None) == (tip.hexsha if tip else None):
            raise gitrepo.fail(f"push to {branch} was rejected: {why}", path=url, rule="publish-push")
        return None  # the branch moved: someone else published meanwhile


def _default_branch(clone: git.Repo) -> str:
    """The remote's HEAD branch, or `main` for an empty repository."""
    with gitrepo.errors("reading the remote's default branch"):
        out = str(clone.git.ls_remote("--symref", "origin", "HEAD"))
    found = re.search(r"^ref: refs/heads/(\S+)\s+HEAD$", out, re.M)
    if found and gitrepo.resolve(clone, f"refs/remotes/origin/{found.group(1)}") is not None:
        return found.group(1)
    return "main"


def command(
    root: Path,
    *,
    cluster: str | None,
    schemas: Path | None,
    repo: str | None,
    branch: str | None,
    path: str,
    dry_run: bool,
    allow_delete: bool,
    message_title: str | None,
    emit: Callable[[str], Any],
    emit_notes: Callable[[str], Any] | None = None,
    force: bool = False,
) -> int:
    """`pipeline.py publish`: 0 published or nothing to do, 1 errors or refused. Notes go to
    `emit_notes` (stderr), the rest to `emit` (stdout)."""
    outcome = publish(
        root,
        cluster=cluster,
        schemas=schemas,
        repo=repo,
        branch=branch,
        path=path,
        dry_run=dry_run,
        allow_delete=allow_delete,
        message_title=message_title,
        force=force,
    )
    if outcome.note:
        emit(f"note: {outcome.note}\n")
    if outcome.plan is not None:
        emit(report.format_findings(list(outcome.plan.findings), report.default_format()))
        (emit_notes or emit)("".join(f"note: {n}\n" for n in outcome.plan.notes))
    if outcome.status == "dry-run":
        emit(f"dry run: would commit to {outcome.target}:\n\n{outcome.message}")
    elif outcome.status in ("committed", "pushed"):
        emit(
            f"{outcome.status} {outcome.commit[:12]} to {outcome.target}: {outcome.message.splitlines()[0]}\n"
        )
        if outcome.plan is not None:
            emit(planview.format_text(outcome.plan, max_lines=200))
    else:
        emit(f"nothing to publish to {outcome.target}: {outcome.message}\n")
    return 0
