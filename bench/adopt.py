"""`import` on a large cluster, measured beside what it is made of, in one run.

    python -m bench.adopt                 # 100 and 1000 tenants
    python -m bench.adopt 1000 --schemas ../shared

For each size: a synthetic fleet (`bench.fleet`), its cluster `us-east` rendered and dumped as
`kubectl get -o yaml` would print it (the rendered objects of the imported kinds, the manager's
ConfigMap and Deployment), then, side by side: `render` of that cluster (cold, no cache), reading the
dump, and `import` into an empty repository (`init`) in memory (mapping, the round trip's renders and
comparisons), then writing its files. Each is a ratio to the cold render. Not a test: nothing here
is timed in CI.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

import yaml

from bench import fleet
from gputenancy import engine
from gputenancy.adopt import importing, init, output, sample
from gputenancy.cluster import dump as dumps

CLUSTER = "us-east"
T = TypeVar("T")


def _timed(fn: Callable[[], T]) -> tuple[T, float]:
    start = time.perf_counter()
    value = fn()
    return value, time.perf_counter() - start


def _dump(src: Path, schemas: Path | None, out: Path) -> int:
    result = engine.run(src, cluster=CLUSTER, schemas=schemas, cache=None)
    if result.failed:
        raise SystemExit(f"the fleet does not render: {[f.format() for f in result.findings][:3]}")
    listed = sample.rendered_list(result, CLUSTER, deployment=False)
    items: list[dict[str, Any]] = listed["items"]
    out.write_text(yaml.dump(listed, Dumper=yaml.CSafeDumper))
    return len(items)


def measure(tenants: int, schemas: Path | None) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="bench-adopt-") as tmp:
        base = Path(tmp)
        src = base / "fleet"
        fleet.generate(src, tenants)
        objects = _dump(src, schemas, base / "dump.yaml")
        _, render_s = _timed(lambda: engine.run(src, cluster=CLUSTER, schemas=schemas, cache=None))
        dump, read_s = _timed(lambda: dumps.read_dump(base / "dump.yaml"))
        root = base / "adopted"
        init.init(root, ["@bench/platform"])
        options = importing.Options(CLUSTER, kubernetes_version="1.35", schemas=schemas, allow_partial=True)
        outcome, import_s = _timed(lambda: importing.plan(root, dump, options))
        _, write_s = _timed(lambda: output.write(root, outcome.files))
        verdicts: dict[str, int] = {}
        for r in outcome.results:
            verdicts[r.verdict.value] = verdicts.get(r.verdict.value, 0) + 1
        return {
            "tenants": tenants,
            "objects": objects,
            "render": render_s,
            "read": read_s,
            "import": import_s,
            "write": write_s,
            "files": len(outcome.files),
            "verdicts": verdicts,
        }


def table(rows: Sequence[dict[str, Any]]) -> str:
    lines = [
        "| tenants | objects in the dump | render (cold) | read dump | import (map + round trip) | write | "
        "import / render | verdicts |",
        "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    for r in rows:
        verdicts = ", ".join(f"{n} {v}" for v, n in sorted(r["verdicts"].items()))
        lines.append(
            f"| {r['tenants']} | {r['objects']} | {r['render']:.2f} s | {r['read']:.2f} s | {r['import']:.2f} s "
            f"| {r['write']:.2f} s | {r['import'] / r['render']:.2f}x | {verdicts} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.adopt", description=__doc__.split("\n\n")[0])
    p.add_argument("sizes", nargs="*", type=int, default=[100, 1000], help="tenants per fleet")
    p.add_argument("--schemas", type=Path, default=None, help="Kueue CRDs (validation and defaults)")
    args = p.parse_args(argv)
    rows = [measure(n, args.schemas) for n in args.sizes]
    sys.stdout.write(table(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
