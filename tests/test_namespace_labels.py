"""Namespaces selected by label (namespaceSelector.matchLabels): rendered as Kueue writes it, every
LocalQueue's namespace selected by the labels the tenant says its namespaces carry, and no two teams'
selectors able to meet in one namespace."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import trees

from gputenancy import engine
from gputenancy.check.chain.postbuild import _selector_admits

TEAM = {"namespaceSelector": {"matchLabels": {"team": "speech"}}, "namespaceLabels": {"team": "speech"}}


def test_a_label_selector_renders_and_passes(tmp_path: Path, shared: Path) -> None:
    root = trees.example(tmp_path, generated=False)
    trees.edit(root, "tenants/speech.yaml", lambda d: d.update(TEAM))
    result = engine.run(root, schemas=shared, cluster="prod")
    assert [f.format() for f in result.findings] == []
    (cq,) = [
        o.body
        for o in result.clusters["prod"].objects
        if o.body["kind"] == "ClusterQueue" and o.body["metadata"]["name"] == "speech"
    ]
    assert cq["spec"]["namespaceSelector"] == {"matchLabels": {"team": "speech"}}


def _findings(root: Path) -> list[Any]:
    return [f for f in engine.check_only(root)[1] if f.rule == "namespace-selector"]


def test_namespaces_the_selector_misses(tmp_path: Path) -> None:
    root = trees.example(tmp_path, generated=False)
    trees.edit(root, "tenants/speech.yaml", lambda d: d.update(namespaceSelector=TEAM["namespaceSelector"]))
    (finding,) = _findings(root)
    assert finding.path == "tenants/speech.yaml" and "namespace 'speech' is not selected" in finding.message
    line = (root / "tenants/speech.yaml").read_text().splitlines()[finding.line - 1]
    assert line.strip() == "- speech"


@pytest.mark.parametrize(
    ("vision", "words"),
    [
        ({"namespaceLabels": {"team": "speech"}}, "also selects namespace 'vision-eval' of tenant 'vision'"),
        (
            {
                "namespaceSelector": {"matchLabels": {"dept": "research"}},
                "namespaceLabels": {"dept": "research"},
            },
            "together",
        ),
    ],
)
def test_two_teams_cannot_meet_in_one_namespace(tmp_path: Path, vision: dict[str, Any], words: str) -> None:
    root = trees.example(tmp_path, generated=False)
    trees.edit(root, "tenants/speech.yaml", lambda d: d.update(TEAM))
    trees.edit(root, "tenants/vision.yaml", lambda d: d.update(vision))
    found = _findings(root)
    assert any(words in f.message for f in found), found


def test_disjoint_selectors_pass(tmp_path: Path) -> None:
    root = trees.example(tmp_path, generated=False)
    trees.edit(root, "tenants/speech.yaml", lambda d: d.update(TEAM))
    trees.edit(
        root,
        "tenants/vision.yaml",
        lambda d: d.update(
            namespaceSelector={"matchLabels": {"team": "vision"}}, namespaceLabels={"team": "vision"}
        ),
    )
    assert _findings(root) == []


def test_the_built_check_reads_the_declared_labels() -> None:
    selector = {"matchLabels": {"team": "speech"}}
    assert _selector_admits(selector, "speech", {"team": "speech"}) is True
    assert _selector_admits(selector, "speech", {"team": "nlp"}) is False
    assert _selector_admits(selector, "speech") is None  # nothing known: not judged
