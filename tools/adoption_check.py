"""What a platform team adopting the repository does first, then the test suite.

Copies this checkout (its tracked and untracked, not ignored files) to a temporary directory, edits
the live content as a team would, whatever it holds (adds a cluster overlay copied from an existing
one, named `staging` or, when the repository already has one, `staging-2`, ...; a tenant placed there
under a name nobody uses; lowers one budget, removes a tenant), each edit kept only when `validate`
still passes (else the next overlay, tenant or budget is tried; the output says which were changed),
renders, checks, and runs the README's test
command (or the pytest arguments given) in the copy, without the test that runs this check (which would
run it again). The suite builds its own repositories (tests/fixtures/repo), so it passes whatever
tenants/, base/ and overlays/ hold.

    python tools/adoption_check.py                 # the whole suite (the README's command, -n 2)
    python tools/adoption_check.py tests/test_plan.py -x
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from copy import deepcopy
from functools import partial
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
    return sorted(
        p
        for p in out.split("\0")
        if p and p != BROWSER_PACKAGES and ((repo / p).is_file() or (repo / p).is_symlink())
    )


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


def say(message: str) -> None:
    print(f"adoption check: {message}", flush=True)


def validate(root: Path) -> list[str]:
    """`pipeline.py validate` run in this process on `root` (the schemas it would use, no cache): the
    errors it reports, formatted as it prints them; none when the repository is valid."""
    if str(REPO) not in sys.path:
        sys.path.insert(0, str(REPO))  # the package of this checkout, not one installed elsewhere
    from gputenancy import engine
    from gputenancy.common.findings import PipelineError, Severity
    from gputenancy.versions import releases

    env = os.environ.get("GPUTENANCY_SCHEMAS")
    schemas = Path(env) if env else root / releases.DEFAULT_DIR
    try:
        result = engine.run(root, schemas=schemas if env or schemas.is_dir() else None, cache=None)
    except PipelineError as exc:
        return [f.format() for f in exc.findings] or [str(exc)]
    return [f.format() for f in result.findings if f.severity is Severity.ERROR]


Validate = Callable[[Path], list[str]]


class Stuck(Exception):
    """An edit every team makes could not be made on this repository without breaking it."""


def attempt(root: Path, edit: Callable[[], object], valid: Validate) -> list[str]:
    """Make `edit` (on tenants/ and overlays/); keep it when the repository still validates, else put
    back what it changed. Returns the errors of the undone edit (none: kept)."""
    tenants = {p: p.read_bytes() for p in (root / "tenants").iterdir() if p.is_file()}
    overlays = {d.name for d in (root / "overlays").iterdir()}
    edit()
    errors = valid(root)
    if errors:
        for path in (root / "tenants").iterdir():
            if path not in tenants:
                path.unlink()
        for path, data in tenants.items():
            path.write_bytes(data)
        for d in (root / "overlays").iterdir():
            if d.name not in overlays:
                shutil.rmtree(d)
    return errors


def _why(errors: list[str]) -> str:
    return errors[0] + (f" (and {len(errors) - 1} more)" if len(errors) > 1 else "")


def _budget_on(tenant: dict[str, Any], cluster: str) -> list[Any] | None:
    budgets = tenant.get("budgets") or {}
    found = (budgets.get("clusters") or {}).get(cluster, budgets.get("default"))
    return deepcopy(found) if found is not None else None


def _placed_on(tenant: dict[str, Any], cluster: str) -> bool:
    if "clusters" in tenant:
        return cluster in tenant["clusters"]
    return _budget_on(tenant, cluster) is not None


def _count(amount: Any) -> int:
    """A whole device count (plain or nominal), 0 when the amount is not one."""
    if isinstance(amount, dict):
        amount = amount.get("nominal")
    return amount if isinstance(amount, int) and not isinstance(amount, bool) else 0


Spot = tuple[str | None, int, str]
"""A device count in a tenant's budgets: the cluster of the override (None: the default), the entry's
index, the device class."""


def _entries(tenant: dict[str, Any], cluster: str | None) -> list[Any]:
    budgets = tenant.get("budgets") or {}
    found = budgets.get("default") if cluster is None else (budgets.get("clusters") or {}).get(cluster)
    return found if isinstance(found, list) else []


def lowerable(tenant: dict[str, Any]) -> list[Spot]:
    """Every whole device count above zero in the tenant's budgets, the default's first."""
    overrides = (tenant.get("budgets") or {}).get("clusters") or {}
    return [
        (cluster, i, name)
        for cluster in [None, *overrides]
        for i, entry in enumerate(_entries(tenant, cluster))
        for name, amount in ((entry or {}).get("devices") or {}).items()
        if _count(amount) > 0
    ]


def lower(tenant: dict[str, Any], spot: Spot) -> str:
    """Lower the count at `spot` by one (a lendingLimit with it, so it stays within nominal); what
    changed, in words."""
    cluster, i, name = spot
    devices = _entries(tenant, cluster)[i]["devices"]
    amount = devices[name]
    if isinstance(amount, dict):
        amount["nominal"] -= 1
        if isinstance(amount.get("lendingLimit"), int):
            amount["lendingLimit"] = min(amount["lendingLimit"], amount["nominal"])
        now = amount["nominal"]
    else:
        now = devices[name] = amount - 1
    where = "default" if cluster is None else f"clusters.{cluster}"
    return f"budgets.{where}[{i}].devices.{name}: {now + 1} -> {now}"


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


@dataclasses.dataclass(frozen=True)
class Adopted:
    """What the edits changed (paths relative to the root)."""

    cluster: str  # the overlay added
    source: str  # the overlay it is a copy of
    team: str  # the tenant added, on source and cluster
    model: str  # the tenant file whose flavors the new tenant starts on, with zero quota
    lowered: str | None  # "tenants/x.yaml: budgets...: 4 -> 3"; None: no budget could be lowered
    removed: str | None  # the tenant file removed; None: none could be


def _sources(root: Path) -> list[str]:
    """The overlays to copy, in the order tried: those whose budgets are plain (devices and resources
    only, no other kinds of amounts) and that are no MultiKueue manager first."""
    overlays = sorted(d.name for d in (root / "overlays").iterdir() if (d / "cluster.yaml").is_file())
    everyone = [_load(p) or {} for p in sorted((root / "tenants").glob("*.yaml"))]

    def plain(cluster: str) -> bool:
        if "multiKueue" in (_load(root / "overlays" / cluster / "cluster.yaml") or {}):
            return False  # a MultiKueue manager: its budgets are its workers' (docs/multikueue.md)
        budgets = [_budget_on(t, cluster) or [] for t in everyone if _placed_on(t, cluster)]
        return bool(budgets) and all(
            set(fb) <= {"flavor", "devices", "resources"} for b in budgets for fb in b
        )

    return sorted(overlays, key=lambda c: not plain(c))


def add_cluster(root: Path, source: str, name: str) -> None:
    """overlays/<name>, a copy of overlays/<source> with its own name and Argo CD destination; a tenant
    placed wherever it has a budget gets the same budget there as on source."""
    shutil.copytree(root / "overlays" / source, root / "overlays" / name)
    cluster = _load(root / "overlays" / name / "cluster.yaml")
    cluster.update(name=name, argocd={"name": name})
    _dump(root / "overlays" / name / "cluster.yaml", cluster)
    for path in sorted((root / "tenants").glob("*.yaml")):
        t = _load(path)
        if "clusters" not in t and _budget_on(t, source) is not None:
            t["budgets"].setdefault("clusters", {})[name] = _budget_on(t, source)
            _dump(path, t)


def add_tenant(root: Path, model: dict[str, Any], name: str, clusters: list[str], source: str) -> None:
    """tenants/<name>.yaml on `clusters`, with zero quota on the flavors `model` has on source."""
    budget = _budget_on(model, source) or []
    for fb in budget:
        for kind in ("devices", "resources"):
            fb[kind] = {n: 0 for n in fb.get(kind) or {}}
    new = {
        "apiVersion": model["apiVersion"],
        "kind": "Tenant",
        "name": name,
        "owners": [f"@acme/{name}"],
        "clusters": clusters,
        "namespaces": [name],
        "budgets": {"default": budget},
    }
    _dump(root / "tenants" / f"{name}.yaml", new)


def _both(root: Path, source: str, name: str, model: dict[str, Any], team: str) -> None:
    add_cluster(root, source, name)
    add_tenant(root, model, team, [source, name], source)


def adopt(root: Path, valid: Validate = validate) -> Adopted:
    """The edits, made on whatever the repository holds, each kept only when the repository still
    validates (else the next candidate is tried): a new cluster (a copy of an overlay, named `staging`
    unless that name is taken) with a new tenant placed there, a lowered budget, and a removed tenant.
    Says what it changed and what it tried and undid. Raises Stuck when no cluster and tenant can be
    added."""
    taken = _names(root)
    staging = fresh("staging", taken)
    team = fresh("adopted-team", taken | {staging})
    added = None
    errors: list[str] = []
    for source in _sources(root):
        tenants = {p: _load(p) for p in sorted((root / "tenants").glob("*.yaml"))}
        for path in (p for p, t in tenants.items() if _placed_on(t, source)):
            errors = attempt(root, partial(_both, root, source, staging, tenants[path], team), valid)
            if not errors:
                added = source, path
                break
            say(f"not {staging} as a copy of {source} with {team} as {_rel(root, path)}: {_why(errors)}")
        if added:
            break
    if added is None:
        raise Stuck(
            f"no overlay can be copied with a tenant placed on the copy: {_why(errors or ['no tenant'])}"
        )
    source, model = added
    say(f"added cluster {staging} (a copy of overlays/{source}) and tenant {team} on {source} and {staging}")
    added_file = root / "tenants" / f"{team}.yaml"
    lowered = changed = None
    for path in sorted((root / "tenants").glob("*.yaml")):
        if path == added_file:
            continue
        for spot in lowerable(_load(path)):
            tenant = _load(path)
            change = f"{_rel(root, path)}: {lower(tenant, spot)}"
            errors = attempt(root, partial(_dump, path, tenant), valid)
            if not errors:
                lowered, changed = change, path
                break
            say(f"not lowering {change}: {_why(errors)}")
        if lowered:
            break
    say(f"lowered {lowered}" if lowered else "no budget can be lowered by one with the repository valid")
    others = [p for p in sorted((root / "tenants").glob("*.yaml")) if p not in {model, added_file, changed}]
    removed = None
    if len(others) >= 2:  # a team leaves: its budgets are removed with its file
        for path in reversed(others):
            errors = attempt(root, path.unlink, valid)
            if not errors:
                removed = _rel(root, path)
                break
            say(f"not removing {_rel(root, path)}: {_why(errors)}")
    say(f"removed {removed}" if removed else "no tenant removed")
    return Adopted(staging, source, team, _rel(root, model), lowered, removed)


def _rel(root: Path, path: Path) -> str:
    return path.relative_to(root).as_posix()


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
        errors = validate(root)
        if errors:
            say(f"the repository does not validate before any edit: {_why(errors)}")
            return 1
        try:
            adopt(root)
        except Stuck as exc:
            say(str(exc))
            return 1
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
