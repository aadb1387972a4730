"""What kustomize built is held to the capacity, version and gate rules the inputs were checked
against (check/chain/builtlimits.py), with the kustomization line that changed it named: a copy of the
example inputs, patched as a pull request would, built by the real kustomize. `validate` and `render`
refuse it; `render` writes nothing."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import trees
from test_negative_trees import snapshot

from gputenancy.cli import app as cli

COMPONENT = "overlays/prod/tenants/kustomization.yaml"
OVERLAY = "overlays/prod/kustomization.yaml"


def run(root: Path, command: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, list[dict[str, Any]]]:
    code = cli.main(["--root", str(root), "--no-cache", command, "--format", "json"])
    out = capsys.readouterr()
    assert "Traceback" not in out.out + out.err
    return code, json.loads(out.out)["findings"]


def append(root: Path, rel: str, text: str) -> int:
    """Append `text` to a kustomization; the line of its first line."""
    path = root / rel
    before = path.read_text()
    path.write_text(before + text)
    return before.count("\n") + 1


def line_of(root: Path, rel: str, needle: str) -> int:
    return next(i for i, line in enumerate((root / rel).read_text().splitlines(), 1) if needle in line)


def refused(root: Path, capsys: pytest.CaptureFixture[str], rule: str) -> list[dict[str, Any]]:
    before = snapshot(root)
    for command in ("validate", "render"):
        code, found = run(root, command, capsys)
        assert code == 1, found
        hits = [f for f in found if f["rule"] == rule and f["severity"] == "error"]
        assert hits, found
    assert snapshot(root) == before
    return hits


NLP_GPU = "/spec/resourceGroups/0/flavors/0/resources/2/nominalQuota"


def test_a_component_patch_raising_a_quota_beyond_the_capacity_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = trees.example(tmp_path)
    line = append(
        root,
        COMPONENT,
        "patches:\n  - target: {kind: ClusterQueue, name: nlp}\n    patch: |-\n"
        f"      - op: replace\n        path: {NLP_GPU}\n        value: '601'\n",
    )
    (hit,) = refused(root, capsys, "built-capacity")
    assert hit["path"] == "tenants/nlp.yaml"
    assert (
        "ClusterQueue 'nlp' on cluster 'prod' is built with nominalQuota 601 nvidia.com/gpu on flavor 'h100' "
        f"(the inputs say 6) (built by {COMPONENT}:{line} (patches)): the built total 611 exceeds the "
        "capacity 16 (overlays/prod/cluster.yaml:" in hit["message"]  # 601 + the other tenants' 10
    )


def test_a_component_patch_within_the_capacity_passes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = trees.example(tmp_path, generated=False)
    append(
        root,
        COMPONENT,
        "patches:\n  - target: {kind: ClusterQueue, name: nlp}\n    patch: |-\n"
        f"      - op: replace\n        path: {NLP_GPU}\n        value: '5'\n",
    )
    code, found = run(root, "validate", capsys)
    assert code == 0, found
    assert not [f for f in found if f["rule"].startswith("built-")]


def test_an_overlay_patch_moving_the_install_to_another_release_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = trees.example(tmp_path)
    text = (root / OVERLAY).read_text()
    (root / OVERLAY).write_text(
        text.replace(
            "patches:\n",
            "patches:\n  - target: {kind: Application, name: kueue-prod}\n    patch: |-\n"
            "      - op: replace\n        path: /spec/source/targetRevision\n        value: v0.18.1\n",
            1,
        )
    )
    hits = refused(root, capsys, "built-kueue-install")
    line = line_of(root, OVERLAY, "patches:")
    (revision,) = [h for h in hits if "targetRevision" in h["message"]]
    assert revision["path"] == "overlays/prod/cluster.yaml"
    assert (
        "the Kueue install Application 'kueue-prod' is built with spec.source.targetRevision 'v0.18.1', not "
        f"'v0.19.2' (built by {OVERLAY}:{line} (patches)): everything was checked for Kueue v0.19.2"
    ) in revision["message"]


def test_a_gate_the_chart_would_pass_is_checked_after_the_build_too(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = trees.example(tmp_path)
    lab = "overlays/lab/kustomization.yaml"
    line = (
        append(
            root,
            lab,
            "patches:\n  - target: {kind: Application, name: kueue-lab}\n    patch: |-\n"
            "      - op: add\n        path: /spec/source/helm/valuesObject/controllerManager\n"
            "        value: {featureGates: [{name: NoSuchGate, enabled: true}]}\n",
        )
        if "patches:" not in (root / lab).read_text()
        else 0
    )
    assert line, "the fixture's lab overlay has patches already: add this one to them"
    hits = refused(root, capsys, "built-kueue-install")
    assert any(
        f"(built by {lab}:{line} (patches)): " in h["message"]
        and "unrecognized feature gate: NoSuchGate (Kueue v0.18.1)" in h["message"]
        and "(kueue-feature-gate-unknown)" in h["message"]
        for h in hits
    ), hits


def test_a_flavor_renamed_past_recognition_names_the_kustomization_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = trees.example(tmp_path)
    line = line_of(root, OVERLAY, "patches:")
    append(
        root,
        OVERLAY,
        "  - target: {kind: ResourceFlavor, name: h100}\n    patch: |-\n"
        "      - op: replace\n        path: /metadata/name\n        value: gold\n",
    )
    hits = refused(root, capsys, "built-flavor-reference")
    assert {h["path"] for h in hits} == {"tenants/nlp.yaml", "tenants/speech.yaml", "tenants/vision.yaml"}
    for h in hits:
        assert (
            "(the build has ResourceFlavor 'gold', which base/platform.yaml does not define) "
            f"(built by {OVERLAY}:{line} (patches))"
        ) in h["message"]


def test_an_overlay_patch_raising_a_cohorts_own_quota_beyond_the_capacity_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A Cohort's own quota counts toward the capacity after the build too (lab-pool holds 1 of lab's 2 T4s)."""
    root = trees.example(tmp_path)
    lab = "overlays/lab/kustomization.yaml"
    text = (root / lab).read_text()
    patch = (
        "  - target: {kind: Cohort, name: lab-pool}\n    patch: |-\n"
        "      - op: replace\n        path: /spec/resourceGroups/0/flavors/0/resources/0/nominalQuota\n"
        "        value: '5'\n"
    )
    if "patches:\n" in text:
        (root / lab).write_text(text.replace("patches:\n", "patches:\n" + patch, 1))
    else:
        (root / lab).write_text(text + "patches:\n" + patch)
    (hit,) = refused(root, capsys, "built-capacity")
    assert hit["path"] == "base/platform.yaml"
    assert (
        "Cohort 'lab-pool' on cluster 'lab' is built with nominalQuota 5 nvidia.com/gpu on flavor 't4' "
        in (hit["message"])
    )
    assert (
        "(the inputs say 1)" in hit["message"]
        and "the built total 6 exceeds the capacity 2" in hit["message"]
    )
