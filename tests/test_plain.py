"""`memo._plain` decides whether a result can be stored as JSON; it walks every object a run stores, so
it is written for speed. Its answer is the plain definition's, for any nesting of JSON and non-JSON
values (tuples, sets, bytes, non-string keys, subclasses, NaN)."""

from __future__ import annotations

import collections
import math
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from gputenancy.caching import memo


def _defined(value: Any) -> bool:
    """String keys, dicts, lists, str, int, float (bool included) and None, all the way down."""
    if isinstance(value, dict):
        return all(isinstance(k, str) and _defined(v) for k, v in value.items())
    if isinstance(value, list):
        return all(_defined(v) for v in value)
    return value is None or isinstance(value, str | int | float)


class _Str(str):
    pass


LEAVES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(),
    st.text(max_size=3),
    st.builds(_Str, st.text(max_size=2)),
    st.binary(max_size=2),
    st.just(math.nan),
    st.tuples(st.integers()),
    st.frozensets(st.integers(), max_size=1),
)
KEYS = st.one_of(st.text(max_size=3), st.integers(), st.booleans(), st.none())
VALUES = st.recursive(
    LEAVES,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(KEYS, inner, max_size=4),
        st.dictionaries(st.text(max_size=3), inner, max_size=4).map(collections.OrderedDict),
    ),
    max_leaves=20,
)


@settings(max_examples=500)
@given(VALUES)
def test_plain_answers_as_its_definition(value: Any) -> None:
    assert memo._plain(value) == _defined(value)


def test_plain_and_not() -> None:
    assert memo._plain({"a": [1, "x", {"b": None, "c": 1.5, "d": True}]})
    assert not memo._plain({"a": [1, ("x",)]})
    assert not memo._plain({"a": {1: "x"}})
    assert not memo._plain(["x", b"y"])
