"""Kubernetes resource quantities, parsed and printed the way k8s.io/apimachinery does (a leaf module).

This is a port of ``ParseQuantity`` and ``Quantity.CanonicalizeBytes`` from
``k8s.io/apimachinery/pkg/api/resource`` (quantity.go, suffix.go, amount.go), so that
the pipeline writes every quantity in the form the API server stores and Argo CD sees
no drift: ``1000`` -> ``1k``, ``12000m`` -> ``12``, ``1024Mi`` -> ``1Gi``,
``0.5`` -> ``500m``, ``1.5Gi`` -> ``1536Mi``, ``100m`` -> ``100m``, ``1e3`` -> ``1e3``.

Grammar (the upstream scanner, byte for byte)::

    <quantity>  ::= <sign>? <number> <suffix>
    <number>    ::= <digits> | <digits> "." <digits>? | "." <digits>?
    <suffix>    ::= "" | n | u | m | k | M | G | T | P | E           (DecimalSI, 10^-9 .. 10^18)
                  | Ki | Mi | Gi | Ti | Pi | Ei                     (BinarySI, 2^10 .. 2^60)
                  | ("e" | "E") <sign>? <digits>                    (DecimalExponent)

No whitespace is allowed anywhere. Like upstream, the scanner also accepts a
number without any digit and reads it as zero: ``"."``, ``"+"``, ``"-"``,
``"e3"`` and a bare suffix such as ``"Ki"`` all parse as 0, except with a
decimal exponent below -9 or with ``Pi``/``Ei``, which upstream refuses.

Parsing keeps the exact value, with the two adjustments upstream makes:

* Precision: a non-zero value finer than 1n (10^-9) is rounded away from zero to
  the next multiple of 1n (``"0.9n"`` -> ``1n``, ``"-1e-100"`` -> ``-1n``).
* Cap: a BinarySI value whose magnitude exceeds 2^63-1 is silently capped at
  2^63-1 (``"8Ei"`` -> ``9223372036854775807``). DecimalSI and DecimalExponent
  values are not capped (``"12E"`` keeps its value). A BinarySI value whose
  magnitude ends up below 1 becomes DecimalSI.

``Quantity.canonical()`` reproduces ``CanonicalizeBytes``: the mantissa is an
integer, and the exponent is the largest power of 10^3 (DecimalSI, DecimalExponent)
or of 2^10 up to ``Ei`` (BinarySI) that keeps it exact.
BinarySI values between -1024 and 1024, and non-integral BinarySI values, are
printed as DecimalSI; a DecimalSI exponent beyond the suffix table (above ``E``
or below ``n``) is printed in exponent notation (``"1000E"`` -> ``1e21``), as the
current upstream does.

Where this module deliberately differs from upstream:

* ``canonical()`` is the canonical form, never an echo of the input. Upstream's
  parser caches some non-canonical spellings verbatim (``"1.441"``, ``"+1"``,
  ``"01"``, ``"1E3"``, ``"5."``) and serializes them unchanged; the canonical
  form is stored verbatim as well, so writing it never causes drift.
* A decimal exponent must lie in -2147483647..2147483647 (upstream truncates a
  wider one to int32, wrapping it), and a value must stay below 10^2147483648.
  Upstream wraps, rejects or hangs on these; here they raise ``QuantityError``.
* A BinarySI value reachable only through arithmetic that is a multiple of 2^70
  is printed with the ``Ei`` suffix (``1024Ei``) where upstream drops the suffix.
* Values and sums needing more than a million significant digits raise
  ``QuantityError`` instead of being computed.
"""

from __future__ import annotations

import dataclasses
import decimal
import enum
import functools
import json
import math
import re
from decimal import Decimal

__all__ = [
    "MAX_BINARY_SI",
    "Format",
    "Quantity",
    "QuantityError",
    "canonical",
    "parse",
    "parse_count",
]

#: The upstream ``maxAllowed`` cap for BinarySI values (2^63-1).
MAX_BINARY_SI = 2**63 - 1

_LEGAL_FORMS = (
    "expected a number with an optional suffix: n, u, m, k, M, G, T, P, E, Ki, Mi, Gi, Ti, Pi, Ei, or e<exp>"
)

_DIGITS = frozenset("0123456789")
_SUFFIX_CHARS = frozenset("eEinumkKMGTP")
_SIGNS = frozenset("+-")
_EXPONENT_RE = re.compile(r"[+-]?[0-9]+")

_DECIMAL_SUFFIXES: dict[str, int] = {
    "n": -9,
    "u": -6,
    "m": -3,
    "": 0,
    "k": 3,
    "M": 6,
    "G": 9,
    "T": 12,
    "P": 15,
    "E": 18,
}
_DECIMAL_SUFFIX_FOR: dict[int, str] = {exp: suffix for suffix, exp in _DECIMAL_SUFFIXES.items()}
_BINARY_SUFFIXES: dict[str, int] = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_BINARY_SUFFIX_FOR: dict[int, str] = {exp // 10: suffix for suffix, exp in _BINARY_SUFFIXES.items()}

# Decimal exponents are int32 upstream; -2^31 has no negation there and is refused.
_MAX_EXPONENT = 2**31 - 1
_INT64_DIGITS = 19
_SHOWN_CHARS = 60
_NANO = Decimal("1e-9")
# A number without digits ("", ".", "-") reads as zero only where upstream takes its int64
# path; on its inf.Dec path (decimal exponents below -9, Pi and Ei) the number does not parse.
_DIGITLESS_REFUSED: dict[int, range] = {10: range(-_MAX_EXPONENT, -9), 2: range(50, 61)}
# Arithmetic is exact: any result that would need more digits raises instead of rounding.
_PRECISION = 1_000_000
_EXACT = decimal.Context(
    prec=_PRECISION,
    Emax=decimal.MAX_EMAX,
    Emin=decimal.MIN_EMIN,
    traps=[decimal.Inexact, decimal.InvalidOperation, decimal.Overflow, decimal.DivisionByZero],
)
_ROUNDING = decimal.Context(
    prec=_PRECISION,
    Emax=decimal.MAX_EMAX,
    Emin=decimal.MIN_EMIN,
    traps=[decimal.InvalidOperation, decimal.Overflow, decimal.DivisionByZero],
)


class QuantityError(ValueError):
    """A value that is not a legal Kubernetes quantity, or not legal where it is used."""


class Format(enum.StrEnum):
    """How a quantity is written; the values are upstream's ``resource.Format`` names."""

    DECIMAL_EXPONENT = "DecimalExponent"  # 12e6
    BINARY_SI = "BinarySI"  # 12Mi (12 * 2^20)
    DECIMAL_SI = "DecimalSI"  # 12M (12 * 10^6)


_FORMAT_REPR = {f: repr(f) for f in Format}


@dataclasses.dataclass(frozen=True, eq=False, slots=True)
class Quantity:
    """An exact quantity and the format it prints in.

    Equality, ordering and hashing look at the value only (``1Ki == 1024``), as
    upstream ``Cmp`` does. ``+`` and ``-`` are exact and keep the left operand's
    format, unless the left operand is zero, which takes the right one's (upstream
    ``Add``/``Sub``); ``sum(qs, parse(0))`` therefore keeps the first format.

    Made by the parser and by arithmetic through `_exact`, which skips the checks of a value they
    already know to be a finite Decimal (a fleet's budgets make tens of thousands of Quantities).
    """

    value: Decimal
    format: Format = Format.DECIMAL_SI

    def __post_init__(self) -> None:
        if not isinstance(self.value, Decimal) or not self.value.is_finite():
            raise QuantityError(f"a quantity needs a finite Decimal value, got {self.value!r}")
        if not isinstance(self.format, Format):
            raise QuantityError(f"unknown quantity format {self.format!r}")
        if self.value.is_zero():
            object.__setattr__(self, "value", Decimal(0))

    def canonical(self) -> str:
        """The string upstream ``CanonicalizeBytes`` produces for this value and format."""
        value = self.value
        if value.is_zero():
            return "0"
        fmt = self.format
        if fmt is Format.BINARY_SI:
            if -1024 < value < 1024 or not self.is_integer():
                fmt = Format.DECIMAL_SI
            else:
                return _binary_form(value)
        number, exponent = _decimal_form(value)
        if fmt is Format.DECIMAL_SI:
            suffix = _DECIMAL_SUFFIX_FOR.get(exponent)
            if suffix is not None:
                return number + suffix
        return number if exponent == 0 else f"{number}e{exponent}"

    def is_integer(self) -> bool:
        exponent = _exponent(self.value)
        if exponent >= 0:
            return True
        return self.value == self.value.to_integral_value(context=_ROUNDING)

    def is_negative(self) -> bool:
        return self.value < 0

    def __str__(self) -> str:
        return self.canonical()

    def __repr__(self) -> str:
        # The text dataclasses would write, faster (tenant records, whose repr is a cache key, hold many).
        return f"Quantity(value={self.value!r}, format={_FORMAT_REPR[self.format]})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Quantity):
            return NotImplemented
        return self.value == other.value

    def __hash__(self) -> int:
        return hash(self.value)

    def __lt__(self, other: Quantity) -> bool:
        if not isinstance(other, Quantity):
            return NotImplemented
        return self.value < other.value

    def __le__(self, other: Quantity) -> bool:
        if not isinstance(other, Quantity):
            return NotImplemented
        return self.value <= other.value

    def __gt__(self, other: Quantity) -> bool:
        if not isinstance(other, Quantity):
            return NotImplemented
        return self.value > other.value

    def __ge__(self, other: Quantity) -> bool:
        if not isinstance(other, Quantity):
            return NotImplemented
        return self.value >= other.value

    def __add__(self, other: Quantity) -> Quantity:
        if not isinstance(other, Quantity):
            return NotImplemented
        try:
            total = _EXACT.add(self.value, other.value)
        except decimal.DecimalException as exc:
            raise QuantityError(f"{self} + {other} has too many digits to be computed exactly") from exc
        return _exact(total, other.format if self.value.is_zero() else self.format)

    def __sub__(self, other: Quantity) -> Quantity:
        if not isinstance(other, Quantity):
            return NotImplemented
        try:
            difference = _EXACT.subtract(self.value, other.value)
        except decimal.DecimalException as exc:
            raise QuantityError(f"{self} - {other} has too many digits to be computed exactly") from exc
        return _exact(difference, other.format if self.value.is_zero() else self.format)


def parse(value: str | int | float) -> Quantity:
    """Parse a quantity as upstream ``ParseQuantity`` does.

    * ``str``: the full upstream grammar (see the module docstring).
    * ``int``: its exact value, DecimalSI (what a YAML/JSON integer becomes).
    * ``float``: read as the shortest decimal that round-trips to it (``repr``),
      which is the text a YAML author wrote (``0.5``, ``0.1``) and what Go's
      encoding/json sends to the API server; like Go, magnitudes below 1e-6 or
      from 1e21 up are written in exponent form and so parse as DecimalExponent.
      NaN and infinities are refused.
    * ``bool`` (a Python ``int``) and any other type are refused.

    Raises QuantityError for anything that is not a legal quantity.
    """
    if isinstance(value, bool):
        raise QuantityError(f"{value!r} is a boolean, not a Kubernetes quantity ({_LEGAL_FORMS})")
    if isinstance(value, str):
        return _parse_text(value)
    if isinstance(value, int):
        return _parse_int(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise QuantityError(f"{value!r} is not a Kubernetes quantity (it is not a finite number)")
        return _parse_text(_go_json_float(value))
    raise QuantityError(
        f"{value!r} ({type(value).__name__}) is not a Kubernetes quantity (expected a string, int or float)"
    )


def _exact(value: Decimal, fmt: Format) -> Quantity:
    """A Quantity of a finite Decimal `value` (a parse's or an exact sum's) without `__post_init__`'s
    checks; zero is normalised as there."""
    q = object.__new__(Quantity)
    _SET(q, "value", _ZERO if value.is_zero() else value)
    _SET(q, "format", fmt)
    return q


_SET = object.__setattr__
_ZERO = Decimal(0)


@functools.lru_cache(maxsize=4096)
def _parse_int(value: int) -> Quantity:
    """An integer's Quantity, remembered per value (a Quantity is immutable; `parse` refuses bools
    before they get here)."""
    return _exact(Decimal(value), Format.DECIMAL_SI)


ZERO = parse(0)
"""0 (DecimalSI), where every sum of quantities starts (a Quantity is immutable; one is shared)."""


def canonical(value: str | int | float) -> str:
    """``parse(value).canonical()``."""
    return parse(value).canonical()


def parse_count(value: str | int | float) -> int:
    """A device count (GPUs): a non-negative whole quantity such as ``4``, ``"4"`` or ``"1k"``.

    Counts must fit a signed 64-bit integer, the type Kubernetes counts use.
    """
    quantity = parse(value)
    shown = _show(value)
    if quantity.is_negative():
        raise QuantityError(f"device counts must not be negative, got {shown}")
    if not quantity.is_integer():
        raise QuantityError(f"device counts must be whole numbers, got {shown}")
    if quantity.value > MAX_BINARY_SI:
        raise QuantityError(f"device counts must not exceed {MAX_BINARY_SI}, got {shown}")
    return int(quantity.value)


def _show(value: object) -> str:
    if isinstance(value, str):
        if len(value) > _SHOWN_CHARS:
            return json.dumps(value[:_SHOWN_CHARS], ensure_ascii=False) + f"... ({len(value)} characters)"
        return json.dumps(value, ensure_ascii=False)
    return repr(value)


def _error(text: str, reason: str) -> QuantityError:
    return QuantityError(f"{_show(text)} is not a Kubernetes quantity: {reason} ({_LEGAL_FORMS})")


def _scan(text: str) -> tuple[bool, str, str, str]:
    """(positive, numerator, denominator, suffix) of ``text``, like upstream ``parseQuantityString``."""
    positive = True
    pos = 0
    end = len(text)
    if pos < end and text[pos] in _SIGNS:
        positive = text[pos] == "+"
        pos += 1
    while pos < end and text[pos] == "0":
        pos += 1
    if pos >= end:
        return positive, "0", "", ""
    start = pos
    while pos < end and text[pos] in _DIGITS:
        pos += 1
    num = text[start:pos] or "0"
    denom = ""
    if pos < end and text[pos] == ".":
        pos += 1
        start = pos
        while pos < end and text[pos] in _DIGITS:
            pos += 1
        denom = text[start:pos]
    suffix_start = pos
    while pos < end and text[pos] in _SUFFIX_CHARS:
        pos += 1
    if pos < end and text[pos] in _SIGNS:
        pos += 1
    while pos < end and text[pos] in _DIGITS:
        pos += 1
    if pos < end:
        if text != text.strip():
            raise _error(text, "it has leading or trailing whitespace")
        raise _error(text, f"unexpected {_show(text[pos])} at offset {pos}")
    return positive, num, denom, text[suffix_start:]


def _interpret(text: str, suffix: str) -> tuple[int, int, Format]:
    """(base, exponent, format) of a suffix, like upstream ``suffixHandler.interpret``."""
    if suffix in _DECIMAL_SUFFIXES:
        return 10, _DECIMAL_SUFFIXES[suffix], Format.DECIMAL_SI
    if suffix in _BINARY_SUFFIXES:
        return 2, _BINARY_SUFFIXES[suffix], Format.BINARY_SI
    if len(suffix) > 1 and suffix[0] in "eE" and _EXPONENT_RE.fullmatch(suffix[1:]):
        digits = suffix[1:].lstrip("+-").lstrip("0")
        if len(digits) <= _INT64_DIGITS:
            exponent = int(suffix[1:])
            if -_MAX_EXPONENT <= exponent <= _MAX_EXPONENT:
                return 10, exponent, Format.DECIMAL_EXPONENT
        raise _error(text, f"the exponent in {_show(suffix)} is outside -{_MAX_EXPONENT}..{_MAX_EXPONENT}")
    if suffix[:1] in _SIGNS:
        raise _error(text, f"unexpected {_show(suffix[0])} at offset {len(text) - len(suffix)}")
    raise _error(text, f"unknown suffix {_show(suffix)}")


@functools.lru_cache(maxsize=4096)
def _parse_text(text: str) -> Quantity:
    """A legal quantity's text parsed, remembered per text (a Quantity is immutable; a fleet writes
    the same few amounts thousands of times). An illegal one raises each time."""
    if not text:
        raise _error(text, "it is empty")
    positive, num, denom, suffix = _scan(text)
    base, exponent, fmt = _interpret(text, suffix)
    if not _DIGITS.intersection(text[: len(text) - len(suffix)]) and exponent in _DIGITLESS_REFUSED[base]:
        raise _error(text, "its number has no digits")
    try:
        amount = Decimal(f"{num}.{denom}")
        if base == 10:
            amount = amount.scaleb(exponent, context=_EXACT)
        else:
            amount = _EXACT.multiply(amount, Decimal(2**exponent))
        if amount.is_zero():
            return _exact(amount, fmt)
        if _exponent(amount) < -9:
            amount = amount.quantize(_NANO, rounding=decimal.ROUND_UP, context=_ROUNDING)
    except decimal.DecimalException as exc:
        raise _error(text, "it has too many digits to be represented exactly") from exc
    if fmt is Format.BINARY_SI:
        if amount > MAX_BINARY_SI:
            amount = Decimal(MAX_BINARY_SI)
        if amount < 1:
            fmt = Format.DECIMAL_SI
    if amount.adjusted() > _MAX_EXPONENT:
        raise _error(text, f"its magnitude is 10^{_MAX_EXPONENT + 1} or more")
    return _exact(amount if positive else amount.copy_negate(), fmt)


def _exponent(value: Decimal) -> int:
    exponent = value.as_tuple().exponent
    assert isinstance(exponent, int)  # finite values only
    return exponent


def _decimal_form(value: Decimal) -> tuple[str, int]:
    """Mantissa text and base-10 exponent, the exponent a multiple of 3 (upstream ``AsCanonicalBytes``)."""
    sign, digit_tuple, exponent = value.as_tuple()
    assert isinstance(exponent, int)
    digits = "".join(map(str, digit_tuple))
    stripped = digits.rstrip("0")
    exponent += len(digits) - len(stripped)
    shift = exponent % 3
    return ("-" if sign else "") + stripped + "0" * shift, exponent - shift


def _binary_form(value: Decimal) -> str:
    """An integral BinarySI value of magnitude >= 1024 (upstream ``AsCanonicalBase1024Bytes``)."""
    if value.adjusted() >= _PRECISION:
        raise QuantityError("a BinarySI quantity this large cannot be printed")
    magnitude = abs(int(value))
    power = 0
    while power < max(_BINARY_SUFFIX_FOR) and magnitude % 1024 == 0:
        magnitude //= 1024
        power += 1
    number = format(Decimal(magnitude), "f")
    return ("-" if value < 0 else "") + number + _BINARY_SUFFIX_FOR.get(power, "")


def _go_json_float(value: float) -> str:
    """The text Go's encoding/json writes for a float64 (shortest digits, 'e' form outside [1e-6, 1e21))."""
    exact = Decimal(repr(value))
    magnitude = abs(value)
    if magnitude != 0 and (magnitude < 1e-6 or magnitude >= 1e21):
        return format(exact, "e")
    return format(exact, "f")
