"""The device inventory of a cluster's capacity: claim templates' and DeviceClasses' CEL selectors evaluated
against the devices each flavor declares, as Kueue evaluates them against ResourceSlices; through the
command line and the real kustomize, on small repositories under tmp_path."""

from __future__ import annotations

from pathlib import Path

import pytest
import smallrepo
from smallrepo import line_of
from test_postbuild import refused, validate

from gputenancy.cli.app import main

A10G = """\
    inventory:
      - deviceClass: gpu.example.com
        count: 12
        attributes: {productName: NVIDIA A10G}
        capacity: {memory: 24Gi}
      - deviceClass: gpu.example.com
        count: 4
        attributes: {productName: NVIDIA L4, example.com/pcie: gen4}
        capacity: {memory: 24Gi}
"""


def _make(tmp_path: Path, selector: str, *, inventory: str = A10G, count: int = 2) -> Path:
    tenant = smallrepo.TENANT.format(name="a").replace(
        "    count: 2\n", f'    count: {count}\n    selectors:\n      - "{selector}"\n'
    )
    tenant = tenant.replace("{nominal: 4, borrowingLimit: 2}", "8")
    root = smallrepo.make(tmp_path, tenants={"a": tenant})
    cluster = root / "overlays/c1/cluster.yaml"
    text = cluster.read_text()
    cut = text.index("    resources:")  # after the devices of flavor big
    cluster.write_text(text[:cut] + inventory + text[cut:])
    return root


def _output(root: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = main(["--root", str(root), "validate"])
    out = capsys.readouterr()
    return code, out.out + out.err


def test_a_selector_no_declared_device_satisfies(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = _make(tmp_path, "device.attributes['gpu.example.com'].productName == 'NVIDIA B200'")
    hit = refused(root, capsys, "claim-devices", "tenants/a.yaml", "- name: gpu-x2")
    assert "ResourceClaimTemplate gpu-x2 on cluster 'c1'" in hit.message
    assert (
        '"insufficient matching devices for CEL selector in DeviceClass gpu.example.com: 0 device(s) match '
        'in the cluster but 2 requested"' in hit.message
    )
    assert "12 gpu.example.com on big (productName NVIDIA A10G, memory 24Gi)" in hit.message
    assert "(overlays/c1/cluster.yaml)" in hit.message


def test_a_selector_declared_devices_satisfy(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = _make(tmp_path, "device.attributes['gpu.example.com'].productName == 'NVIDIA L4'")
    assert validate(root, capsys) == (0, [])


def test_fewer_matching_devices_than_the_count(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = _make(tmp_path, "device.attributes['gpu.example.com'].productName == 'NVIDIA L4'", count=6)
    hit = refused(root, capsys, "claim-devices", "tenants/a.yaml", "- name: gpu-x2")
    assert "4 device(s) match in the cluster but 6 requested" in hit.message


@pytest.mark.parametrize(
    ("selector", "count", "admitted"),
    [
        ("device.capacity['gpu.example.com'].memory.isGreaterThan(quantity('16Gi'))", 2, True),
        ("device.capacity['gpu.example.com'].memory.compareTo(quantity('40Gi')) >= 0", 2, False),
        # only the 4 L4s carry the qualified attribute
        ("device.attributes['example.com'].pcie == 'gen4'", 4, True),
        ("device.attributes['example.com'].pcie == 'gen4'", 6, False),
    ],
)
def test_capacity_and_qualified_attributes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], selector: str, count: int, admitted: bool
) -> None:
    root = _make(tmp_path, selector, count=count)
    code, text = _output(root, capsys)
    assert (code == 0) is admitted, text
    assert ("(claim-devices)" in text) is not admitted


def test_an_attribute_no_device_has_fails_to_evaluate(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = _make(tmp_path, "device.attributes['gpu.example.com'].architecture == 'Ampere'")
    hit = refused(root, capsys, "claim-devices", "tenants/a.yaml", "- name: gpu-x2")
    assert "CEL evaluation failed for DeviceClass gpu.example.com" in hit.message
    assert "no such key" in hit.message


def test_the_device_class_selectors_filter_first(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # slice.example.com selects device.driver == 'gpu.example.com': the declared GPUs are its devices too
    tenant = smallrepo.TENANT.format(name="a").replace(
        "    deviceClass: slice.example.com\n",
        "    deviceClass: slice.example.com\n    selectors:\n      - \"device.attributes['gpu.example.com'].productName == 'NVIDIA L4'\"\n",
    )
    root = smallrepo.make(tmp_path, tenants={"a": tenant})
    cluster = root / "overlays/c1/cluster.yaml"
    text = cluster.read_text()
    cut = text.index("    resources:")
    cluster.write_text(text[:cut] + A10G + text[cut:])
    assert validate(root, capsys) == (0, [])
    # a driver of another name: no device of the class any more
    cluster.write_text(
        text[:cut] + A10G.replace("capacity: {memory: 24Gi}\n", "driver: other.example.com\n") + text[cut:]
    )
    hit = refused(root, capsys, "claim-devices", "tenants/a.yaml", "- name: slice-x1")
    assert "0 device(s) match in the cluster but 1 requested" in hit.message
    assert "16 gpu.example.com on small" in hit.message and "NVIDIA" not in hit.message.split("declares")[1]


def test_no_inventory_is_a_note_once_per_cluster(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = _make(tmp_path, "device.attributes['gpu.example.com'].productName == 'NVIDIA B200'", inventory="")
    code, text = _output(root, capsys)
    assert code == 0, text
    notes = [line for line in text.splitlines() if "(claim-devices)" in line]
    line = line_of(root, "overlays/c1/cluster.yaml", "name: c1")
    assert notes == [
        f"overlays/c1/cluster.yaml:{line}:7: note: cluster 'c1' declares no device inventory: the CEL selectors "
        "of claim templates gpu-x2 are not checked against its devices; declare the devices each flavor "
        "carries under capacity[].inventory in overlays/c1/cluster.yaml (claim-devices)"
    ]


def test_a_selector_this_evaluator_cannot_run_is_not_judged(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = _make(
        tmp_path, "cel.bind(n, 'NVIDIA B200', device.attributes['gpu.example.com'].productName == n)"
    )
    code, text = _output(root, capsys)
    assert code == 0, text
    assert "(claim-devices)" not in text


def test_inventory_counts_agree_with_the_devices(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = _make(
        tmp_path,
        "device.attributes['gpu.example.com'].productName == 'NVIDIA L4'",
        inventory=A10G.replace("count: 12", "count: 14")
        + "      - deviceClass: other.example.com\n        attributes: {productName: X}\n",
    )
    code, found = validate(root, capsys)
    assert code == 1
    where = "overlays/c1/cluster.yaml"
    lines = sorted(f.line for f in found if f.rule == "device-inventory" and f.path == where)
    assert lines == sorted(
        [line_of(root, where, "deviceClass: other"), line_of(root, where, "gpu.example.com: 16")]
    )
    messages = " ".join(f.message for f in found if f.rule == "device-inventory")
    assert "lists 18 devices of DeviceClass 'gpu.example.com', more than the 16 counted here" in messages
    assert "'other.example.com' needs a count" in messages
