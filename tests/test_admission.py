"""claim-admissible counts everything a pod of a claim template consumes that its ClusterQueue covers
(devices, the platform minimum, one `pods` per pod, what the Kueue Configuration's transformations add),
names the zero quotas the pipeline writes itself, and leaves stopped queues alone; through the command line
and the real kustomize, on small repositories under tmp_path."""

from __future__ import annotations

from pathlib import Path

import pytest
import smallrepo
from smallrepo import line_of
from test_postbuild import refused, validate

from gputenancy.cli.app import main

GPU_ONLY_FLAVOR = "    - flavor: small\n      devices:\n        gpu.example.com: 4\n      resources:\n        cpu: 8\n        memory: 64Gi\n"


def _tenant(extra_big: str = "", small: str = GPU_ONLY_FLAVOR, head: str = "cohort: pool\n") -> str:
    text = smallrepo.TENANT.format(name="a").replace("cohort: pool\n", head)
    text = text.replace("        memory: 128Gi\n", "        memory: 128Gi\n" + extra_big)
    return text.replace("claimTemplates:", small + "claimTemplates:")


def _make(tmp_path: Path, tenant: str, **kw: str) -> Path:
    """The small repository with `pods` in the cluster's capacity on both flavors."""
    root = smallrepo.make(tmp_path, tenants={"a": tenant}, **kw)
    cluster = root / "overlays/c1/cluster.yaml"
    cluster.write_text(cluster.read_text().replace("memory: 4Ti\n", "memory: 4Ti\n      pods: 1000\n"))
    return root


def test_pods_budgeted_on_one_flavor_block_the_other(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # pods budgeted on `big` only; `big` lacks the 6 GPUs, `small` has them but the pipeline writes pods: 0 there
    tenant = _tenant(
        "        pods: 110\n", GPU_ONLY_FLAVOR.replace("gpu.example.com: 4", "gpu.example.com: 8")
    )
    tenant = tenant.replace("count: 2", "count: 6")
    root = _make(tmp_path, tenant)
    hit = refused(root, capsys, "claim-admissible", "tenants/a.yaml", "- name: gpu-x2")
    assert "hold a pod using it (cpu 100m, example.com/gpu 6, memory 128Mi, pods 1)" in hit.message
    assert (
        "insufficient quota for example.com/gpu in flavor big, current podset request (6) > maximum capacity (4)"
        in hit.message
    )
    assert (
        "insufficient quota for pods in flavor small, current podset request (1) > maximum capacity (0)"
        in hit.message
    )
    small = line_of(root, "tenants/a.yaml", "- flavor: small")
    pods = line_of(root, "tenants/a.yaml", "pods: 110")
    assert (
        f"(a 0 the pipeline writes: pods is budgeted on big at tenants/a.yaml:{pods}, not on small; budget it at "
        f"tenants/a.yaml:{small})" in hit.message
    )
    # budgeting pods on small too admits it
    (root / "tenants/a.yaml").write_text(tenant.replace("memory: 64Gi\n", "memory: 64Gi\n        pods: 10\n"))
    assert validate(root, capsys) == (0, [])


def test_pods_fit_when_budgeted_everywhere(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tenant = _tenant("        pods: 1\n", "")
    root = _make(tmp_path, tenant)
    assert validate(root, capsys) == (0, [])
    # but a pod needs one: pods 0 on the only flavor blocks every template
    (root / "tenants/a.yaml").write_text(tenant.replace("pods: 1", "pods: 0"))
    hit = refused(root, capsys, "claim-admissible", "tenants/a.yaml", "- name: gpu-x2")
    assert (
        "insufficient quota for pods in flavor big, current podset request (1) > maximum capacity (0)"
        in hit.message
    )
    assert "a 0 the pipeline writes" not in hit.message  # the tenant wrote this 0 itself


def test_a_draining_queue_is_not_judged(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tenant = _tenant(small="").replace("count: 2", "count: 7").replace("{nominal: 4, borrowingLimit: 2}", "4")
    root = smallrepo.make(tmp_path, tenants={"a": tenant})
    refused(root, capsys, "claim-admissible", "tenants/a.yaml", "- name: gpu-x2")
    (root / "tenants/a.yaml").write_text(tenant.replace("namespaces:", "state: draining\nnamespaces:"))
    assert main(["--root", str(root), "validate"]) == 0
    out = capsys.readouterr()
    err = out.out + out.err
    assert "note: ClusterQueue 'a' on cluster 'c1' is stopped (`state: draining` in tenants/a.yaml)" in err
    assert "its claim templates (gpu-x2, slice-x1) are not judged for admissibility" in err
    assert "(claim-admissible)" in err and "error:" not in err
    # and the plan says so
    main(["--root", str(root), "plan"])
    out = capsys.readouterr()
    assert "note: ClusterQueue 'a' on cluster 'c1' is stopped" in out.out + out.err


def test_transformations_of_the_configuration_are_charged(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # memory charged as example.com/mem-units (Replace): the queue must cover the output, not memory
    config = """\
        config:
          resources:
            transformations:
              - input: memory
                strategy: Replace
                outputs: {example.com/mem-units: "2"}
        """
    root = smallrepo.make(tmp_path, tenants={"a": _tenant(small="")}, cluster_extra=config)
    hit = refused(root, capsys, "claim-admissible", "tenants/a.yaml", "- name: gpu-x2")
    assert (
        "asks for example.com/mem-units (268435456, memory 128Mi (default) transformed by the Kueue"
        in hit.message
    )
    assert "resource example.com/mem-units unavailable in ClusterQueue" in hit.message
    assert "memory" not in hit.message.split("unavailable")[1].split(";")[0]
