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
import dataclasses
import tempfile
from pathlib import Path
from typing import Any

import pytest
import repokit as s
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_admission_property import FLAVORS, H100, _capacity, fleets

from gputenancy import engine
from gputenancy.caching import cache, memo
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


Memos = tuple[memo.Memo[memo.BuiltPart], memo.Memo[memo.BuiltFacts]]


@pytest.fixture
def parts_looked_up(monkeypatch: pytest.MonkeyPatch) -> list[Memos]:
    """Every memo of parts a run with a cache opens, to count its hits."""
    opened: list[Memos] = []
    real = memo.built_parts

    def recording(store: cache.Cache | None, cluster_key: str | None) -> Memos:
        memos = real(store, cluster_key)
        if store is not None:
            opened.append(memos)
        return memos

    monkeypatch.setattr(memo, "built_parts", recording)
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
    parts_looked_up: list[Memos],
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
        found = parts_looked_up[0][0] if parts_looked_up else None
        if found is not None and inventory == inventory_after:
            changed = {t["name"] for t, u in zip(before, after, strict=True) if t != u}
            unchanged = len(before) - len(changed)
            # (parts are looked up only when a tenant changed); an unchanged tenant misses only when
            # what it reads from the rest changed (a budget, a cohort)
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
    assert slices.separable(platform, [slices.facts_of(t, objects) for t, _, objects in parts])
    queue = next(o for o in parts[0][2] if o.body["kind"] == "LocalQueue")
    body = copy.deepcopy(dict(queue.body))
    body["spec"]["clusterQueue"] = "b"
    crossed = [RenderedObject(o.cluster, body, o.origin) if o is queue else o for o in parts[0][2]]
    facts = [slices.facts_of(parts[0][0], crossed), slices.facts_of(*parts[1][::2])]
    assert not slices.separable(platform, facts)
    found = slices.check(
        result.model,
        result.model.clusters["c1"],
        _catalog(result),
        platform,
        [(parts[0][0], "", crossed), parts[1]],
        memo.built_parts(None, None),
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


def test_facts_come_back_from_the_cache_as_they_were_found(tmp_path: Path) -> None:
    """A tenant's facts (what its part is looked up by) read back from a pack equal those found on its
    objects; an entry of another shape is a miss, counted as corrupt."""
    selector = f"device.attributes['gpu.nvidia.com'].productName == '{H100}'"
    claims = [{"name": "x1", "deviceClass": s.GPU, "count": 1, "selectors": [selector]}]
    budgets = [{"flavor": "h100", "devices": {s.GPU: {"nominal": 2, "lendingLimit": 1}}, "resources": s.POD}]
    tenants = [s.tenant("a", budgets, claimTemplates=claims, cohort="research")]
    root = _write(tmp_path / "repo", tenants, False)
    result = engine.run(root, cache=None)
    assert not result.failed, [f.format() for f in result.findings]
    (tenant,) = result.model.tenants_on("c1")
    objects = [o for o in result.clusters["c1"].objects if o.origin.path == tenant.path]
    facts = slices.facts_of(tenant, objects)
    assert facts.separate and facts.local_queues and facts.claim_namespaces
    ((name, (cohort, lent)),) = facts.queues
    assert (name, cohort, lent[-1]) == ("a", "research", ("h100", "nvidia.com/gpu", "1"))  # its lendingLimit
    assert facts.selector_claims == ("x1",)
    store = cache.Cache(tmp_path / "cache")
    _, known = memo.built_parts(store, "c" * 64)
    known.store("a" * 64, facts)
    known.store("b" * 64, dataclasses.replace(facts, claim_namespaces=("ns",)))
    known.save()
    again = cache.Cache(tmp_path / "cache")
    _, known = memo.built_parts(again, "c" * 64)
    assert known.lookup("a" * 64) == facts
    name = "c" * 64 + "-b"  # the pack of keys starting with b (`cache.Packs`)
    pack = again.get(memo.BUILT_PART_ENTRY, name)
    pack["b" * 64][3] = [1]  # a number where a namespace belongs
    assert again.put(memo.BUILT_PART_ENTRY, name, pack)
    _, known = memo.built_parts(again, "c" * 64)
    assert known.lookup("b" * 64) is None and again.corrupt == 1
