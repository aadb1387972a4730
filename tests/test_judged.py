"""The record builders remember how they judge a quantity (its Quantity and its problems, a pure
function of the value): the remembered judgement is exactly a fresh one, kept apart by type, and the
findings of a tenant file are the same whether its amounts were judged before or not."""

from __future__ import annotations

from typing import Any

import pytest

from gputenancy.common.findings import PipelineError
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
