"""HAMi unit conversions: exact MiB and percent, the quota strings the API server stores, and the
arithmetic of budgets, capacity and templates (unit and property tests)."""

from __future__ import annotations

import tempfile
from pathlib import Path

import hamitree
import pytest
import trees
from hypothesis import given, settings
from hypothesis import strategies as st

from gputenancy import engine
from gputenancy.common.findings import PipelineError
from gputenancy.inputs import hami, quantity
from gputenancy.policy import rules
from gputenancy.render.manifests import render_tenant

MIB = 1 << 20


@pytest.mark.parametrize(
    ("written", "mib"),
    [
        ("48Gi", 49152),
        ("16000Mi", 16000),
        ("15Gi", 15360),
        ("1Ti", 1048576),
        ("0.5Gi", 512),
        ("2097152Ki", 2048),
    ],
)
def test_memory_to_mib(written: str, mib: int) -> None:
    assert hami.mib(written) == mib


@pytest.mark.parametrize(
    ("written", "words"),
    [
        ("15G", "write 14305Mi or 14306Mi"),
        ("48.5G", "write 46253Mi or 46254Mi"),
        ("1000Ki", "write 0Mi or 1Mi"),
        (16000, "has no unit; write it with one: 16000Mi"),
        ("16000", "has no unit"),
        ("-1Gi", "must not be negative"),
    ],
)
def test_memory_refused_with_the_fix(written: str | int, words: str) -> None:
    with pytest.raises(hami.UnitError, match=words):
        hami.mib(written)


def test_whole_numbers() -> None:
    assert hami.whole(150, "cores") == 150
    assert hami.whole("2", "vGPUs") == 2
    for written in ("1k", "2e3", "4.0", 4.0):  # an integer in value, not written as one
        with pytest.raises(hami.UnitError, match="must be a plain whole number"):
            hami.whole(written, "cores")
    with pytest.raises(hami.UnitError, match=r"must be a whole number, got '1500m' \(1.5\)"):
        hami.whole("1500m", "cores")
    with pytest.raises(hami.UnitError, match="must not be negative"):
        hami.whole(-1, "vGPUs")


@pytest.mark.parametrize(
    ("mib", "stored"),
    # what the API server stored after Kueue's webhooks (hami-kueue-verified.md)
    [
        (16000, "16k"),
        (1000, "1k"),
        (6000, "6k"),
        (10240, "10240"),
        (2048, "2048"),
        (49152, "49152"),
        (0, "0"),
    ],
)
def test_quota_in_the_form_the_api_server_stores(mib: int, stored: str) -> None:
    assert hami.mib_quantity(mib).canonical() == stored


def test_human_views() -> None:
    assert hami.gib_text(49152) == "48Gi"
    assert hami.gib_text(16000) == "15.625Gi"
    assert hami.gib_text(quantity.parse(12000)) == "11.719Gi"
    assert hami.percent_text(150) == "150% (1.5 GPUs)"
    assert hami.percent_text(quantity.parse(100)) == "100% (1 GPU)"
    assert hami.human(quantity.parse(12288), "MiB") == "12Gi"
    assert hami.human(quantity.parse(50), "percent") == "50% (0.5 GPUs)"
    assert hami.human(quantity.parse(4), "") == "4"


def test_capacity_totals() -> None:
    from gputenancy.common.findings import Origin

    cap = hami.HamiCapacity(None, 2, 15360, 4, Origin("c"))
    assert [q.canonical() for q in cap.totals()] == ["8", "30720", "200"]


# ---------------------------------------------------------------- properties

mibs = st.integers(min_value=0, max_value=1 << 40)


@given(mibs)
def test_mib_round_trips_through_every_unit(n: int) -> None:
    assert hami.mib(f"{n}Mi") == n
    assert hami.mib(f"{n * 1024}Ki") == n
    if n % 1024 == 0:
        assert hami.mib(f"{n // 1024}Gi") == n
    stored = hami.mib_quantity(n).canonical()
    assert quantity.parse(stored).value == n  # the stored string is exactly n MiB


@given(st.integers(min_value=0, max_value=1 << 50))
def test_bytes_convert_exactly_or_are_refused_between_neighbours(n_bytes: int) -> None:
    written = f"{n_bytes}"
    if n_bytes % MIB == 0:
        assert hami.mib(written + "e0") == n_bytes // MIB
        return
    with pytest.raises(hami.UnitError) as info:
        hami.mib(written + "e0")
    low, high = n_bytes // MIB, n_bytes // MIB + 1
    assert f"write {low}Mi or {high}Mi" in str(info.value)
    assert low * MIB < n_bytes < high * MIB


@given(st.lists(mibs, min_size=1, max_size=20))
def test_sum_of_quotas_is_exact_in_stored_form(values: list[int]) -> None:
    """Capacity sums canonical quantities: the sum of the stored strings is the stored sum."""
    total = sum((quantity.parse(hami.mib_quantity(v).canonical()) for v in values), quantity.parse(0))
    assert total.canonical() == hami.mib_quantity(sum(values)).canonical()


@given(st.integers(1, 16), st.integers(1, 1 << 20), st.integers(0, 100))
def test_template_charge_is_per_vgpu_times_vgpus(vgpus: int, mib: int, cores: int) -> None:
    from gputenancy.common.findings import Origin

    t = hami.VgpuTemplate("t", vgpus, mib, cores, None, Origin("t"))
    assert t.charge() == (vgpus, vgpus * mib, vgpus * cores)


@settings(max_examples=25)
@given(
    st.integers(0, 40000),
    st.integers(0, 40000),
    st.integers(0, 300),
)
def test_budgets_render_exactly_and_capacity_holds_iff_they_fit(a: int, b: int, cores: int) -> None:
    """Two tenants' memory budgets in MiB on 2 x 15Gi: the rendered quota is the budget exactly, and the
    capacity rule fires exactly when the sum exceeds 30720 MiB (or the cores 200 percent)."""
    with tempfile.TemporaryDirectory() as tmp:
        root = hamitree.build(Path(tmp))
        trees.edit(
            root,
            "tenants/notebooks.yaml",
            lambda d: d["budgets"]["default"][0]["hami"].update(memory=f"{a}Mi"),
        )
        trees.edit(
            root,
            "tenants/serving.yaml",
            lambda d: (
                d["budgets"]["default"][0]["hami"].update(memory=f"{b}Mi", cores=cores),
                d.pop("vgpuTemplates"),
            ),
        )
        trees.edit(root, "tenants/notebooks.yaml", lambda d: d.pop("vgpuTemplates"))
        try:
            model, findings = engine.check_only(root)
        except PipelineError as exc:  # pragma: no cover - the inputs are valid by construction
            raise AssertionError(exc.findings) from exc
        over = {f.message.split("nominal ")[1].split(" ")[0] for f in findings if f.rule == "capacity"}
        assert ("nvidia.com/total-gpumem" in over) == (a + b > 30720)
        assert ("nvidia.com/total-gpucores" in over) == (150 + cores > 200)
        catalog = rules.effective_catalog(model)
        cluster = model.clusters["site"]
        for tenant, mib in zip(sorted(model.tenants, key=lambda t: t.name), (a, b), strict=True):
            cq = render_tenant(tenant, cluster, catalog)[0].body
            quotas = {
                r["name"]: r["nominalQuota"]
                for r in cq["spec"]["resourceGroups"][0]["flavors"][0]["resources"]
            }
            assert quotas["nvidia.com/total-gpumem"] == quantity.parse(mib).canonical()
            assert quantity.parse(quotas["nvidia.com/total-gpumem"]).value == mib
