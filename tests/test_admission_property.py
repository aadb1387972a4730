"""Admissibility as a property of the output, over generated fleets run through the real kustomize.

For every small fleet hypothesis draws (budgets with and without cpu, memory and `pods` per flavor,
borrowing in a cohort, draining tenants, claim templates with and without CEL selectors, clusters with
and without a device inventory), either the pipeline accepts it and every claim template of every
active queue fits some flavor of that queue as Kueue's flavor assignment judges it (every covered
resource a pod is charged, `pods` included, within nominal quota plus what the cohort lends) and its
selectors are satisfied by the devices the cluster declares; or each `claim-admissible` refusal names
the resource and flavor that block and each `claim-devices` refusal names the cluster and its devices.
The judge below reads only the built objects (generated/<cluster>/), not the pipeline's own checks.
"""

from __future__ import annotations

import re
import tempfile
from collections.abc import Mapping
from decimal import Decimal
from pathlib import Path
from typing import Any

import repokit as s
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gputenancy import engine
from gputenancy.inputs.quantity import parse

FLAVORS = ("h100", "cpu")
H100 = "NVIDIA H100 80GB HBM3"
PRODUCTS = (H100, "NVIDIA A10G")
MINIMUM = {"cpu": Decimal("0.1"), "memory": Decimal(128 * 2**20)}  # the default minimumPodRequests
HELD = ("Hold", "HoldAndDrain")


@st.composite
def fleets(draw: st.DrawFn) -> tuple[list[dict[str, Any]], bool]:
    """1-3 tenants budgeting GPUs and pod resources on one or both flavors, and whether the cluster
    declares its devices."""
    tenants = []
    for i in range(draw(st.integers(1, 3))):
        budgets = []
        for flavor in draw(st.lists(st.sampled_from(FLAVORS), min_size=1, max_size=2, unique=True)):
            budget: dict[str, Any] = {"flavor": flavor}
            if flavor == "h100" or draw(st.booleans()):
                nominal = draw(st.integers(1, 8))
                borrow = draw(st.sampled_from([None, 0, 2, 8]))
                budget["devices"] = {
                    s.GPU: nominal if borrow is None else {"nominal": nominal, "borrowingLimit": borrow}
                }
            resources: dict[str, Any] = {}
            for name, values in (
                ("cpu", ["50m", 1, 8, 8]),
                ("memory", ["64Mi", "1Gi", "32Gi", "32Gi"]),
                ("pods", [0, 1, 20, 20]),
            ):
                if draw(st.integers(0, 4)):  # mostly present
                    resources[name] = draw(st.sampled_from(values))
            if resources:
                budget["resources"] = resources
            if "devices" in budget or resources:
                budgets.append(budget)
        if not any("devices" in b for b in budgets):  # claims on GPUs need GPUs budgeted somewhere
            budgets.append({"flavor": "h100", "devices": {s.GPU: 1}, "resources": dict(s.POD)})
        budgets = list({b["flavor"]: b for b in budgets}.values())
        claims = []
        for n in range(draw(st.integers(1, 2))):
            claim: dict[str, Any] = {
                "name": f"gpu-{n}",
                "deviceClass": s.GPU,
                "count": draw(st.sampled_from([1, 1, 2, 4, 8])),
            }
            if draw(st.integers(0, 2)) == 0:
                product = draw(st.sampled_from(PRODUCTS))
                claim["selectors"] = [f"device.attributes['gpu.nvidia.com'].productName == '{product}'"]
            claims.append(claim)
        body = s.tenant(f"t{i}", budgets, claimTemplates=claims)
        if any(isinstance(v, dict) for b in budgets for v in b.get("devices", {}).values()) or draw(
            st.booleans()
        ):
            body["cohort"] = "research"
        if draw(st.integers(0, 5)) == 0:
            body["state"] = "draining"
        tenants.append(body)
    return tenants, draw(st.booleans())


def _capacity(tenants: list[dict[str, Any]], inventory: bool) -> list[dict[str, Any]]:
    """Enough of everything the tenants budget: the property is about admission, not capacity."""
    budgeted = {r for t in tenants for b in t["budgets"]["default"] for r in b.get("resources", {})}
    out = []
    for flavor in FLAVORS:
        entry: dict[str, Any] = {
            "flavor": flavor,
            "devices": {s.GPU: 100},
            "resources": {
                k: v for k, v in {"cpu": 1000, "memory": "4Ti", "pods": 10000}.items() if k in budgeted
            },
        }
        if not entry["resources"]:
            del entry["resources"]
        if inventory and flavor == "h100":
            entry["inventory"] = [{"deviceClass": s.GPU, "count": 16, "attributes": {"productName": H100}}]
        out.append(entry)
    return out


def _q(value: Any) -> Decimal:
    return parse(value).value


def inadmissible(bodies: list[Mapping[str, Any]], devices: Mapping[str, int] | None) -> list[str]:
    """Every claim template of an active queue that no flavor of its queue can hold, as Kueue judges it,
    and every selector fewer declared devices satisfy than it asks for (`devices`: declared GPUs per
    productName, None when the cluster declares none)."""
    config = s.configuration(bodies)
    mapped = {n: m["name"] for m in config["resources"]["deviceClassMappings"] for n in m["deviceClassNames"]}
    queues = {b["metadata"]["name"]: b for b in bodies if b["kind"] == "ClusterQueue"}
    queue_of = {
        b["metadata"]["namespace"]: b["spec"]["clusterQueue"] for b in bodies if b["kind"] == "LocalQueue"
    }
    lendable: dict[tuple[str, str, str], Decimal] = {}  # (cohort, flavor, resource)
    for cq in queues.values():
        cohort = cq["spec"].get("cohortName")
        for group in cq["spec"]["resourceGroups"]:
            for flavor in group["flavors"]:
                for res in flavor["resources"]:
                    lend = res.get("lendingLimit", res["nominalQuota"])
                    key = (cohort, flavor["name"], res["name"])
                    lendable[key] = lendable.get(key, Decimal(0)) + _q(lend)
    problems = []
    for rct in (b for b in bodies if b["kind"] == "ResourceClaimTemplate"):
        where = f"{rct['metadata']['namespace']}/{rct['metadata']['name']}"
        cq = queues[queue_of[rct["metadata"]["namespace"]]]
        if cq["spec"].get("stopPolicy") in HELD:
            continue
        asks = dict(MINIMUM)
        for req in rct["spec"]["spec"]["devices"]["requests"]:
            exactly = req["exactly"]
            resource = mapped[exactly["deviceClassName"]]
            asks[resource] = asks.get(resource, Decimal(0)) + exactly.get("count", 1)
            for selector in exactly.get("selectors", []):
                product = re.search(r"productName == '([^']+)'", selector["cel"]["expression"])
                if (
                    devices is not None
                    and product
                    and devices.get(product.group(1), 0) < exactly.get("count", 1)
                ):
                    problems.append(f"{where}: too few {product.group(1)}")
        groups = cq["spec"]["resourceGroups"]
        if any(g for g in groups if "pods" in g["coveredResources"]):
            asks["pods"] = Decimal(1)
        covered = {r for g in groups for r in g["coveredResources"]}
        problems += [f"{where}: {r} not covered" for r in asks if r not in covered]
        cohort = cq["spec"].get("cohortName")
        for group in groups:
            wanted = {r: v for r, v in asks.items() if r in group["coveredResources"]}
            if wanted and not any(_fits(f, wanted, cohort, lendable) for f in group["flavors"]):
                problems.append(f"{where}: no flavor holds {wanted}")
    return problems


def _fits(
    flavor: Mapping[str, Any],
    wanted: Mapping[str, Decimal],
    cohort: str | None,
    lendable: Mapping[Any, Decimal],
) -> bool:
    quotas = {r["name"]: r for r in flavor["resources"]}
    for resource, amount in wanted.items():
        quota = quotas.get(resource, {"nominalQuota": 0})
        nominal = _q(quota["nominalQuota"])
        room = nominal
        if cohort:
            others = lendable.get((cohort, flavor["name"], resource), Decimal(0)) - _q(
                quota.get("lendingLimit", quota["nominalQuota"])
            )
            room += others if "borrowingLimit" not in quota else min(_q(quota["borrowingLimit"]), others)
        if amount > room:
            return False
    return True


REFUSAL = {
    "claim-admissible": re.compile(
        r'"insufficient quota for \S+ in flavor \S+, current podset request|unavailable in ClusterQueue'
    ),
    "claim-devices": re.compile(
        r"on cluster 'c1': request .* device\(s\) match in the cluster .*the cluster declares"
    ),
}


@settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    database=None,
    derandomize=True,
)
@given(fleet=fleets())
def test_every_claim_template_of_an_accepted_fleet_fits_a_flavor(
    fleet: tuple[list[dict[str, Any]], bool],
) -> None:
    tenants, inventory = fleet
    with tempfile.TemporaryDirectory() as tmp:
        root = s.write(
            Path(tmp) / "repo",
            tenants,
            [s.cluster("c1", _capacity(tenants, inventory))],
            platform_body=s.platform(s.CATALOG, FLAVORS),
            component=True,
        )
        result = engine.run(root, cache=None)
        errors = [f for f in result.findings if f.severity.value == "error"]
        if errors:
            for f in errors:
                if f.rule in REFUSAL:
                    assert REFUSAL[f.rule].search(f.message), f.format()
            return
        bodies = [yaml.safe_load(data) for data in result.clusters["c1"].tree.values()]
        devices = {H100: 16} if inventory else None
        assert inadmissible(bodies, devices) == []
        notes = [f for f in result.findings if f.rule == "claim-devices"]
        selectors = any("selectors" in c for t in tenants for c in t["claimTemplates"])
        assert len(notes) == (1 if selectors and not inventory else 0)


def test_the_judge_sees_a_pod_that_fits_no_flavor(tmp_path: Path) -> None:
    """inadmissible() finds what real Kueue refuses: pods 0 written on the GPU flavor, too few devices."""
    tenant = s.tenant(
        "a",
        [
            {"flavor": "h100", "devices": {s.GPU: 2}, "resources": {"cpu": 8, "memory": "32Gi", "pods": 10}},
            {"flavor": "cpu", "resources": {"cpu": 8, "memory": "32Gi"}},
        ],
        claimTemplates=[{"name": "x2", "deviceClass": s.GPU, "count": 2}],
    )
    root = s.write(
        tmp_path,
        [tenant],
        [s.cluster("c1", _capacity([tenant], True))],
        platform_body=s.platform(s.CATALOG, FLAVORS),
    )
    result = engine.run(root, cache=None)
    assert not result.failed, [f.format() for f in result.findings]
    bodies = [yaml.safe_load(data) for data in result.clusters["c1"].tree.values()]
    assert inadmissible(bodies, {H100: 16}) == []
    (cq,) = [b for b in bodies if b["kind"] == "ClusterQueue"]
    for flavor in cq["spec"]["resourceGroups"][0]["flavors"]:
        for res in flavor["resources"]:
            if res["name"] == "pods":
                res["nominalQuota"] = 0  # as the pipeline writes it on a flavor that does not budget pods
    assert inadmissible(bodies, {H100: 16}) == [
        "a-ns/x2: no flavor holds "
        + str(
            {
                "cpu": Decimal("0.1"),
                "memory": Decimal(128 * 2**20),
                "nvidia.com/gpu": Decimal(2),
                "pods": Decimal(1),
            }
        )
    ]
    (rct,) = [b for b in bodies if b["kind"] == "ResourceClaimTemplate"]
    rct["spec"]["spec"]["devices"]["requests"][0]["exactly"]["selectors"] = [
        {"cel": {"expression": "device.attributes['gpu.nvidia.com'].productName == 'NVIDIA A10G'"}}
    ]
    assert "a-ns/x2: too few NVIDIA A10G" in inadmissible(bodies, {H100: 16})
