"""Classic HAMi vGPU budgets end to end: quotas in the units Kueue charges, the transformations in the
Kueue Configuration, and each mistake refused at its line through the command line."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import hamitree
import pytest
import trees
import yaml

from gputenancy.build import output
from gputenancy.check import configcheck
from gputenancy.cli import main
from gputenancy.findings import Origin

REPO = Path(__file__).resolve().parent.parent


def _queue(root: Path, name: str) -> dict[str, dict[str, Any]]:
    cq = yaml.safe_load((root / f"generated/site/clusterqueue/{name}.yaml").read_text())
    (group,) = cq["spec"]["resourceGroups"]
    (flavor,) = group["flavors"]
    return {r["name"]: r for r in flavor["resources"]} | {"covered": {"names": group["coveredResources"]}}


def _config(root: Path) -> dict[str, Any]:
    """The Configuration in the ConfigMap patch of the Kueue install Application (install: manifests)."""
    app = yaml.safe_load((root / "generated/site/_hub/application/argocd/kueue-site.yaml").read_text())
    (cm,) = [
        yaml.safe_load(p["patch"])
        for p in app["spec"]["source"]["kustomize"]["patches"]
        if "ConfigMap" in p["patch"]
    ]
    loaded: dict[str, Any] = yaml.safe_load(cm["data"]["controller_manager_config.yaml"])
    return loaded


def test_render_quotas_and_transformations(tmp_path: Path, shared: Path) -> None:
    root = hamitree.build(tmp_path)
    assert main(["--root", str(root), "render", "--schemas", str(shared)]) == 0
    nb = _queue(root, "notebooks")
    assert nb["covered"]["names"] == [
        "cpu",
        "memory",
        "nvidia.com/gpu",
        "nvidia.com/total-gpucores",
        "nvidia.com/total-gpumem",
    ]
    # 16000Mi is 16000 MiB, which the API server stores as "16k"; 150 percent is one and a half cards
    assert nb["nvidia.com/total-gpumem"] == {"name": "nvidia.com/total-gpumem", "nominalQuota": "16k"}
    assert nb["nvidia.com/total-gpucores"]["nominalQuota"] == "150"
    assert nb["nvidia.com/gpu"] == {"name": "nvidia.com/gpu", "nominalQuota": "4", "borrowingLimit": "2"}
    sv = _queue(root, "serving")
    assert sv["nvidia.com/total-gpumem"]["nominalQuota"] == "12288"  # 12Gi
    assert sv["nvidia.com/total-gpucores"] == {
        "name": "nvidia.com/total-gpucores",
        "nominalQuota": "50",
        "lendingLimit": "25",
    }
    config = _config(root)
    assert config["resources"]["transformations"] == [
        {
            "input": "nvidia.com/gpucores",
            "strategy": "Replace",
            "multiplyBy": "nvidia.com/gpu",
            "outputs": {"nvidia.com/total-gpucores": "1"},
        },
        {
            "input": "nvidia.com/gpumem",
            "strategy": "Replace",
            "multiplyBy": "nvidia.com/gpu",
            "outputs": {"nvidia.com/total-gpumem": "1"},
        },
    ]
    assert "deviceClassMappings" not in config["resources"]
    for version in ("v0.18.1", "v0.19.2"):
        assert configcheck.check_configuration(config, version, origin_of=lambda _: Origin("c")) == []
    assert main(["--root", str(root), "check", "--schemas", str(shared)]) == 0


def test_overridden_resource_names(tmp_path: Path) -> None:
    """Names overridden as in HAMi's chart reach the transformations and the ClusterQueues."""
    root = hamitree.build(tmp_path)
    names = {
        "resourceName": "acme.com/vgpu",
        "resourceMem": "acme.com/vgpu-mem",
        "resourceCores": "acme.com/vgpu-cores",
        "memoryQuota": "acme.com/vgpu-mem-total",
        "coresQuota": "acme.com/vgpu-cores-total",
    }
    trees.edit(root, "base/platform.yaml", lambda d: d["hami"][0].update(names))
    assert main(["--root", str(root), "render"]) == 0
    nb = _queue(root, "notebooks")
    assert nb["covered"]["names"] == [
        "cpu",
        "memory",
        "acme.com/vgpu",
        "acme.com/vgpu-cores-total",
        "acme.com/vgpu-mem-total",
    ]
    assert nb["acme.com/vgpu-mem-total"]["nominalQuota"] == "16k"
    tf = _config(root)["resources"]["transformations"]
    assert [(t["input"], t["multiplyBy"], list(t["outputs"])) for t in tf] == [
        ("acme.com/vgpu-cores", "acme.com/vgpu", ["acme.com/vgpu-cores-total"]),
        ("acme.com/vgpu-mem", "acme.com/vgpu", ["acme.com/vgpu-mem-total"]),
    ]


def _nb_hami(change: Callable[[dict[str, Any]], None]) -> Callable[[dict[str, Any]], None]:
    return lambda d: change(d["budgets"]["default"][0]["hami"])


def _template(change: Callable[[dict[str, Any]], None]) -> Callable[[dict[str, Any]], None]:
    return lambda d: change(d["vgpuTemplates"][0])


# (id, file, change, text on the blamed line, rule, words of the fix)
MISTAKES: list[tuple[str, str, Callable[[dict[str, Any]], None], str, str, str]] = [
    (
        "memory-not-mib",
        "tenants/notebooks.yaml",
        _nb_hami(lambda h: h.update(memory="48.5G")),
        "memory: 48.5G",
        "hami-units",
        "write 46253Mi or 46254Mi",
    ),
    (
        "memory-without-unit",
        "tenants/notebooks.yaml",
        _nb_hami(lambda h: h.update(memory=16000)),
        "memory: 16000",
        "hami-units",
        "write it with one: 16000Mi",
    ),
    (
        "cores-over-100-per-vgpu",
        "tenants/notebooks.yaml",
        _template(lambda t: t.update(cores=120)),
        "cores: 120",
        "hami-template",
        "vgpus: 2 with cores: 100",
    ),
    (
        "template-more-vgpus-than-cards",
        "tenants/serving.yaml",
        _template(lambda t: t.update(vgpus=3)),
        "- name: server",
        "hami-template",
        "t4-hami: 3 vGPUs need 3 cards, the flavor has 2",
    ),
    (
        "template-never-admitted",
        "tenants/serving.yaml",
        lambda d: (
            d["vgpuTemplates"][0].update(memory="7Gi")
            or d["budgets"]["default"][0]["hami"].update(memory={"nominal": "12Gi", "borrowingLimit": "1Gi"})
        ),
        "- name: server",
        "hami-template",
        "memory 14Gi > 13Gi (nvidia.com/total-gpumem); raise the budget or shrink the template",
    ),
    (
        "hami-on-non-hami-flavor",
        "tenants/serving.yaml",
        lambda d: d["budgets"]["default"][0].update(flavor="h100"),
        "hami:",
        "hami-flavor",
        "move the hami: budget to a HAMi flavor (flavors with HAMi on 'site': t4-hami)",
    ),
    (
        "pods-as-output",
        "base/platform.yaml",
        lambda d: d["hami"][0].update(memoryQuota="pods"),
        "memoryQuota: pods",
        "hami-names",
        "default memoryQuota: nvidia.com/total-gpumem",
    ),
    (
        "output-same-as-input",
        "base/platform.yaml",
        lambda d: d["hami"][0].update(coresQuota="nvidia.com/gpucores"),
        "coresQuota: nvidia.com/gpucores",
        "hami-names",
        "must be distinct",
    ),
    (
        "mapping-named-like-output",
        "base/kueue-config.yaml",
        lambda d: d.setdefault("resources", {}).update(
            deviceClassMappings=[{"name": "nvidia.com/total-gpumem", "deviceClassNames": ["mig.nvidia.com"]}]
        ),
        "- name: nvidia.com/total-gpumem",
        "hami-collision",
        "Map the DeviceClass to another name",
    ),
    (
        "duplicate-input",
        "base/kueue-config.yaml",
        lambda d: d.setdefault("resources", {}).update(
            transformations=[
                {
                    "input": "nvidia.com/gpumem",
                    "strategy": "Replace",
                    "multiplyBy": "nvidia.com/gpu",
                    "outputs": {"nvidia.com/total-gpumem": "1"},
                }
            ]
        ),
        "input: nvidia.com/gpumem",
        "hami-transformation",
        "Remove it here",
    ),
    (
        "output-named-pods",
        "base/kueue-config.yaml",
        lambda d: d.setdefault("resources", {}).update(
            transformations=[{"input": "example.com/slots", "outputs": {"pods": "1"}}]
        ),
        "pods: '1'",
        "hami-transformation",
        "name the output something else",
    ),
    (
        "exclude-prefix",
        "base/kueue-config.yaml",
        lambda d: d.setdefault("resources", {}).update(excludeResourcePrefixes=["nvidia.com/"]),
        "- nvidia.com/",
        "hami-transformation",
        "narrow the prefix",
    ),
    (
        "lending-over-nominal",
        "tenants/serving.yaml",
        _nb_hami(lambda h: h.update(cores={"nominal": 50, "lendingLimit": 60})),
        "lendingLimit: 60",
        "quota-limits",
        "hami.cores: lendingLimit 60 exceeds nominal 50",
    ),
    (
        "borrowing-without-cohort",
        "tenants/notebooks.yaml",
        lambda d: d.pop("cohort"),
        "borrowingLimit: 2",
        "cohort-required",
        "hami.vgpus: borrowingLimit/lendingLimit need a cohort",
    ),
    (
        "v1beta1-configuration",
        "base/kueue-config.yaml",
        lambda d: d.update(apiVersion="config.kueue.x-k8s.io/v1beta1"),
        "apiVersion: config.kueue.x-k8s.io/v1beta1",
        "hami-transformation",
        "write the base Configuration as config.kueue.x-k8s.io/v1beta2",
    ),
    (
        "template-unknown-cluster",
        "tenants/notebooks.yaml",
        _template(lambda t: t.update(clusters=["stie"])),
        "- stie",
        "hami-template",
        "names cluster 'stie', which has no overlay (known: site)",
    ),
    (
        "unknown-device",
        "overlays/site/cluster.yaml",
        lambda d: d["capacity"][0]["hami"].update(device="hami-a100"),
        "device: hami-a100",
        "hami-device",
        "known: hami",
    ),
]


@pytest.mark.parametrize(
    ("rel", "change", "needle", "rule", "fix"), [m[1:] for m in MISTAKES], ids=[m[0] for m in MISTAKES]
)
def test_mistake_located_with_fix(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    rel: str,
    change: Callable[[dict[str, Any]], None],
    needle: str,
    rule: str,
    fix: str,
) -> None:
    root = hamitree.build(tmp_path)
    assert main(["--root", str(root), "render"]) == 0
    before = output.read_tree(root / "generated")
    trees.edit(root, rel, change)
    capsys.readouterr()
    assert main(["--root", str(root), "render"]) == 1
    text = capsys.readouterr().out
    lines = (root / rel).read_text().splitlines()
    line = next(n for n, t in enumerate(lines, 1) if needle in t)
    found = [ln for ln in text.splitlines() if ln.startswith(f"{rel}:{line}:") and ln.endswith(f"({rule})")]
    assert found, text
    assert re.match(rf"^{re.escape(rel)}:{line}:\d+: error: ", found[0])
    assert any(fix in ln for ln in found), text
    assert "Traceback" not in text
    assert output.read_tree(root / "generated") == before


def test_collision_with_nvidia_dra_driver(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The NVIDIA DRA driver's gpu.nvidia.com (extendedResourceName nvidia.com/gpu) on the HAMi cluster."""
    root = hamitree.build(tmp_path)
    trees.edit(
        root, "overlays/site/cluster.yaml", lambda d: d["capacity"][1].update(devices={"gpu.nvidia.com": 8})
    )
    assert main(["--root", str(root), "validate"]) == 1
    text = capsys.readouterr().out
    line = next(
        n
        for n, t in enumerate((root / "overlays/site/cluster.yaml").read_text().splitlines(), 1)
        if "gpu.nvidia.com: 8" in t
    )
    assert f"overlays/site/cluster.yaml:{line}:" in text
    assert "both claim 'nvidia.com/gpu'" in text and "(hami-collision)" in text
    # the catalog's mapping of gpu.nvidia.com to nvidia.com/gpu is the same name as HAMi's resourceName
    assert "deviceClassMappings name 'nvidia.com/gpu'" in text


def test_hami_dra_memory_and_cores_refused_naming_version_and_gate(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = hamitree.build(tmp_path)

    def dra(d: dict[str, Any]) -> None:
        d["deviceClasses"].append({"name": "hami-core-gpu.project-hami.io", "resource": "hami.io/vgpu"})

    trees.edit(root, "base/platform.yaml", dra)
    # the T4s run HAMi through DRA instead of the device plugin
    trees.edit(
        root,
        "overlays/site/cluster.yaml",
        lambda d: (
            d["capacity"][0].update(devices={"hami-core-gpu.project-hami.io": 8})
            or d["capacity"][0].pop("hami")
        ),
    )
    assert main(["--root", str(root), "validate"]) == 1
    text = capsys.readouterr().out
    assert "(hami-dra)" in text
    assert "Kueue v0.19.2" in text
    assert "KueueDRAIntegrationConsumableCapacity is Alpha and off by default in Kueue v0.19" in text
    assert "devices: {hami-core-gpu.project-hami.io: 4}" in text
    assert text.count("(hami-dra)") == 2
    assert "(hami-flavor)" not in text

    # the device count through deviceClassMappings is what Kueue can charge: that renders
    def count_devices(d: dict[str, Any]) -> None:
        budget = d["budgets"]["default"][0]
        budget.pop("hami")
        budget["devices"] = {"hami-core-gpu.project-hami.io": 4}
        d.pop("vgpuTemplates")
        d["claimTemplates"] = [{"name": "vgpu", "deviceClass": "hami-core-gpu.project-hami.io"}]

    for name in ("notebooks", "serving"):
        trees.edit(root, f"tenants/{name}.yaml", count_devices)
    capsys.readouterr()
    assert main(["--root", str(root), "render"]) == 0, capsys.readouterr().out
    mappings = _config(root)["resources"]["deviceClassMappings"]
    assert mappings == [{"name": "hami.io/vgpu", "deviceClassNames": ["hami-core-gpu.project-hami.io"]}]


def test_capacity_in_quota_units(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """2 cards x 15Gi = 30720 MiB; 16000 + 12288 fits, one more 4Gi tenant does not."""
    root = hamitree.build(tmp_path)
    trees.write(
        root, "tenants/extra.yaml", hamitree.tenant("extra", {"vgpus": 0, "memory": "4Gi", "cores": 0})
    )
    assert main(["--root", str(root), "validate"]) == 1
    text = capsys.readouterr().out
    assert "nvidia.com/total-gpumem 32384 (31.625Gi) exceeds capacity 30720 (30Gi)" in text, text
    assert "(capacity)" in text
    line = next(
        n
        for n, t in enumerate((root / "overlays/site/cluster.yaml").read_text().splitlines(), 1)
        if "hami:" in t
    )
    assert f"overlays/site/cluster.yaml:{line}:" in text


def test_command_line_process(tmp_path: Path) -> None:
    """The real entry point in its own process: exit 1 and the located finding, nothing written."""
    root = hamitree.build(tmp_path)
    trees.edit(root, "tenants/notebooks.yaml", _nb_hami(lambda h: h.update(memory="1.5Gi1")))
    trees.edit(root, "tenants/notebooks.yaml", _nb_hami(lambda h: h.update(memory="1000001Ki")))
    proc = subprocess.run(
        [sys.executable, str(REPO / "pipeline.py"), "--root", str(root), "--no-cache", "render"],
        capture_output=True,
        text=True,
        check=False,
        cwd=tmp_path,
    )
    assert proc.returncode == 1
    assert "error: $.budgets.default[0].hami.memory: GPU memory '1000001Ki'" in proc.stdout
    assert "write 976Mi or 977Mi (hami-units)" in proc.stdout
    assert not (root / "generated").exists()


def test_plan_shows_vgpu_budgets_in_gib_and_percent(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = hamitree.build(tmp_path)
    assert main(["--root", str(root), "render"]) == 0

    def change(d: dict[str, Any]) -> None:
        d["budgets"]["default"][0]["hami"].update(memory="14Gi", cores=100)

    trees.edit(root, "tenants/notebooks.yaml", change)
    capsys.readouterr()
    assert main(["--root", str(root), "plan"]) == 2
    text = capsys.readouterr().out
    assert (
        "~ site ClusterQueue notebooks: nvidia.com/total-gpumem nominalQuota on flavor t4-hami: 16k → 14336 "
        "(15.625Gi → 14Gi)" in text
    )
    assert (
        "nvidia.com/total-gpucores nominalQuota on flavor t4-hami: 150 → 100 (150% (1.5 GPUs) → 100% (1 GPU))"
        in text
    )
    assert "t4-hami nvidia.com/total-gpumem: 27.625Gi → 26Gi of 30Gi" in text
    assert "t4-hami nvidia.com/total-gpucores: 200% (2 GPUs) → 150% (1.5 GPUs) of 200% (2 GPUs)" in text
    assert "t4-hami nvidia.com/gpu: 8 of 8" in text
    assert main(["--root", str(root), "plan", "--format", "json"]) == 2
    data = json.loads(capsys.readouterr().out)
    (site,) = data["clusters"]
    rows = {r["resource"]: r for r in site["capacity"]}
    assert rows["nvidia.com/total-gpumem"] == {
        "flavor": "t4-hami",
        "resource": "nvidia.com/total-gpumem",
        "before": "28288",
        "after": "26624",
        "capacity": "30720",
        "unit": "MiB",
    }


def test_cached_tenants_follow_renamed_hami_quotas(tmp_path: Path) -> None:
    """A tenant's cached ClusterQueue is not reused when the HAMi quota names behind its flavor change."""
    from gputenancy import engine

    root = hamitree.build(tmp_path)
    cache = tmp_path / "cache"

    def quotas() -> list[str]:
        result = engine.run(root, kustomize=False, cache=cache)
        assert not result.failed, result.findings
        tree = dict(result.clusters["site"].tree)
        cq = yaml.safe_load(tree["clusterqueue/notebooks.yaml"])
        names: list[str] = cq["spec"]["resourceGroups"][0]["coveredResources"]
        return names

    assert "nvidia.com/total-gpumem" in quotas()
    trees.edit(root, "base/platform.yaml", lambda d: d["hami"][0].update(memoryQuota="acme.com/vgpu-mem"))
    assert "acme.com/vgpu-mem" in quotas()


def test_hami_dra_memory_quota_by_capacity_where_the_gate_allows(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], shared: Path
) -> None:
    """HAMi through DRA charged by claimed memory: a capacity source, only with Kueue's gate on."""
    root = hamitree.build(tmp_path)
    dra = "hami-core-gpu.project-hami.io"
    trees.edit(
        root,
        "base/platform.yaml",
        lambda d: d["deviceClasses"].append(
            {"name": dra, "resource": "hami.io/gpu-memory", "capacity": {"name": "memory", "driver": dra}}
        ),
    )
    trees.edit(
        root,
        "overlays/site/cluster.yaml",
        lambda d: (
            d["capacity"][0]["resources"].update({"hami.io/gpu-memory": "30Gi"})
            or d["capacity"][0].pop("hami")
        ),
    )

    def by_memory(d: dict[str, Any]) -> None:
        budget = d["budgets"]["default"][0]
        budget.pop("hami")
        budget["resources"]["hami.io/gpu-memory"] = "12Gi"  # bytes, under the quota name: devices are counts
        d.pop("vgpuTemplates")
        d["claimTemplates"] = [
            {"name": "vgpu-4g", "deviceClass": dra, "capacity": {"memory": "4Gi", "cores": 30}}
        ]

    for name in ("notebooks", "serving"):
        trees.edit(root, f"tenants/{name}.yaml", by_memory)
    assert main(["--root", str(root), "validate"]) == 1
    text = capsys.readouterr().out
    assert (
        "KueueDRAIntegrationConsumableCapacity is Alpha and off in Kueue v0.19; set "
        "kueue.featureGates.KueueDRAIntegrationConsumableCapacity: true in overlays/site/cluster.yaml" in text
    )
    assert "(dra-capacity-quota)" in text

    trees.edit(root, "overlays/site/cluster.yaml", lambda d: d["kueue"].update(version="v0.18.1"))
    assert main(["--root", str(root), "validate"]) == 1
    assert (
        "Kueue v0.18.1 cannot do: it has no KueueDRAIntegrationConsumableCapacity gate"
        in capsys.readouterr().out
    )

    def gate_on(d: dict[str, Any]) -> None:
        d["kueue"].update(version="v0.19.2", featureGates={"KueueDRAIntegrationConsumableCapacity": True})
        d["kubernetesVersion"] = "1.36"

    trees.edit(root, "overlays/site/cluster.yaml", gate_on)
    trees.edit(root, "tenants/serving.yaml", lambda d: d["claimTemplates"][0].pop("capacity"))
    assert main(["--root", str(root), "validate"]) == 1
    assert (
        "claim template 'vgpu-4g' of 'hami-core-gpu.project-hami.io' requests no memory"
        in capsys.readouterr().out
    )

    trees.edit(
        root, "tenants/serving.yaml", lambda d: d["claimTemplates"][0].update(capacity={"memory": "6Gi"})
    )
    assert main(["--root", str(root), "render", "--schemas", str(shared)]) == 0, capsys.readouterr().out
    (mapping,) = _config(root)["resources"]["deviceClassMappings"]
    assert mapping == {
        "name": "hami.io/gpu-memory",
        "deviceClassNames": [dra],
        "sources": [
            {
                "capacity": {
                    "name": "memory",
                    "driver": dra,
                    "deviceSelector": {"cel": {"expression": f"device.driver == '{dra}'"}},
                }
            }
        ],
    }
    assert _queue(root, "notebooks")["hami.io/gpu-memory"]["nominalQuota"] == "12Gi"
    rct = yaml.safe_load((root / "generated/site/resourceclaimtemplate/notebooks/vgpu-4g.yaml").read_text())
    (request,) = rct["spec"]["spec"]["devices"]["requests"]
    assert request["exactly"]["capacity"] == {"requests": {"memory": "4Gi", "cores": "30"}}
