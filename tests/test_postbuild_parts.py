"""The checks on the built objects, tenant by tenant (`check.chain.slices`), as a property: after any edit
of a fleet, a run that takes the unchanged tenants' parts from the cache finds exactly what a run without
cache finds, and what `postbuild.check` finds over the whole cluster at once; the parts of tenants that
did not change, against an unchanged context, come from the cache.

Fleets are drawn as in `test_admission_property` (budgets with and without pod resources, borrowing in a
cohort, draining tenants, claim templates with and without CEL selectors, a device inventory or none),
built with the real kustomize through a tenant Component; edits change one tenant's claim count or
selectors, a budget (what the cohort lends), its state, or the cluster's inventory.
"""

from __future__ import annotations

import copy
import tempfile
from pathlib import Path
from typing import Any

import pytest
import repokit as s
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_admission_property import FLAVORS, H100, _capacity, fleets

from gputenancy import engine
from gputenancy.caching import memo
from gputenancy.check.chain import postbuild, slices
from gputenancy.common.objects import RenderedObject

RULES = set(postbuild.RULES)


def _edit(draw: st.DrawFn, tenants: list[dict[str, Any]]) -> None:
    t = draw(st.sampled_from(tenants))
    what = draw(st.sampled_from(["count", "selectors", "budget", "state", "cohort"]))
    claim = t["claimTemplates"][0]
    if what == "count":
        claim["count"] = draw(st.sampled_from([1, 2, 4, 8, 16]))
    elif what == "selectors":
        if claim.pop("selectors", None) is None:
            claim["selectors"] = [f"device.attributes['gpu.nvidia.com'].productName == '{H100}'"]
    elif what == "budget":
        budget = t["budgets"]["default"][0]
        devices = budget.get("devices") or {}
        for name, value in devices.items():
            n = draw(st.integers(1, 8))
            devices[name] = {**value, "nominal": n} if isinstance(value, dict) else n
    elif what == "state":
        if t.pop("state", None) is None:
            t["state"] = "draining"
    elif "cohort" in t and not any(
        isinstance(v, dict) for b in t["budgets"]["default"] for v in b.get("devices", {}).values()
    ):
        del t["cohort"]
    else:
        t["cohort"] = "research"


@st.composite
def edited(draw: st.DrawFn) -> tuple[list[dict[str, Any]], bool, list[dict[str, Any]], bool]:
    tenants, inventory = draw(fleets())
    after = copy.deepcopy(tenants)
    for _ in range(draw(st.integers(1, 2))):
        _edit(draw, after)
    return tenants, inventory, after, inventory ^ (draw(st.integers(0, 4)) == 0)


def _write(root: Path, tenants: list[dict[str, Any]], inventory: bool) -> Path:
    return s.write(
        root,
        tenants,
        [s.cluster("c1", _capacity(tenants, inventory))],
        platform_body=s.platform(s.CATALOG, FLAVORS),
        component=True,
    )


def _postbuild(result: engine.Result) -> list[str]:
    return sorted(f.format() for f in result.findings if f.rule in RULES)


@pytest.fixture
def parts_looked_up(monkeypatch: pytest.MonkeyPatch) -> list[memo.Memo[memo.BuiltPart]]:
    """Every memo of parts a run opens, to count its hits."""
    opened: list[memo.Memo[memo.BuiltPart]] = []
    real = memo.built

    def recording(*args: Any) -> memo.Memo[memo.BuiltPart]:
        opened.append(real(*args))
        return opened[-1]

    monkeypatch.setattr(memo, "built", recording)
    return opened


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    database=None,
    derandomize=True,
)
@given(case=edited())
def test_parts_from_the_cache_find_what_the_whole_cluster_finds(
    case: tuple[list[dict[str, Any]], bool, list[dict[str, Any]], bool],
    parts_looked_up: list[memo.Memo[memo.BuiltPart]],
) -> None:
    before, inventory, after, inventory_after = case
    with tempfile.TemporaryDirectory() as tmp:
        root, store = Path(tmp) / "repo", Path(tmp) / "cache"
        _write(root, before, inventory)
        engine.run(root, cache=store)
        _write(root, after, inventory_after)
        parts_looked_up.clear()
        warm = engine.run(root, cache=store)
        fresh = engine.run(root, cache=None)
        assert _postbuild(warm) == _postbuild(fresh)
        assert [f.format() for f in warm.findings] == [f.format() for f in fresh.findings]
        if fresh.failed and not fresh.clusters:
            return
        objects = fresh.clusters["c1"].objects
        whole = postbuild.check(
            fresh.model, fresh.model.clusters["c1"], _catalog(fresh), objects, kustomized=True
        )
        assert _postbuild(fresh) == sorted(f.format() for f in whole)
        found = parts_looked_up[0] if parts_looked_up else None
        if found is not None and inventory == inventory_after:
            changed = {t["name"] for t, u in zip(before, after, strict=True) if t != u}
            unchanged = len(before) - len(changed)
            # an unchanged tenant misses only when what it reads from the rest changed (a budget)
            assert found.hits + found.misses == len(before)
            assert found.misses >= len(changed)
            if all(
                (t["budgets"], t.get("cohort")) == (u["budgets"], u.get("cohort"))
                for t, u in zip(before, after, strict=True)
            ):
                assert found.hits == unchanged


def _catalog(result: engine.Result) -> Any:
    from gputenancy.policy import rules

    return rules.effective_catalog(result.model)


def test_a_tenant_whose_queue_is_another_tenants_is_checked_with_the_whole_cluster(tmp_path: Path) -> None:
    """Objects that refer across tenants are not separable: the cluster is checked at once."""
    tenants = [s.tenant("a", claimTemplates=[]), s.tenant("b", claimTemplates=[])]
    root = _write(tmp_path / "repo", tenants, False)
    result = engine.run(root, cache=None)
    assert not result.failed, [f.format() for f in result.findings]
    objects = list(result.clusters["c1"].objects)
    platform = [o for o in objects if "gputenancy.io/tenant" not in (o.body["metadata"].get("labels") or {})]
    parts = [
        (
            t,
            "",
            [
                o
                for o in objects
                if o.body["metadata"].get("labels", {}).get("gputenancy.io/tenant") == t.name
            ],
        )
        for t in result.model.tenants_on("c1")
    ]
    assert slices.separable(platform, parts)
    queue = next(o for o in parts[0][2] if o.body["kind"] == "LocalQueue")
    body = copy.deepcopy(dict(queue.body))
    body["spec"]["clusterQueue"] = "b"
    crossed = [RenderedObject(o.cluster, body, o.origin) if o is queue else o for o in parts[0][2]]
    assert not slices.separable(platform, [(parts[0][0], "", crossed), parts[1]])
    found = slices.check(
        result.model,
        result.model.clusters["c1"],
        _catalog(result),
        platform,
        [(parts[0][0], "", crossed), parts[1]],
        memo.built(None, None),
        kustomized=True,
    )
    whole = postbuild.check(
        result.model,
        result.model.clusters["c1"],
        _catalog(result),
        [*platform, *crossed, *parts[1][2]],
        kustomized=True,
    )
    assert found == whole
    assert any(f.rule == "built-queue-reference" and "tenant 'b'" in f.message for f in found)
