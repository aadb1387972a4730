"""DRA CEL selectors type-checked as the API server compiles them (gputenancy.check.kubernetes.celtypes)."""

from __future__ import annotations

import pytest

from gputenancy.check.kubernetes import dra
from gputenancy.check.kubernetes.celtypes import type_error

ACCEPTED = [
    "device.driver == 'gpu.nvidia.com'",
    "device.attributes['gpu.nvidia.com'].productName == 'NVIDIA H100 80GB HBM3'",
    "device.attributes['gpu.nvidia.com'].type == 'mig' && device.attributes['gpu.nvidia.com'].cores > 4",
    "device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('40Gi')) >= 0",
    "device.attributes['dra.example.com'].driverVersion.isGreaterThan(semver('1.0.0'))",
    "'gpu.nvidia.com' in device.attributes && device.attributes['gpu.nvidia.com'].x",
    "cel.bind(a, device.attributes['gpu.nvidia.com'], a.productName.startsWith('NVIDIA'))",
    "device.attributes.exists(d, d.endsWith('.nvidia.com'))",
    "device.allowMultipleAllocations",
    "device.driver.lowerAscii().matches('^gpu')",
    "isQuantity('1Gi') && quantity('1Gi').isLessThan(quantity('2Gi'))",
]

REFUSED = [
    # (expression, the API server's message, at its column)
    (
        "device.atributes['gpu.nvidia.com'].productName == 'x'",
        "ERROR: <input>:1:7: undefined field 'atributes'",
    ),
    (
        "device.driver == 1",
        "ERROR: <input>:1:15: found no matching overload for '_==_' applied to '(string, int)'",
    ),
    ("device.driver", "must evaluate to bool, not string"),
    ("quantity('1Gi') > 1", "found no matching overload for '_>_' applied to '(kubernetes.Quantity, int)'"),
    ("device.driver.size() == 'a'", "found no matching overload for '_==_' applied to '(int, string)'"),
]


@pytest.mark.parametrize("expression", ACCEPTED)
def test_accepted(expression: str) -> None:
    assert type_error(expression) is None
    assert dra.cel_selector_error(expression) is None


@pytest.mark.parametrize(("expression", "message"), REFUSED)
def test_refused_with_the_api_servers_text(expression: str, message: str) -> None:
    error = dra.cel_selector_error(expression)
    assert error is not None and message in error, error
    assert "\n" not in error  # one line: the finding format is one line per finding
