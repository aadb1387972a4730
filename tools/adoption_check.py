"""What a platform team adopting the repository does first, then the test suite.

Copies this checkout (its tracked and untracked, not ignored files) to a temporary directory, edits
the live example content as a team would (adds a tenant, adds a `staging` cluster overlay, changes one
budget, removes another flavor budget and a whole tenant), renders, checks, and runs the README's test
command (or the pytest arguments given) in the copy. The suite builds its own repositories
(tests/fixtures/repo), so it passes whatever tenants/, base/ and overlays/ hold.

    python tools/adoption_check.py                 # the whole suite
    python tools/adoption_check.py tests/test_plan.py -x
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

TENANT = """\
# yaml-language-server: $schema=../gputenancy/schemas/tenant.schema.json
apiVersion: gputenancy.io/v1
kind: Tenant
name: robotics
owners: ["@acme/robotics"]
clusters: [prod, staging]
namespaces:
  - robotics-sim
budgets:
  default:
    - flavor: h100
      devices:
        gpu.nvidia.com: 2
      resources:
        cpu: 16
        memory: 128Gi
  clusters:
    staging:
      - flavor: t4
        devices:
          gpu.nvidia.com: 2
        resources:
          cpu: 8
          memory: 32Gi
claimTemplates:
  - name: single-gpu
    deviceClass: gpu.nvidia.com
"""


def files(repo: Path) -> list[str]:
    out = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],  # noqa: S607
        cwd=repo,
        capture_output=True,
        check=True,
    ).stdout.decode()
    return sorted(p for p in out.split("\0") if p and ((repo / p).is_file() or (repo / p).is_symlink()))


def copy(repo: Path, dest: Path) -> None:
    for rel in files(repo):
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(repo / rel, target, follow_symlinks=False)  # tests/negative has symlinks
    subprocess.run(["git", "init", "-q", str(dest)], check=True)  # noqa: S603, S607


def adopt(root: Path) -> None:
    """The edits: a tenant, a cluster, a changed budget, a removed flavor budget, a removed tenant."""
    (root / "tenants/robotics.yaml").write_text(TENANT)
    staging = root / "overlays/staging"
    shutil.copytree(root / "overlays/lab", staging)
    cluster = (staging / "cluster.yaml").read_text()
    cluster = cluster.replace("name: lab", "name: staging").replace("gpu.nvidia.com: 1", "gpu.nvidia.com: 4")
    cluster = cluster.replace("cpu: 8", "cpu: 32").replace("memory: 32Gi", "memory: 128Gi")
    (staging / "cluster.yaml").write_text(cluster)
    vision = root / "tenants/vision.yaml"
    text = vision.read_text()
    for old, new in (
        ("{nominal: 8, borrowingLimit: 4, lendingLimit: 4}", "{nominal: 4, borrowingLimit: 4}"),
        ("cpu: {nominal: 96, borrowingLimit: 32}", "cpu: {nominal: 64, borrowingLimit: 32}"),
        (
            "memory: {nominal: 1792Gi, borrowingLimit: 512Gi}",
            "memory: {nominal: 1536Gi, borrowingLimit: 512Gi}",
        ),
    ):
        assert old in text, old
        text = text.replace(old, new)
    vision.write_text(text)
    speech = root / "tenants/speech.yaml"
    lines = speech.read_text().splitlines(keepends=True)
    start = next(i for i, line in enumerate(lines) if "flavor: a100-mig" in line)
    end = next(i for i, line in enumerate(lines) if line.startswith("claimTemplates:"))
    kept = [line for line in lines[end:] if "mig-1g" not in line and "count: 2" not in line]
    speech.write_text("".join(lines[:start] + kept))
    (root / "tenants/sandbox.yaml").unlink()


def run(root: Path, *argv: str) -> int:
    env = {**os.environ, "PYTHONPATH": str(root), "GPUTENANCY_CACHE": "off"}
    shared = REPO.parent / "shared"
    if "GPUTENANCY_SHARED" not in env and shared.is_dir():
        env["GPUTENANCY_SHARED"] = str(shared.resolve())
    print(f"$ {' '.join(argv)}", flush=True)
    return subprocess.run([sys.executable, *argv], cwd=root, env=env, check=False).returncode  # noqa: S603


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--keep", action="store_true", help="keep the copy and print where it is")
    args, pytest_args = p.parse_known_args(argv)  # the rest goes to pytest (default: the whole suite)
    work = Path(tempfile.mkdtemp(prefix="gputenancy-adopt-"))
    root = work / "gpu-tenancy"
    try:
        copy(REPO, root)
        adopt(root)
        for step in (("pipeline.py", "render"), ("pipeline.py", "check"), ("pipeline.py", "validate")):
            if run(root, *step) != 0:
                print(f"adoption check: `{' '.join(step)}` failed", file=sys.stderr)
                return 1
        code = run(root, "-m", "pytest", "-q", "-p", "no:cacheprovider", *pytest_args)
        print(f"adoption check: the test suite {'passed' if code == 0 else f'failed (exit {code})'}")
        return code
    finally:
        if args.keep:
            print(f"kept: {root}")
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())
