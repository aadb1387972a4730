"""Kustomizations are parsed once per content: base/ is read for every cluster, but its kustomization
is parsed once; a changed file is parsed again, and the findings are those of a fresh parse."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import trees

from gputenancy.inputs import kustomizations, source


@pytest.fixture
def parses(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The display paths `source` parses (the real parser runs), with an empty memo."""
    seen: list[str] = []
    real = source._load_bytes

    def counting(data: bytes, shown: str, max_bytes: int) -> Any:
        seen.append(shown)
        return real(data, shown, max_bytes)

    monkeypatch.setattr(source, "_load_bytes", counting)
    monkeypatch.setattr(kustomizations, "_PARSED", kustomizations._Parsed())
    return seen


def _clusters(root: Path) -> list[str]:
    return sorted(p.name for p in (root / "overlays").iterdir() if p.is_dir())


def test_each_content_is_parsed_once(tmp_path: Path, parses: list[str]) -> None:
    root = trees.example(tmp_path, generated=False)
    clusters = _clusters(root)
    assert len(clusters) >= 2
    first = {c: kustomizations.check(root, c) for c in clusters}
    assert parses.count("base/kustomization.yaml") == 1
    assert len(parses) == len(set(parses))
    parses.clear()
    again = {c: kustomizations.check(root, c) for c in clusters}
    assert parses == [] and again == first


def test_a_changed_kustomization_is_parsed_again(tmp_path: Path, parses: list[str]) -> None:
    root = trees.example(tmp_path, generated=False)
    cluster = _clusters(root)[0]
    assert kustomizations.check(root, cluster) == []
    rel = f"overlays/{cluster}/kustomization.yaml"
    trees.replace(
        root, rel, "resources:", "helmCharts:\n  - name: x\n    repo: https://example.com\nresources:"
    )
    parses.clear()
    found = kustomizations.check(root, cluster)
    assert parses == [rel]
    kustomizations._PARSED = kustomizations._Parsed()
    assert kustomizations.check(root, cluster) == found
    assert [f.rule for f in found] == ["kustomize-helm"]
