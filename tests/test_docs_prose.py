"""What people read: `rules ID` puts each rule's failing example under "Fails" and its passing one under
"Passes", whichever order its documentation gives them in and wherever the rule is documented; prose
built from tenant strings for the pull-request comment has no raw `<` or `>`, so it opens no HTML tag,
comment or block quote, in markdown or inside an HTML element, and still reads as the input."""

from __future__ import annotations

import html

import pytest
from markdown_it import MarkdownIt

from gputenancy.cli.app import main
from gputenancy.common import mdsafe


def explained(capsys: pytest.CaptureFixture[str], rule_id: str) -> dict[str, str]:
    assert main(["rules", rule_id]) == 0
    out = capsys.readouterr().out
    lines = {line.split(":", 1)[0]: line.split(":", 1)[1].strip() for line in out.splitlines() if ":" in line}
    return {"Fails": lines["Fails"], "Passes": lines["Passes"]}


@pytest.mark.parametrize(
    ("rule_id", "fails", "passes"),
    [
        # documented in a model rule's docstring, Passes first
        (
            "claim-coverage",
            "a claim of mig-1g.10gb.nvidia.com and a budget with only gpu.nvidia.com.",
            "a claim of gpu.nvidia.com and a budget with devices: {gpu.nvidia.com: 1}.",
        ),
        # documented beside the swap's code
        (
            "generated-leftover",
            "generated/.staging-1234/ after the render was killed.",
            "generated/{lab,prod}.",
        ),
        # a row of the rule index's table: fails before passes
        ("publish-stale", "publishing an older source commit than the branch holds", "a newer commit"),
        # a post-build rule
        (
            "built-claim-chain",
            "a patch that sets deviceClassName to a class no mapping names; `namePrefix:` on DeviceClasses.",
            "template gpu.nvidia.com -> mapping nvidia.com/gpu -> ClusterQueue covering nvidia.com/gpu.",
        ),
    ],
)
def test_rules_id_prints_the_failing_example_under_fails_and_the_passing_one_under_passes(
    capsys: pytest.CaptureFixture[str], rule_id: str, fails: str, passes: str
) -> None:
    assert explained(capsys, rule_id) == {"Fails": fails, "Passes": passes}


HOSTILE = [
    "<img src=x onerror=alert(1)>",
    "</summary></details><script>alert(1)</script>",
    "<!-- hidden --> a > b < c",
    "> quoted",
    "<https://127.0.0.1/autolink>",
    "<span>team</span>",
]


@pytest.mark.parametrize("value", HOSTILE)
def test_prose_has_no_raw_angle_brackets_and_reads_as_the_input(value: str) -> None:
    shown = mdsafe.text(value)
    assert "<" not in shown and ">" not in shown
    assert html.unescape(shown).replace("\u2060", "") == value  # character references read as the input


@pytest.mark.parametrize("value", HOSTILE)
def test_prose_renders_as_text_in_markdown_and_inside_an_html_element(value: str) -> None:
    md = MarkdownIt("commonmark")
    for document in (
        f"ClusterQueue {mdsafe.text(value)}\n",
        f"<details><summary>{mdsafe.text(value)}</summary>\n",
    ):
        tokens = md.parse(document)
        inline = [t for t in tokens if t.type == "inline"]
        assert not [c for t in inline for c in t.children or [] if c.type in ("html_inline", "link_open")]
        assert not [t for t in tokens if t.type == "blockquote_open"]
        rendered = md.render(document)
        assert "<img" not in rendered and "<script" not in rendered and "<span" not in rendered
        assert "<!--" not in rendered and "<a " not in rendered
