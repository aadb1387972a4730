"""Benchmark `admit --from` on a synthetic fleet: what one job costs against what reading the cluster costs.

    python -m bench.admit [--tenants 1000] [--jobs 200] [--out DIR]

Writes the fleet (`bench.fleet`, seed 1), renders it once, and makes a `kubectl get -o yaml`-shaped dump of
one cluster from its generated/ objects (every ClusterQueue with a status holding half of its nominal quota).
Then, each in a fresh Python process, times `admit --from` for one job and for --jobs jobs (one per tenant
namespace, round robin, each using the tenant's first claim template), and `admit` without --from for the
same jobs. Printed as ratios of one run (per-job cost over the fixed cost, --from over without), in Markdown.
Nothing here is a test.
"""

from __future__ import annotations

import argparse
import copy
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from bench import fleet
from gputenancy.inputs.quantity import Quantity, parse

CLUSTER = "us-east"
REPO = Path(__file__).resolve().parent.parent


def _objects(root: Path) -> list[dict[str, Any]]:
    out = []
    for path in sorted((root / "generated" / CLUSTER).rglob("*.yaml")):
        out.extend(d for d in yaml.safe_load_all(path.read_text()) if isinstance(d, dict))
    return out


def _half(value: Any) -> str:
    q = parse(value)
    return Quantity((q.value / 2).to_integral_value(), q.format).canonical()


def _dump(objects: list[dict[str, Any]], path: Path) -> None:
    items = []
    for body in objects:
        if body.get("kind") == "ClusterQueue":
            flavors = []
            for group in body["spec"].get("resourceGroups") or []:
                for f in group.get("flavors") or []:
                    resources = [
                        {"name": r["name"], "total": _half(r["nominalQuota"]), "borrowed": "0"}
                        for r in f.get("resources") or []
                    ]
                    flavors.append({"name": f["name"], "resources": resources})
            body = {**body, "status": {"flavorsReservation": flavors, "flavorsUsage": copy.deepcopy(flavors)}}
        items.append(body)
    path.write_text(
        "# kubectl get ... -A -o yaml\n"
        + yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": items})
    )


def _jobs(objects: list[dict[str, Any]], n: int, path: Path) -> None:
    templates: dict[str, str] = {}
    for body in objects:
        if body.get("kind") == "ResourceClaimTemplate":
            templates.setdefault(body["metadata"]["namespace"], body["metadata"]["name"])
    queues = [
        (b["metadata"]["namespace"], b["metadata"]["name"]) for b in objects if b.get("kind") == "LocalQueue"
    ]
    docs = []
    for i in range(n):
        ns, q = queues[i % len(queues)]
        spec: dict[str, Any] = {
            "restartPolicy": "Never",
            "containers": [
                {"name": "main", "image": "x", "resources": {"requests": {"cpu": "1", "memory": "4Gi"}}}
            ],
        }
        if ns in templates:
            spec["resourceClaims"] = [{"name": "gpu", "resourceClaimTemplateName": templates[ns]}]
        docs.append(
            {
                "apiVersion": "batch/v1",
                "kind": "Job",
                "metadata": {"name": f"job-{i}", "namespace": ns, "labels": {"kueue.x-k8s.io/queue-name": q}},
                "spec": {"template": {"spec": spec}},
            }
        )
    path.write_text(yaml.safe_dump_all(docs))


def _time(args: list[str]) -> float:
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, str(REPO / "pipeline.py"), *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
    )
    elapsed = time.perf_counter() - start
    if "ADMITTED" not in done.stdout or ": error: " in done.stdout + done.stderr:
        raise SystemExit(f"admit failed ({done.returncode}):\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
    return elapsed


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--tenants", type=int, default=1000)
    p.add_argument("--jobs", type=int, default=200)
    p.add_argument("--out", type=Path, default=None)
    a = p.parse_args(argv)
    out = a.out or Path(tempfile.mkdtemp(prefix="admit-bench-"))
    if not (out / "tenants").exists():
        fleet.generate(out, a.tenants)
        subprocess.run(
            [sys.executable, str(REPO / "pipeline.py"), "--root", str(out), "render", "--cluster", CLUSTER],
            cwd=REPO,
            check=True,
            capture_output=True,
        )
    objects = _objects(out)
    _dump(objects, out / "dump.yaml")
    _jobs(objects, 1, out / "one.yaml")
    _jobs(objects, a.jobs, out / "many.yaml")
    base = ["--root", str(out), "admit", "--cluster", CLUSTER]
    one = _time([*base, str(out / "one.yaml"), "--from", str(out / "dump.yaml")])
    many = _time([*base, str(out / "many.yaml"), "--from", str(out / "dump.yaml")])
    plain = _time([*base, str(out / "many.yaml")])
    per_job = (many - one) / max(a.jobs - 1, 1)
    print(
        f"admit on {a.tenants} tenants (cluster {CLUSTER}, {sum(1 for o in objects if o.get('kind') == 'ClusterQueue')} ClusterQueues)\n"
    )
    print("| measure | ratio |\n| --- | --- |")
    print(f"| one more job / admit --from of one job | {per_job / one:.4f} |")
    print(f"| admit --from of {a.jobs} jobs / of one job | {many / one:.2f} |")
    print(f"| admit --from / admit without --from ({a.jobs} jobs) | {many / plain:.2f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
