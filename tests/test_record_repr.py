"""Origin and Quantity write their own repr (faster than the one dataclasses generate, since a tenant
record's repr is part of its cache key): the text is exactly the generated one, for any value."""

from __future__ import annotations

import dataclasses
from decimal import Decimal
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from gputenancy.common.findings import Origin
from gputenancy.inputs.quantity import Format, Quantity, parse


def _generated(cls: type, *values: Any) -> str:
    """The repr dataclasses generate for a class of the same name and fields."""
    twin = dataclasses.make_dataclass(cls.__name__, [f.name for f in dataclasses.fields(cls)])
    return repr(twin(*values))


@settings(max_examples=200)
@given(st.text(), st.integers(), st.integers())
def test_origin_repr_is_the_generated_one(path: str, line: int, col: int) -> None:
    assert repr(Origin(path, line, col)) == _generated(Origin, path, line, col)


@settings(max_examples=200)
@given(st.decimals(allow_nan=False, allow_infinity=False), st.sampled_from(list(Format)))
def test_quantity_repr_is_the_generated_one(value: Decimal, fmt: Format) -> None:
    q = Quantity(value, fmt)
    assert repr(q) == _generated(Quantity, q.value, q.format)


def test_parsed_and_summed_quantities_too() -> None:
    for q in (parse("1.5Gi"), parse(4), parse("500m") + parse(1), parse("1e3") - parse("1e3")):
        assert repr(q) == _generated(Quantity, q.value, q.format)
