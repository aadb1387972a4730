"""Values that stop the Kueue manager or mean something else than they seem, each refused by
`validate` at its line (a copy of the example inputs or a HAMi tree, edited as a pull request
would), with no traceback and nothing written."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import hamitree
import pytest
import trees

from gputenancy.cli import app as cli


def validate(root: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, list[dict[str, Any]], str]:
    code = cli.main(["--root", str(root), "--no-cache", "validate", "--format", "json"])
    out = capsys.readouterr()
    assert "Traceback" not in out.out + out.err
    return code, json.loads(out.out)["findings"], out.out


def edit(root: Path, rel: str, old: str, new: str) -> None:
    path = root / rel
    text = path.read_text()
    assert old in text, (rel, old)
    path.write_text(text.replace(old, new, 1))


def line_of(root: Path, rel: str, needle: str) -> int:
    return next(i for i, line in enumerate((root / rel).read_text().splitlines(), 1) if needle in line)


LAB = "overlays/lab/cluster.yaml"
PROD = "overlays/prod/cluster.yaml"
CHART_GATES = "    releaseName: kueue\n    values:\n      controllerManager:\n        featureGates:\n"

CASES: list[tuple[str, Callable[[Path], None], str, str, str]] = [
    # (id, change, file, line containing, rule)
    (
        "version-block-scalar",
        lambda r: edit(r, PROD, "  version: v0.19.2\n", "  version: |\n    v0.19.2\n"),
        PROD,
        "version: |",
        "cluster-schema",
    ),
    (
        "kubernetes-version-trailing-newline",
        lambda r: edit(r, PROD, 'kubernetesVersion: "1.35"', 'kubernetesVersion: "1.35\\n"'),
        PROD,
        "kubernetesVersion",
        "cluster-schema",
    ),
    (
        "argocd-server-trailing-newline",
        lambda r: edit(
            r,
            LAB,
            "  server: https://kubernetes.default.svc",
            '  server: "https://kubernetes.default.svc\\n"',
        ),
        LAB,
        "  server:",
        "cluster-schema",
    ),
    (
        "cluster-name-trailing-newline",
        lambda r: edit(r, LAB, "name: lab\n", 'name: "lab\\n"\n'),
        LAB,
        "name: ",
        "cluster-schema",
    ),
    (
        "webhook-port-out-of-range",
        lambda r: edit(r, "base/kueue-config.yaml", "  port: 9443", "  port: 70000"),
        "base/kueue-config.yaml",
        "port: 70000",
        "",
    ),
    (
        "metrics-bind-address-out-of-range",
        lambda r: edit(r, "base/kueue-config.yaml", "  bindAddress: :8443", '  bindAddress: ":99999"'),
        "base/kueue-config.yaml",
        "bindAddress",
        "",
    ),
    (
        "chart-gate-unknown",
        lambda r: edit(
            r,
            LAB,
            "    releaseName: kueue\n",
            CHART_GATES + "          - name: NoSuchGate\n            enabled: true\n",
        ),
        LAB,
        "- name: NoSuchGate",
        "kueue-feature-gate-unknown",
    ),
    (
        "chart-gate-locked",
        lambda r: edit(
            r,
            LAB,
            "    releaseName: kueue\n",
            CHART_GATES + "          - name: HierarchicalCohorts\n            enabled: false\n",
        ),
        LAB,
        "- name: HierarchicalCohorts",
        "kueue-feature-gate-locked",
    ),
]


@pytest.mark.parametrize(
    ("change", "rel", "needle", "rule"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_refused_at_its_line(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    change: Callable[[Path], None],
    rel: str,
    needle: str,
    rule: str,
) -> None:
    root = trees.example(tmp_path, generated=False)
    change(root)
    code, found, out = validate(root, capsys)
    assert code == 1, out
    line = line_of(root, rel, needle)
    at = [f for f in found if f["path"] == rel and f["line"] == line and f["severity"] == "error"]
    assert at, out
    if rule:
        assert rule in {f["rule"] for f in at}, out


def test_the_same_values_without_the_defect_pass(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Each case above differs from a valid tree only by its defect."""
    root = trees.example(tmp_path, generated=False)
    edit(root, "base/kueue-config.yaml", "  bindAddress: :8443", '  bindAddress: "0.0.0.0:8443"')
    edit(
        root,
        LAB,
        "    releaseName: kueue\n",
        CHART_GATES + "          - name: HierarchicalCohorts\n            enabled: true\n",
    )
    code, _, out = validate(root, capsys)
    assert code == 0, out


@pytest.mark.parametrize(
    ("where", "value"),
    [("vgpus", "2k"), ("cards", "2e3"), ("splitCount", "4k"), ("cores", "1.5e2")],
)
def test_hami_counts_are_plain_whole_numbers_whatever_overcommit_says(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], where: str, value: str
) -> None:
    root = hamitree.build(tmp_path)
    cluster = trees.read(root, "overlays/site/cluster.yaml")
    cluster["overcommit"] = True
    if where in ("cards", "splitCount"):
        cluster["capacity"][0]["hami"][where] = value
        rel = "overlays/site/cluster.yaml"
    else:
        tenant = trees.read(root, "tenants/serving.yaml")
        tenant["budgets"]["default"][0]["hami"][where] = value
        trees.write(root, "tenants/serving.yaml", tenant)
        rel = "tenants/serving.yaml"
    trees.write(root, "overlays/site/cluster.yaml", cluster)
    code, found, out = validate(root, capsys)
    assert code == 1, out
    (hit,) = [f for f in found if f["rule"] == "hami-units"]
    assert hit["path"] == rel and hit["severity"] == "error"
    assert hit["line"] == line_of(root, rel, f"{where}:")
    assert "must be a plain whole number (digits only" in hit["message"] and repr(value) in hit["message"]
