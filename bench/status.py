"""`status` on a synthetic fleet: what reading a cluster costs beside rendering it.

    python -m bench.status [--tenants 1000] [--schemas DIR] [--out DIR]

Writes a fleet (`bench.fleet`), renders it (generated/ written), and builds the dump of its largest
cluster from the rendered output as the API server returns it: every object of generated/<cluster>/
with server-owned metadata and Argo CD's managedFields, ClusterQueues with a status (usage on every
flavor), the tenants' and the system's namespaces, one ResourceSlice per eight declared devices, one
admitted Workload per tenant, the manager's ConfigMap and Deployment; then drift on 1% of the
ClusterQueues (a quota raised by `kubectl-edit`) and one LocalQueue deleted. It measures, in this one
process and one run (each step twice, the shorter kept): reading the dump, `status` from the dump (read, compare, devices, teams), and a
`plan` with nothing changed on the same fleet (render from the warm cache and compare with generated/),
and prints the ratios side by side. Nothing here is a test.
"""

from __future__ import annotations

import argparse
import copy
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from bench import fleet

_DUMPER: Any = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
META = {
    "uid": "00000000-0000-0000-0000-000000000000",
    "resourceVersion": "1",
    "creationTimestamp": "2026-01-01T00:00:00Z",
}


def _server(body: dict[str, Any], manager: str = "argocd-controller") -> dict[str, Any]:
    out = copy.deepcopy(body)
    meta = out.setdefault("metadata", {})
    meta.update(META)
    meta["managedFields"] = [
        {
            "apiVersion": out.get("apiVersion", "v1"),
            "fieldsType": "FieldsV1",
            "fieldsV1": {"f:spec": {k: {} for k in (f"f:{key}" for key in (out.get("spec") or {}))}},
            "manager": manager,
            "operation": "Apply",
            "time": "2026-01-01T00:00:00Z",
        }
    ]
    return out


def _status(cq: dict[str, Any]) -> None:
    flavors = [
        {
            "name": f["name"],
            "resources": [
                {"name": r["name"], "total": "1", "borrowed": "0"} for r in f.get("resources") or []
            ],
        }
        for g in cq["spec"].get("resourceGroups") or []
        for f in g.get("flavors") or []
    ]
    cq["status"] = {
        "admittedWorkloads": 1,
        "pendingWorkloads": 0,
        "reservingWorkloads": 1,
        "flavorsUsage": flavors,
        "flavorsReservation": copy.deepcopy(flavors),
        "conditions": [
            {"type": "Active", "status": "True", "reason": "Ready", "message": "Can admit new workloads"}
        ],
    }


def build_dump(root: Path, cluster: str, out: Path) -> int:
    """The dump of `cluster` as described above; returns the number of objects."""
    from gputenancy.engine import check_only
    from gputenancy.live import git, status

    model, _ = check_only(root, cluster)
    side = git.read(root, cluster)
    items: list[dict[str, Any]] = []
    for ns in sorted(status.expected_namespaces(model, cluster) | {"kube-system", "default"}):
        items.append(
            _server({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}, "kubectl-create")
        )
    queues, deleted = 0, False
    for o in side.objects:
        body = _server(dict(o.body))
        if o.kind == "ClusterQueue":
            queues += 1
            _status(body)
            if queues % 100 == 1:  # drift: a quota raised by hand
                res = body["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]
                res["nominalQuota"] = str(int(float(str(res["nominalQuota"]).rstrip("Gi") or 0)) + 1) + (
                    "Gi" if str(res["nominalQuota"]).endswith("Gi") else ""
                )
                body["metadata"]["managedFields"].append(
                    {
                        "apiVersion": body["apiVersion"],
                        "fieldsType": "FieldsV1",
                        "fieldsV1": {"f:spec": {"f:resourceGroups": {}}},
                        "manager": "kubectl-edit",
                        "operation": "Update",
                        "time": "2026-01-02T00:00:00Z",
                    }
                )
            items.append(body)
            ns = (
                (body["spec"].get("namespaceSelector") or {})
                .get("matchExpressions", [{}])[0]
                .get("values", ["default"])[0]
            )
            items.append(
                _server(
                    {
                        "apiVersion": "kueue.x-k8s.io/v1beta2",
                        "kind": "Workload",
                        "metadata": {"name": f"job-{o.name}", "namespace": ns},
                        "spec": {"queueName": o.name, "podSets": []},
                        "status": {
                            "admission": {"clusterQueue": o.name},
                            "conditions": [
                                {"type": "QuotaReserved", "status": "True"},
                                {"type": "Admitted", "status": "True"},
                            ],
                        },
                    },
                    "kueue",
                )
            )
        elif o.kind == "LocalQueue" and not deleted:
            deleted = True  # drift: the first LocalQueue deleted
        else:
            items.append(body)
    record = model.clusters[cluster]
    slices = 0
    for cap in record.capacity:
        for name, amount, _ in cap.devices:
            for node in range(max(1, int(amount.value) // 8)):
                slices += 1
                items.append(
                    _server(
                        {
                            "apiVersion": "resource.k8s.io/v1",
                            "kind": "ResourceSlice",
                            "metadata": {"name": f"{cap.flavor}-{name}-{node}"[:200]},
                            "spec": {
                                "driver": "gpu.nvidia.com",
                                "nodeName": f"{cap.flavor}-node-{node}",
                                "pool": {
                                    "name": f"{cap.flavor}-node-{node}",
                                    "generation": 1,
                                    "resourceSliceCount": 1,
                                },
                                "devices": [
                                    {
                                        "name": f"gpu-{i}",
                                        "attributes": {
                                            "type": {"string": "gpu"},
                                            "productName": {"string": "NVIDIA H100 80GB HBM3"},
                                        },
                                    }
                                    for i in range(8)
                                ],
                            },
                        },
                        "oracle-harness",
                    )
                )
    if side.config is not None:
        items.append(
            _server(
                {
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "metadata": {"name": "kueue-manager-config", "namespace": "kueue-system"},
                    "data": {"controller_manager_config.yaml": side.config.text},
                }
            )
        )
        items.append(
            _server(
                {
                    "apiVersion": "apps/v1",
                    "kind": "Deployment",
                    "metadata": {"name": "kueue-controller-manager", "namespace": "kueue-system"},
                    "spec": {
                        "template": {
                            "metadata": {
                                "annotations": {"gputenancy.io/kueue-config-checksum": side.config.checksum}
                            }
                        }
                    },
                }
            )
        )
    text = "# kubectl get ...\n" + yaml.dump(
        {"apiVersion": "v1", "kind": "List", "items": items}, Dumper=_DUMPER, sort_keys=False
    )
    out.write_text(text, encoding="utf-8")
    return len(items)


def _timed(fn: Any) -> tuple[float, Any]:
    started = time.perf_counter()
    result = fn()
    return time.perf_counter() - started, result


def _best(fn: Any, runs: int = 2) -> tuple[float, Any]:
    """The shorter of `runs` timings (the machine is shared: the shorter is the one less disturbed)."""
    timings = [_timed(fn) for _ in range(runs)]
    return min(timings, key=lambda t: t[0])


def run(tenants: int, out: Path, schemas: Path | None) -> str:
    from gputenancy import engine
    from gputenancy.assemble import output, swap
    from gputenancy.cluster.dump import read_dump
    from gputenancy.deliver import plan
    from gputenancy.live import status

    made = fleet.generate(out, tenants)
    result = engine.run(out, schemas=schemas)
    swap.write_trees(out, out / output.GENERATED, {n: c.tree for n, c in result.clusters.items()}, prune=True)
    cluster = max(made.placements, key=lambda c: made.placements[c])
    dump_path = out / f"{cluster}-dump.yaml"
    objects = build_dump(out, cluster, dump_path)
    with engine.without_cycle_collection():

        def no_change() -> Any:
            again = engine.run(out, cluster=cluster, schemas=schemas)
            trees, label = plan.read_against(out, None)
            return plan.build(again, trees, label=label, cluster=cluster)

        plan_s, made_plan = _best(no_change)
        status_s, found = _best(
            lambda: status.build(out, read_dump(dump_path), cluster=cluster, schemas=schemas)
        )
        read_s, dump = _best(lambda: read_dump(dump_path))
        model_s, (model, _) = _best(lambda: engine.check_only(out, cluster))
        rest_s, _ = _best(lambda: status.of(out, model, dump, cluster=cluster, schemas=schemas))
    size = dump_path.stat().st_size / 2**20
    lines = [
        f"status on {tenants} tenants: cluster {cluster}, {made.placements[cluster]} tenants on it, "
        f"{objects} objects in the dump ({size:.1f} MiB); {len(found.drifted)} differences found, "
        f"plan: {sum(len(c.objects) for c in made_plan.clusters)} changed objects",
        "",
        "| step | seconds | x plan (no change) |",
        "| --- | ---: | ---: |",
        f"| plan, nothing changed (render from the warm cache, compare) | {plan_s:.2f} | 1.00 |",
        f"| status from the dump (all of it) | {status_s:.2f} | {status_s / plan_s:.2f} |",
        f"| of which: reading the dump | {read_s:.2f} | {read_s / plan_s:.2f} |",
        f"| of which: loading the model (check_only) | {model_s:.2f} | {model_s / plan_s:.2f} |",
        f"| of which: the rest (generated/, compare, devices, teams) | {rest_s:.2f} | {rest_s / plan_s:.2f} |",
    ]
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.status", description=__doc__.split("\n\n")[0])
    p.add_argument("--tenants", type=int, default=1000, help="fleet size (default 1000)")
    p.add_argument(
        "--schemas", type=Path, default=None, help="Kueue CRDs (to fill defaults before comparing)"
    )
    p.add_argument(
        "--out", type=Path, default=None, help="directory for the fleet (default: a temporary one)"
    )
    args = p.parse_args(argv)
    if args.out is not None:
        print(run(args.tenants, args.out, args.schemas), end="")
        return 0
    with tempfile.TemporaryDirectory(prefix="bench-status-") as tmp:
        print(run(args.tenants, Path(tmp), args.schemas), end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
