"""A synthetic fleet: a complete repository root (tenants/, base/, overlays/) of N tenants.

    python -m bench.fleet --tenants 1000 --out /tmp/fleet [--seed 1]

The mix is deterministic for a seed and resembles a large platform: three clusters (two with a
tenant Component, so shards really run kustomize; one Helm-installed Kueue without one), 2-4
namespaces per tenant, whole-GPU and MIG device classes (one declared by tenants rather than the
platform), 1-3 claim templates per namespace, a cohort tree with borrowing and lending, and
capacity computed from the budgets so that every budget fits. The result passes
`python pipeline.py --root DIR validate`.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import random
import shutil
import sys
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

SCHEMA = "# yaml-language-server: $schema=https://gputenancy.io/schemas/{}.schema.json\n"
API = "gputenancy.io/v1"
WORDS = (
    "vision",
    "speech",
    "nlp",
    "search",
    "ads",
    "recsys",
    "robotics",
    "genomics",
    "fraud",
    "maps",
    "video",
    "music",
    "safety",
    "infra",
    "weather",
    "chem",
)
NAMESPACE_SUFFIXES = ("train", "eval", "serve", "dev", "batch", "infer")
MIG_SELECTOR = (
    "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'mig' && "
    "device.attributes['gpu.nvidia.com'].profile == '{}'"
)
GPU = "gpu.nvidia.com"
MIG_1G = "mig-1g.10gb.nvidia.com"
MIG_2G = "mig-2g.20gb.nvidia.com"  # declared by tenants, not by the platform
MIG_3G = "mig-3g.40gb.nvidia.com"
RESOURCE_OF = {
    GPU: "nvidia.com/gpu",
    MIG_1G: "nvidia.com/mig-1g.10gb",
    MIG_2G: "nvidia.com/mig-2g.20gb",
    MIG_3G: "nvidia.com/mig-3g.40gb",
}
MIG_2G_DECLARATION = {
    "name": MIG_2G,
    "resource": RESOURCE_OF[MIG_2G],
    "selectors": [MIG_SELECTOR.format("2g.20gb")],
}
PRODUCT = {
    "h100": "device.attributes['gpu.nvidia.com'].productName == 'NVIDIA H100 80GB HBM3'",
    "l4": "device.attributes['gpu.nvidia.com'].productName == 'NVIDIA L4'",
}


@dataclasses.dataclass(frozen=True)
class ClusterSpec:
    name: str
    kubernetes: str
    kueue: str
    install: str
    flavors: tuple[str, ...]
    component: bool
    weight: float


CLUSTERS = (
    ClusterSpec("us-east", "1.35", "v0.19.2", "manifests", ("h100", "a100-mig"), True, 0.45),
    ClusterSpec("eu-west", "1.35", "v0.19.2", "manifests", ("h100", "a100-mig", "l4"), True, 0.35),
    ClusterSpec("ap-south", "1.36", "v0.18.1", "helm", ("a100-mig", "l4"), False, 0.20),
)
COHORTS = ("research", "product", "infra", "batch")

KUEUE_CONFIG = """\
apiVersion: config.kueue.x-k8s.io/v1beta2
kind: Configuration
health:
  healthProbeBindAddress: :8081
metrics:
  bindAddress: :8443
webhook:
  port: 9443
leaderElection:
  leaderElect: true
  resourceName: c1f6bfd2.kueue.x-k8s.io
controller:
  groupKindConcurrency:
    Job.batch: 5
    Pod: 5
    Workload.kueue.x-k8s.io: 5
    LocalQueue.kueue.x-k8s.io: 1
    ClusterQueue.kueue.x-k8s.io: 1
    ResourceFlavor.kueue.x-k8s.io: 1
clientConnection:
  qps: 50
  burst: 100
integrations:
  frameworks:
    - batch/job
    - jobset.x-k8s.io/jobset
    - ray.io/rayjob
"""

PRIORITY_CLASSES = """\
apiVersion: kueue.x-k8s.io/v1beta2
kind: WorkloadPriorityClass
metadata:
  name: production
value: 1000
description: Serving and deadline-bound training.
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: WorkloadPriorityClass
metadata:
  name: batch
value: 100
description: Best-effort experiments.
"""


@dataclasses.dataclass
class Fleet:
    """What was written: the root, tenant names and the number of tenant placements per cluster."""

    root: Path
    tenants: list[str]
    placements: dict[str, int]


def _dump(header: str, data: Any) -> str:
    return header + yaml.safe_dump(data, sort_keys=False, default_flow_style=None, width=120)


def _amount(rng: random.Random, nominal: int, cohort: str | None) -> Any:
    roll = rng.random()
    if cohort is None or roll < 0.6:
        return nominal
    if roll < 0.85:
        return {"nominal": nominal, "borrowingLimit": max(1, nominal // 2)}
    return {"nominal": nominal, "lendingLimit": max(0, nominal // 2)}


def _flavor_budget(
    rng: random.Random, flavor: str, cohort: str | None, mig_2g: bool
) -> tuple[dict[str, Any], dict[str, int], dict[str, int]]:
    """One flavor budget, its device counts by class and its cpu (cores) / memory (Gi) nominal."""
    devices: dict[str, int] = {}
    if flavor in ("h100", "l4"):
        devices[GPU] = rng.choice((1, 1, 2, 2, 4, 8))
    else:
        devices[MIG_1G] = rng.randint(1, 7)
        if rng.random() < 0.5:
            devices[MIG_3G] = rng.randint(1, 2)
        if mig_2g:
            devices[MIG_2G] = rng.randint(1, 3)
    units = sum(devices.values())
    res = {"cpu": 8 * units, "memory": 64 * units}
    body: dict[str, Any] = {
        "flavor": flavor,
        "devices": {name: _amount(rng, n, cohort) for name, n in devices.items()},
        "resources": {"cpu": _amount(rng, res["cpu"], cohort), "memory": f"{res['memory']}Gi"},
    }
    return body, devices, res


def _tenant(
    rng: random.Random, index: int, usage: dict[tuple[str, str, str], int]
) -> tuple[str, dict[str, Any], list[str]]:
    name = f"{WORDS[index % len(WORDS)]}-{index:05d}"
    count = 2 if rng.random() < 0.25 else 1
    picked: list[ClusterSpec] = []
    while len(picked) < count:
        c = rng.choices(CLUSTERS, weights=[c.weight for c in CLUSTERS])[0]
        if c not in picked:
            picked.append(c)
    picked.sort(key=CLUSTERS.index)
    cohort = rng.choice(COHORTS) if rng.random() < 0.7 else None
    mig_2g = rng.random() < 0.05
    namespaces = [f"{name}-{s}" for s in rng.sample(NAMESPACE_SUFFIXES, rng.randint(2, 4))]
    budgets: dict[str, list[dict[str, Any]]] = {}
    classes_on: dict[str, set[str]] = {}
    most: dict[str, dict[str, int]] = {}  # cluster -> class -> the largest nominal count of one flavor
    flavors_on: dict[str, list[str]] = {}
    for c in picked:
        flavors = sorted(rng.sample(c.flavors, rng.randint(1, min(2, len(c.flavors)))), key=c.flavors.index)
        flavors_on[c.name] = flavors
        entries = []
        classes: set[str] = set()
        for flavor in flavors:
            body, devices, res = _flavor_budget(rng, flavor, cohort, mig_2g)
            entries.append(body)
            classes.update(devices)
            for cls, n in devices.items():
                usage[(c.name, flavor, RESOURCE_OF[cls])] += n
                most.setdefault(c.name, {})[cls] = max(n, most.get(c.name, {}).get(cls, 0))
            usage[(c.name, flavor, "cpu")] += res["cpu"]
            usage[(c.name, flavor, "memory")] += res["memory"]
        budgets[c.name] = entries
        classes_on[c.name] = classes
    doc: dict[str, Any] = {"apiVersion": API, "kind": "Tenant", "name": name}
    doc["owners"] = [f"@acme/{name}"] + ([f"@acme-lead-{index % 97}"] if rng.random() < 0.3 else [])
    if rng.random() < 0.4:
        doc["description"] = f"{WORDS[index % len(WORDS)].capitalize()} team {index}: training and serving."
    if rng.random() < 0.02:
        doc["state"] = "draining"
    doc["clusters"] = [c.name for c in picked]
    doc["namespaces"] = namespaces
    if rng.random() < 0.1:
        doc["localQueueName"] = "jobs"
    if cohort is not None:
        doc["cohort"] = cohort
        doc["preemption"] = rng.choice(("none", "within-queue", "reclaim", "borrow"))
    if rng.random() < 0.2:
        doc["fairSharingWeight"] = rng.choice((2, "500m", "1500m"))
    if rng.random() < 0.1:
        doc["queueingStrategy"] = "StrictFIFO"
    if len(picked) == 1:
        doc["budgets"] = {"default": budgets[picked[0].name]}
    else:
        doc["budgets"] = {"clusters": budgets}
    if mig_2g:
        doc["deviceClasses"] = [dict(MIG_2G_DECLARATION)]
    every = sorted(set.intersection(*classes_on.values()), key=list(RESOURCE_OF).index)
    union = sorted(set.union(*classes_on.values()), key=list(RESOURCE_OF).index)
    claims = []
    for i in range(rng.randint(1, 3)):
        cls = rng.choice(every) if i == 0 and every else rng.choice(union)
        claim: dict[str, Any] = {"name": f"{cls.split('.')[0]}-x{i + 1}", "deviceClass": cls}
        where = [c.name for c in picked if cls in classes_on[c.name]]
        # a claim no flavor can hold would be refused (claim-admissible): at most one flavor's nominal count
        fits = min(most[c][cls] for c in where)
        count = min(rng.choice((1, 1, 2, 4, 8)), fits) if cls == GPU else 1
        if count != 1 or rng.random() < 0.3:
            claim["count"] = count
        if len(where) < len(picked):
            claim["clusters"] = where
        if i > 0 and rng.random() < 0.4:
            claim["namespaces"] = rng.sample(namespaces, rng.randint(1, len(namespaces) - 1))
        if cls == GPU and rng.random() < 0.3:
            products = {f for c in where for f in flavors_on[c] if f in PRODUCT}
            if len(products) == 1:
                claim["selectors"] = [PRODUCT[products.pop()]]
        claims.append(claim)
    doc["claimTemplates"] = claims
    return name, doc, [c.name for c in picked]


def _platform() -> dict[str, Any]:
    return {
        "apiVersion": API,
        "kind": "Platform",
        "kueueConfig": "kueue-config.yaml",
        "deviceClasses": [
            {"name": GPU, "resource": RESOURCE_OF[GPU]},
            {"name": MIG_1G, "resource": RESOURCE_OF[MIG_1G], "selectors": [MIG_SELECTOR.format("1g.10gb")]},
            {"name": MIG_3G, "resource": RESOURCE_OF[MIG_3G], "selectors": [MIG_SELECTOR.format("3g.40gb")]},
        ],
        "flavors": [
            {"name": "l4", "nodeLabels": {"nvidia.com/gpu.product": "NVIDIA-L4"}},
            {
                "name": "h100",
                "nodeLabels": {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"},
                "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
            },
            {
                "name": "a100-mig",
                "nodeLabels": {
                    "nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB",
                    "nvidia.com/mig.config": "all-balanced",
                },
                "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
            },
        ],
        "cohorts": [
            {"name": "org"},
            *({"name": n, "parent": "org"} for n in COHORTS[:3]),
            {"name": "batch", "fairSharingWeight": "500m"},
        ],
        "owners": ["@acme/gpu-platform"],
    }


def _cluster(spec: ClusterSpec, usage: dict[tuple[str, str, str], int]) -> dict[str, Any]:
    kueue: dict[str, Any] = {"version": spec.kueue, "install": spec.install}
    if spec.install == "helm":
        kueue["helm"] = {"repoURL": "registry.k8s.io/kueue/charts", "chart": "kueue", "releaseName": "kueue"}
    kueue["config"] = {"waitForPodsReady": {"timeout": "10m", "blockAdmission": False}}
    capacity = []
    for flavor in spec.flavors:
        devices: dict[str, int] = {}
        for cls, resource in RESOURCE_OF.items():
            used = usage.get((spec.name, flavor, resource), 0)
            if used or (cls == GPU and flavor != "a100-mig"):
                devices[cls] = max(8, math.ceil(used * 1.25 / 8) * 8)
        cpu = max(64, math.ceil(usage.get((spec.name, flavor, "cpu"), 0) * 1.25))
        memory = max(256, math.ceil(usage.get((spec.name, flavor, "memory"), 0) * 1.25))
        entry: dict[str, Any] = {"flavor": flavor}
        if devices:
            entry["devices"] = devices
        entry["resources"] = {"cpu": cpu, "memory": f"{memory}Gi"}
        capacity.append(entry)
    body = {
        "apiVersion": API,
        "kind": "Cluster",
        "name": spec.name,
        "kubernetesVersion": spec.kubernetes,
        "kueue": kueue,
        "capacity": capacity,
        "argocd": {"name": spec.name},
    }
    return body


def _overlay(spec: ClusterSpec) -> str:
    text = (
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n"
        "  - ../../base\n  - _platform\nlabels:\n  - pairs:\n"
        f"      gputenancy.io/cluster: {spec.name}\n"
    )
    if "h100" in spec.flavors:
        text += (
            "patches:\n  - target:\n      kind: ResourceFlavor\n      name: h100\n    patch: |-\n"
            "      - op: add\n        path: /spec/nodeLabels/cloud.google.com~1gke-nodepool\n"
            "        value: h100-pool\n"
        )
    return text


def _component(spec: ClusterSpec) -> str:
    return (
        "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\nlabels:\n  - pairs:\n"
        f"      gputenancy.io/cluster: {spec.name}\ncommonAnnotations:\n"
        f"  gputenancy.io/region: {spec.name}\n"
    )


def generate(out: Path, tenants: int, *, seed: int = 1) -> Fleet:
    """Write a fleet of `tenants` tenants under `out` (tenants/, base/, overlays/ must not exist)."""
    for sub in ("tenants", "base", "overlays"):
        if (out / sub).exists():
            raise FileExistsError(f"{out / sub} exists; choose an empty directory")
    rng = random.Random(seed)
    usage: dict[tuple[str, str, str], int] = defaultdict(int)
    placements: dict[str, int] = defaultdict(int)
    names = []
    (out / "tenants").mkdir(parents=True)
    for i in range(1, tenants + 1):
        name, doc, clusters = _tenant(rng, i, usage)
        names.append(name)
        for c in clusters:
            placements[c] += 1
        (out / "tenants" / f"{name}.yaml").write_text(_dump(SCHEMA.format("tenant"), doc), encoding="utf-8")
    base = out / "base"
    base.mkdir()
    (base / "platform.yaml").write_text(_dump(SCHEMA.format("platform"), _platform()), encoding="utf-8")
    (base / "kueue-config.yaml").write_text(KUEUE_CONFIG, encoding="utf-8")
    (base / "workloadpriorityclasses.yaml").write_text(PRIORITY_CLASSES, encoding="utf-8")
    (base / "kustomization.yaml").write_text(
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n"
        "resources:\n  - workloadpriorityclasses.yaml\n",
        encoding="utf-8",
    )
    for spec in CLUSTERS:
        overlay = out / "overlays" / spec.name
        overlay.mkdir(parents=True)
        (overlay / "cluster.yaml").write_text(
            _dump(SCHEMA.format("cluster"), _cluster(spec, usage)), encoding="utf-8"
        )
        (overlay / "kustomization.yaml").write_text(_overlay(spec), encoding="utf-8")
        if spec.component:
            (overlay / "tenants").mkdir()
            (overlay / "tenants" / "kustomization.yaml").write_text(_component(spec), encoding="utf-8")
    return Fleet(out, names, dict(placements))


def edit_one(root: Path, name: str | None = None) -> str:
    """Change one tenant so that its rendered objects change (the count of its first claim template, one
    less, or a selector added or removed when it asks for one device); returns the tenant's name. Budgets
    and capacity are untouched, so the fleet stays valid."""
    paths = sorted((root / "tenants").glob("*.yaml"))
    path = root / "tenants" / f"{name}.yaml" if name else paths[len(paths) // 2]
    text = path.read_text(encoding="utf-8")
    header, _, body = text.partition("\n")
    doc = yaml.safe_load(body)
    claim = doc["claimTemplates"][0]
    count = int(claim.get("count", 1))
    if count > 1:
        claim["count"] = count - 1
    elif claim.get("selectors"):
        del claim["selectors"]
    else:
        claim["selectors"] = ["device.driver == 'gpu.nvidia.com'"]
    path.write_text(header + "\n" + yaml.safe_dump(doc, sort_keys=False, default_flow_style=None, width=120))
    return str(doc["name"])


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.fleet", description=__doc__.split("\n\n")[0])
    p.add_argument("--tenants", type=int, required=True, help="number of tenants")
    p.add_argument(
        "--out", type=Path, default=None, help="directory to write the root into (default: ./fleet-N)"
    )
    p.add_argument("--seed", type=int, default=1, help="random seed (default 1)")
    p.add_argument("--force", action="store_true", help="replace tenants/, base/ and overlays/ under --out")
    args = p.parse_args(argv)
    if args.out is None:
        args.out = Path(f"fleet-{args.tenants}")
    if args.force:
        for sub in ("tenants", "base", "overlays", "generated"):
            shutil.rmtree(args.out / sub, ignore_errors=True)
    try:
        fleet = generate(args.out, args.tenants, seed=args.seed)
    except FileExistsError as exc:
        print(f"error: {exc} (or pass --force)", file=sys.stderr)
        return 1
    where = ", ".join(f"{c} {n}" for c, n in sorted(fleet.placements.items()))
    print(f"wrote {len(fleet.tenants)} tenants to {args.out} (placements: {where})")
    print(f"next: python pipeline.py --root {args.out} render (or plan, validate); python -m bench.run")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
