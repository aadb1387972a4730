"""Benchmark the pipeline on synthetic fleets, against one kustomize build of the same objects.

    python -m bench.run [--tenants 10 100 1000 5000] [--baseline-cap 120 [1000:900]] [--schemas DIR]

For each fleet size N (written by `bench.fleet`, seed 1) it times, each in a fresh Python process:

    validate         the whole pipeline without the cache, writing nothing
    render (cold)    the whole pipeline with an empty cache, then generated/ written
    plan (no change) render from the warm cache and compare with generated/
    plan (one edit)  the same after changing one tenant (its first claim template's count)

each plan --repeat times (default 3, the median kept; every edited plan starts from the same cache);
and, in the same run, the naive baseline: one `kustomize build` (or `kubectl kustomize`) per cluster of
that cluster's objects of generated/ with the tenant Component's label transformer (`--baseline one`:
one build of all of them, names made unique across clusters), stopped after --baseline-cap seconds
(shown as "> cap"). Each stage the engine laps is reported with its wall and CPU seconds (the Python
process and the kustomize processes it collected; `GPUTENANCY_TIMING=1` in the measured process,
`gputenancy.common.timing`), and the load average before and after the run. Wall times
are measured around each process (interpreter start-up included); stage times come from the
engine's `Result.stats`; peak memory is the largest resident set of the measured Python process
(`ru_maxrss`). The tables are printed as Markdown, ready for docs/performance.md. Nothing here is a
test.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import json
import os
import platform
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from bench import fleet

OPERATIONS = ("validate", "render", "plan", "plan-edit")
LABELS = {
    "validate": "validate",
    "render": "render (cold)",
    "plan": "plan (no change)",
    "plan-edit": "plan (one edit)",
}
STAGES = ("load", "render", "kustomize", "validate", "write")
STAGE_NAMES = {
    "load": "load inputs",
    "rules": "model rules",
    "boundary": "trust boundary (confine, stage, digests)",
    "kustomizations": "kustomizations read and checked",
    "render": "render",
    "cache": "cache keys and look-ups",
    "kustomize": "kustomize (wait, read output)",
    "validate": "validate",
    "postbuild": "post-build checks",
    "fleet": "fleet checks",
    "serialise": "serialise",
    "write": "write generated/ / read and diff",
}
"""Every stage the engine laps (`Result.stats.seconds`), in run order, and the bench's own last one."""
_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_Dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


# ------------------------------------------------------------------------ in the measured process


def _engine_stages(stats: Any) -> dict[str, float]:
    s = dict(stats.seconds)
    return {
        "load": s.get("load", 0.0) + s.get("rules", 0.0),
        "render": sum(s.get(k, 0.0) for k in ("render", "cache", "boundary", "kustomizations")),
        "kustomize": s.get("kustomize", 0.0),
        "validate": s.get("validate", 0.0) + s.get("postbuild", 0.0) + s.get("fleet", 0.0),
        "write": s.get("serialise", 0.0),
    }


def measure(op: str, root: Path, schemas: Path | None) -> dict[str, Any]:
    """Run one operation through the pipeline's Python API; returns what it did and how long it took."""
    from gputenancy import engine
    from gputenancy.assemble import output, swap
    from gputenancy.common import timing
    from gputenancy.deliver import plan

    started = time.perf_counter()
    result = engine.run(root, schemas=schemas, cache=None if op == "validate" else "auto")
    stages = _engine_stages(result.stats)
    changed: Any = None
    clock = time.perf_counter()
    tail = timing.Clock()
    if op == "render" and not result.failed:
        trees = {name: c.tree for name, c in result.clusters.items()}
        changed = swap.write_trees(root, root / output.GENERATED, trees, prune=True)
    elif op.startswith("plan") and not result.failed:
        trees_before, label = plan.read_against(root, None)
        p = plan.build(result, trees_before, label=label)
        changed = [
            f"{c.name}: {len(c.objects)} objects, {len(c.files)} files" for c in p.clusters if c.changed
        ]
    stages["write"] += time.perf_counter() - clock
    tail.lap("write")
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return {
        "op": op,
        "failed": result.failed,
        "findings": [f.format() for f in result.findings][:5],
        "seconds": time.perf_counter() - started,
        "stages": stages,
        "wall": {**result.stats.seconds, **tail.seconds},
        "cpu": {**result.stats.cpu, **tail.cpu},
        "hits": result.stats.hits,
        "misses": result.stats.misses,
        "rendered": len(result.stats.rendered),
        "shards": result.stats.shards,
        "objects": sum(len(c.objects) for c in result.clusters.values()),
        "changed": changed,
        "maxrss_mb": own.ru_maxrss / 1024,
        "cpu_python": own.ru_utime + own.ru_stime,
        "cpu_kustomize": kids.ru_utime + kids.ru_stime,
    }


# ------------------------------------------------------------------------ the parent


@dataclasses.dataclass
class Measured:
    wall: float
    cpu: float  # user + system of the process and what it started
    maxrss_mb: float
    report: dict[str, Any]


def _child(
    argv: Sequence[str], env: dict[str, str], timeout: float | None = None
) -> tuple[Measured, str, bool]:
    """Run argv; wall time, rusage (of it and its children) and stdout. Killed after `timeout`."""
    started = time.perf_counter()
    with tempfile.TemporaryFile() as out:
        child = subprocess.Popen(argv, stdout=out, stderr=subprocess.DEVNULL, env=env)
        deadline = None if timeout is None else started + timeout
        timed_out = False
        while True:
            pid, status, usage = os.wait4(child.pid, os.WNOHANG)
            if pid:
                break
            if deadline is not None and time.perf_counter() > deadline:
                child.kill()
                pid, status, usage = os.wait4(child.pid, 0)
                timed_out = True
                break
            time.sleep(0.01)
        child.returncode = os.waitstatus_to_exitcode(status)
        wall = time.perf_counter() - started
        out.seek(0)
        text = out.read().decode()
    measured = Measured(wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, {})
    return measured, text, timed_out or child.returncode != 0


def run_op(op: str, root: Path, schemas: Path | None, cache_dir: Path) -> Measured:
    env = {**os.environ, "GPUTENANCY_CACHE": str(cache_dir), "GPUTENANCY_TIMING": "1"}
    argv = [sys.executable, "-m", "bench.run", "--measure", op, "--root", str(root)]
    if schemas is not None:
        argv += ["--schemas", str(schemas)]
    measured, text, failed = _child(argv, env)
    if failed or not text.strip():
        raise SystemExit(f"{op} on {root} failed:\n{text}")
    measured.report = json.loads(text.strip().splitlines()[-1])
    if measured.report["failed"]:
        raise SystemExit(f"{op} on {root} reported errors: {measured.report['findings']}")
    measured.maxrss_mb = measured.report["maxrss_mb"]
    return measured


def _kustomize() -> list[str]:
    if shutil.which("kustomize"):
        return ["kustomize", "build"]
    return ["kubectl", "kustomize"]


def tool_version() -> str:
    cmd = _kustomize()
    argv = [cmd[0], "version", "--client"] if cmd[0] == "kubectl" else [cmd[0], "version"]
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    return " / ".join(line.strip() for line in done.stdout.splitlines() if line.strip())


def _write_baseline(into: Path, docs: list[Any]) -> None:
    into.mkdir(parents=True, exist_ok=True)
    with (into / "objects.yaml").open("w", encoding="utf-8") as f:
        yaml.dump_all(docs, f, Dumper=_Dumper, sort_keys=False)
    (into / "kustomization.yaml").write_text(
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - objects.yaml\n"
        "labels:\n  - pairs:\n      gputenancy.io/cluster: all\n",
        encoding="utf-8",
    )


def baseline_dirs(root: Path, into: Path, per_cluster: bool) -> tuple[list[Path], int]:
    """The baseline's kustomization directories and their object count. `per_cluster`: one directory
    per cluster holding that cluster's objects of generated/; else one directory holding every object
    of generated/ (all clusters; names two clusters share get a `-<cluster>` suffix). Each has the
    tenant Component's label transformer."""
    seen: set[tuple[str, str, str]] = set()
    groups: dict[str, list[Any]] = {}
    for cluster in sorted(p for p in (root / "generated").iterdir() if p.is_dir()):
        for path in sorted(cluster.rglob("*.yaml")):
            body = yaml.load(path.read_text(encoding="utf-8"), Loader=_Loader)
            meta = body["metadata"]
            key = (body["kind"], meta.get("namespace", ""), meta["name"])
            if key in seen and not per_cluster:
                meta["name"] = f"{meta['name']}-{cluster.name}"
            seen.add((body["kind"], meta.get("namespace", ""), meta["name"]))
            groups.setdefault(cluster.name if per_cluster else "all", []).append(body)
    dirs = []
    for name, docs in groups.items():
        _write_baseline(into / name, docs)
        dirs.append(into / name)
    return dirs, sum(len(d) for d in groups.values())


def run_baseline(directories: Sequence[Path], cap: float) -> Measured | None:
    """One kustomize build of each directory, one after the other; wall and CPU summed. None when they
    ran past `cap` seconds in all (then stopped)."""
    env = {**os.environ}
    total = Measured(0.0, 0.0, 0.0, {})
    for directory in directories:
        measured, _, failed = _child([*_kustomize(), str(directory)], env, timeout=cap - total.wall)
        if failed:
            return None
        total = Measured(
            total.wall + measured.wall, total.cpu + measured.cpu, max(total.maxrss_mb, measured.maxrss_mb), {}
        )
    return total


@dataclasses.dataclass
class Row:
    tenants: int
    objects: int
    ops: dict[str, Measured]
    baseline: Measured | None
    baseline_objects: int
    cap: float  # 0: the baseline was not run
    per_cluster: bool = True


def _median(runs: Sequence[Measured]) -> Measured:
    """The run of median wall time (the plans are short, so one busy moment weighs; each repetition is
    a fresh process on the same inputs and cache)."""
    return sorted(runs, key=lambda m: m.wall)[len(runs) // 2]


def bench_one(
    n: int,
    work: Path,
    schemas: Path | None,
    cap: float,
    seed: int,
    per_cluster: bool = True,
    repeat: int = 1,
) -> Row:
    """All measurements of one fleet size; the baseline only when `cap` > 0; each plan `repeat` times
    (the median is kept)."""
    root = work / f"fleet-{n}"
    shutil.rmtree(root, ignore_errors=True)
    fleet.generate(root, n, seed=seed)
    cache_dir = work / f"cache-{n}"
    shutil.rmtree(cache_dir, ignore_errors=True)
    ops: dict[str, Measured] = {}
    ops["validate"] = run_op("validate", root, schemas, cache_dir)
    ops["render"] = run_op("render", root, schemas, cache_dir)
    ops["plan"] = _median([run_op("plan", root, schemas, cache_dir) for _ in range(repeat)])
    edited = fleet.edit_one(root)
    kept = work / f"cache-{n}.before-edit"  # each repetition of the edited plan starts from the same cache
    shutil.rmtree(kept, ignore_errors=True)
    shutil.copytree(cache_dir, kept)
    runs = []
    for _ in range(repeat):
        shutil.rmtree(cache_dir)
        shutil.copytree(kept, cache_dir)
        runs.append(run_op("plan-edit", root, schemas, cache_dir))
    shutil.rmtree(kept)
    ops["plan-edit"] = _median(runs)
    report = ops["plan-edit"].report
    print(
        f"  {n} tenants: plan with no change: {ops['plan'].report['changed'] or 'no change'}; edited {edited}: "
        f"re-rendered {report['rendered']} (cluster, tenant) pairs, plan: {report['changed']}",
        file=sys.stderr,
    )
    base = work / f"baseline-{n}"
    shutil.rmtree(base, ignore_errors=True)
    dirs, count = baseline_dirs(root, base, per_cluster)
    baseline = run_baseline(dirs, cap) if cap > 0 else None
    shutil.rmtree(base, ignore_errors=True)
    return Row(n, ops["render"].report["objects"], ops, baseline, count, cap, per_cluster)


# ------------------------------------------------------------------------ tables


def _s(seconds: float) -> str:
    return f"{seconds:.2f} s" if seconds < 10 else f"{seconds:.1f} s"


def baseline_lines(rows: Sequence[Row]) -> str:
    out = []
    for r in rows:
        if r.baseline is not None:
            out.append(
                f"baseline, {r.tenants:,} tenants: "
                f"{'one kustomize build per cluster' if r.per_cluster else 'one kustomize build'} of "
                f"{r.baseline_objects:,} objects, "
                f"{_s(r.baseline.wall)} wall, {_s(r.baseline.cpu)} CPU, {r.baseline.maxrss_mb:.0f} MB peak"
            )
    return "\n".join(out) + ("\n" if out else "")


def table(rows: Sequence[Row]) -> str:
    head = (
        "| tenants | objects | validate | render (cold) | plan (no change) | plan (one edit) "
        "| naive kustomize | baseline / cold | plan / cold | one edit / cold | peak RSS |\n"
        "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n"
    )
    lines = []
    for r in rows:
        cold = r.ops["render"].wall
        if not r.cap:
            base, ratio = "not run", ""
        elif r.baseline is None:
            base, ratio = f"> {r.cap:.0f} s", f"> {r.cap / cold:.1f}x"
        else:
            base, ratio = _s(r.baseline.wall), f"{r.baseline.wall / cold:.1f}x"
        peak = max(m.maxrss_mb for m in r.ops.values())
        lines.append(
            f"| {r.tenants:,} | {r.objects:,} | {_s(r.ops['validate'].wall)} | {_s(cold)} "
            f"| {_s(r.ops['plan'].wall)} | {_s(r.ops['plan-edit'].wall)} | {base} | {ratio} "
            f"| {r.ops['plan'].wall / cold:.2f} | {r.ops['plan-edit'].wall / cold:.2f} | {peak:.0f} MB |"
        )
    return head + "\n".join(lines) + "\n"


def stage_table(rows: Sequence[Row]) -> str:
    head = (
        "| tenants | run | wall | CPU (Python + kustomize) | load + rules | render | kustomize (wait) "
        "| validate | write / diff | cache hits / misses | shards |\n"
        "| ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n"
    )
    lines = []
    for r in rows:
        for op in OPERATIONS:
            m = r.ops[op]
            st = m.report["stages"]
            lines.append(
                f"| {r.tenants:,} | {LABELS[op]} | {_s(m.wall)} | {_s(m.report['cpu_python'])} + "
                f"{_s(m.report['cpu_kustomize'])} | "
                + " | ".join(_s(st[s]) for s in STAGES)
                + f" | {m.report['hits']} / {m.report['misses']} | {m.report['shards']} |"
            )
    return head + "\n".join(lines) + "\n"


def cpu_stage_table(rows: Sequence[Row]) -> str:
    """Per fleet size, one row per stage: wall and CPU (Python process + children) of the cold render,
    the plan with nothing changed and the plan after one edit, from the same run."""
    ops = ("render", "plan", "plan-edit")
    out = []
    for r in rows:
        out.append(
            f"{r.tenants:,} tenants, seconds: wall / CPU of the Python process (+ kustomize when any)\n\n"
            "| stage | " + " | ".join(LABELS[op] for op in ops) + " |\n| --- |" + " ---: |" * len(ops)
        )
        totals = {op: [0.0, 0.0, 0.0] for op in ops}
        for stage, label in STAGE_NAMES.items():
            cells = []
            for op in ops:
                report = r.ops[op].report
                wall = report["wall"].get(stage, 0.0)
                own, kids = report["cpu"].get(stage, (0.0, 0.0))
                for i, v in enumerate((wall, own, kids)):
                    totals[op][i] += v
                cells.append(f"{wall:.3f} / {own:.3f}" + (f" + {kids:.2f}" if kids >= 0.005 else ""))
            out.append(f"| {label} | " + " | ".join(cells) + " |")
        cells = [
            f"**{t[0]:.3f} / {t[1]:.3f}**" + (f" **+ {t[2]:.2f}**" if t[2] >= 0.005 else "")
            for t in totals.values()
        ]
        out.append("| all stages | " + " | ".join(cells) + " |")
        cells = [
            f"{r.ops[op].wall:.3f} / {r.ops[op].report['cpu_python']:.3f}"
            + (
                f" + {r.ops[op].report['cpu_kustomize']:.2f}"
                if r.ops[op].report["cpu_kustomize"] >= 0.005
                else ""
            )
            for op in ops
        ]
        out.append("| the process (start-up, imports included) | " + " | ".join(cells) + " |\n")
    return "\n".join(out) + "\n"


def floor(rows: Sequence[Row]) -> str:
    """What kustomize alone costs in each cold render, spread over every core: no cold render on this
    machine can be faster while kustomize does that work, whatever the Python side does."""
    cores = os.cpu_count() or 1
    out = []
    for r in rows:
        cold = r.ops["render"]
        kustomize = cold.report["cpu_kustomize"]
        line = (
            f"{r.tenants:,} tenants: kustomize ran {kustomize:.1f} CPU-s in the cold render, "
            f"{kustomize / cores:.2f} s on {cores} cores at best (the cold render took {_s(cold.wall)}, "
            f"its Python process {cold.report['cpu_python']:.1f} CPU-s)"
        )
        if r.baseline is not None:
            line += f"; 1/15 of the naive builds is {_s(r.baseline.wall / 15)}"
        out.append(line)
    return "\n".join(out) + ("\n" if out else "")


def scaling(rows: Sequence[Row]) -> str:
    by = {r.tenants: r for r in rows}
    out = []
    for small, large in ((100, 1000), (1000, 5000)):
        if small in by and large in by:
            a, b = by[small].ops["render"].wall, by[large].ops["render"].wall
            out.append(
                f"cold render {large:,} / {small:,} tenants: {b / a:.2f}x (for {large // small}x the tenants)"
            )
    return "\n".join(out) + ("\n" if out else "")


def _load() -> str:
    """The 1-, 5- and 15-minute load averages: how shared the machine was."""
    return " ".join(f"{v:.2f}" for v in os.getloadavg())


def machine() -> str:
    mem = 0
    with open("/proc/meminfo", encoding="ascii") as f:
        for line in f:
            if line.startswith("MemTotal:"):
                mem = int(line.split()[1]) // 1024
    return (
        f"{os.cpu_count()} cores ({platform.processor() or platform.machine()}), {mem / 1024:.0f} GiB RAM, "
        f"{platform.system()} {platform.release()}, Python {platform.python_version()}, "
        f"{tool_version()}, {datetime.datetime.now(datetime.UTC).strftime('%Y-%m-%d %H:%M UTC')}"
    )


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.run", description=__doc__.split("\n\n")[0])
    p.add_argument("--tenants", type=int, nargs="+", default=[10, 100, 1000, 5000])
    p.add_argument(
        "--baseline-cap",
        nargs="+",
        default=["120"],
        metavar="[TENANTS:]SECONDS",
        help="seconds before the baseline is stopped (default 120; 0: not run), "
        "for one fleet size with TENANTS:SECONDS, e.g. --baseline-cap 120 1000:900",
    )
    p.add_argument(
        "--schemas", type=Path, default=None, help="Kueue CRDs (default: $GPUTENANCY_SCHEMAS, ../shared)"
    )
    p.add_argument(
        "--workdir", type=Path, default=None, help="where fleets are written (default: a temporary dir)"
    )
    p.add_argument("--seed", type=int, default=1)
    p.add_argument(
        "--repeat",
        type=int,
        default=3,
        help="runs of each plan, the median kept (default 3; the edited plan restarts from the same cache)",
    )
    p.add_argument(
        "--baseline",
        choices=("per-cluster", "one"),
        default="per-cluster",
        help="the naive baseline: one kustomize build per cluster of its generated/ objects (default), "
        "or one build of every object",
    )
    p.add_argument("--measure", choices=OPERATIONS, help=argparse.SUPPRESS)
    p.add_argument("--root", type=Path, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.measure:
        from gputenancy import engine

        with engine.without_cycle_collection():  # as the command line runs every command
            report = measure(args.measure, args.root, args.schemas)
        print(json.dumps(report))
        return 0
    schemas = args.schemas
    if schemas is None:
        env = os.environ.get("GPUTENANCY_SCHEMAS")
        shared = Path(__file__).resolve().parent.parent.parent / "shared"
        schemas = Path(env) if env else shared if (shared / "kueue").is_dir() else None
    caps: dict[int, float] = {0: 120.0}
    for value in args.baseline_cap:
        size, _, seconds = value.rpartition(":")
        caps[int(size) if size else 0] = float(seconds)
    rows = []
    load_before = _load()
    with tempfile.TemporaryDirectory(prefix="gputenancy-bench-") as tmp:
        work = args.workdir or Path(tmp)
        for n in args.tenants:
            print(f"benchmarking {n} tenants ...", file=sys.stderr)
            rows.append(
                bench_one(
                    n,
                    work,
                    schemas,
                    caps.get(n, caps[0]),
                    args.seed,
                    args.baseline == "per-cluster",
                    max(1, args.repeat),
                )
            )
    print(f"Machine: {machine()}\n")
    print(f"Kueue CRD schemas: {schemas or 'none (CRD validation skipped)'}\n")
    print(table(rows))
    print(stage_table(rows))
    print(cpu_stage_table(rows))
    print(f"load average before / after: {load_before} / {_load()}\n")
    print(scaling(rows))
    print(baseline_lines(rows))
    print(floor(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
