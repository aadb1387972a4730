"""Kubernetes name, label and selector formats of gputenancy.common.names: passing and failing values each."""

from __future__ import annotations

import pytest

from gputenancy.common import names as k8snames

LABEL_MSG = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
    "and must start and end with an alphanumeric character"
)
SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
    "and must start and end with an alphanumeric character"
)
NAME_PART_MSG = (
    "name part must consist of alphanumeric characters, '-', '_' or '.', "
    "and must start and end with an alphanumeric character"
)
C_IDENTIFIER_MSG = (
    "a valid C identifier must start with alphabetic character or '_', followed by a string of "
    "alphanumeric characters or '_'"
)


@pytest.mark.parametrize(
    ("value", "ok"),
    [
        ("a", True),
        ("team-a", True),
        ("0abc", True),
        ("a" * 63, True),
        ("", False),
        ("A", False),
        ("a.b", False),
        ("-a", False),
        ("a-", False),
        ("a_b", False),
        ("a" * 64, False),
    ],
)
def test_dns1123_label(value: str, ok: bool) -> None:
    assert (k8snames.dns1123_label_errors(value) == []) is ok


def test_dns1123_label_messages() -> None:
    assert k8snames.dns1123_label_errors("Team") == [LABEL_MSG]
    assert k8snames.dns1123_label_errors("a" * 64) == ["must be no more than 63 characters"]
    assert k8snames.dns1123_label_errors("A" * 64) == ["must be no more than 63 characters", LABEL_MSG]


@pytest.mark.parametrize(
    ("value", "ok"),
    [
        ("a", True),
        ("gpu.nvidia.com", True),
        ("a-b.c-d", True),
        (".".join(["a" * 63] * 4)[:253], True),
        ("", False),
        ("GPU.nvidia.com", False),
        ("a..b", False),
        ("a.", False),
        ("a_b", False),
        ("a" * 254, False),
    ],
)
def test_dns1123_subdomain(value: str, ok: bool) -> None:
    assert (k8snames.dns1123_subdomain_errors(value) == []) is ok


def test_dns1123_subdomain_messages() -> None:
    assert k8snames.dns1123_subdomain_errors("GPU_Class") == [SUBDOMAIN_MSG]
    assert k8snames.dns1123_subdomain_errors("a" * 254) == ["must be no more than 253 characters"]


@pytest.mark.parametrize(
    ("value", "ok"),
    [
        ("a", True),
        ("kueue-webhook-service", True),
        ("a1", True),
        ("a" * 63, True),
        ("", False),
        ("1a", False),
        ("a-", False),
        ("A", False),
        ("a.b", False),
        ("a" * 64, False),
    ],
)
def test_dns1035_label(value: str, ok: bool) -> None:
    assert (k8snames.dns1035_label_errors(value) == []) is ok


def test_dns1035_label_message() -> None:
    assert k8snames.dns1035_label_errors("1a") == [
        "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "
        "alphabetic character, and end with an alphanumeric character"
    ]


@pytest.mark.parametrize(
    ("value", "ok"),
    [
        ("app", True),
        ("example.com/app", True),
        ("a" * 63, True),
        ("a" * 64, False),
        ("/app", False),
        ("Example.com/app", False),
        ("a/b/c", False),
        ("-app", False),
        ("", False),
    ],
)
def test_qualified_name(value: str, ok: bool) -> None:
    assert (k8snames.qualified_name_errors(value) == []) is ok


def test_qualified_name_messages() -> None:
    assert k8snames.qualified_name_errors("") == ["name part must be non-empty"]
    assert k8snames.qualified_name_errors("gpu-") == [NAME_PART_MSG]
    assert k8snames.qualified_name_errors("x" * 64 + "_") == [
        "name part must be no more than 63 characters",
        NAME_PART_MSG,
    ]
    assert k8snames.qualified_name_errors("a/b/c") == [
        "a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must start and end "
        "with an alphanumeric character with an optional DNS subdomain prefix and '/' "
        "(e.g. 'example.com/MyName')"
    ]
    # As IsQualifiedName: a bad prefix does not hide a bad name part.
    assert k8snames.qualified_name_errors("/") == [
        "prefix part must be non-empty",
        "name part must be non-empty",
    ]
    assert k8snames.qualified_name_errors("Example.com/-x") == [f"prefix part {SUBDOMAIN_MSG}", NAME_PART_MSG]


@pytest.mark.parametrize(("value", "ok"), [("", True), ("v1.2_3-x", True), ("-x", False), ("a" * 64, False)])
def test_label_value(value: str, ok: bool) -> None:
    assert (k8snames.label_value_errors(value) == []) is ok


def test_label_value_message() -> None:
    assert k8snames.label_value_errors("a b") == [
        "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', "
        "and must start and end with an alphanumeric character"
    ]


@pytest.mark.parametrize(
    ("value", "ok"),
    [
        ("memory", True),
        ("_x", True),
        ("Mem_2", True),
        ("x" * 100, True),
        ("", False),
        ("9m", False),
        ("mem-ory", False),
        ("a.b", False),
    ],
)
def test_c_identifier(value: str, ok: bool) -> None:
    assert (k8snames.c_identifier_errors(value) == []) is ok
    if not ok:
        assert k8snames.c_identifier_errors(value) == [C_IDENTIFIER_MSG]


@pytest.mark.parametrize(
    ("value", "ok"),
    [
        ("memory", True),
        ("gpu.example.com/memory", True),
        ("GPU.example.com/memory", True),
        ("a/b/c", True),
        ("x" * 32, True),
        ("x" * 33, False),
        ("9memory", False),
        ("gpu.example.com/", False),
        ("/memory", False),
        ("gpu.example.com/mem-ory", False),
        ("gpu_example.com/memory", False),
        ("d" * 64 + "/memory", False),
    ],
)
def test_device_qualified_name(value: str, ok: bool) -> None:
    assert (k8snames.device_qualified_name_errors(value) == []) is ok


def test_device_qualified_name_messages() -> None:
    assert k8snames.device_qualified_name_errors("/") == [
        "the domain must not be empty",
        "the name must not be empty",
    ]
    assert k8snames.device_qualified_name_errors("d" * 64 + "/" + "x" * 33) == [
        "the domain must be no more than 63 characters",
        "must be no more than 32 characters",
    ]


def test_invalid_quotes_the_value_as_json() -> None:
    assert k8snames.invalid("a b", "bad") == 'Invalid value: "a b": bad'
    assert k8snames.invalid(None, "bad") == "Invalid value: null: bad"


def test_label_errors() -> None:
    assert list(k8snames.label_errors({"team": "a", "example.com/x": ""}, ("labels",))) == []
    assert list(k8snames.label_errors(None, ("labels",))) == []
    errors = list(k8snames.label_errors({"team name": "a b"}, ("labels",)))
    assert [path for path, _ in errors] == [("labels", "team name"), ("labels", "team name")]
    assert errors[0][1].startswith('Invalid value: "team name": name part')
    assert errors[1][1].startswith('Invalid value: "a b": a valid label')


def test_label_selector_errors() -> None:
    good = {
        "matchLabels": {"team": "a"},
        "matchExpressions": [
            {"key": "team", "operator": "In", "values": ["a", "b"]},
            {"key": "example.com/gpu", "operator": "Exists"},
        ],
    }
    assert list(k8snames.label_selector_errors(good, ("sel",))) == []
    assert list(k8snames.label_selector_errors("x", ("sel",))) == []
    bad = {
        "matchExpressions": [
            {"key": "team", "operator": "In"},
            {"key": "team", "operator": "Exists", "values": ["a"]},
            {"key": "team", "operator": "Equals", "values": ["a"]},
            {"key": "bad key", "operator": "In", "values": ["-x"]},
        ]
    }
    errors = list(k8snames.label_selector_errors(bad, ("sel",)))
    assert [path for path, _ in errors] == [
        ("sel", "matchExpressions", 0, "values"),
        ("sel", "matchExpressions", 1, "values"),
        ("sel", "matchExpressions", 2, "operator"),
        ("sel", "matchExpressions", 3, "key"),
        ("sel", "matchExpressions", 3, "values", 0),
    ]
    assert errors[2][1] == (
        'Unsupported value: "Equals": supported values: "In", "NotIn", "Exists", "DoesNotExist"'
    )


@pytest.mark.parametrize(
    ("operator", "has_values", "expected"),
    [
        ("In", True, None),
        ("NotIn", True, None),
        ("Exists", False, None),
        ("DoesNotExist", False, None),
        ("In", False, ("values", "Required value: must be specified when `operator` is 'In' or 'NotIn'")),
        (
            "DoesNotExist",
            True,
            ("values", "Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'"),
        ),
    ],
)
def test_selector_operator_error(operator: str, has_values: bool, expected: tuple[str, str] | None) -> None:
    assert k8snames.selector_operator_error(operator, has_values) == expected


def test_selector_operator_error_quotes_unsupported_operators() -> None:
    supported = 'supported values: "In", "NotIn", "Exists", "DoesNotExist"'
    assert k8snames.selector_operator_error("Equals", True) == (
        "operator",
        f'Unsupported value: "Equals": {supported}',
    )
    assert k8snames.selector_operator_error("Equals", True, quote=repr) == (
        "operator",
        f"Unsupported value: 'Equals': {supported}",
    )


@pytest.mark.parametrize(
    ("requirements", "labels", "matches"),
    [
        ([], {}, True),
        ([("team", "In", frozenset({"a"}))], {"team": "a"}, True),
        ([("team", "In", frozenset({"a"}))], {"team": "b"}, False),
        ([("team", "In", frozenset({"a"}))], {}, False),
        ([("team", "NotIn", frozenset({"a"}))], {}, True),
        ([("team", "NotIn", frozenset({"a"}))], {"team": "a"}, False),
        ([("team", "Exists", frozenset())], {"team": ""}, True),
        ([("team", "Exists", frozenset())], {}, False),
        ([("team", "DoesNotExist", frozenset())], {}, True),
        ([("team", "DoesNotExist", frozenset())], {"team": "a"}, False),
        ([("team", "In", frozenset({"a"})), ("env", "Exists", frozenset())], {"team": "a"}, False),
    ],
)
def test_selector_matches(
    requirements: list[k8snames.Requirement], labels: dict[str, str], matches: bool
) -> None:
    assert k8snames.selector_matches(requirements, labels) is matches
