"""catalog-duplicate: a name listed twice in base/platform.yaml is refused at the second entry, naming the first."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import trees

from gputenancy.cli.app import main


@pytest.mark.parametrize(("section", "what"), [("flavors", "flavor"), ("cohorts", "cohort")])
def test_a_name_listed_twice_is_refused_at_the_second(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], section: str, what: str
) -> None:
    root = trees.example(tmp_path, generated=False)

    def twice(platform: dict[str, Any]) -> None:
        platform[section].append(copy.deepcopy(platform[section][0]))

    trees.edit(root, "base/platform.yaml", twice)
    name = trees.read(root, "base/platform.yaml")[section][0]["name"]
    assert main(["--root", str(root), "validate"]) == 1
    out = capsys.readouterr().out
    found = [line for line in out.splitlines() if line.endswith("(catalog-duplicate)")]
    assert len(found) == 1, out
    assert f"{what} '{name}' is already listed at line" in found[0]
    assert found[0].startswith("base/platform.yaml:")
