"""YAML syntax errors in plain words, at the line the author must change: a key indented unlike the
keys beside it, a missing space after ':', a bracket or quote never closed, a line without ':'. Real
tenant files broken as authors break them, read by `python pipeline.py validate`; the parser's own
terms (`<block end>`, `mapping values are not allowed here`) never reach the user."""

from __future__ import annotations

from pathlib import Path

import pytest
import trees
from hypothesis import given, settings
from hypothesis import strategies as st
from test_cli_ux import pipeline

from gputenancy.common.findings import PipelineError
from gputenancy.inputs.source import load_text

SPEECH = (trees.FIXTURE / "tenants" / "speech.yaml").read_text()


def broken(name: str, old: str, new: str) -> str:
    """speech.yaml renamed to `name`, with `old` (a whole line, occurring once) replaced by `new`."""
    assert SPEECH.count(old) == 1, old
    return (
        SPEECH.replace("name: speech", f"name: {name}")
        .replace("- speech\n", f"- {name}-ns\n")
        .replace(old, new)
    )


def line_of(text: str, needle: str) -> int:
    return text.splitlines().index(needle) + 1


# A tenant file broken as authors break it, the line the finding must sit on, and what it must say.
CASES = {
    "less-indented": (
        ("        memory: 512Gi\n", "       memory: 512Gi\n"),
        "       memory: 512Gi",
        "`memory` is indented 7 spaces; the keys beside it use 8 (`cpu` on line 16)",
    ),
    "more-indented": (
        ("        memory: 512Gi\n", "         memory: 512Gi\n"),
        "         memory: 512Gi",
        "`memory` is indented 9 spaces; the keys beside it use 8 (`cpu` on line 16)",
    ),
    "item-key-indented": (
        ("      resources:\n        cpu: 48\n", "     resources:\n        cpu: 48\n"),
        "     resources:",
        "`resources` is indented 5 spaces; the keys beside it use 6 (`devices` on line 19)",
    ),
    "missing-space": (
        ("        cpu: 32\n", "        cpu:32\n"),
        "        cpu:32",
        "missing space after ':' in `cpu:32`: write `cpu: 32`",
    ),
    "missing-space-top": (
        ("cohort: research\n", "cohort:research\n"),
        "cohort:research",
        "missing space after ':' in `cohort:research`: write `cohort: research`",
    ),
    "unclosed-bracket": (
        ('owners: ["@acme/speech"]\n', 'owners: ["@acme/speech"\n'),
        'owners: ["@acme/speech"',
        "the '[' here is never closed: add ']' where its items end",
    ),
    "unclosed-quote": (
        ("cohort: research\n", "cohort: 'research\n"),
        "cohort: 'research",
        "this quoted text is never closed",
    ),
    "no-colon": (
        ("cohort: research\n", "cohort\n"),
        "cohort",
        "`cohort` is neither `key: value` nor a list item ('- '): add ':' after the key",
    ),
    "list-item-indented": (
        ("  - name: mig-1g\n", " - name: mig-1g\n"),
        " - name: mig-1g",
        "this list item is indented 1 space; the items above it use 2",
    ),
}
JARGON = ("<block", "mapping values are not allowed", "while parsing", "while scanning", "but found '<")


@pytest.mark.parametrize("case", sorted(CASES))
def test_each_mistake_in_plain_words_at_its_line(case: str) -> None:
    (old, new), line, words = CASES[case]
    text = broken(case, old, new)
    with pytest.raises(PipelineError) as caught:
        load_text(text, f"tenants/{case}.yaml")
    [finding] = [f for f in caught.value.findings if f.rule == "source-syntax"]
    assert finding.line == line_of(text, line), finding.format()
    assert words in finding.message
    assert not any(j in finding.message for j in JARGON), finding.message


def test_an_unrecognised_error_keeps_the_parser_position_without_its_token_names() -> None:
    with pytest.raises(PipelineError) as caught:
        load_text("a: b\n- c\n", "t.yaml")
    [finding] = caught.value.findings
    assert (finding.rule, finding.line, finding.col) == ("source-syntax", 2, 1)
    assert finding.message == (
        "expected the end of the indented block, but found '-' (in the block mapping that starts on line 1)"
    )


def test_validate_reports_every_broken_file_in_one_run(tmp_path: Path) -> None:
    root = trees.example(tmp_path, generated=False)
    expected = []
    for case, ((old, new), line, words) in CASES.items():
        text = broken(case, old, new)
        (root / "tenants" / f"{case}.yaml").write_text(text)
        expected.append((f"tenants/{case}.yaml:{line_of(text, line)}:", words))
    done = pipeline("validate", cwd=root)
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    out = done.stdout.splitlines()
    for where, words in expected:
        assert any(o.startswith(where) and words in o and o.endswith("(source-syntax)") for o in out), (
            where,
            words,
            done.stdout,
        )
    assert not any(j in done.stdout for j in JARGON), done.stdout
    assert not (root / "generated").exists()


EDITS = st.lists(
    st.tuples(
        st.integers(min_value=0, max_value=len(SPEECH) - 1),
        st.sampled_from(["", " ", ":", "-", "[", "{", "'", '"', "\n", "  ", "#", ","]),
        st.integers(min_value=0, max_value=2),
    ),
    min_size=1,
    max_size=4,
)


@settings(max_examples=200, deadline=None, database=None, derandomize=True)
@given(EDITS)
def test_any_broken_file_is_a_finding_in_words_never_a_crash(edits: list[tuple[int, str, int]]) -> None:
    """Characters inserted or deleted anywhere: the reader either loads the file or reports findings
    whose syntax message carries no parser token names; the wording never raises."""
    text = SPEECH
    for at, insert, delete in edits:
        at = min(at, len(text))
        text = text[:at] + insert + text[at + delete :]
    try:
        load_text(text, "tenants/speech.yaml")
    except PipelineError as exc:
        for f in exc.findings:
            assert f.line >= 0 and f.col >= 0
            if f.rule == "source-syntax":
                assert "<" not in f.message.replace("<tenant>", ""), f.message
                assert 1 <= f.line <= text.count("\n") + 1, (f.format(), text)


def test_the_examples_in_the_docs_are_what_the_reader_prints() -> None:
    section = (trees.REPO / "docs" / "inputs.md").read_text().split("## YAML mistakes, in plain words", 1)[1]
    shown = section.split("```\n", 1)[1].split("```", 1)[0].splitlines()
    printed = []
    for case in ("less-indented", "missing-space", "unclosed-bracket"):
        (old, new), _, _ = CASES[case]
        with pytest.raises(PipelineError) as caught:
            load_text(SPEECH.replace(old, new), "tenants/speech.yaml")
        printed += [f.format() for f in caught.value.findings if f.rule == "source-syntax"]
    assert shown == printed
