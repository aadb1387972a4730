"""Tests for gputenancy.inputs.source: the hostile-input YAML reader."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from gputenancy.common.findings import Finding, Origin, PipelineError, Severity
from gputenancy.inputs import source
from gputenancy.inputs.source import MAX_DEPTH, MAX_FILE_BYTES, Document, discover, load, load_text

SHOWN = "tenants/team-a.yaml"


@pytest.fixture
def root(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    (repo / "tenants").mkdir(parents=True)
    return repo


def write(root: Path, content: str | bytes, name: str = "team-a.yaml") -> Path:
    path = root / "tenants" / name
    if isinstance(content, str):
        path.write_bytes(content.encode("utf-8"))
    else:
        path.write_bytes(content)
    return path


def load_file(root: Path, content: str | bytes) -> Document:
    return load(write(root, content), root)


def refused(root: Path, content: str | bytes) -> list[Finding]:
    with pytest.raises(PipelineError) as caught:
        load_file(root, content)
    findings = caught.value.findings
    assert findings
    assert all(f.path == SHOWN for f in findings)
    return findings


def places(findings: list[Finding], rule: str) -> list[tuple[int, int]]:
    return [(f.line, f.col) for f in findings if f.rule == rule]


def rules(findings: list[Finding]) -> set[str]:
    return {f.rule for f in findings}


def assert_plain(value: Any) -> None:
    """Only JSON-like types, walked without recursion."""
    todo = [value]
    while todo:
        item = todo.pop()
        if isinstance(item, dict):
            assert all(type(k) is str for k in item)
            todo.extend(item.values())
        elif isinstance(item, list):
            todo.extend(item)
        else:
            assert item is None or type(item) in (str, int, float, bool), type(item)


# --------------------------------------------------------------------------------------------------
# Loading files and plain values


def test_load_relative_and_absolute_paths(root: Path) -> None:
    write(root, "name: team-a\nquota:\n  gpus: 8\n")
    for path in (Path("tenants/team-a.yaml"), root / "tenants" / "team-a.yaml"):
        doc = load(path, root)
        assert doc.path == SHOWN
        assert doc.data == {"name": "team-a", "quota": {"gpus": 8}}
        assert doc.findings == ()


def test_load_paths_from_discover_with_relative_root(
    root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(root, "a: 1\n")
    monkeypatch.chdir(tmp_path)
    files, findings = discover(Path("repo"), "tenants")
    assert findings == []
    assert [load(f, Path("repo")).path for f in files] == [SHOWN]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2024-01-01", "2024-01-01"),
        ("2024-01-01T10:00:00Z", "2024-01-01T10:00:00Z"),
        ("1:20", "1:20"),
        ("1:20.5", "1:20.5"),
        ("42", 42),
        ("-1_000", -1000),
        ("010", 8),
        ("0x1F", 31),
        ("0b101", 5),
        ("0b_", "0b_"),
        ("09", "09"),
        ("1.5", 1.5),
        ("1.", 1.0),
        (".5", 0.5),
        ("1.0e+3", 1000.0),
        ("1e3", "1e3"),
        ("-.5", "-.5"),
        ("~", None),
        ("null", None),
        ("NULL", None),
        ("", None),
        ("true", True),
        ("False", False),
        ("TRUE", True),
        ("'true'", "true"),
        ('"42"', "42"),
        ("=", "="),
        ("yesterday", "yesterday"),
        ("|\n  block\n", "block\n"),
    ],
)
def test_plain_scalars_resolve_to_plain_values(root: Path, text: str, expected: Any) -> None:
    doc = load_file(root, f"v: {text}\n")
    value = doc.data["v"]
    assert type(value) is type(expected)
    assert value == expected
    octal = text == "010"  # read as 8 here, 10 by YAML 1.2 readers: a warning
    assert [(f.rule, f.severity.value) for f in doc.findings] == (
        [("source-octal", "warning")] if octal else []
    )


def test_data_holds_only_plain_types(root: Path) -> None:
    doc = load_file(
        root,
        "a: [1, 2.5, true, null, x, '2024-01-01', 2024-01-01]\nb: {c: {d: [[], {}]}}\n",
    )
    assert_plain(doc.data)
    assert doc.data["a"][-1] == "2024-01-01"


# --------------------------------------------------------------------------------------------------
# Marks

NESTED = """\
name: team-a
spec:
  quotas:
    - gpu: 4
      flavor: a100
    - {gpu: 2, flavor: "h100"}
  tags: [x, y]
  empty:
"""


def test_marks_on_nested_document(root: Path) -> None:
    doc = load_file(root, NESTED)
    assert doc.data == {
        "name": "team-a",
        "spec": {
            "quotas": [{"gpu": 4, "flavor": "a100"}, {"gpu": 2, "flavor": "h100"}],
            "tags": ["x", "y"],
            "empty": None,
        },
    }
    m, k = doc.marks, doc.key_marks
    assert m[()] == (1, 1)
    assert (m[("name",)], k[("name",)]) == ((1, 7), (1, 1))
    assert (m[("spec",)], k[("spec",)]) == ((3, 3), (2, 1))
    assert (m[("spec", "quotas")], k[("spec", "quotas")]) == ((4, 5), (3, 3))
    # block list item that is a mapping, and its entries
    assert m[("spec", "quotas", 0)] == (4, 7)
    assert (m[("spec", "quotas", 0, "gpu")], k[("spec", "quotas", 0, "gpu")]) == ((4, 12), (4, 7))
    assert (m[("spec", "quotas", 0, "flavor")], k[("spec", "quotas", 0, "flavor")]) == ((5, 15), (5, 7))
    # flow mapping inside a block list
    assert m[("spec", "quotas", 1)] == (6, 7)
    assert (m[("spec", "quotas", 1, "gpu")], k[("spec", "quotas", 1, "gpu")]) == ((6, 13), (6, 8))
    assert (m[("spec", "quotas", 1, "flavor")], k[("spec", "quotas", 1, "flavor")]) == ((6, 24), (6, 16))
    # flow sequence
    assert m[("spec", "tags")] == (7, 9)
    assert (m[("spec", "tags", 0)], m[("spec", "tags", 1)]) == ((7, 10), (7, 13))
    assert (m[("spec", "empty")], k[("spec", "empty")]) == ((8, 9), (8, 3))
    # every node has a mark; only mapping entries have key marks
    assert len(m) == 14
    assert set(k) <= set(m)
    assert ("spec", "quotas", 0) not in k and () not in k


def test_marks_point_at_the_text(root: Path) -> None:
    doc = load_file(root, NESTED)
    lines = NESTED.splitlines()
    for path, (line, col) in doc.key_marks.items():
        assert lines[line - 1][col - 1 :].startswith(str(path[-1])), path
    for path in [
        ("name",),
        ("spec", "quotas", 0, "flavor"),
        ("spec", "quotas", 1, "flavor"),
        ("spec", "tags", 1),
    ]:
        line, col = doc.marks[path]
        value = doc.data
        for part in path:
            value = value[part]
        assert lines[line - 1][col - 1 :].lstrip('"').startswith(value)


def test_origin_and_key_origin(root: Path) -> None:
    doc = load_file(root, NESTED)
    assert doc.origin("spec", "quotas", 1, "gpu") == Origin(SHOWN, 6, 13)
    assert doc.origin("spec", "quotas", 0, "missing", "deeper") == Origin(SHOWN, 4, 7)
    assert doc.origin("nope") == Origin(SHOWN, 1, 1)
    assert doc.origin() == Origin(SHOWN, 1, 1)
    assert doc.key_origin("spec") == Origin(SHOWN, 2, 1)
    assert doc.key_origin("spec", "quotas", 1, "flavor") == Origin(SHOWN, 6, 16)
    assert doc.key_origin("spec", "quotas", 0) == Origin(SHOWN, 4, 7)  # list item: no key
    assert doc.key_origin("spec", "nope") == Origin(SHOWN, 3, 3)
    bare = Document("x.yaml", None, {})
    assert bare.origin("a", 1) == Origin("x.yaml", 1, 1)
    assert bare.key_origin("a") == Origin("x.yaml", 1, 1)


def test_marks_with_bom_and_crlf(root: Path) -> None:
    doc = load_file(root, b"\xef\xbb\xbfa: 1\r\nb:\r\n  c: x\r\n")
    assert doc.data == {"a": 1, "b": {"c": "x"}}
    assert doc.marks[("a",)] == (1, 4)
    assert doc.key_marks[("a",)] == (1, 1)
    assert doc.marks[("b", "c")] == (3, 6)


def test_marks_count_characters_not_bytes(root: Path) -> None:
    doc = load_file(root, "é: {ü: x}\n")
    assert doc.marks[("é", "ü")] == (1, 8)


# --------------------------------------------------------------------------------------------------
# source-size


def test_size_at_limit_passes(root: Path) -> None:
    head = "a: 1\n"
    doc = load_file(root, head + "#" * (MAX_FILE_BYTES - len(head)))
    assert doc.data == {"a": 1}


def test_size_over_limit_refused(root: Path) -> None:
    head = "a: 1\n"
    findings = refused(root, head + "#" * (MAX_FILE_BYTES + 1 - len(head)))
    [finding] = findings
    assert finding.rule == "source-size"
    assert (finding.line, finding.col) == (0, 0)
    assert str(MAX_FILE_BYTES) in finding.message


def test_size_limit_parameter_and_text(root: Path) -> None:
    path = write(root, "a: 12345\n")
    assert load(path, root, max_bytes=9).data == {"a": 12345}
    with pytest.raises(PipelineError) as caught:
        load(path, root, max_bytes=8)
    assert [(f.rule, "8 bytes" in f.message) for f in caught.value.findings] == [("source-size", True)]
    with pytest.raises(PipelineError) as caught:
        load_text("a: 12345\n", "x.yaml", max_bytes=8)
    assert rules(caught.value.findings) == {"source-size"}


# --------------------------------------------------------------------------------------------------
# source-empty, source-multidoc


@pytest.mark.parametrize("content", ["", "\n\n", "# only a comment\n  # another\n", "---\n", "---\n...\n"])
def test_empty_refused(root: Path, content: str) -> None:
    assert rules(refused(root, content)) == {"source-empty"}


def test_comment_with_content_passes(root: Path) -> None:
    assert load_file(root, "# tenant\na: 1 # one\n").data == {"a": 1}


def test_multiple_documents_refused(root: Path) -> None:
    findings = refused(root, "a: 1\n---\nb: 2\n")
    assert places(findings, "source-multidoc") == [(2, 1)]
    assert places(refused(root, "a: 1\n...\n---\nb: 2\n"), "source-multidoc") == [(3, 1)]


def test_single_explicit_document_passes(root: Path) -> None:
    assert load_file(root, "%YAML 1.1\n---\na: 1\n...\n").data == {"a": 1}


# --------------------------------------------------------------------------------------------------
# source-encoding


def test_invalid_utf8_reports_line_and_byte_offset(root: Path) -> None:
    findings = refused(root, b"a: ok\nb: \xff\xfe\nc: \xc3\n")
    assert places(findings, "source-encoding") == [(2, 4), (3, 4)]
    assert "byte offset 9" in findings[0].message
    assert "1 more on this line" in findings[0].message
    assert "byte offset 15" in findings[1].message


def test_utf16_gets_a_hint(root: Path) -> None:
    findings = refused(root, "a: 1\n".encode("utf-16"))
    assert "UTF-16" in findings[0].message


def test_bom_is_stripped(root: Path) -> None:
    doc = load_file(root, b"\xef\xbb\xbfa: x\n")
    assert doc.data == {"a": "x"}


def test_bom_inside_the_file_refused(root: Path) -> None:
    findings = refused(root, "a: 1\nb: x\ufeff\n")
    assert places(findings, "source-encoding") == [(2, 5)]


@pytest.mark.parametrize(("char", "col"), [("\x00", 6), ("\x1b", 6), ("\x0b", 6), ("\x7f", 6)])
def test_control_characters_refused(root: Path, char: str, col: int) -> None:
    findings = refused(root, f"a: 1\nb: 'x{char}y'\n")
    assert places(findings, "source-encoding") == [(2, col)]


def test_tab_cr_lf_allowed(root: Path) -> None:
    assert load_file(root, "a: 'x\ty'\r\nb:\t2\r\n").data == {"a": "x\ty", "b": 2}


# --------------------------------------------------------------------------------------------------
# source-tab


def test_every_tab_in_indentation_reported(root: Path) -> None:
    findings = refused(root, "a:\n\tb: 1\nc:\n  \td: 2\n\t\n")
    assert places(findings, "source-tab") == [(2, 1), (4, 3), (5, 1)]


def test_tabs_outside_indentation_pass(root: Path) -> None:
    doc = load_file(root, "a:\t1\nb: 'x\ty'  # \tcomment\n")
    assert doc.data == {"a": 1, "b": "x\ty"}


# --------------------------------------------------------------------------------------------------
# source-syntax


def test_syntax_error_with_problem_and_mark(root: Path) -> None:
    findings = refused(root, "x: 1\ny: 2\nz: a: b\n")
    [finding] = findings
    assert (finding.rule, finding.line, finding.col) == ("source-syntax", 3, 5)
    assert finding.format() == (
        f"{SHOWN}:3:5: error: a second ': ' on this line: quote the value (`z: \"a: b\"`) or put the"
        " nested key on a line of its own, indented (source-syntax)"
    )


@pytest.mark.parametrize("pure", [False, True])
def test_syntax_wording_does_not_depend_on_libyaml(monkeypatch: pytest.MonkeyPatch, pure: bool) -> None:
    if pure:
        monkeypatch.setattr(source, "_LOADER", yaml.SafeLoader)
    with pytest.raises(PipelineError) as caught:
        load_text("a:\n\tb: 1\nc: {d: 1\ne: 2\n", SHOWN)
    assert [f.format() for f in caught.value.findings] == [
        f"{SHOWN}:2:1: error: a tab character where YAML expects spaces (source-syntax)",
        f"{SHOWN}:2:1: error: tab character in indentation; YAML indentation must use spaces (source-tab)",
    ]
    with pytest.raises(PipelineError) as caught:
        load_text("a: 1\nc: {d: 1\ne: 2\n", SHOWN)
    assert [f.format() for f in caught.value.findings] == [
        f"{SHOWN}:2:4: error: the '{{' here is never closed: add '}}' where its items end"
        " (line 3 already starts something new) (source-syntax)"
    ]


def test_large_hostile_file_with_late_syntax_error(root: Path) -> None:
    body = "[" * MAX_DEPTH + "a," * (MAX_FILE_BYTES // 2 - 100) + "]" * MAX_DEPTH + "\n: : [\n"
    findings = refused(root, body)
    assert rules(findings) == {"source-syntax"}


def test_unclosed_flow_sequence(root: Path) -> None:
    findings = refused(root, "a: [1, 2\nb: 3\n")
    assert rules(findings) == {"source-syntax"}
    assert (findings[0].line, findings[0].col) == (1, 4)  # where the ']' is missing
    assert "never closed" in findings[0].message


def test_text_checks_still_report_with_syntax_error(root: Path) -> None:
    findings = refused(root, b"a: \xff\nb:\n\t- x\nc: d: e\n")
    assert places(findings, "source-encoding") == [(1, 4)]
    assert places(findings, "source-tab") == [(3, 1)]
    assert "source-syntax" in rules(findings)


# --------------------------------------------------------------------------------------------------
# source-duplicate-key


def test_duplicate_keys_all_reported(root: Path) -> None:
    findings = refused(root, "a: 1\nb:\n  x: 1\n  x: 2\na: 3\nc: {y: 1, y: 2}\n")
    dups = [f for f in findings if f.rule == "source-duplicate-key"]
    assert [(f.line, f.col) for f in dups] == [(4, 3), (5, 1), (6, 11)]
    assert "'x'" in dups[0].message and "line 3" in dups[0].message
    assert "'a'" in dups[1].message and "line 1" in dups[1].message
    assert "line 6" in dups[2].message


def test_same_key_in_different_mappings_passes(root: Path) -> None:
    doc = load_file(root, "a: {x: 1}\nb: {x: 2}\nc: [{x: 3}, {x: 4}]\n")
    assert doc.data["c"] == [{"x": 3}, {"x": 4}]


# --------------------------------------------------------------------------------------------------
# source-alias


def test_anchor_alias_and_merge_refused(root: Path) -> None:
    findings = refused(root, "base: &b {gpus: 1}\nteam: *b\nother:\n  <<: {c: 1}\n  list: [1, *b]\n")
    assert places(findings, "source-alias") == [(1, 7), (2, 7), (4, 3), (5, 13)]


def test_alias_like_text_passes(root: Path) -> None:
    doc = load_file(root, "a: 'x &y *z'\n'<<': literal\nb: x&y*z\n")
    assert doc.data == {"a": "x &y *z", "<<": "literal", "b": "x&y*z"}


BILLION_LAUGHS = """\
a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]
b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]
c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]
d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]
e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]
f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]
g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]
h: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]
i: &i [*h,*h,*h,*h,*h,*h,*h,*h,*h]
"""


_LOAD_IN_A_CHILD = """
import json, resource, sys
from pathlib import Path
limit = 1 << 30  # 1 GiB of address space: a reader that expanded the aliases dies instead of swapping
resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
from gputenancy.common.findings import PipelineError
from gputenancy.inputs import source
try:
    source.load(Path(sys.argv[1]), Path(sys.argv[2]))
except PipelineError as exc:
    print(json.dumps([[f.path, f.line, f.col, f.rule, f.message] for f in exc.findings]))
"""


def test_billion_laughs_refused_quickly(root: Path) -> None:
    """Read in a child process with a time and a memory limit, so that a reader that expands the
    aliases fails this test instead of hanging or exhausting the machine."""
    path = write(root, BILLION_LAUGHS)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
    child = subprocess.run(
        [sys.executable, "-c", _LOAD_IN_A_CHILD, str(path), str(root)],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        check=False,
    )
    assert child.returncode == 0, child.stderr
    findings = [
        Finding(p, line, col, Severity.ERROR, rule, m) for p, line, col, rule, m in json.loads(child.stdout)
    ]
    assert all(f.path == SHOWN for f in findings)
    assert rules(findings) == {"source-alias"}
    assert (1, 4) in places(findings, "source-alias")
    assert (2, 8) in places(findings, "source-alias")  # the first alias, not only anchors
    assert len(findings) == source.MAX_FINDINGS_PER_RULE + 1
    assert "further source-alias findings in this file are not shown" in findings[-1].message


# --------------------------------------------------------------------------------------------------
# source-tag


@pytest.mark.parametrize(
    "tagged",
    [
        "!!python/object/apply:os.system ['true']",
        "!!python/name:os.system",
        "!foo bar",
        "!!binary aGVsbG8=",
        "!!set {a, b}",
        "!!omap [a: 1]",
        "!!timestamp 2024-01-01",
        "!!str x",
        "!!int '1'",
        "!!map {}",
        "! x",
        "!<tag:yaml.org,2002:str> x",
    ],
)
def test_explicit_tags_refused(root: Path, tagged: str) -> None:
    findings = refused(root, f"a: {tagged}\n")
    assert places(findings, "source-tag") == [(1, 4)]


def test_tag_on_key_refused(root: Path) -> None:
    assert places(refused(root, "a: 1\n!!str b: 2\n"), "source-tag") == [(2, 1)]


def test_python_payload_never_runs(root: Path, tmp_path: Path) -> None:
    sentinel = tmp_path / "sentinel"
    payload = (
        f"a: !!python/object/apply:os.system ['touch {sentinel}']\n"
        f"b: !!python/object/apply:subprocess.check_call [['touch', '{sentinel}']]\n"
        f"c: !!python/object/new:os.system ['touch {sentinel}']\n"
    )
    findings = refused(root, payload)
    assert places(findings, "source-tag") == [(1, 4), (2, 4), (3, 4)]
    assert not sentinel.exists()
    # the payload is real: an unsafe loader runs it
    armed = tmp_path / "armed"
    yaml.unsafe_load(payload.splitlines()[0].replace(str(sentinel), str(armed)))
    assert armed.exists()


def test_untagged_values_pass(root: Path) -> None:
    assert load_file(root, "a: '!!str'\nb: x!y\n").data == {"a": "!!str", "b": "x!y"}


# --------------------------------------------------------------------------------------------------
# source-ambiguous-bool


def test_yes_no_on_off_warn_but_load(root: Path) -> None:
    doc = load_file(root, "a: yes\nb: Off\nc: ON\nd: no\ne: y\nf: N\n")
    assert doc.data == {"a": True, "b": False, "c": True, "d": False, "e": "y", "f": "N"}
    warnings = [(f.rule, f.line, f.col, f.severity) for f in doc.findings]
    rule = "source-ambiguous-bool"
    assert warnings == [(rule, line, 4, Severity.WARNING) for line in range(1, 7)]
    assert "boolean true" in doc.findings[0].message


def test_ambiguous_bool_warning_reported_with_errors(root: Path) -> None:
    findings = refused(root, "a: on\nb: *x\n")
    assert places(findings, "source-ambiguous-bool") == [(1, 4)]
    assert places(findings, "source-alias") == [(2, 4)]


def test_unambiguous_bools_pass_silently(root: Path) -> None:
    doc = load_file(root, "a: true\nb: False\nc: 'yes'\nd: yesterday\ne: \"n\"\n")
    assert doc.findings == ()
    assert doc.data == {"a": True, "b": False, "c": "yes", "d": "yesterday", "e": "n"}


# --------------------------------------------------------------------------------------------------
# source-key-type


@pytest.mark.parametrize(
    ("content", "where"),
    [
        ("1: x\n", (1, 1)),
        ("a: 1\nnull: x\n", (2, 1)),
        ("~: x\n", (1, 1)),
        ("true: x\n", (1, 1)),
        ("on: push\n", (1, 1)),
        ("1.5: x\n", (1, 1)),
        ("? [a]\n: x\n", (1, 3)),
        ("? {a: 1}\n: x\n", (1, 3)),
        ("a: {[1]: x}\n", (1, 5)),
    ],
)
def test_non_string_keys_refused(root: Path, content: str, where: tuple[int, int]) -> None:
    findings = refused(root, content)
    assert places(findings, "source-key-type") == [where]


def test_quoted_keys_pass(root: Path) -> None:
    doc = load_file(root, "'1': x\n\"true\": y\n'null': z\non_demand: w\n")
    assert doc.data == {"1": "x", "true": "y", "null": "z", "on_demand": "w"}


# --------------------------------------------------------------------------------------------------
# source-depth


def nested_flow(depth: int) -> str:
    return "[" * depth + "]" * depth + "\n"


def nested_block(depth: int) -> str:
    return "".join(" " * (2 * i) + f"k{i}:\n" for i in range(depth - 1)) + " " * (2 * (depth - 1)) + "k: v\n"


def test_depth_at_limit_passes(root: Path) -> None:
    assert load_file(root, nested_flow(MAX_DEPTH)).data is not None
    doc = load_file(root, nested_block(MAX_DEPTH))
    assert len(max(doc.marks, key=len)) == MAX_DEPTH


def test_depth_over_limit_refused(root: Path) -> None:
    assert places(refused(root, nested_flow(MAX_DEPTH + 1)), "source-depth") == [(1, MAX_DEPTH + 1)]
    line = MAX_DEPTH + 1
    assert places(refused(root, nested_block(MAX_DEPTH + 1)), "source-depth") == [(line, 2 * MAX_DEPTH + 1)]


@pytest.mark.parametrize(
    "content", [nested_flow(10_000), "{a: " * 10_000 + "}" * 10_000, "- " * 10_000 + "x\n"]
)
def test_very_deep_nesting_is_a_finding(root: Path, content: str) -> None:
    findings = refused(root, content)
    assert rules(findings) == {"source-depth"}


def test_very_deep_nesting_with_pure_python_parser(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(source, "_LOADER", yaml.SafeLoader)
    with pytest.raises(PipelineError) as caught:
        load_text(nested_flow(10_000), SHOWN)
    assert places(caught.value.findings, "source-depth") == [(1, MAX_DEPTH + 1)]


# --------------------------------------------------------------------------------------------------
# source-number


@pytest.mark.parametrize(
    "number",
    [
        ".nan",
        ".NaN",
        ".inf",
        "-.inf",
        "+.INF",
        "1.0e+999",
        "9223372036854775808",
        "-9223372036854775809",
        "0x8000000000000000",
        "0b1" + "0" * 64,
        "1" * 5000,
    ],
)
def test_non_finite_and_out_of_range_numbers_refused(root: Path, number: str) -> None:
    findings = refused(root, f"a: 1\nb: {number}\n")
    assert places(findings, "source-number") == [(2, 4)]


def test_numbers_in_range_pass(root: Path) -> None:
    doc = load_file(root, "a: 9223372036854775807\nb: -9223372036854775808\nc: '.nan'\nd: 1.5e+300\n")
    assert doc.data == {"a": 2**63 - 1, "b": -(2**63), "c": ".nan", "d": 1.5e300}
    assert all(math.isfinite(v) for v in (doc.data["a"], doc.data["d"]))


# --------------------------------------------------------------------------------------------------
# Everything in one run


def test_all_findings_collected_in_one_run(root: Path) -> None:
    content = (
        "name: team-a\n"  # 1
        "quota:\n"  # 2
        "  gpus: 4\n"  # 3
        "  gpus: 8\n"  # 4  duplicate
        "  flavors: &f [a100]\n"  # 5  anchor
        "  extra: !!binary aGk=\n"  # 6  tag
        "enabled: yes\n"  # 7  warning
        "1: x\n"  # 8  key type
        "limit: .inf\n"  # 9  number
        "name: again\n"  # 10 duplicate
    )
    findings = refused(root, content)
    got = sorted((f.rule, f.line, f.col) for f in findings)
    assert got == sorted(
        [
            ("source-duplicate-key", 4, 3),
            ("source-alias", 5, 12),
            ("source-tag", 6, 10),
            ("source-ambiguous-bool", 7, 10),
            ("source-key-type", 8, 1),
            ("source-number", 9, 8),
            ("source-duplicate-key", 10, 1),
        ]
    )


# --------------------------------------------------------------------------------------------------
# Files on disk: symlinks, non-regular files, discover


def test_load_symlink_outside_root_refused(root: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside.yaml"
    outside.write_text("secret: 1\n")
    link = root / "tenants" / "team-a.yaml"
    os.symlink(outside, link)
    with pytest.raises(PipelineError) as caught:
        load(link, root)
    assert [(f.rule, f.path) for f in caught.value.findings] == [("source-symlink", SHOWN)]


def test_load_symlink_inside_root_passes(root: Path) -> None:
    (root / "shared").mkdir()
    (root / "shared" / "base.yaml").write_text("a: 1\n")
    os.symlink("../shared/base.yaml", root / "tenants" / "team-a.yaml")
    doc = load(Path("tenants/team-a.yaml"), root)
    assert (doc.path, doc.data) == (SHOWN, {"a": 1})


def test_load_path_escaping_root_refused(root: Path, tmp_path: Path) -> None:
    (tmp_path / "outside.yaml").write_text("a: 1\n")
    with pytest.raises(PipelineError) as caught:
        load(Path("../outside.yaml"), root)
    assert rules(caught.value.findings) == {"source-outside-root"}


def test_load_missing_directory_and_fifo(root: Path) -> None:
    with pytest.raises(PipelineError) as caught:
        load(Path("tenants/missing.yaml"), root)
    assert rules(caught.value.findings) == {"source-read"}
    (root / "tenants" / "dir.yaml").mkdir()
    with pytest.raises(PipelineError) as caught:
        load(Path("tenants/dir.yaml"), root)
    assert rules(caught.value.findings) == {"source-not-regular"}
    fifo = root / "tenants" / "fifo.yaml"
    os.mkfifo(fifo)
    with pytest.raises(PipelineError) as caught:
        load(fifo, root)  # must not block waiting for a writer
    assert rules(caught.value.findings) == {"source-not-regular"}


def test_discover(root: Path, tmp_path: Path) -> None:
    tenants = root / "tenants"
    (tmp_path / "outside.yaml").write_text("a: 1\n")
    (root / "shared").mkdir()
    (root / "shared" / "base.yaml").write_text("a: 1\n")
    for name in ("b.yaml", "a.yml", "notes.txt", ".hidden.yaml", "c.yaml.bak"):
        (tenants / name).write_text("a: 1\n")
    (tenants / "dir.yaml").mkdir()
    (tenants / "dir.yaml" / "nested.yaml").write_text("a: 1\n")
    (tenants / "sub").mkdir()
    (tenants / "sub" / "deep.yaml").write_text("a: 1\n")
    os.mkfifo(tenants / "pipe.yaml")
    os.symlink(tmp_path / "outside.yaml", tenants / "escape.yaml")
    os.symlink("../../outside.yaml", tenants / "relative-escape.yml")
    os.symlink("../shared/base.yaml", tenants / "linked.yaml")
    os.symlink("missing.yaml", tenants / "dangling.yaml")

    files, findings = discover(root, "tenants")
    assert files == [tenants / "a.yml", tenants / "b.yaml", tenants / "linked.yaml"]
    assert sorted((f.rule, f.path) for f in findings) == [
        ("source-not-regular", "tenants/dir.yaml"),
        ("source-not-regular", "tenants/pipe.yaml"),
        ("source-read", "tenants/dangling.yaml"),
        ("source-symlink", "tenants/escape.yaml"),
        ("source-symlink", "tenants/relative-escape.yml"),
    ]
    assert [load(f, root).path for f in files] == ["tenants/a.yml", "tenants/b.yaml", "tenants/linked.yaml"]


def test_discover_suffixes_and_missing_dir(root: Path) -> None:
    write(root, "a: 1\n", "x.json")
    write(root, "a: 1\n", "y.yaml")
    assert discover(root, "tenants", (".json",)) == ([root / "tenants" / "x.json"], [])
    assert discover(root, "tenants", ".json") == ([root / "tenants" / "x.json"], [])
    assert discover(root, "missing") == ([], [])


def test_discover_directory_symlinked_outside_root(root: Path, tmp_path: Path) -> None:
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "a.yaml").write_text("a: 1\n")
    os.symlink(tmp_path / "elsewhere", root / "linked")
    files, findings = discover(root, "linked")
    assert files == []
    assert [(f.rule, f.path) for f in findings] == [("source-symlink", "linked")]


# --------------------------------------------------------------------------------------------------
# Properties

YAMLISH = st.text(
    alphabet=st.sampled_from(list(":-[]{},#&*!|>'\"?%@`~. \t\n\rabyn01éx\x00\ufeff")), max_size=80
)


@settings(max_examples=300)
@given(st.one_of(st.text(), st.binary(), YAMLISH))
def test_load_text_returns_document_or_pipeline_error(content: str | bytes) -> None:
    try:
        doc = load_text(content, "fuzz.yaml")
    except PipelineError as exc:
        assert exc.findings
        assert all(f.path == "fuzz.yaml" and f.line >= 0 and f.col >= 0 for f in exc.findings)
        assert any(f.severity is Severity.ERROR for f in exc.findings)
        return
    assert_plain(doc.data)
    assert all(f.severity is not Severity.ERROR for f in doc.findings)
    assert all(line >= 1 and col >= 1 for line, col in doc.marks.values())


PLAIN_TEXT = st.text(alphabet=st.characters(min_codepoint=0x20, max_codepoint=0x7E), max_size=12)
PLAIN_DATA = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | PLAIN_TEXT,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(PLAIN_TEXT, inner, max_size=4),
    max_leaves=12,
)


@settings(max_examples=150)
@given(st.dictionaries(PLAIN_TEXT, PLAIN_DATA, min_size=1, max_size=4), st.booleans())
def test_safe_dump_round_trip(data: dict[str, Any], flow: bool) -> None:
    text = yaml.safe_dump(data, default_flow_style=flow, sort_keys=False)
    doc = load_text(text, "dump.yaml")
    assert doc.data == data
    assert all(f.rule == "source-ambiguous-bool" for f in doc.findings)


def test_a_file_in_a_resolved_directory_resolves_as_its_whole_path_does(tmp_path: Path) -> None:
    """`load` takes a tenant file's resolution from its directory's when the file is not a symlink:
    the same path `Path.resolve` gives, for plain files, links in and out of the root, a missing
    file, a linked directory and `..`; and the same Document or findings."""
    root, outside = tmp_path / "repo", tmp_path / "outside"
    (root / "real").mkdir(parents=True)
    outside.mkdir()
    (root / "tenants").symlink_to(root / "real")
    (root / "real" / "a.yaml").write_text("name: a\n")
    (outside / "o.yaml").write_text("name: o\n")
    (root / "real" / "in.yaml").symlink_to(root / "real" / "a.yaml")
    (root / "real" / "out.yaml").symlink_to(outside / "o.yaml")
    directory = root / "tenants"
    real_dir = (directory, directory.resolve())
    names = ["a.yaml", "in.yaml", "out.yaml", "missing.yaml", ".."]
    for name in names:
        full = directory / name
        assert source._resolved(full, real_dir) == full.resolve(), name
    assert source._resolved(directory / "a.yaml", real_dir) == root / "real" / "a.yaml"
    for name in names[:4]:
        results = []
        for known in (None, real_dir):
            try:
                results.append(load(directory / name, root, real_root=root.resolve(), real_dir=known))
            except PipelineError as exc:
                results.append(exc.findings)
        assert results[0] == results[1], name
