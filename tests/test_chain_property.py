"""The chain as a property of the output, over generated fleets.

For every small fleet hypothesis draws (device classes that share a quota resource, claims on classes
other than the budgeted one, classes declared by tenants, a tenant Component that really runs
kustomize), either the pipeline refuses the input with findings, or, on the objects as rendered and
again as built, every claim's device class has a DeviceClass (rendered, or installed by the driver
when the catalog gives no selectors), a deviceClassMapping in the cluster's Kueue Configuration, and
that mapping's quota resource is covered by the ClusterQueue that the LocalQueue of the claim's
namespace points at. A claim the budget does not cover must be refused by `claim-coverage`.
"""

from __future__ import annotations

import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import repokit as s
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from gputenancy import engine
from gputenancy.inputs.spec import load_model
from gputenancy.policy import rules
from gputenancy.render import manifests as render

H100 = "h100.nvidia.com"
MIG_2G = "mig-2g.20gb.nvidia.com"  # declared by a tenant, not by the platform
H100_SELECTOR = "device.attributes['gpu.nvidia.com'].productName == 'NVIDIA H100 80GB HBM3'"
RESOURCE = {
    s.GPU: "nvidia.com/gpu",
    H100: "nvidia.com/gpu",  # two classes on one quota resource
    s.MIG: "nvidia.com/mig-1g.10gb",
    MIG_2G: "nvidia.com/mig-2g.20gb",
}
PLATFORM_CLASSES = [
    s.device_class(s.GPU, RESOURCE[s.GPU]),  # installed by the driver: no selectors, not rendered
    {"name": H100, "resource": RESOURCE[H100], "selectors": [H100_SELECTOR]},
    s.device_class(s.MIG, RESOURCE[s.MIG], "1g.10gb"),
]
DECLARED = s.device_class(MIG_2G, RESOURCE[MIG_2G], "2g.20gb")
CLASSES = sorted(RESOURCE)
FLAVORS = ("h100", "a100")
CLUSTERS = ("east", "west")


def _budget(draw: st.DrawFn) -> list[dict[str, Any]]:
    """Budgets on one or two flavors, each on one or two classes (one class per quota resource:
    budget_duplicate_resource refuses the same one twice in a flavor)."""
    budgets = []
    for flavor in draw(st.lists(st.sampled_from(FLAVORS), min_size=1, max_size=2, unique=True)):
        classes = draw(st.lists(st.sampled_from(CLASSES), min_size=1, max_size=2, unique=True))
        by_resource = {RESOURCE[c]: c for c in classes}
        devices = {c: draw(st.integers(1, 2)) for c in by_resource.values()}
        budgets.append({"flavor": flavor, "devices": devices, "resources": s.POD})
    return budgets


def _resources(budgets: list[dict[str, Any]]) -> set[str]:
    return {RESOURCE[c] for b in budgets for c in b["devices"]}


def budgets_on(tenant: Mapping[str, Any], cluster: str) -> list[dict[str, Any]]:
    """The tenant's budgets on `cluster`: its per-cluster override, else its default."""
    budgets: dict[str, Any] = tenant["budgets"]
    return list(budgets.get("clusters", {}).get(cluster, budgets["default"]))


@st.composite
def fleets(draw: st.DrawFn) -> list[dict[str, Any]]:
    """2-4 tenants on one or both clusters, each with budgets on one or two flavors (in a third of
    the tenants, other budgets on one cluster than on the other) and 0-3 claim templates on classes of
    the quota resources it budgets on every cluster it is placed on (on any class in a quarter of the
    fleets)."""
    count = draw(st.integers(2, 4))
    uncovered = draw(st.integers(0, 3)) == 0  # a quarter of the fleets may claim what they do not budget
    tenants = []
    for i in range(count):
        clusters = draw(st.lists(st.sampled_from(CLUSTERS), min_size=1, max_size=2, unique=True))
        budgets: dict[str, Any] = {"default": _budget(draw)}
        if draw(st.integers(0, 2)) == 0:
            budgets["clusters"] = {draw(st.sampled_from(clusters)): _budget(draw)}
        lists = [budgets.get("clusters", {}).get(c, budgets["default"]) for c in clusters]
        everywhere = set.intersection(*(_resources(b) for b in lists))
        declared = [budgets["default"], *budgets.get("clusters", {}).values()]
        budgeted = {c for b in declared for fb in b for c in fb["devices"]}
        namespaces = [f"t{i}-ns{n}" for n in range(draw(st.integers(1, 2)))]
        # any class on a quota resource budgeted wherever the tenant is: often not the class the budget names
        choices = CLASSES if uncovered else [c for c in CLASSES if RESOURCE[c] in everywhere]
        claims = []
        for n in range(draw(st.integers(1, 3)) if choices else 0):
            claim: dict[str, Any] = {"name": f"claim-{n}", "deviceClass": draw(st.sampled_from(choices))}
            if len(namespaces) > 1 and draw(st.booleans()):
                claim["namespaces"] = [draw(st.sampled_from(namespaces))]
            claims.append(claim)
        uses_2g = MIG_2G in budgeted or any(c["deviceClass"] == MIG_2G for c in claims)
        body = s.tenant(f"t{i}", [], namespaces=namespaces, claimTemplates=claims, clusters=clusters)
        body["budgets"] = budgets
        if uses_2g or draw(st.booleans()):
            body["deviceClasses"] = [DECLARED]
        tenants.append(body)
    return tenants


def _capacity(tenants: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Enough of everything: the property is about the chain, not about capacity."""
    declared = any("deviceClasses" in t for t in tenants)
    classes = (s.GPU, s.MIG, MIG_2G) if declared else (s.GPU, s.MIG)
    return [{"flavor": f, "devices": {c: 100 for c in classes}, "resources": s.POD_CAPACITY} for f in FLAVORS]


def chain_breaks(
    bodies: list[Mapping[str, Any]], catalog: rules.Catalog, config: Mapping[str, Any] | None = None
) -> list[str]:
    """Every way a claim of these objects fails to count against a quota. `config`: the Kueue
    Configuration, by default the one the objects deliver (in the Kueue install Application)."""
    config = s.configuration(bodies) if config is None else config
    mapped = {
        name: m["name"]
        for m in config.get("resources", {}).get("deviceClassMappings", [])
        for name in m["deviceClassNames"]
    }
    device_classes = {b["metadata"]["name"] for b in bodies if b["kind"] == "DeviceClass"}
    queue_of = {
        b["metadata"]["namespace"]: b["spec"]["clusterQueue"] for b in bodies if b["kind"] == "LocalQueue"
    }
    covered = {
        b["metadata"]["name"]: {r for g in b["spec"]["resourceGroups"] for r in g["coveredResources"]}
        for b in bodies
        if b["kind"] == "ClusterQueue"
    }
    breaks = []
    claims = [b for b in bodies if b["kind"] == "ResourceClaimTemplate"]
    for claim in claims:
        where = f"{claim['metadata']['namespace']}/{claim['metadata']['name']}"
        for request in claim["spec"]["spec"]["devices"]["requests"]:
            cls = request["exactly"]["deviceClassName"]
            entry = catalog.classes.get(cls)
            if entry is None:
                breaks.append(f"{where}: class {cls} is not in the catalog")
                continue
            if entry.selectors and cls not in device_classes:
                breaks.append(f"{where}: no DeviceClass {cls}")
            if mapped.get(cls) != entry.resource:
                breaks.append(f"{where}: class {cls} mapped to {mapped.get(cls)}, not {entry.resource}")
            queue = queue_of.get(claim["metadata"]["namespace"])
            if queue is None or queue not in covered:
                breaks.append(f"{where}: namespace reaches no ClusterQueue ({queue})")
            elif entry.resource not in covered[queue]:
                breaks.append(f"{where}: ClusterQueue {queue} does not cover {entry.resource}")
    return breaks


def _uncovered(tenants: list[dict[str, Any]]) -> bool:
    """Some claim asks, on some cluster its tenant is placed on, for a quota resource the tenant's
    budgets on that cluster do not cover (claim-coverage refuses it)."""
    return any(
        RESOURCE[c["deviceClass"]] not in _resources(budgets_on(t, cluster))
        for t in tenants
        for cluster in t["clusters"]
        for c in t["claimTemplates"]
    )


def expected_claims(tenants: list[dict[str, Any]], cluster: str) -> set[tuple[str, str]]:
    """(namespace, name) of every claim template on `cluster`: each template in the namespaces it is
    scoped to, else in every namespace of its tenant; a namespace may have none."""
    return {
        (namespace, c["name"])
        for t in tenants
        if cluster in t["clusters"]
        for c in t["claimTemplates"]
        for namespace in c.get("namespaces", t["namespaces"])
    }


@settings(max_examples=6)
@given(tenants=fleets())
def test_every_claim_reaches_a_mapped_and_covered_quota(tenants: list[dict[str, Any]]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = s.write(
            Path(tmp) / "repo",
            tenants,
            [s.cluster(name, _capacity(tenants)) for name in CLUSTERS],
            platform_body=s.platform(PLATFORM_CLASSES, FLAVORS),
            component=True,
        )
        result = engine.run(root, cache=None)
        if _uncovered(tenants):
            assert "claim-coverage" in {f.rule for f in result.findings}
            return
        assert not result.failed, [f.format() for f in result.findings]
        model, _ = load_model(root)
        catalog = rules.effective_catalog(model)
        for name in CLUSTERS:
            built = [yaml.safe_load(data) for data in result.clusters[name].tree.values()]
            assert chain_breaks(built, catalog) == [], name
            cluster = model.clusters[name]
            platform, _, _ = render.render_platform(model, cluster, catalog)
            rendered = [o.body for o in platform] + [
                o.body for t in model.tenants_on(name) for o in render.render_tenant(t, cluster, catalog)
            ]
            assert chain_breaks(rendered, catalog) == [], name
            placed = {
                (b["metadata"]["namespace"], b["metadata"]["name"])
                for b in built
                if b["kind"] == "ResourceClaimTemplate"
            }
            assert placed == expected_claims(tenants, name), name  # every claim where it belongs, only there


def test_the_property_sees_a_broken_chain(tmp_path: Path) -> None:
    """chain_breaks finds each missing link: no DeviceClass, no mapping, an uncovered resource."""
    tenant = s.tenant(
        "a",
        [{"flavor": "h100", "devices": {s.GPU: 1}, "resources": s.POD}],
        claimTemplates=[{"name": "one", "deviceClass": H100}],
    )
    capacity = [{"flavor": "h100", "devices": {s.GPU: 8}, "resources": s.POD_CAPACITY}]
    root = s.write(
        tmp_path,
        [tenant],
        [s.cluster(capacity=capacity)],
        platform_body=s.platform(PLATFORM_CLASSES, FLAVORS),
    )
    result = engine.run(root, cache=None)
    assert not result.failed, [f.format() for f in result.findings]
    catalog = rules.effective_catalog(result.model)
    bodies = [yaml.safe_load(data) for data in result.clusters["c1"].tree.values()]
    assert chain_breaks(bodies, catalog) == []
    no_class = [b for b in bodies if not (b["kind"] == "DeviceClass" and b["metadata"]["name"] == H100)]
    assert chain_breaks(no_class, catalog) == ["a-ns/one: no DeviceClass h100.nvidia.com"]
    config = s.configuration(bodies)
    for mapping in config["resources"]["deviceClassMappings"]:
        mapping["deviceClassNames"] = [c for c in mapping["deviceClassNames"] if c != H100]
    for body in bodies:
        if body["kind"] == "ClusterQueue":
            body["spec"]["resourceGroups"][0]["coveredResources"] = ["cpu"]
    assert chain_breaks(bodies, catalog, config) == [
        "a-ns/one: class h100.nvidia.com mapped to None, not nvidia.com/gpu",
        "a-ns/one: ClusterQueue a does not cover nvidia.com/gpu",
    ]


def test_the_fleets_reach_both_outcomes_and_claims_off_the_budgeted_class() -> None:
    """The generator is not degenerate: most fleets pass, some are refused, and claims on a class the
    budget does not name (but whose quota resource it covers) are common."""
    seen = {"refused": 0, "passed": 0, "other-class": 0, "per-cluster": 0}

    @settings(max_examples=100)
    @given(tenants=fleets())
    def tally(tenants: list[dict[str, Any]]) -> None:
        seen["refused" if _uncovered(tenants) else "passed"] += 1
        for t in tenants:
            named = {c for b in t["budgets"]["default"] for c in b["devices"]}
            seen["other-class"] += any(c["deviceClass"] not in named for c in t["claimTemplates"])
            seen["per-cluster"] += "clusters" in t["budgets"]

    tally()
    assert seen["passed"] > seen["refused"] > 0 and seen["other-class"] > 5 and seen["per-cluster"] > 5, seen
