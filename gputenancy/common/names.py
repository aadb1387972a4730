"""Kubernetes name and label formats, with the messages the API server prints for them.

The formats of k8s.io/apimachinery/pkg/util/validation (DNS-1123 labels and subdomains, DNS-1035 labels,
qualified names, label values, C identifiers), the resource.k8s.io qualified name of device attributes and
capacities (pkg/apis/resource/validation), and labels and label selectors
(k8s.io/apimachinery/pkg/apis/meta/v1/validation, pkg/labels).

Each `*_errors` function of a value returns its messages, an empty list when the value is valid; the
messages are apimachinery's without the "(e.g. ..., regex used for validation is ...)" suffix.
`label_errors` and `label_selector_errors` yield (field path, message) pairs in the API server's
`Invalid value: <json>: <message>` form.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

FieldPath = tuple[str | int, ...]

DNS1123_LABEL_MAX_LENGTH = 63
DNS1123_SUBDOMAIN_MAX_LENGTH = 253
DNS1035_LABEL_MAX_LENGTH = 63
QUALIFIED_NAME_MAX_LENGTH = 63
LABEL_VALUE_MAX_LENGTH = 63
DEVICE_MAX_DOMAIN_LENGTH = 63
DEVICE_MAX_ID_LENGTH = 32

_DNS1123_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
_DNS1123_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_DNS1035_LABEL = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?")
_QUALIFIED_NAME_PART = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
_C_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")

_QUALIFIED_NAME_MSG = (
    "must consist of alphanumeric characters, '-', '_' or '.', "
    "and must start and end with an alphanumeric character"
)


_MEMO_MAX_LENGTH = 256  # longer values are rare and always checked afresh


def _max_len(limit: int) -> str:
    return f"must be no more than {limit} characters"


def _memoised(check: Callable[[str], list[str]]) -> Callable[[str], list[str]]:
    """`check` with its messages remembered for the short strings objects repeat (label keys, names).

    Every call still returns a new list; values that are not exactly `str` are checked afresh.
    """

    @functools.lru_cache(maxsize=8192)
    def remembered(value: str) -> tuple[str, ...]:
        return tuple(check(value))

    @functools.wraps(check)
    def wrapper(value: str) -> list[str]:
        if type(value) is str and len(value) <= _MEMO_MAX_LENGTH:
            return list(remembered(value))
        return check(value)

    return wrapper


@_memoised
def dns1123_label_errors(value: str) -> list[str]:
    """IsDNS1123Label: lower-case alphanumerics and '-', at most 63 characters."""
    errs = []
    if len(value) > DNS1123_LABEL_MAX_LENGTH:
        errs.append(_max_len(DNS1123_LABEL_MAX_LENGTH))
    if not _DNS1123_LABEL.fullmatch(value):
        errs.append(
            "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
            "and must start and end with an alphanumeric character"
        )
    return errs


@_memoised
def dns1123_subdomain_errors(value: str) -> list[str]:
    """IsDNS1123Subdomain: dot-separated DNS labels, at most 253 characters."""
    errs = []
    if len(value) > DNS1123_SUBDOMAIN_MAX_LENGTH:
        errs.append(_max_len(DNS1123_SUBDOMAIN_MAX_LENGTH))
    if not _DNS1123_SUBDOMAIN.fullmatch(value):
        errs.append(
            "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
            "and must start and end with an alphanumeric character"
        )
    return errs


@_memoised
def dns1035_label_errors(value: str) -> list[str]:
    """IsDNS1035Label: like a DNS-1123 label, but starting with a letter."""
    errs = []
    if len(value) > DNS1035_LABEL_MAX_LENGTH:
        errs.append(_max_len(DNS1035_LABEL_MAX_LENGTH))
    if not _DNS1035_LABEL.fullmatch(value):
        errs.append(
            "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "
            "alphabetic character, and end with an alphanumeric character"
        )
    return errs


@_memoised
def qualified_name_errors(value: str) -> list[str]:
    """IsQualifiedName (label keys, resource names): `[prefix/]name`, name <= 63, prefix a DNS subdomain.

    The prefix and the name part are both checked, so one value may yield messages for each.
    """
    parts = value.split("/")
    errs: list[str] = []
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            errs.append("prefix part must be non-empty")
        else:
            errs.extend(f"prefix part {msg}" for msg in dns1123_subdomain_errors(prefix))
    else:
        return [
            f"a qualified name {_QUALIFIED_NAME_MSG} with an optional DNS subdomain prefix and '/' "
            "(e.g. 'example.com/MyName')"
        ]
    if not name:
        errs.append("name part must be non-empty")
        return errs
    if len(name) > QUALIFIED_NAME_MAX_LENGTH:
        errs.append(f"name part {_max_len(QUALIFIED_NAME_MAX_LENGTH)}")
    if not _QUALIFIED_NAME_PART.fullmatch(name):
        errs.append(f"name part {_QUALIFIED_NAME_MSG}")
    return errs


@_memoised
def label_value_errors(value: str) -> list[str]:
    """IsValidLabelValue: empty, or at most 63 characters of alphanumerics, '-', '_', '.'."""
    errs = []
    if len(value) > LABEL_VALUE_MAX_LENGTH:
        errs.append(_max_len(LABEL_VALUE_MAX_LENGTH))
    if value and not _QUALIFIED_NAME_PART.fullmatch(value):
        errs.append(f"a valid label must be an empty string or {_QUALIFIED_NAME_MSG.removeprefix('must ')}")
    return errs


@_memoised
def c_identifier_errors(value: str) -> list[str]:
    """IsCIdentifier: a letter or '_', then letters, digits and '_' (the format only, not the length)."""
    if _C_IDENTIFIER.fullmatch(value):
        return []
    return [
        "a valid C identifier must start with alphabetic character or '_', followed by a string of "
        "alphanumeric characters or '_'"
    ]


@_memoised
def device_qualified_name_errors(value: str) -> list[str]:
    """resource.k8s.io QualifiedName: a C identifier, or a DNS-subdomain domain, '/', and a C identifier.

    Identifiers are at most 32 characters, domains at most 63 and checked in lower case. A value with more
    than one '/' passes: Kubernetes' own validation does not reject it, and neither does Kueue.
    """

    def identifier(part: str) -> list[str]:
        errs = [_max_len(DEVICE_MAX_ID_LENGTH)] if len(part) > DEVICE_MAX_ID_LENGTH else []
        return errs + c_identifier_errors(part)

    parts = value.split("/")
    if len(parts) == 1:
        return identifier(parts[0])
    if len(parts) > 2:
        return []
    domain, name = parts
    errs = []
    if not domain:
        errs.append("the domain must not be empty")
    else:
        if len(domain) > DEVICE_MAX_DOMAIN_LENGTH:
            errs.append(f"the domain {_max_len(DEVICE_MAX_DOMAIN_LENGTH)}")
        errs.extend(dns1123_subdomain_errors(domain.lower()))
    errs.extend(["the name must not be empty"] if not name else identifier(name))
    return errs


# --- labels and label selectors -------------------------------------------------------------------


def invalid(value: Any, msg: str) -> str:
    """field.Invalid's message: the offending value as JSON, then why it is invalid."""
    return f"Invalid value: {json.dumps(value)}: {msg}"


def label_errors(labels: object, path: FieldPath) -> Iterator[tuple[FieldPath, str]]:
    """ValidateLabels: every key a qualified name, every value a label value."""
    if not isinstance(labels, Mapping):
        return
    for key, value in labels.items():
        for msg in qualified_name_errors(str(key)):
            yield (*path, str(key)), invalid(key, msg)
        if isinstance(value, str):
            for msg in label_value_errors(value):
                yield (*path, str(key)), invalid(value, msg)


# One selector requirement: (key, operator, values); a matchLabels entry is an `In` requirement.
Requirement = tuple[str, str, frozenset[str]]


def selector_operator_error(
    operator: object, has_values: bool, quote: Callable[[Any], str] = json.dumps
) -> tuple[str, str] | None:
    """ValidateLabelSelectorRequirement: In/NotIn need values, Exists/DoesNotExist forbid them.

    Returns the field at fault ("values" or "operator") and the message, or None. `quote` renders an
    unsupported operator in the message.
    """
    if operator in ("In", "NotIn"):
        if not has_values:
            return "values", "Required value: must be specified when `operator` is 'In' or 'NotIn'"
        return None
    if operator in ("Exists", "DoesNotExist"):
        if has_values:
            return "values", "Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'"
        return None
    return (
        "operator",
        f'Unsupported value: {quote(operator)}: supported values: "In", "NotIn", "Exists", "DoesNotExist"',
    )


def selector_matches(requirements: Iterable[Requirement], labels: Mapping[str, str]) -> bool:
    """Whether a set of labels satisfies every requirement of a selector."""
    for key, operator, values in requirements:
        present = key in labels
        if operator == "In" and not (present and labels[key] in values):
            return False
        if operator == "NotIn" and present and labels[key] in values:
            return False
        if operator == "Exists" and not present:
            return False
        if operator == "DoesNotExist" and present:
            return False
    return True


def label_selector_errors(selector: object, path: FieldPath) -> Iterator[tuple[FieldPath, str]]:
    """ValidateLabelSelector with default options (label values must be valid)."""
    if not isinstance(selector, Mapping):
        return
    yield from label_errors(selector.get("matchLabels"), (*path, "matchLabels"))
    expressions = selector.get("matchExpressions")
    for i, expr in enumerate(expressions if isinstance(expressions, list) else []):
        if not isinstance(expr, Mapping):
            continue
        at = (*path, "matchExpressions", i)
        values = expr.get("values") or []
        if error := selector_operator_error(expr.get("operator"), bool(values)):
            field, message = error
            yield (*at, field), message
        key = expr.get("key")
        for msg in qualified_name_errors(key if isinstance(key, str) else ""):
            yield (*at, "key"), invalid(key, msg)
        for j, value in enumerate(values if isinstance(values, list) else []):
            for msg in label_value_errors(value) if isinstance(value, str) else []:
                yield (*at, "values", j), invalid(value, msg)
