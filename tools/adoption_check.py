"""What a platform team adopting the repository does first, then the test suite.

Copies this checkout (its tracked and untracked, not ignored files) to a temporary directory, edits
the live content as a team would, whatever it holds (adds a cluster overlay copied from the first one,
named `staging` or, when the repository already has one, `staging-2`, ...; a tenant placed there under
a name nobody uses; lowers one budget, removes a tenant), renders, checks, and runs the README's test
command (or the pytest arguments given) in the copy, without the test that runs this check (which would
run it again). The suite builds its own repositories (tests/fixtures/repo), so it passes whatever
tenants/, base/ and overlays/ hold.

    python tools/adoption_check.py                 # the whole suite (the README's command, -n 2)
    python tools/adoption_check.py tests/test_plan.py -x
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from copy import deepcopy
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parent.parent
SELF_TEST = "tests/test_adoption.py::test_the_suite_passes_after_a_team_changes_tenants_and_overlays"
"""The test that runs this check: deselected in the copy's suite, which would otherwise run it again."""
BROWSER_PACKAGES = "tests/browser/node_modules"
"""The browser tests' npm packages: installed, not tracked; the copy links to them."""


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
    installed = repo / BROWSER_PACKAGES  # ignored by git, made by `npm ci --prefix tests/browser`
    if installed.is_dir():
        (dest / BROWSER_PACKAGES).symlink_to(installed, target_is_directory=True)
    subprocess.run(["git", "init", "-q", str(dest)], check=True)  # noqa: S603, S607


def _load(path: Path) -> Any:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def _dump(path: Path, data: Any) -> None:
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")


def _budget_on(tenant: dict[str, Any], cluster: str) -> list[Any] | None:
    budgets = tenant.get("budgets") or {}
    found = (budgets.get("clusters") or {}).get(cluster, budgets.get("default"))
    return deepcopy(found) if found is not None else None


def _placed_on(tenant: dict[str, Any], cluster: str) -> bool:
    if "clusters" in tenant:
        return cluster in tenant["clusters"]
    return _budget_on(tenant, cluster) is not None


def _lower_one(path: Path, tenant: dict[str, Any]) -> bool:
    """Lower the first whole device count above zero in the tenant's budgets by one (and a lendingLimit
    with it, so it stays within nominal); False when there is none."""
    budgets = tenant.get("budgets") or {}
    for entries in [budgets.get("default") or [], *(budgets.get("clusters") or {}).values()]:
        for entry in entries:
            devices = entry.get("devices") or {}
            for name, amount in devices.items():
                if isinstance(amount, int) and amount > 0:
                    devices[name] = amount - 1
                elif (
                    isinstance(amount, dict)
                    and isinstance(amount.get("nominal"), int)
                    and amount["nominal"] > 0
                ):
                    amount["nominal"] -= 1
                    if isinstance(amount.get("lendingLimit"), int):
                        amount["lendingLimit"] = min(amount["lendingLimit"], amount["nominal"])
                else:
                    continue
                _dump(path, tenant)
                return True
    return False


def fresh(wanted: str, taken: set[str]) -> str:
    """`wanted`, or `wanted-2`, `wanted-3`, ... : the first name not in `taken`."""
    name, n = wanted, 1
    while name in taken:
        n += 1
        name = f"{wanted}-{n}"
    return name


def _names(root: Path) -> set[str]:
    """Every name the repository already uses for an overlay, cluster, Argo CD destination, tenant,
    tenant file or namespace: what an added cluster or tenant must not collide with."""
    taken = {d.name for d in (root / "overlays").iterdir()} | {p.stem for p in (root / "tenants").glob("*")}
    for path in sorted((root / "overlays").glob("*/cluster.yaml")):
        cluster = _load(path) or {}
        taken |= {str(cluster.get("name")), str((cluster.get("argocd") or {}).get("name"))}
    for path in sorted((root / "tenants").glob("*.yaml")):
        tenant = _load(path) or {}
        taken.add(str(tenant.get("name")))
        taken |= {
            str(ns if isinstance(ns, str) else (ns or {}).get("name"))
            for ns in tenant.get("namespaces") or []
        }
    return taken


def adopt(root: Path) -> tuple[str, str]:
    """The edits, made on whatever the repository holds: a new cluster (a copy of the first overlay
    whose budgets are plain, named `staging` unless that name is taken), a new tenant placed there, a
    lowered budget, and a removed tenant. Returns the names of the cluster and the tenant added."""
    overlays = sorted(d.name for d in (root / "overlays").iterdir() if (d / "cluster.yaml").is_file())
    everyone = [_load(p) for p in sorted((root / "tenants").glob("*.yaml"))]
    taken = _names(root)
    staging = fresh("staging", taken)
    team = fresh("adopted-team", taken | {staging})

    def plain(cluster: str) -> bool:  # budgets of devices and resources only (no other kinds of amounts)
        if "multiKueue" in _load(root / "overlays" / cluster / "cluster.yaml"):
            return False  # a MultiKueue manager: its budgets are its workers' (docs/multikueue.md)
        budgets = [_budget_on(t, cluster) or [] for t in everyone if _placed_on(t, cluster)]
        return bool(budgets) and all(
            set(fb) <= {"flavor", "devices", "resources"} for b in budgets for fb in b
        )

    source = next((c for c in overlays if plain(c)), overlays[0])
    shutil.copytree(root / "overlays" / source, root / "overlays" / staging)
    cluster = _load(root / "overlays" / staging / "cluster.yaml")
    cluster.update(name=staging, argocd={"name": staging})
    _dump(root / "overlays" / staging / "cluster.yaml", cluster)
    tenants = {p: _load(p) for p in sorted((root / "tenants").glob("*.yaml"))}
    for path, t in tenants.items():  # a tenant placed everywhere gets the new cluster's budget from source's
        if "clusters" not in t and _budget_on(t, source) is not None:
            t["budgets"].setdefault("clusters", {})[staging] = _budget_on(t, source)
            _dump(path, t)
    placed = [p for p, t in tenants.items() if _placed_on(t, source)]
    assert placed, f"no tenant is placed on {source}"
    model = tenants[placed[0]]
    budget = _budget_on(model, source) or []
    for fb in budget:  # the new team starts with zero quota on the same flavors
        for kind in ("devices", "resources"):
            fb[kind] = {name: 0 for name in fb.get(kind) or {}}
    new = {
        "apiVersion": model["apiVersion"],
        "kind": "Tenant",
        "name": team,
        "owners": [f"@acme/{team}"],
        "clusters": [source, staging],
        "namespaces": [team],
        "budgets": {"default": budget},
    }
    _dump(root / "tenants" / f"{team}.yaml", new)
    changed = next((path for path in tenants if _lower_one(path, tenants[path])), None)
    assert changed is not None, "no whole device count above zero to lower in any tenant"
    others = [p for p in tenants if p not in (placed[0], changed)]
    if len(others) >= 2:  # a team leaves: its budgets are removed with its file
        others[-1].unlink()
    return staging, team


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
        # the README's test command (-n 2), or the arguments given; test_adoption runs this check
        # itself: in the copy, the suite leaves it out (no recursion)
        selection = pytest_args or ["-n", "2"]
        code = run(root, "-m", "pytest", "-q", "-p", "no:cacheprovider", *selection, "--deselect", SELF_TEST)
        print(f"adoption check: the test suite {'passed' if code == 0 else f'failed (exit {code})'}")
        return code
    finally:
        if args.keep:
            print(f"kept: {root}")
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())
