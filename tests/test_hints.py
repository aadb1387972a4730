"""Hints name the fix that works: following the words of a `claim-coverage` finding makes it go away
(a stale publish, located at the checkout to update and naming `git pull`: tests/test_publish.py)."""

from __future__ import annotations

from pathlib import Path

import trees
from test_rules import findings_for


def test_claim_coverage_names_the_fix_and_the_fix_works(tmp_path: Path) -> None:
    root = trees.example(tmp_path, generated=False)
    mig = "mig-1g.10gb.nvidia.com"
    trees.edit(root, "tenants/vision.yaml", lambda d: d["budgets"]["default"][1]["devices"].pop(mig))
    found = [f for f in findings_for(root) if f.rule == "claim-coverage"]
    assert found, "no claim-coverage finding"
    for f in found:
        assert f.path == "tenants/vision.yaml"
        assert (
            f"which tenant 'vision' has no budget for on cluster 'prod': add `devices: {{{mig}: N}}` to a "
            "flavor of its budgets (budgets.clusters.prod or budgets.default), or take 'prod' out of the "
            "template's `clusters`"
        ) in f.message
    trees.edit(root, "tenants/vision.yaml", lambda d: d["budgets"]["default"][1]["devices"].update({mig: 1}))
    assert [f for f in findings_for(root) if f.severity == "error"] == []
