"""Kueue version facts for HAMi quotas, from the package's table (data/hami.json)."""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from importlib import resources
from typing import Any

from gputenancy.versions.gates import minor_of


@functools.cache
def _table() -> Mapping[str, Any]:
    text = resources.files("gputenancy.versions").joinpath("data", "hami.json").read_text(encoding="utf-8")
    data: Mapping[str, Any] = json.loads(text)
    return data


def _key(minor: str) -> tuple[int, ...]:
    return tuple(int(p) for p in minor.lstrip("v").split("."))


def multiply_by_since() -> str:
    """The first Kueue minor version whose resource transformations accept `multiplyBy`."""
    return str(_table()["multiplyBy"])


def has_multiply_by(version: str) -> bool:
    return _key(minor_of(version)) >= _key(multiply_by_since())


def retain_multiplied(version: str) -> bool:
    """Whether a `strategy: Retain` transformation charges its input multiplied by `multiplyBy` (up to
    v0.18) rather than as requested (v0.19 on): measured, shared/docs/hami-kueue-verified.md."""
    return _key(minor_of(version)) <= _key(str(_table()["retainInputMultipliedThrough"]))


def dra_capacity_gate() -> str:
    return str(_table()["draCapacityGate"])


def driver_extended_resource_names() -> Mapping[str, str]:
    """DeviceClass -> the extendedResourceName its driver's chart sets (classic requests it serves)."""
    names: Mapping[str, str] = _table()["driverExtendedResourceNames"]
    return names
