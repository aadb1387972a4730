"""The record builders remember how they judge a quantity (its Quantity and its problems, a pure
function of the value): the remembered judgement is exactly a fresh one, kept apart by type, and the
findings of a tenant file are the same whether its amounts were judged before or not."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from gputenancy.common.findings import Origin, PipelineError
from gputenancy.inputs import builders
from gputenancy.inputs.source import load_text

VALUES: list[Any] = [4, "4", 4.0, "4.", True, False, 0, -2, "-2", "1Gi", "1e3", "1k", "500m", 0.5]
VALUES += ["abc", "", "8Ei", "99999999999999999999Ki", "10E", 2**64, "Ki", " 4", [4], {"nominal": 4}]


@pytest.mark.parametrize("value", VALUES, ids=repr)
def test_a_remembered_judgement_is_a_fresh_one(value: Any) -> None:
    fresh = builders._judged.__wrapped__(value)
    fresh_count = builders._count_problem.__wrapped__(value)
    for _ in range(2):
        q, problems = builders._judged(value) if isinstance(value, str | int | float) else fresh
        assert (repr(q), problems) == (repr(fresh[0]), fresh[1])
        count = builders._count_problem(value) if isinstance(value, str | int | float) else fresh_count
        assert count == fresh_count


def test_judgements_are_kept_apart_by_type() -> None:
    """1, 1.0 and True are equal as dict keys; judged each on its own."""
    builders._judged.cache_clear()
    builders._count_problem.cache_clear()
    assert builders._judged(1)[1] == ()
    assert builders._judged(True)[1] != ()  # a boolean is not a quantity
    assert builders._count_problem(1) is None
    assert builders._count_problem(1.0) is not None  # a device count is written plainly
    assert builders._count_problem(True) is None  # refused as a quantity already


TENANT = """\
name: t
owners: ["@team"]
namespaces: [t-a]
budgets:
  default:
    - flavor: h100
      devices:
        gpu.nvidia.com: {nominal: 1.5, borrowingLimit: "1Gi", lendingLimit: -1}
      resources:
        cpu: "8Ei"
        memory: abc
"""


def _findings() -> list[str]:
    doc = load_text(TENANT, "tenants/t.yaml")
    with pytest.raises(PipelineError) as raised:
        builders.build_tenant(doc)
    return [f.format() for f in raised.value.findings]


def test_a_tenant_s_findings_are_the_same_judged_fresh_or_remembered() -> None:
    builders._judged.cache_clear()
    builders._count_problem.cache_clear()
    fresh = _findings()
    assert builders._judged.cache_info().currsize > 0
    assert _findings() == fresh
    assert {"quantity", "quantity-range", "device-count"} <= {f.rsplit("(", 1)[1][:-1] for f in fresh}


@pytest.mark.parametrize("short", [True, False], ids=["gpu: 4", "gpu: {nominal: 4}"])
def test_an_amount_is_marked_where_it_is_written(short: bool) -> None:
    """An amount written alone (`gpu: 4`, built without a mapping of fields) and one written as fields
    give the same record but for where each field is marked: the key for the first, each field's key
    for the second; a device count written as a quantity is refused in both."""
    written = "4" if short else "{nominal: 4, borrowingLimit: 2}"
    text = TENANT.split("      devices:")[0] + f"      devices:\n        gpu.nvidia.com: {written}\n"
    doc = load_text(text, "tenants/t.yaml")
    tenant = builders.build_tenant(doc)
    assert tenant.default_budget is not None
    ((name, amount),) = tenant.default_budget[0].devices
    key = ("budgets", "default", 0, "devices", name)
    assert (str(amount.nominal), amount.lending) == ("4", None)
    assert amount.origin == doc.key_origin(*key) == Origin("tenants/t.yaml", 8, 9)
    if short:
        assert amount.borrowing is None
        assert dict(amount.field_origins) == {"nominal": amount.origin}
    else:
        assert str(amount.borrowing) == "2"
        assert dict(amount.field_origins) == {
            "nominal": Origin("tenants/t.yaml", 8, 26),
            "borrowingLimit": Origin("tenants/t.yaml", 8, 38),
        }
    with pytest.raises(PipelineError) as raised:
        builders.build_tenant(load_text(text.replace(": 4", ": 1Gi"), "tenants/t.yaml"))
    assert [f.rule for f in raised.value.findings] == ["device-count"]


@pytest.mark.parametrize(
    "shown",
    ["tenants/a.yaml", "a.yaml", "tenants/.a", "tenants/a.", "tenants/a.b.yaml", "tenants/a", "a/.", ".."],
)
def test_a_tenant_s_file_name_is_the_stem_a_path_gives(shown: str) -> None:
    assert builders._stem(shown) == Path(shown).stem
