"""The adoption check's edits keep every repository the pipeline accepts valid.

For small repositories hypothesis draws (the fleets of the chain and admission properties: one or two
clusters, tenants placed on some or on all of them, budgets of one to eight devices, per-cluster
overrides, claim templates that need most of what is budgeted), when `validate` accepts the
repository, it still does after tools/adoption_check.py's edits (a copied overlay, a tenant added
there, a lowered budget, a removed tenant), and the cluster and tenant were added."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import pytest
import repokit as s
import test_admission_property as admission
import test_chain_property as chain
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from test_adoption import _tool

Drawn = tuple[list[dict[str, Any]], list[dict[str, Any]], dict[str, Any]]
"""Tenants, clusters and the platform of a repository."""

TOOL = _tool()

KITS = {
    # two clusters, tenants placed on one or both, per-cluster overrides, claims on one device each
    "chain": chain.fleets()
    .filter(lambda tenants: not chain._uncovered(tenants))  # claim-coverage refuses those
    .map(
        lambda tenants: (
            tenants,
            [s.cluster(name, chain._capacity(tenants)) for name in chain.CLUSTERS],
            s.platform(chain.PLATFORM_CLASSES, chain.FLAVORS),
        )
    ),
    # one cluster, tenants placed wherever they have a budget, claims on up to eight devices
    "admission": admission.fleets().map(
        lambda fleet: (
            fleet[0],
            [s.cluster("c1", admission._capacity(*fleet))],
            s.platform(s.CATALOG, admission.FLAVORS),
        )
    ),
}


@pytest.mark.parametrize("kit", sorted(KITS))
@settings(max_examples=2)
@given(data=st.data())
def test_the_adoption_edits_keep_an_accepted_repository_valid(kit: str, data: st.DataObject) -> None:
    tenants, clusters, platform = data.draw(KITS[kit])
    with tempfile.TemporaryDirectory() as tmp:
        root = s.write(Path(tmp) / "repo", tenants, clusters, platform_body=platform, component=True)
        assume(TOOL.validate(root) == [])  # the property is about what the pipeline accepts
        adopted = TOOL.adopt(root)
        assert TOOL.validate(root) == []
        assert (root / "overlays" / adopted.cluster / "cluster.yaml").is_file()
        assert (root / "tenants" / f"{adopted.team}.yaml").is_file()
