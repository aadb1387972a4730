"""Boundaries and twins, pinned with small repositories built here: a limit reached exactly passes and
one more fails; of two rules that look alike, each has a case that only it catches; the merge keeps
what the base Configuration says; classes sharing one quota resource add up."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import repokit as s
import yaml

from gputenancy import engine
from gputenancy.check.webhook import webhooks
from gputenancy.common.findings import Finding, PipelineError, Severity
from gputenancy.inputs import source
from gputenancy.inputs.quantity import parse
from gputenancy.inputs.spec import load_model
from gputenancy.policy import rules
from gputenancy.policy.capacity import capacity_by_flavor, usage_by_flavor
from gputenancy.policy.catalog import classes_used
from gputenancy.render import kueueconfig
from gputenancy.render import manifests as render

H100 = "h100.nvidia.com"  # a second class on nvidia.com/gpu: whole H100s picked by product name
H100_SELECTOR = "device.attributes['gpu.nvidia.com'].productName == 'NVIDIA H100 80GB HBM3'"
TWO_ON_GPU = [
    s.device_class(s.GPU, "nvidia.com/gpu"),
    {"name": H100, "resource": "nvidia.com/gpu", "selectors": [H100_SELECTOR]},
    s.device_class(s.MIG, "nvidia.com/mig-1g.10gb", "1g.10gb"),
]


def model_findings(root: Path) -> list[Finding]:
    _, found = engine.check_only(root, cache=None)
    return found


def of_rule(found: list[Finding], rule: str) -> list[Finding]:
    return [f for f in found if f.rule == rule]


def at_cluster(found: list[Finding]) -> list[Finding]:
    """The capacity findings on the cluster file (each contributing tenant line gets one too)."""
    return [f for f in of_rule(found, "capacity") if f.path == "overlays/c1/cluster.yaml"]


def line_of(path: Path, needle: str) -> int:
    lines = path.read_text().splitlines()
    return next(n for n, text in enumerate(lines, 1) if needle in text)


# ------------------------------------------------------------------------------ capacity


@pytest.mark.parametrize(
    ("first", "second", "capacity", "fits"),
    [
        (3, 5, 8, True),  # exactly at capacity
        (3, 6, 8, False),  # one more
        (0, 8, 8, True),
        (0, 0, 0, True),
        (1, 0, 0, False),
    ],
)
def test_capacity_boundary_on_devices(
    tmp_path: Path, first: int, second: int, capacity: int, fits: bool
) -> None:
    root = s.write(
        tmp_path,
        [
            s.tenant("a", [{"flavor": "h100", "devices": {s.GPU: first}}]),
            s.tenant("b", [{"flavor": "h100", "devices": {s.GPU: second}}]),
        ],
        [s.cluster(capacity=[{"flavor": "h100", "devices": {s.GPU: capacity}}])],
    )
    found = model_findings(root)
    if fits:
        assert of_rule(found, "capacity") == []
    else:
        assert {f.severity for f in of_rule(found, "capacity")} == {Severity.ERROR}
        [cluster] = at_cluster(found)
        assert f"nvidia.com/gpu {first + second} exceeds capacity {capacity}" in cluster.message
        assert cluster.line == line_of(root / "overlays/c1/cluster.yaml", f"{s.GPU}:")


@pytest.mark.parametrize(("second", "fits"), [("500m", True), ("501m", False), ("0.5", True)])
def test_capacity_boundary_on_fractional_resources(tmp_path: Path, second: str, fits: bool) -> None:
    def budget(cpu: str) -> list[dict[str, Any]]:
        return [{"flavor": "h100", "devices": {s.GPU: 0}, "resources": {"cpu": cpu, "memory": "512Mi"}}]

    root = s.write(
        tmp_path,
        [s.tenant("a", budget("500m")), s.tenant("b", budget(second))],
        [
            s.cluster(
                capacity=[{"flavor": "h100", "devices": {s.GPU: 0}, "resources": {"cpu": 1, "memory": "1Gi"}}]
            )
        ],
    )
    found = model_findings(root)
    assert (of_rule(found, "capacity") == []) is fits, [f.format() for f in found]
    if not fits:
        [cluster] = at_cluster(found)
        assert "cpu 1001m exceeds capacity 1" in cluster.message


def test_capacity_with_overcommit_is_a_warning_at_the_same_boundary(tmp_path: Path) -> None:
    root = s.write(
        tmp_path,
        [s.tenant("a", [{"flavor": "h100", "devices": {s.GPU: 9}}])],
        [s.cluster(capacity=[{"flavor": "h100", "devices": {s.GPU: 8}}], overcommit=True)],
    )
    found = model_findings(root)
    assert len(at_cluster(found)) == 1
    assert {f.severity for f in of_rule(found, "capacity")} == {Severity.WARNING}


def test_two_classes_on_one_quota_resource_add_up(tmp_path: Path) -> None:
    """Capacity 4 whole GPUs + 4 H100s is 8 of nvidia.com/gpu; budgets through either class count."""

    def repo(a: int, b: int) -> Path:
        return s.write(
            tmp_path / f"{a}-{b}",
            [
                s.tenant("a", [{"flavor": "h100", "devices": {s.GPU: a}}]),
                s.tenant("b", [{"flavor": "h100", "devices": {H100: b}}]),
            ],
            [s.cluster(capacity=[{"flavor": "h100", "devices": {s.GPU: 4, H100: 4}}])],
            platform_body=s.platform(TWO_ON_GPU),
        )

    assert of_rule(model_findings(repo(5, 3)), "capacity") == []
    [over] = at_cluster(model_findings(repo(5, 4)))
    assert "nvidia.com/gpu 9 exceeds capacity 8" in over.message
    model, _ = load_model(repo(1, 1))
    catalog = rules.effective_catalog(model)
    cluster = model.clusters["c1"]
    assert {k: str(v[0]) for k, v in capacity_by_flavor(cluster, catalog).items()} == {
        ("h100", "nvidia.com/gpu"): "8"
    }
    assert {k: str(v) for k, v in usage_by_flavor(model, cluster, catalog).items()} == {
        ("h100", "nvidia.com/gpu"): "2"
    }


# ------------------------------------------------------------------------------ quota limits


@pytest.mark.parametrize(("lending", "fits"), [(4, True), (5, False), (0, True)])
def test_lending_limit_up_to_nominal(tmp_path: Path, lending: int, fits: bool) -> None:
    """Kueue admits lendingLimit == nominalQuota; one more is refused."""
    amount = {"nominal": 4, "lendingLimit": lending}
    root = s.write(
        tmp_path, [s.tenant("a", [{"flavor": "h100", "devices": {s.GPU: amount}}], cohort="research")]
    )
    found = model_findings(root)
    if fits:
        assert found == []
    else:
        assert [f.rule for f in found] == ["quota-limits"]
        assert found[0].line == line_of(root / "tenants/a.yaml", "lendingLimit")


@pytest.mark.parametrize("field", ["borrowingLimit", "lendingLimit"])
def test_each_limit_alone_needs_a_cohort(tmp_path: Path, field: str) -> None:
    amount = {"nominal": 2, field: 1}
    without = s.write(tmp_path / "without", [s.tenant("a", [{"flavor": "h100", "devices": {s.GPU: amount}}])])
    found = model_findings(without)
    assert [f.rule for f in found] == ["cohort-required"]
    assert found[0].line == line_of(without / "tenants/a.yaml", field)
    with_cohort = s.write(
        tmp_path / "with",
        [s.tenant("a", [{"flavor": "h100", "devices": {s.GPU: amount}}], cohort="research")],
    )
    assert model_findings(with_cohort) == []


# ------------------------------------------------------------------------------ webhook twins


def _cq(**quota: Any) -> dict[str, Any]:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ClusterQueue",
        "metadata": {"name": "a"},
        "spec": {
            "resourceGroups": [
                {
                    "coveredResources": ["nvidia.com/gpu"],
                    "flavors": [{"name": "h100", "resources": [{"name": "nvidia.com/gpu", **quota}]}],
                }
            ]
        },
    }


def _fired(body: dict[str, Any], ids: set[str]) -> dict[str, list[tuple[Any, ...]]]:
    out: dict[str, list[tuple[Any, ...]]] = {}
    for rule in webhooks.RULES:
        if rule.id in ids:
            problems = list(rule.check(body))
            if problems:
                out[rule.id] = [p.path for p in problems]
    return out


TWINS = {"kueue-webhook-cq-borrowing-limit-cohort", "kueue-webhook-cq-lending-limit-cohort"}
QUOTA = ("spec", "resourceGroups", 0, "flavors", 0, "resources", 0)


@pytest.mark.parametrize(
    ("field", "rule"),
    [
        ("borrowingLimit", "kueue-webhook-cq-borrowing-limit-cohort"),
        ("lendingLimit", "kueue-webhook-cq-lending-limit-cohort"),
    ],
)
def test_cohort_twins_each_catch_only_their_own_field(field: str, rule: str) -> None:
    body = _cq(nominalQuota="4", **{field: "2"})
    assert _fired(body, TWINS) == {rule: [(*QUOTA, field)]}
    body["spec"]["cohortName"] = "research"
    assert _fired(body, TWINS) == {}


@pytest.mark.parametrize("field", ["borrowingLimit", "lendingLimit"])
def test_cohort_limits_need_a_parent_for_each_field(field: str) -> None:
    body = _cq(nominalQuota="4", **{field: "2"}) | {"kind": "Cohort"}
    rule = {"kueue-webhook-cohort-limits-need-parent"}
    assert _fired(body, rule) == {"kueue-webhook-cohort-limits-need-parent": [(*QUOTA, field)]}
    body["spec"]["parentName"] = "org"
    assert _fired(body, rule) == {}


@pytest.mark.parametrize(("lending", "fires"), [("4", False), ("4000m", False), ("4001m", True), ("5", True)])
def test_webhook_lending_limit_boundary(lending: str, fires: bool) -> None:
    body = _cq(nominalQuota="4", lendingLimit=lending)
    body["spec"]["cohortName"] = "research"
    assert bool(_fired(body, {"kueue-webhook-cq-lending-limit"})) is fires


@pytest.mark.parametrize("field", ["nominalQuota", "borrowingLimit", "lendingLimit"])
@pytest.mark.parametrize(("value", "fires"), [("0", False), ("-1", True), ("-1n", True)])
def test_webhook_quota_nonnegative_boundary(field: str, value: str, fires: bool) -> None:
    body = _cq(nominalQuota="1", borrowingLimit="1", lendingLimit="1")
    body["spec"]["cohortName"] = "research"
    body["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0][field] = value
    fired = _fired(body, {"kueue-webhook-cq-quota-nonnegative"})
    assert fired == ({"kueue-webhook-cq-quota-nonnegative": [(*QUOTA, field)]} if fires else {})


# ------------------------------------------------------------------------------ the Configuration merge

FPGA_MAPPING = {"name": "example.com/fpga", "deviceClassNames": ["fpga.example.com"]}


def test_base_mappings_survive_the_merge(tmp_path: Path) -> None:
    base = {**s.BASE_CONFIG, "resources": {"deviceClassMappings": [FPGA_MAPPING]}}
    root = s.write(
        tmp_path,
        [s.tenant("a", [{"flavor": "h100", "devices": {s.GPU: 1}}])],
        kueue_config=base,
    )
    result = engine.run(root, cache=None)
    assert not result.failed, [f.format() for f in result.findings]
    config = s.tree_configuration(result.clusters["c1"].tree)
    assert config["resources"]["deviceClassMappings"] == [
        FPGA_MAPPING,
        {"name": "nvidia.com/gpu", "deviceClassNames": [s.GPU]},
    ]
    assert config["integrations"] == s.BASE_CONFIG["integrations"]  # the rest of the base is kept


def test_overlay_config_merges_maps_and_replaces_lists(tmp_path: Path) -> None:
    over = {"integrations": {"frameworks": ["jobset.x-k8s.io/jobset"]}, "webhook": {"host": "0.0.0.0"}}
    cluster = s.cluster()
    cluster["kueue"]["config"] = over
    root = s.write(tmp_path, [s.tenant("a")], [cluster])
    model, _ = load_model(root)
    config, found = kueueconfig.build(model, model.clusters["c1"], rules.effective_catalog(model))
    assert found == []
    assert config.body["integrations"] == {"frameworks": ["jobset.x-k8s.io/jobset"]}
    assert config.body["webhook"] == {"port": 9443, "host": "0.0.0.0"}
    assert config.body["leaderElection"] == s.BASE_CONFIG["leaderElection"]


# ------------------------------------------------------------------------------ classes in use


def test_a_claim_on_a_class_only_claimed_is_mapped_and_rendered(tmp_path: Path) -> None:
    """The tenant budgets gpu.nvidia.com and claims h100.nvidia.com (same quota resource): the claimed
    class must get its DeviceClass and its place in the mapping, or its jobs never count against quota."""
    root = s.write(
        tmp_path,
        [
            s.tenant(
                "a",
                [{"flavor": "h100", "devices": {s.GPU: 2}, "resources": s.POD}],
                claimTemplates=[{"name": "one-h100", "deviceClass": H100}],
            )
        ],
        [s.cluster(capacity=[{"flavor": "h100", "devices": {s.GPU: 8}, "resources": s.POD_CAPACITY}])],
        platform_body=s.platform(TWO_ON_GPU),
    )
    model, _ = load_model(root)
    assert set(classes_used(model, "c1")) == {s.GPU, H100}
    result = engine.run(root, cache=None)
    assert not result.failed, [f.format() for f in result.findings]
    tree = result.clusters["c1"].tree
    assert f"deviceclass/{H100}.yaml" in tree
    config = s.tree_configuration(tree)
    assert config["resources"]["deviceClassMappings"] == [
        {"name": "nvidia.com/gpu", "deviceClassNames": [s.GPU, H100]}
    ]
    claim = yaml.safe_load(tree["resourceclaimtemplate/a-ns/one-h100.yaml"])
    assert claim["spec"]["spec"]["devices"]["requests"][0]["exactly"]["deviceClassName"] == H100


# ------------------------------------------------------------------------------ mapping limits


@pytest.mark.parametrize(
    ("resources", "per_resource", "fires"),
    [(16, 1, None), (17, 1, "needs 17 deviceClassMappings"), (1, 8, None), (1, 9, "9 device classes map")],
)
def test_mapping_limits_boundaries(
    tmp_path: Path, resources: int, per_resource: int, fires: str | None
) -> None:
    """Kueue takes at most 16 deviceClassMappings of at most 8 classes: exactly 16 and 8 pass."""
    classes = [
        {
            "name": f"p{r}-{c}.example.com",
            "resource": f"example.com/r{r}",
            "selectors": [f"device.attributes['example.com'].profile == 'p{r}-{c}'"],
        }
        for r in range(resources)
        for c in range(per_resource)
    ]
    tenants = [
        s.tenant(f"t{i}", [{"flavor": "h100", "devices": {entry["name"]: 1}}])
        for i, entry in enumerate(classes)
    ]
    capacity = [{"flavor": "h100", "devices": {entry["name"]: 1 for entry in classes}}]
    root = s.write(tmp_path, tenants, [s.cluster(capacity=capacity)], platform_body=s.platform(classes))
    found = of_rule(model_findings(root), "mapping-limits")
    if fires is None:
        assert found == []
    else:
        assert len(found) == 1 and fires in found[0].message


def test_the_catalogs_declaration_wins_over_a_tenants_identical_one(tmp_path: Path) -> None:
    """A tenant may re-declare a catalog class as the catalog does; the DeviceClass stays the platform's
    (its source, and where findings about it point), and of two tenants the first declaration wins."""
    mig_2g = s.device_class("mig-2g.20gb.nvidia.com", "nvidia.com/mig-2g.20gb", "2g.20gb")
    tenants = [
        s.tenant(
            name,
            [{"flavor": "h100", "devices": {s.MIG: 1, mig_2g["name"]: 1}}],
            deviceClasses=[s.CATALOG[1], mig_2g],
        )
        for name in ("a", "b")
    ]
    capacity = [{"flavor": "h100", "devices": {s.MIG: 2, mig_2g["name"]: 2}}]
    root = s.write(tmp_path, tenants, [s.cluster(capacity=capacity)])
    model, found = engine.check_only(root, cache=None)
    assert found == []
    catalog = rules.effective_catalog(model)
    assert catalog.classes[s.MIG].origin.path == "base/platform.yaml"
    assert catalog.classes[mig_2g["name"]].origin.path == "tenants/a.yaml"
    platform, _, _ = render.render_platform(model, model.clusters["c1"], catalog)
    sources = {
        o.body["metadata"]["name"]: o.body["metadata"]["annotations"]["gputenancy.io/source"]
        for o in platform
        if o.body["kind"] == "DeviceClass"
    }
    assert sources == {s.MIG: "base/platform.yaml", mig_2g["name"]: "tenants/a.yaml"}


# ------------------------------------------------------------------------------ quantity printing


@pytest.mark.parametrize(
    ("given", "canonical"),
    [
        ("0.9765625Ki", "1k"),  # 1000: inside (-1024, 1024) a BinarySI value prints as DecimalSI
        ("-0.9765625Ki", "-1k"),
        ("0.9990234375Ki", "1023"),
        ("1Ki", "1Ki"),  # 1024: the first BinarySI form
        ("-1Ki", "-1Ki"),
        ("1.0009765625Ki", "1025"),
        ("1000Mi", "1000Mi"),
        ("1024Mi", "1Gi"),
    ],
)
def test_binary_quantities_at_the_1024_boundary(given: str, canonical: str) -> None:
    """Upstream CanonicalizeBytes: BinarySI only from magnitude 1024 on (what the API server stores)."""
    assert parse(given).canonical() == canonical


# ------------------------------------------------------------------------------ source limits


DOCUMENTED_LIMIT = 256 * 1024  # docs/inputs.md: "at most 256 KiB"


@pytest.mark.parametrize("over", [0, 1, 2, 4096])
def test_input_files_up_to_256_kib(tmp_path: Path, over: int) -> None:
    """A file of exactly the documented limit loads; over it, it is refused from its size on disk
    before it is read, and the message gives the file's real size (not what a bounded read saw)."""
    size = DOCUMENTED_LIMIT + over
    path = tmp_path / "tenants" / "big.yaml"
    path.parent.mkdir(parents=True)
    path.write_bytes(b"a: 1\n" + b"#" * (size - 5))
    if over == 0:
        assert source.load(path, tmp_path).data == {"a": 1}
        return
    with pytest.raises(PipelineError) as caught:
        source.load(path, tmp_path)
    [finding] = caught.value.findings
    assert finding.rule == "source-size"
    assert f"file is {size} bytes, over the limit of {DOCUMENTED_LIMIT} bytes (256 KiB)" in finding.message
