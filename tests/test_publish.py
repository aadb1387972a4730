"""publish with real git: the same repository, a deploy repository behind a bare remote, lost push
races, stale sources, atomic writes and safe tenant removal."""

from __future__ import annotations

import stat
import threading
from pathlib import Path

import git
import pytest
import trees

from gputenancy import engine
from gputenancy.assemble import output
from gputenancy.cli.app import main
from gputenancy.deliver import gitrepo, publish

VISION_8 = "gpu.nvidia.com: {nominal: 8, borrowingLimit: 4, lendingLimit: 4}"
VISION_6 = "gpu.nvidia.com: {nominal: 6, borrowingLimit: 4, lendingLimit: 4}"
BOT = ("gputenancy", "gputenancy@users.noreply.github.com")


def replace(root: Path, rel: str, old: str, new: str) -> None:
    path = root / rel
    assert old in path.read_text()
    path.write_text(path.read_text().replace(old, new, 1))


def identify(repo: git.Repo) -> None:
    with repo.config_writer() as cfg:
        cfg.set_value("user", "name", "Test Person").set_value("user", "email", "person@example.com")


def source(tmp_path: Path, message: str = "example") -> Path:
    """The example repository content, committed on main with a pinned test identity."""
    root = trees.example(tmp_path)
    with git.Repo.init(root, initial_branch="main") as repo:
        identify(repo)
        repo.git.add("-A")
        repo.git.commit("-q", "-m", message)
    return root


def commit(root: Path, message: str) -> str:
    with git.Repo(root) as repo:
        repo.git.add("-A", "--", "tenants", "base", "overlays")
        repo.git.commit("-q", "-m", message)
        return repo.head.commit.hexsha


def head(root: Path) -> str:
    with git.Repo(root) as repo:
        return repo.head.commit.hexsha


def bare(tmp_path: Path, name: str = "deploy.git") -> Path:
    with git.Repo.init(tmp_path / name, bare=True, initial_branch="main"):
        pass
    return tmp_path / name


def tip(remote: Path, branch: str = "main") -> tuple[str, str, dict[str, dict[str, bytes]], int]:
    """(sha, message, trees under generated/, number of commits) of a branch."""
    with git.Repo(remote) as repo:
        c = repo.commit(branch)
        return (
            c.hexsha,
            str(c.message),
            gitrepo.read_trees_at(c, "generated"),
            len(list(repo.iter_commits(branch))),
        )


def rendered(root: Path) -> dict[str, dict[str, bytes]]:
    return {name: dict(c.tree) for name, c in engine.run(root).clusters.items()}


def run(root: Path, *args: str) -> int:
    return main(["--root", str(root), "publish", *args])


# ------------------------------------------------------------------------------ the same repository


def test_same_repo_commits_only_generated(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = source(tmp_path)
    replace(root, "tenants/vision.yaml", VISION_8, VISION_6)
    src = commit(root, "vision: 8 -> 6 H100")
    (root / "notes.md").write_text("staged, not ours\n")
    with git.Repo(root) as repo:
        repo.git.add("notes.md")
    assert run(root) == 0
    assert "committed" in capsys.readouterr().out
    with git.Repo(root) as repo:
        made = repo.head.commit
        assert [p.hexsha for p in made.parents] == [src]
        assert (made.author.name, made.author.email) == BOT and (
            made.committer.name,
            made.committer.email,
        ) == BOT
        assert list(made.stats.files) == ["generated/prod/clusterqueue/vision.yaml"]
        lines = str(made.message).splitlines()
        assert lines[0] == "gputenancy: prod: 1 changed (vision)" and lines[1] == ""
        assert "prod ClusterQueue vision: nvidia.com/gpu nominalQuota on flavor h100: 8 → 6" in made.message
        assert lines[-2:] == [f"Source-Repository: {root}", f"Source-Commit: {src}"]
        assert repo.git.status("--porcelain").splitlines() == ["A  notes.md"]  # the user's index is kept
    assert output.read_tree(root / "generated/prod") == rendered(root)["prod"]
    assert run(root) == 0  # idempotent: nothing changed, no commit
    assert "nothing to publish" in capsys.readouterr().out
    assert head(root) == made.hexsha


def test_uncommitted_inputs_are_refused_unless_dry_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = source(tmp_path)
    before, files = head(root), output.read_tree(root / "generated")
    replace(root, "tenants/vision.yaml", VISION_8, VISION_6)
    assert run(root) == 1
    out = capsys.readouterr().out
    assert "uncommitted changes under tenants, base, overlays" in out and "tenants/vision.yaml" in out
    assert run(root, "--dry-run") == 0
    out = capsys.readouterr().out
    assert "dry run: would commit to main of" in out and "gputenancy: prod: 1 changed (vision)" in out
    assert f"Source-Commit: {before}" in out
    assert head(root) == before and output.read_tree(root / "generated") == files


def test_interrupted_write_leaves_the_directory_as_it_was(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = source(tmp_path)
    replace(root, "tenants/vision.yaml", VISION_8, VISION_6)
    commit(root, "vision: 8 -> 6 H100")
    before, files = head(root), output.read_tree(root / "generated")
    real_fill = output._fill

    def failing_fill(directory: Path, tree: dict[str, bytes]) -> None:
        real_fill(directory, dict(list(tree.items())[:3]))
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(output, "_fill", failing_fill)
    assert run(root) == 1
    assert output.read_tree(root / "generated") == files
    assert not [p for p in (root / "generated").iterdir() if p.name.startswith(".")]
    assert head(root) == before


def test_tenant_removal_refused_until_allowed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = source(tmp_path)
    (root / "tenants/speech.yaml").unlink()
    before = commit(root, "speech leaves")
    assert run(root) == 1
    assert "tenant 'speech'" in capsys.readouterr().out and head(root) == before
    assert run(root, "--allow-delete") == 0
    assert not (root / "generated/prod/clusterqueue/speech.yaml").exists()
    with git.Repo(root) as repo:
        assert "generated/prod/clusterqueue/speech.yaml" in repo.head.commit.stats.files
        assert repo.head.commit.message.startswith("gputenancy: prod: 5 removed (speech)")


def test_tenant_removal_after_drain(tmp_path: Path) -> None:
    root = source(tmp_path)
    replace(root, "tenants/speech.yaml", "cohort: research", "state: draining\ncohort: research")
    commit(root, "drain speech")
    assert run(root) == 0
    assert "stopPolicy: HoldAndDrain" in (root / "generated/prod/clusterqueue/speech.yaml").read_text()
    (root / "tenants/speech.yaml").unlink()
    commit(root, "speech leaves")
    assert run(root) == 0
    assert not (root / "generated/prod/localqueue/speech").exists()


# ------------------------------------------------------------------------------- a deploy repository


def test_deploy_branch_created_then_idempotent(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root, remote = source(tmp_path), bare(tmp_path)
    src = head(root)
    assert run(root, "--repo", str(remote), "--branch", "env/all") == 0
    sha, message, published, count = tip(remote, "env/all")
    assert count == 1 and published == rendered(root)
    counts = {name: len(tree) for name, tree in published.items()}
    lab, prod = f"lab: {counts['lab']} added (sandbox)", f"prod: {counts['prod']} added (nlp, speech, vision)"
    title, blank, _ = message.split("\n", 2)
    assert title.startswith("gputenancy: ") and blank == ""
    assert f"; {lab}; {prod}" in title or f": {lab}; {prod}" in title
    assert message.endswith(f"Source-Repository: {root}\nSource-Commit: {src}\n")
    with git.Repo(remote) as repo:
        files = {str(b.path) for b in repo.commit("env/all").tree.traverse() if isinstance(b, git.Blob)}
        assert all(f.startswith("generated/") for f in files)
        c = repo.commit("env/all")
        assert (c.author.name, c.committer.email) == BOT[:1] + BOT[1:]
    assert run(root, "--repo", str(remote), "--branch", "env/all") == 0
    assert "already published from this source commit" in capsys.readouterr().out
    assert tip(remote, "env/all")[0] == sha  # no second commit
    replace(root, "tenants/vision.yaml", VISION_8, VISION_6)
    commit(root, "vision: 8 -> 6 H100")
    assert run(root, "--repo", str(remote), "--branch", "env/all", "--message-title", "lower vision") == 0
    new_sha, message, published, count = tip(remote, "env/all")
    assert count == 2 and message.startswith("lower vision\n\n") and published == rendered(root)
    with git.Repo(remote) as repo:
        assert repo.commit(new_sha).parents[0].hexsha == sha


def test_deploy_path_and_one_cluster(tmp_path: Path) -> None:
    root, remote = source(tmp_path), bare(tmp_path)
    assert run(root, "--repo", str(remote), "--cluster", "prod", "--path", "clusters") == 0
    with git.Repo(remote) as repo:
        c = repo.commit("main")  # the remote had no default branch yet: main
        assert gitrepo.read_trees_at(c, "clusters") == {"prod": rendered(root)["prod"]}
    assert run(root, "--repo", str(remote), "--path", "../escape") == 1


def test_dry_run_pushes_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root, remote = source(tmp_path), bare(tmp_path)
    assert run(root, "--repo", str(remote), "--dry-run") == 0
    assert "dry run: would commit to main of" in capsys.readouterr().out
    with git.Repo(remote) as repo:
        assert not repo.heads


def test_stale_source_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root, remote = source(tmp_path), bare(tmp_path)
    older = head(root)
    replace(root, "tenants/vision.yaml", VISION_8, VISION_6)
    newer = commit(root, "vision: 8 -> 6 H100")
    with git.Repo.clone_from(root, tmp_path / "old-checkout") as clone:
        clone.git.checkout("-q", older)
    assert run(root, "--repo", str(remote)) == 0
    published = tip(remote)
    assert run(tmp_path / "old-checkout", "--repo", str(remote)) == 1
    out = capsys.readouterr().out
    old = tmp_path / "old-checkout"
    assert f"{old}: error: main of {remote} was already published from source commit {newer}" in out
    assert "nothing pushed" in out and "update this checkout (`git pull`) and publish again" in out
    assert tip(remote) == published


def test_unknown_source_commit_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root, remote = source(tmp_path / "a"), bare(tmp_path)
    assert run(root, "--repo", str(remote)) == 0
    published = tip(remote)
    other = source(tmp_path / "b", "another history")  # its commits cannot be ordered against ours
    assert run(other, "--repo", str(remote)) == 1
    assert "which this repository does not have" in capsys.readouterr().out
    assert tip(remote) == published


# A pre-receive hook that holds every push until both publishes have arrived, then lets the chosen
# winner through first and holds the loser until the winner's ref update has landed: the loser's
# update then fails (the branch moved under it), so which push wins is decided here, not by timing.
RACE_HOOK = """\
#!/bin/sh
read old new ref
source=$(git log -1 --format=%B "$new" | sed -n 's/^Source-Commit: //p' | tail -n 1)
touch "{arrived}/push.$$"
n=0
while [ "$(ls "{arrived}" | wc -l)" -lt 2 ] && [ $n -lt 600 ]; do sleep 0.1; n=$((n+1)); done
if [ "$source" = "{loser}" ] && mkdir "{held}" 2>/dev/null; then
  before=$(echo "$old" | sed 's/^0*$//')
  n=0
  while [ "$(git rev-parse -q --verify "$ref")" = "$before" ] && [ $n -lt 600 ]; do
    sleep 0.1; n=$((n+1))
  done
fi
"""


@pytest.mark.parametrize("first", ["newer", "older"])
def test_racing_publishes_the_newer_wins(tmp_path: Path, first: str) -> None:
    """Two publishes from successive source commits push at the same moment. The newer pushes first:
    the older loses the race, fetches, sees a newer source and steps back (superseded). The older
    pushes first: the newer loses, fetches, re-plans on top of it and pushes (retried and won)."""
    root, remote = source(tmp_path), bare(tmp_path)
    older = head(root)
    replace(root, "tenants/vision.yaml", VISION_8, VISION_6)
    newer = commit(root, "vision: 8 -> 6 H100")
    checkouts = {}
    for name, sha in (("older", older), ("newer", newer)):
        with git.Repo.clone_from(root, tmp_path / name) as clone:
            clone.git.checkout("-q", sha)
        checkouts[name] = tmp_path / name
    arrived = tmp_path / "arrived"
    arrived.mkdir()
    loser = older if first == "newer" else newer
    hook = remote / "hooks" / "pre-receive"
    hook.write_text(RACE_HOOK.format(arrived=arrived, loser=loser, held=tmp_path / "held"))
    hook.chmod(hook.stat().st_mode | stat.S_IEXEC)
    outcomes: dict[str, publish.Outcome | BaseException] = {}

    def go(name: str) -> None:
        try:
            outcomes[name] = publish.publish(checkouts[name], repo=str(remote), backoff=0.05)
        except BaseException as exc:  # reported below
            outcomes[name] = exc

    threads = [threading.Thread(target=go, args=(name,)) for name in checkouts]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    statuses = {name: getattr(o, "status", repr(o)) for name, o in outcomes.items()}
    assert (tmp_path / "held").is_dir()  # the loser was held until the winner had landed
    sha, message, published, count = tip(remote)
    assert gitrepo.trailer(message, "Source-Commit") == newer
    assert published == rendered(checkouts["newer"])
    if first == "newer":  # the older lost, fetched and found a newer source published meanwhile
        assert statuses == {"newer": "pushed", "older": "superseded"}, statuses
        assert count == 1 and len(list(arrived.iterdir())) == 2
    else:  # the newer lost, fetched, re-planned on top of the older and pushed again
        assert statuses == {"newer": "pushed", "older": "pushed"}, statuses
        assert count == 2 and len(list(arrived.iterdir())) == 3
        with git.Repo(remote) as repo:
            parent = repo.commit(sha).parents[0]
            assert gitrepo.trailer(str(parent.message), "Source-Commit") == older


def test_public_url_drops_credentials() -> None:
    assert (
        gitrepo.public_url("https://x-access-token:s3cr3t@github.com/acme/deploy.git")
        == "https://github.com/acme/deploy.git"
    )
    assert gitrepo.public_url("git@github.com:acme/deploy.git") == "git@github.com:acme/deploy.git"
    assert gitrepo.trailer("t\n\nSource-Commit: abc\nSource-Commit: def\n", "Source-Commit") == "def"


# ------------------------------------------------------------------------- the deploy source branch


def test_an_unmerged_branch_is_refused_unless_forced(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Publishing deploys what is published: from a branch not merged into the source branch (the
    repository's default branch) it is refused, nothing pushed, unless --force, which the output says."""
    root, remote = source(tmp_path), bare(tmp_path)
    assert run(root, "--repo", str(remote), "--branch", "deploy") == 0
    published = tip(remote, "deploy")[0]
    with git.Repo(root) as repo:
        repo.git.switch("-q", "-c", "try-more-gpus")
    replace(root, "tenants/vision.yaml", VISION_8, VISION_6)
    commit(root, "vision: 8 -> 6 H100")
    capsys.readouterr()
    assert run(root, "--repo", str(remote), "--branch", "deploy") == 1
    out = capsys.readouterr().out
    assert "try-more-gpus" in out and "not merged into main" in out and "--force" in out, out
    assert tip(remote, "deploy")[0] == published
    assert run(root) == 1  # the same repository: the same refusal
    assert "not merged into main" in capsys.readouterr().out
    assert run(root, "--repo", str(remote), "--branch", "deploy", "--dry-run") == 0
    assert "would be refused" in capsys.readouterr().out
    assert run(root, "--repo", str(remote), "--branch", "deploy", "--force") == 0
    out = capsys.readouterr().out
    assert "pushed" in out and "--force: published from try-more-gpus, not merged into main" in out, out
    assert tip(remote, "deploy")[0] != published


def test_a_merged_branch_or_commit_publishes(tmp_path: Path) -> None:
    """A branch whose HEAD is already on the source branch, or that branch itself, publishes."""
    root, remote = source(tmp_path), bare(tmp_path)
    with git.Repo(root) as repo:
        repo.git.switch("-q", "-c", "merged-already")
    assert run(root, "--repo", str(remote), "--branch", "deploy") == 0


def test_the_branch_argo_cd_syncs_is_the_source_of_the_same_repository(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Publishing into this repository commits generated/ on the current branch: when the branch Argo
    CD syncs (`argocd.targetRevision`) exists, only that branch is published on."""
    root = source(tmp_path)
    with git.Repo(root) as repo:
        repo.git.branch("deploy")  # base/platform.yaml: targetRevision: deploy
    replace(root, "tenants/vision.yaml", VISION_8, VISION_6)
    commit(root, "vision: 8 -> 6 H100")
    assert run(root) == 1
    assert "not merged into deploy" in capsys.readouterr().out
    with git.Repo(root) as repo:
        repo.git.switch("-q", "deploy")
        repo.git.merge("-q", "--ff-only", "main")
    assert run(root) == 0
