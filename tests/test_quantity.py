"""Kubernetes quantities: upstream vectors, then properties checked against an exact oracle.

The vector tables are ported from k8s.io/apimachinery, pkg/api/resource:
quantity_test.go (TestQuantityParse, TestQuantityString, TestQuantityParseEmit,
TestParseQuantity, TestParseQuantityString, TestAdd, TestSub, TestQuantityCmp,
TestQuantityAddZeroPreservesSuffix, TestQuantitySubZeroPreservesSuffix,
TestZeroSubMostNegativeInheritsFormat, TestNegAndSubAtMostNegative,
TestSubMostNegativeCrossScale, TestMilliNewSet, TestNewSet),
quantity_golden_test.go (the canonical column of quantitySerializationCases) and
quantity_subnano_test.go (TestParseQuantitySubNanoRoundsUp, ...MatchesRound).
"""

from __future__ import annotations

import dataclasses
import math
import re
from decimal import Decimal
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gputenancy.inputs.quantity import (
    MAX_BINARY_SI,
    Format,
    Quantity,
    QuantityError,
    canonical,
    parse,
    parse_count,
)

DSI = Format.DECIMAL_SI
BSI = Format.BINARY_SI
DEXP = Format.DECIMAL_EXPONENT
MOST_NEGATIVE = -(2**63)

SETTINGS = settings(max_examples=200)


def dec(mantissa: int, exponent: int) -> Decimal:
    """upstream decQuantity's value: mantissa * 10^exponent."""
    return Decimal(f"{mantissa}e{exponent}")


# --- upstream vectors --------------------------------------------------------------------------------

# quantity_test.go TestQuantityParse: input -> (mantissa, exponent, format).
PARSE_VECTORS: list[tuple[str, int, int, Format]] = [
    ("0", 0, 0, DSI),
    ("0n", 0, 0, DSI),
    ("0u", 0, 0, DSI),
    ("0m", 0, 0, DSI),
    ("0Ki", 0, 0, BSI),
    ("0k", 0, 0, DSI),
    ("0Mi", 0, 0, BSI),
    ("0M", 0, 0, DSI),
    ("0Gi", 0, 0, BSI),
    ("0G", 0, 0, DSI),
    ("0Ti", 0, 0, BSI),
    ("0T", 0, 0, DSI),
    # Quantity less numbers are allowed
    ("1", 1, 0, DSI),
    # Binary suffixes
    ("1Ki", 1024, 0, BSI),
    ("8Ki", 8 * 1024, 0, BSI),
    ("7Mi", 7 * 1024**2, 0, BSI),
    ("6Gi", 6 * 1024**3, 0, BSI),
    ("5Ti", 5 * 1024**4, 0, BSI),
    ("4Pi", 4 * 1024**5, 0, BSI),
    ("3Ei", 3 * 1024**6, 0, BSI),
    ("10Ti", 10 * 1024**4, 0, BSI),
    ("100Ti", 100 * 1024**4, 0, BSI),
    # Decimal suffixes
    ("5n", 5, -9, DSI),
    ("4u", 4, -6, DSI),
    ("3m", 3, -3, DSI),
    ("9", 9, 0, DSI),
    ("8k", 8, 3, DSI),
    ("50k", 5, 4, DSI),
    ("7M", 7, 6, DSI),
    ("6G", 6, 9, DSI),
    ("5T", 5, 12, DSI),
    ("40T", 4, 13, DSI),
    ("300T", 3, 14, DSI),
    ("2P", 2, 15, DSI),
    ("1E", 1, 18, DSI),
    # Decimal exponents
    ("1E-3", 1, -3, DEXP),
    ("1e3", 1, 3, DEXP),
    ("1E6", 1, 6, DEXP),
    ("1e9", 1, 9, DEXP),
    ("1E12", 1, 12, DEXP),
    ("1e15", 1, 15, DEXP),
    ("1E18", 1, 18, DEXP),
    # Nonstandard but still parsable
    ("1e14", 1, 14, DEXP),
    ("1e13", 1, 13, DEXP),
    ("100.035k", 100035, 0, DSI),
    # Things that look like floating point
    ("0.001", 1, -3, DSI),
    ("0.0005k", 5, -1, DSI),
    ("0.005", 5, -3, DSI),
    ("0.05", 5, -2, DSI),
    ("0.5", 5, -1, DSI),
    ("0.00050k", 5, -1, DSI),
    ("0.00500", 5, -3, DSI),
    ("0.05000", 5, -2, DSI),
    ("0.50000", 5, -1, DSI),
    ("0.5e0", 5, -1, DEXP),
    ("0.5e-1", 5, -2, DEXP),
    ("0.5e-2", 5, -3, DEXP),
    ("10.035M", 10035, 3, DSI),
    ("1.2e3", 12, 2, DEXP),
    ("1.3E+6", 13, 5, DEXP),
    ("1.40e9", 14, 8, DEXP),
    ("1.53E12", 153, 10, DEXP),
    ("1.6e15", 16, 14, DEXP),
    ("1.7E18", 17, 17, DEXP),
    ("9.01", 901, -2, DSI),
    ("8.1k", 81, 2, DSI),
    ("7.123456M", 7123456, 0, DSI),
    ("6.987654321G", 6987654321, 0, DSI),
    ("5.444T", 5444, 9, DSI),
    ("40.1T", 401, 11, DSI),
    ("300.2T", 3002, 11, DSI),
    ("2.5P", 25, 14, DSI),
    ("1.01E", 101, 16, DSI),
    # Things that saturate/round
    ("3.001n", 4, -9, DSI),
    ("1.1E-9", 2, -9, DEXP),
    ("0.0000000001", 1, -9, DSI),
    ("0.0000000005", 1, -9, DSI),
    ("0.00000000050", 1, -9, DSI),
    ("0.5e-9", 1, -9, DEXP),
    ("0.9n", 1, -9, DSI),
    ("0.00000012345", 124, -9, DSI),
    ("0.00000012354", 124, -9, DSI),
    ("9Ei", MAX_BINARY_SI, 0, BSI),
    ("9223372036854775807Ki", MAX_BINARY_SI, 0, BSI),
    ("12E", 12, 18, DSI),
    # We'll accept fractional binary stuff, too.
    ("100.035Ki", 10243584, -2, BSI),
    ("0.5Mi", 524288, 0, BSI),
    ("0.05Gi", 536870912, -1, BSI),
    ("0.025Ti", 274877906944, -1, BSI),
    # Things written by trolls
    ("0.000000000001Ki", 2, -9, DSI),  # rounds up, changes format
    (".001", 1, -3, DSI),
    (".0001k", 100, -3, DSI),
    ("1.", 1, 0, DSI),
    ("1.G", 1, 9, DSI),
]


@pytest.mark.parametrize("sign", ["", "-", "+"], ids=["plain", "minus", "plus"])
@pytest.mark.parametrize(("text", "mantissa", "exponent", "fmt"), PARSE_VECTORS)
def test_upstream_parse_vectors(text: str, mantissa: int, exponent: int, fmt: Format, sign: str) -> None:
    quantity = parse(sign + text)
    expected = dec(mantissa, exponent)
    assert quantity.value == (-expected if sign == "-" else expected)
    assert quantity.format is fmt


# quantity_test.go TestQuantityString: (mantissa, exponent, format) -> canonical, and an alternate spelling.
STRING_VECTORS: list[tuple[int, int, Format, str, str]] = [
    (1024**3, 0, BSI, "1Gi", "1024Mi"),
    (300 * 1024**2, 0, BSI, "300Mi", "307200Ki"),
    (6 * 1024, 0, BSI, "6Ki", ""),
    (1001 * 1024**3, 0, BSI, "1001Gi", "1025024Mi"),
    (1024**4, 0, BSI, "1Ti", "1024Gi"),
    (5, 0, BSI, "5", "5000m"),
    (500, -3, BSI, "500m", "0.5"),
    (1, 9, DSI, "1G", "1000M"),
    (1000, 6, DSI, "1G", "0.001T"),
    (1000000, 3, DSI, "1G", ""),
    (1000000000, 0, DSI, "1G", ""),
    (1, -3, DSI, "1m", "1000u"),
    (80, -3, DSI, "80m", ""),
    (1080, -3, DSI, "1080m", "1.08"),
    (108, -2, DSI, "1080m", "1080000000n"),
    (10800, -4, DSI, "1080m", ""),
    (300, 6, DSI, "300M", ""),
    (1, 12, DSI, "1T", ""),
    # DecimalSI has no suffix beyond "E": larger exponents fall back to exponent notation.
    (1, 18, DSI, "1E", ""),
    (1, 21, DSI, "1e21", "1000E"),
    (5, 21, DSI, "5e21", "5000E"),
    (1, 24, DSI, "1e24", "1000000E"),
    (1234567, 6, DSI, "1234567M", ""),
    (1234567, -3, BSI, "1234567m", ""),
    (3, 3, DSI, "3k", ""),
    (1025, 0, BSI, "1025", ""),
    (0, 0, DSI, "0", ""),
    (0, 0, BSI, "0", ""),
    (1, 9, DEXP, "1e9", ".001e12"),
    (1, -3, DEXP, "1e-3", "0.001e0"),
    (1, -9, DEXP, "1e-9", "1000e-12"),
    (80, -3, DEXP, "80e-3", ""),
    (300, 6, DEXP, "300e6", ""),
    (1, 12, DEXP, "1e12", ""),
    (1, 3, DEXP, "1e3", ""),
    (3, 3, DEXP, "3e3", ""),
    (0, 0, DEXP, "0", "00"),
    (1, -9, DSI, "1n", ""),
    (80, -9, DSI, "80n", ""),
    (1080, -9, DSI, "1080n", ""),
    (108, -8, DSI, "1080n", ""),
    (10800, -10, DSI, "1080n", ""),
    (1, -6, DSI, "1u", ""),
    (80, -6, DSI, "80u", ""),
    (1080, -6, DSI, "1080u", ""),
]


@pytest.mark.parametrize(("mantissa", "exponent", "fmt", "expect", "alternate"), STRING_VECTORS)
def test_upstream_string_vectors(
    mantissa: int, exponent: int, fmt: Format, expect: str, alternate: str
) -> None:
    quantity = Quantity(dec(mantissa, exponent), fmt)
    assert quantity.canonical() == expect
    assert str(quantity) == expect
    assert canonical(expect) == expect
    if alternate:
        assert canonical(alternate) == expect
    if mantissa:
        assert Quantity(-dec(mantissa, exponent), fmt).canonical() == "-" + expect


# quantity_test.go TestQuantityParseEmit.
PARSE_EMIT_VECTORS = [
    ("1Ki", "1Ki"),
    ("1Mi", "1Mi"),
    ("1Gi", "1Gi"),
    ("1024Mi", "1Gi"),
    ("1000M", "1G"),
    (".001Ki", "1024m"),
    (".000001Ki", "1024u"),
    (".000000001Ki", "1024n"),
    (".000000000001Ki", "2n"),
]


@pytest.mark.parametrize(("text", "expect"), PARSE_EMIT_VECTORS)
def test_upstream_parse_emit_vectors(text: str, expect: str) -> None:
    assert canonical(text) == expect
    assert canonical("-" + text) == "-" + expect


# quantity_test.go TestParseQuantity (int64 rails): input -> (exact value, canonical or "" for the input).
INT64_RAIL_VECTORS = [
    ("-999999999999999999", "-999999999999999999", ""),
    ("999999999999999999.0", "999999999999999999", "999999999999999999"),
    ("-999999999999999999.1", "-999999999999999999.1", "-999999999999999999100m"),
    ("9999999999999999999", "9999999999999999999", ""),
    ("-1E", "-1000000000000000000", ""),
    ("1000000000000000000", "1000000000000000000", "1E"),
    ("-1.0E", "-1000000000000000000", "-1E"),
    ("9999999999999999999000m", "9999999999999999999", "9999999999999999999"),
    ("1.0000000000000000001E", "1000000000000000000.1", "1000000000000000000100m"),
    ("-1.000000000000000001E", "-1000000000000000001", "-1000000000000000001"),
    ("10E", "10000000000000000000", ""),
    ("-10000000000000000000", "-10000000000000000000", "-10E"),
    ("10000000000000000000000m", "10000000000000000000", "10E"),
    ("-10.0000000000000000001E", "-10000000000000000000.1", "-10000000000000000000100m"),
    ("10.000000000000000001E", "10000000000000000001", "10000000000000000001"),
    ("-9223372036854775809", "-9223372036854775809", ""),
    ("9223372036854775806000m", "9223372036854775806", "9223372036854775806"),
    ("-9223372036854775808.1", "-9223372036854775808.1", "-9223372036854775808100m"),
    ("9223372036854775807", "9223372036854775807", ""),
    ("9223372036854775808.0", "9223372036854775808", "9223372036854775808"),
]


@pytest.mark.parametrize(("text", "value", "expect"), INT64_RAIL_VECTORS)
def test_upstream_int64_rail_vectors(text: str, value: str, expect: str) -> None:
    quantity = parse(text)
    assert quantity.value == Decimal(value)
    assert quantity.canonical() == (expect or text)


# quantity_golden_test.go quantitySerializationCases: input -> wantCanonical (CanonicalizeBytes).
GOLDEN_CANONICAL_VECTORS = [
    ("1", "1"),
    ("-1", "-1"),
    ("1Ki", "1Ki"),
    ("1024Mi", "1Gi"),
    ("1000M", "1G"),
    ("1e3", "1e3"),
    ("0.1", "100m"),
    ("0.000000000000001", "1n"),
    ("1.441", "1441m"),
    ("1.000001", "1000001u"),
    ("1.000000001", "1000000001n"),
    ("1.5", "1500m"),
    ("9223372036854775807", "9223372036854775807"),
    ("9223372036854775808", "9223372036854775808"),
    ("18446744073709551616", "18446744073709551616"),
    ("1E", "1E"),
    ("100E", "100E"),
    ("1000E", "1e21"),
    ("1e100", "10e99"),
    ("8Ei", "9223372036854775807"),
    ("-20Ei", "-9223372036854775807"),
    ("-9.5Gi", "-9728Mi"),
    ("-9.5000000001Gi", "-10200547328107374183n"),
]


@pytest.mark.parametrize(("text", "expect"), GOLDEN_CANONICAL_VECTORS)
def test_upstream_golden_canonical_vectors(text: str, expect: str) -> None:
    assert canonical(text) == expect


@pytest.mark.parametrize(
    ("quantity", "expect"),
    [
        (Quantity(Decimal("1.441")), "1441m"),  # NewMilliQuantity(1441, DecimalSI)
        (Quantity(Decimal(MAX_BINARY_SI) * 10), "92233720368547758070"),  # NewScaledQuantity(MaxInt64, 1)
        (Quantity(dec(1, 21)), "1e21"),  # NewScaledQuantity(1, 21)
        (Quantity(Decimal(MOST_NEGATIVE)), "-9223372036854775808"),  # NewQuantity(MinInt64, DecimalSI)
        (Quantity(Decimal("1.024"), BSI), "1024m"),  # TestMilliNewSet: format changes
        (Quantity(Decimal("1048.576"), BSI), "1048576m"),
        (Quantity(Decimal(1000)), "1k"),  # TestNewSet
        (Quantity(Decimal(1234000)), "1234k"),
        (Quantity(Decimal(1024), BSI), "1Ki"),
        (Quantity(Decimal(1024 * 1024), BSI), "1Mi"),
    ],
)
def test_upstream_constructed_vectors(quantity: Quantity, expect: str) -> None:
    assert quantity.canonical() == expect


# quantity_subnano_test.go TestParseQuantitySubNanoRoundsUp.
SUBNANO_VECTORS = [
    ("1e-2147483647", "1n"),
    ("-1e-2147483647", "-1n"),
    ("1e-100", "1n"),
    ("-1e-100", "-1n"),
    ("1e-10", "1n"),
    ("9e-10", "1n"),
    ("-9e-10", "-1n"),
    ("1e-9", "1n"),
    ("-1e-9", "-1n"),
    ("2e-9", "2n"),
    ("15e-10", "2n"),
    ("1000000000000000000000e-30", "1n"),
    ("1000000000000000000001e-30", "2n"),
    ("999999999999999999999e-30", "1n"),
    ("0e-2147483647", "0"),
    ("0.0e-100", "0"),
    ("0.00000000000000000000001Ki", "1n"),
]


@pytest.mark.parametrize(("text", "want"), SUBNANO_VECTORS)
def test_upstream_subnano_vectors(text: str, want: str) -> None:
    assert parse(text) == parse(want)


@pytest.mark.parametrize(
    ("text", "expect", "fmt"),
    [
        ("1e-100", "1e-9", DEXP),
        ("0.0000000000001", "1n", DSI),
        ("-0.0000000000001", "-1n", DSI),
        ("0.00000000000000000000001Ki", "1n", DSI),
    ],
)
def test_upstream_subnano_canonical(text: str, expect: str, fmt: Format) -> None:
    quantity = parse(text)
    assert quantity.canonical() == expect
    assert quantity.format is fmt


# quantity_test.go TestQuantityParse (invalid), TestQuantityParseNonNumericPanic, TestQuantityValueSet.
UPSTREAM_INVALID = [
    "1.1.M",
    "1+1.0M",
    "0.1mi",
    "0.1am",
    "aoeu",
    ".5i",
    "1i",
    "-3.01i",
    "-3.01e-",
    " 1",
    "1 ",
    "",
    "Non-Numeric",
    "invalid",
]


@pytest.mark.parametrize("text", UPSTREAM_INVALID)
def test_upstream_invalid_vectors(text: str) -> None:
    with pytest.raises(QuantityError, match="is not a Kubernetes quantity"):
        parse(text)


# quantity_test.go TestParseQuantityString: a mantissa without digits scans as zero.
@pytest.mark.parametrize(
    ("text", "fmt"),
    [
        (".", DSI),
        ("-.", DSI),
        ("+", DSI),
        ("-", DSI),
        ("e3", DEXP),
        ("-e3", DEXP),
        ("Ki", BSI),
        ("Ti", BSI),
        ("e-9", DEXP),
    ],
)
def test_upstream_digitless_mantissa_is_zero(text: str, fmt: Format) -> None:
    quantity = parse(text)
    assert quantity.value == 0
    assert quantity.format is fmt
    assert quantity.canonical() == "0"


# quantity.go ParseQuantity: a digit-less number on the inf.Dec path fails inf.Dec.SetString (ErrNumeric).
@pytest.mark.parametrize("text", ["e-10", ".e-10", "-e-12", "Pi", "-Ei", "+.Ei"])
def test_upstream_digitless_mantissa_off_the_int64_path_is_refused(text: str) -> None:
    with pytest.raises(QuantityError, match="has no digits"):
        parse(text)


# quantity_test.go TestAdd and TestSub: (a, b) -> (a + b, a - b), formats included.
@pytest.mark.parametrize(
    ("a", "b", "total", "difference"),
    [
        (Quantity(dec(10, 0)), Quantity(dec(1, 1)), Quantity(dec(20, 0)), Quantity(dec(0, 0))),
        (Quantity(dec(10, 0)), Quantity(dec(1, 0), BSI), Quantity(dec(11, 0)), Quantity(dec(9, 0))),
        (Quantity(dec(10, 0), BSI), Quantity(dec(1, 0)), Quantity(dec(11, 0), BSI), Quantity(dec(9, 0), BSI)),
        (Quantity(Decimal(0)), Quantity(dec(50, 0)), Quantity(dec(50, 0)), Quantity(dec(-50, 0))),
        (Quantity(dec(50, 0)), Quantity(Decimal(0)), Quantity(dec(50, 0)), Quantity(dec(50, 0))),
        (Quantity(Decimal(0)), Quantity(Decimal(0)), Quantity(Decimal(0)), Quantity(Decimal(0))),
    ],
)
def test_upstream_add_sub(a: Quantity, b: Quantity, total: Quantity, difference: Quantity) -> None:
    assert a + b == total
    assert (a + b).format is total.format
    assert a - b == difference
    assert (a - b).format is difference.format


@pytest.mark.parametrize("text", ["100m", "1Gi"])
def test_upstream_zero_preserves_suffix(text: str) -> None:
    value, zero = parse(text), parse("0")
    assert (value + zero).canonical() == text
    assert (zero + value).canonical() == text
    assert (value - zero).canonical() == text
    assert (zero - value).canonical() == "-" + text


def test_upstream_most_negative_arithmetic() -> None:
    most_negative_binary = Quantity(Decimal(MOST_NEGATIVE), BSI)
    inherited = parse("0") - most_negative_binary
    assert inherited.format is BSI
    assert inherited.canonical() == "8Ei"
    assert inherited == parse("9223372036854775808")
    assert (parse("1") - Quantity(Decimal(MOST_NEGATIVE))).canonical() == "9223372036854775809"
    assert (Quantity(dec(1, 1)) - Quantity(Decimal(MOST_NEGATIVE))).canonical() == "9223372036854775818"


@pytest.mark.parametrize(
    ("x", "y", "expect"), [("0", "0", 0), ("100m", "50m", 1), ("50m", "100m", -1), ("10000T", "100Gi", 1)]
)
def test_upstream_cmp(x: str, y: str, expect: int) -> None:
    a, b = parse(x), parse(y)
    assert ((a > b) - (a < b)) == expect
    assert (a == b) == (expect == 0)


# --- the pipeline's own examples and the non-string inputs ------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expect"),
    [
        ("1000", "1k"),
        ("12000m", "12"),
        ("1024Mi", "1Gi"),
        ("0.5", "500m"),
        ("1.5Gi", "1536Mi"),
        ("0.5Gi", "512Mi"),
        ("100m", "100m"),
        ("1e3", "1e3"),
        ("0", "0"),
        ("1E3", "1e3"),
        ("+1", "1"),
        ("01", "1"),
        ("5.", "5"),
        ("1e0", "1"),
        ("1e+21", "1e21"),
        (0, "0"),
        (4, "4"),
        (1000, "1k"),
        (1024, "1024"),
        (-5, "-5"),
        (10**30, "1e30"),
        (0.5, "500m"),
        (0.1, "100m"),
        (2.5, "2500m"),
        (4.0, "4"),
        (-0.0, "0"),
        (1e20, "100E"),
        (1e21, "1e21"),
        (1e-7, "100e-9"),
        (5e-324, "1e-9"),
    ],
)
def test_canonical_examples(value: str | int | float, expect: str) -> None:
    assert canonical(value) == expect


@pytest.mark.parametrize(("value", "fmt"), [(0.5, DSI), (1e20, DSI), (1e21, DEXP), (1e-7, DEXP), (7, DSI)])
def test_number_formats_follow_go_json(value: float, fmt: Format) -> None:
    assert parse(value).format is fmt


@pytest.mark.parametrize(
    "value",
    [True, False, math.nan, math.inf, -math.inf, None, Decimal("1"), Fraction(1, 2), b"1", [1]],
    ids=repr,
)
def test_non_quantity_values_are_refused(value: object) -> None:
    with pytest.raises(QuantityError):
        parse(value)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "text",
    [
        "1e2147483648",
        "1e-2147483648",
        "1e99999999999999999999",
        "1000e2147483647",
        "--1",
        "+-1",
        "1 Gi",
        "1..5",
    ],
)
def test_out_of_range_and_malformed_strings_are_refused(text: str) -> None:
    with pytest.raises(QuantityError):
        parse(text)


def test_error_message_names_the_input_and_the_legal_forms() -> None:
    with pytest.raises(QuantityError) as info:
        parse("1.5.3")
    message = str(info.value)
    assert message.startswith('"1.5.3" is not a Kubernetes quantity')
    for suffix in ("m", "k", "M", "G", "T", "P", "E", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei", "e<exp>"):
        assert f" {suffix}," in message or f" {suffix})" in message


def test_quantity_is_frozen_hashable_and_normalises_negative_zero() -> None:
    quantity = Quantity(Decimal("-0.000"), BSI)
    assert str(quantity.value) == "0"
    assert not quantity.is_negative()
    with pytest.raises(dataclasses.FrozenInstanceError):
        quantity.value = Decimal(1)  # type: ignore[misc]
    assert len({parse("1Ki"), parse("1024"), parse("1.024k")}) == 1
    assert parse("1Ki") != "1Ki"
    with pytest.raises(QuantityError):
        Quantity(Decimal("NaN"))


def test_is_integer_and_is_negative() -> None:
    assert parse("1k").is_integer()
    assert parse("12000m").is_integer()
    assert not parse("1500m").is_integer()
    assert parse("1e100").is_integer()
    assert parse("-1").is_negative()
    assert not parse("0").is_negative()
    assert not parse("1n").is_negative()


@pytest.mark.parametrize(
    ("value", "expect"), [(4, 4), ("4", 4), ("1k", 1000), (4.0, 4), ("0", 0), ("2e3", 2000)]
)
def test_parse_count_accepts_whole_quantities(value: str | int | float, expect: int) -> None:
    assert parse_count(value) == expect


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (1.5, "device counts must be whole numbers, got 1.5"),
        ("500m", 'device counts must be whole numbers, got "500m"'),
        (-1, "device counts must not be negative, got -1"),
        ("-2", 'device counts must not be negative, got "-2"'),
        ("four", '"four" is not a Kubernetes quantity'),
        (True, "True is a boolean"),
        ("10E", "device counts must not exceed 9223372036854775807"),
    ],
)
def test_parse_count_refusals(value: str | int | float, message: str) -> None:
    with pytest.raises(QuantityError, match=re.escape(message)):
        parse_count(value)


# --- properties against an exact oracle ------------------------------------------------------------------

DECIMAL_SUFFIXES = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
BINARY_SUFFIXES = {"Ki": 1, "Mi": 2, "Gi": 3, "Ti": 4, "Pi": 5, "Ei": 6}
DECIMAL_SUFFIX_FOR = {exp: suffix for suffix, exp in DECIMAL_SUFFIXES.items()}
BINARY_SUFFIX_FOR = {power: suffix for suffix, power in BINARY_SUFFIXES.items()}
LEGAL_CHARS = "0123456789+-.eEinumkKMGTP"
QUANTITY_RE = re.compile(r"([+-]?)([0-9]*)(?:\.([0-9]*))?(.*)", re.DOTALL)


def oracle(text: str) -> tuple[Fraction, str]:
    """Exact value and format of a well-formed quantity, straight from the upstream rules."""
    match = QUANTITY_RE.fullmatch(text)
    assert match is not None
    sign, whole, fraction, suffix = match.groups()
    fraction = fraction or ""
    magnitude = Fraction(int(whole or "0")) + Fraction(int(fraction or "0"), 10 ** len(fraction))
    if suffix in DECIMAL_SUFFIXES:
        magnitude *= Fraction(10) ** DECIMAL_SUFFIXES[suffix]
        fmt = "DecimalSI"
    elif suffix in BINARY_SUFFIXES:
        magnitude *= 1024 ** BINARY_SUFFIXES[suffix]
        fmt = "BinarySI"
    else:
        magnitude *= Fraction(10) ** int(suffix[1:])
        fmt = "DecimalExponent"
    magnitude = Fraction(math.ceil(magnitude * 10**9), 10**9)  # round up to 1n
    if fmt == "BinarySI":
        magnitude = min(magnitude, Fraction(2**63 - 1))
        if 0 < magnitude < 1:
            fmt = "DecimalSI"
    return (-magnitude if sign == "-" else magnitude), fmt


def expected_canonical(value: Fraction, fmt: str) -> str:
    """The canonical spelling, from its definition: the largest exponent that leaves an integer mantissa."""
    if value == 0:
        return "0"
    if fmt == "BinarySI" and (abs(value) < 1024 or value.denominator != 1):
        fmt = "DecimalSI"
    if fmt == "BinarySI":
        power = max(p for p in range(7) if (value / 1024**p).denominator == 1)
        return f"{value / 1024**power}{BINARY_SUFFIX_FOR.get(power, '')}"
    exponent = 3 * (len(str(abs(value.numerator))) // 3 + 1)
    while (value / Fraction(10) ** exponent).denominator != 1:
        exponent -= 3
    mantissa = value / Fraction(10) ** exponent
    if fmt == "DecimalSI" and exponent in DECIMAL_SUFFIX_FOR:
        return f"{mantissa}{DECIMAL_SUFFIX_FOR[exponent]}"
    return f"{mantissa}" if exponent == 0 else f"{mantissa}e{exponent}"


digits = st.text("0123456789", max_size=22)
exponent_suffixes = st.builds(
    lambda marker, sign, zeros, number: f"{marker}{sign}{zeros}{number}",
    st.sampled_from("eE"),
    st.sampled_from(["", "+", "-"]),
    st.sampled_from(["", "0", "00"]),
    st.integers(0, 40),
)
suffixes = st.one_of(st.sampled_from([*DECIMAL_SUFFIXES, *BINARY_SUFFIXES]), exponent_suffixes)


@st.composite
def quantity_texts(draw: st.DrawFn) -> str:
    """Well-formed quantities across every suffix, with at least one mantissa digit."""
    whole = draw(digits)
    fraction = draw(st.none() | digits)
    if not whole and not fraction:
        whole = draw(st.text("0123456789", min_size=1, max_size=22))
    sign = draw(st.sampled_from(["", "+", "-"]))
    number = whole if fraction is None else f"{whole}.{fraction}"
    return sign + number + draw(suffixes)


@SETTINGS
@given(quantity_texts())
def test_parse_matches_oracle(text: str) -> None:
    value, fmt = oracle(text)
    quantity = parse(text)
    assert Fraction(quantity.value) == value
    assert quantity.format.value == fmt


@SETTINGS
@given(quantity_texts())
def test_canonical_matches_definition_and_is_idempotent(text: str) -> None:
    quantity = parse(text)
    spelled = quantity.canonical()
    assert spelled == expected_canonical(*oracle(text))
    assert canonical(spelled) == spelled
    assert parse(spelled) == quantity
    assert canonical(parse(spelled).canonical()) == spelled


@SETTINGS
@given(st.lists(quantity_texts(), min_size=2, max_size=5))
def test_ordering_agrees_with_exact_value(texts: list[str]) -> None:
    quantities = [parse(text) for text in texts]
    values = [oracle(text)[0] for text in texts]
    assert [Fraction(q.value) for q in sorted(quantities)] == sorted(values)
    a, b = quantities[0], quantities[1]
    va, vb = values[0], values[1]
    assert (a < b, a <= b, a == b, a >= b, a > b, a != b) == (
        va < vb,
        va <= vb,
        va == vb,
        va >= vb,
        va > vb,
        va != vb,
    )
    if a == b:
        assert hash(a) == hash(b)


@SETTINGS
@given(quantity_texts(), quantity_texts())
def test_addition_and_subtraction_are_exact(left: str, right: str) -> None:
    a, b = parse(left), parse(right)
    (va, fa), (vb, fb) = oracle(left), oracle(right)
    fmt = fb if va == 0 else fa
    total, difference = a + b, a - b
    assert Fraction(total.value) == va + vb
    assert Fraction(difference.value) == va - vb
    assert total.format.value == fmt
    assert difference.format.value == fmt
    assert total.canonical() == expected_canonical(va + vb, fmt)
    assert (total - b) == a


@SETTINGS
@given(st.floats(allow_nan=False, allow_infinity=False))
def test_floats_read_as_their_shortest_decimal(number: float) -> None:
    quantity = parse(number)
    expected = Fraction(math.ceil(abs(Fraction(repr(number))) * 10**9), 10**9)
    assert Fraction(quantity.value) == (-expected if number < 0 else expected)
    assert canonical(quantity.canonical()) == quantity.canonical()
    if number.is_integer() and abs(number) <= 2**53:  # below 2**53 the shortest digits are the integer's
        assert quantity == parse(int(number))


@SETTINGS
@given(st.integers(min_value=0, max_value=2**63 - 1))
def test_parse_count_round_trips_whole_numbers(count: int) -> None:
    assert parse_count(count) == count
    assert parse_count(str(count)) == count
    assert parse_count(canonical(count)) == count


# --- illegal strings: QuantityError and nothing else -----------------------------------------------------

outside_chars = st.characters(blacklist_characters=LEGAL_CHARS)
bad_suffixes = st.text("eEinumkKMGTP", min_size=1, max_size=4).filter(
    lambda s: s not in DECIMAL_SUFFIXES and s not in BINARY_SUFFIXES
)
whitespace = st.text(st.sampled_from([" ", "\t", "\n", "\r", "\u00a0", "\u2003"]), min_size=1, max_size=3)


@st.composite
def with_foreign_char(draw: st.DrawFn) -> str:
    text = draw(quantity_texts() | st.text(LEGAL_CHARS))
    at = draw(st.integers(0, len(text)))
    return text[:at] + draw(outside_chars) + text[at:]


@st.composite
def with_two_dots(draw: st.DrawFn) -> str:
    text = draw(quantity_texts())
    text = text if "." in text else "." + text
    at = draw(st.integers(0, len(text)))
    return text[:at] + "." + text[at:]


@st.composite
def padded(draw: st.DrawFn) -> str:
    text = draw(quantity_texts())
    before, after = draw(st.sampled_from([(True, False), (False, True), (True, True)]))
    return (draw(whitespace) if before else "") + text + (draw(whitespace) if after else "")


@st.composite
def double_signed(draw: st.DrawFn) -> str:
    text = draw(quantity_texts()).lstrip("+-")
    return draw(st.sampled_from(["--", "-+", "+-", "++"])) + text


@st.composite
def unknown_suffix(draw: st.DrawFn) -> str:
    number = draw(st.text("0123456789", min_size=1, max_size=6))
    return number + draw(bad_suffixes)


@st.composite
def spaced_suffix(draw: st.DrawFn) -> str:
    number = draw(st.text("0123456789", min_size=1, max_size=6))
    return number + draw(whitespace) + draw(st.sampled_from([*BINARY_SUFFIXES, "k", "M", "m", "e3"]))


illegal_texts = st.one_of(
    with_foreign_char(),
    with_two_dots(),
    padded(),
    double_signed(),
    unknown_suffix(),
    spaced_suffix(),
    st.just(""),
)


@SETTINGS
@given(illegal_texts)
def test_illegal_strings_raise_quantity_error(text: str) -> None:
    with pytest.raises(QuantityError, match="is not a Kubernetes quantity"):
        parse(text)


@SETTINGS
@given(st.text(LEGAL_CHARS, max_size=30) | st.text(max_size=30))
def test_arbitrary_text_parses_or_raises_quantity_error(text: str) -> None:
    try:
        quantity = parse(text)
    except QuantityError:
        return
    spelled = quantity.canonical()
    assert canonical(spelled) == spelled
    assert parse(spelled) == quantity


# --------------------------------------------------------------- remembered and unchecked constructions

REMEMBERED = [0, 1, -1, 4, 2**63, -(2**63) - 1, 10**30, "4", "-0", "500m", "1.5Gi", "8Ei", "1e3", "0.9n"]


@pytest.mark.parametrize("value", REMEMBERED, ids=repr)
def test_a_remembered_quantity_is_what_a_fresh_parse_gives(value: int | str) -> None:
    """parse() remembers the Quantity of an int and of a text; the one it hands back again has the
    same value, format and printed form as the checked constructor gives for a fresh parse."""
    from gputenancy.inputs import quantity as module

    first, again = parse(value), parse(value)
    unremembered = module._parse_int if isinstance(value, int) else module._parse_text
    fresh = unremembered.__wrapped__(value)
    checked = Quantity(fresh.value, fresh.format)
    for q in (first, again, fresh):
        assert (repr(q), q.canonical(), q.format) == (repr(checked), checked.canonical(), checked.format)
        assert q.value.as_tuple() == checked.value.as_tuple()


@SETTINGS
@given(st.integers(-(10**20), 10**20), st.integers(-(10**20), 10**20), st.sampled_from(list(Format)))
def test_sums_made_without_checks_equal_checked_ones(a: int, b: int, fmt: Format) -> None:
    """+ and - build their result without __post_init__'s checks; it is the Quantity the checked
    constructor gives (zero normalised, format kept), printed the same."""
    left, right = Quantity(Decimal(a).scaleb(-3), fmt), Quantity(Decimal(b), DSI)
    for made, value in ((left + right, left.value + right.value), (left - right, left.value - right.value)):
        checked = Quantity(value, right.format if left.value.is_zero() else fmt)
        assert repr(made) == repr(checked)
        assert made.value.as_tuple() == checked.value.as_tuple()


def test_a_remembered_int_is_not_a_bool() -> None:
    assert parse(1) == Quantity(Decimal(1))
    with pytest.raises(QuantityError, match="boolean"):
        parse(True)
    assert parse(1.0).format is DSI and parse(1.0) == parse(1)
