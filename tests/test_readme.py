"""README.md says what the commands do: every `python pipeline.py ...` it shows names a real command
and only options that command accepts, every risk in its table is one the plan can raise, and every
rule id it names is listed by `python pipeline.py rules`."""

from __future__ import annotations

import argparse
import re

import pytest
import trees

from gputenancy.check import ruleindex
from gputenancy.cli import _parser

README = (trees.REPO / "README.md").read_text()


def subcommands() -> dict[str, argparse.ArgumentParser]:
    parser = _parser()
    (action,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(action.choices)


def invocations() -> list[str]:
    """`python pipeline.py ...` as shown in code blocks and inline code."""
    found = re.findall(r"^\$? ?(python pipeline\.py [^\n#]*)", README, re.M)
    found += re.findall(r"`(python pipeline\.py [^`]*)`", README)
    return sorted({f.strip() for f in found})


def options(parser: argparse.ArgumentParser) -> set[str]:
    """The parser's options and those of its own subcommands (`schemas fetch`)."""
    found = {s for a in parser._actions for s in a.option_strings}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                found |= options(sub)
    return found


@pytest.mark.parametrize("line", invocations())
def test_every_documented_invocation_uses_a_real_command_and_real_options(line: str) -> None:
    commands = subcommands()
    words = [w for w in re.split(r"[\s\[\]|]+", line.removeprefix("python pipeline.py")) if w]
    named = [w for w in words if w in commands or w == "COMMAND"]
    assert named, f"no command in {line!r}"
    if named[0] == "COMMAND":
        return
    accepted = options(commands[named[0]])
    for flag in re.findall(r"(?<![\w-])--[a-z][a-z-]*", line):
        assert flag in accepted, f"{line!r}: {named[0]} has no option {flag}"


def test_the_documented_commands_are_all_the_commands() -> None:
    shown = {m for line in invocations() for m in line.split()[2:3]}
    for command in subcommands():  # shown as an invocation, not merely a word somewhere in the README
        assert re.search(rf"pipeline\.py(?: \[[^\]]*\])* {re.escape(command)}\b", README), command
    assert {"validate", "render", "check", "budgets", "rules", "plan", "publish"} <= shown | set(
        re.findall(r"python pipeline\.py \[[^\]]*\](?: \[[^\]]*\])* (\w[\w-]*)", README)
    )


def test_every_risk_in_the_table_is_an_id_the_deliver_code_emits() -> None:
    table = README.split("### Risk flags", 1)[1].split("\n### ", 1)[0]
    risks = re.findall(r"^\| `([a-z-]+)` \|", table, re.M)
    assert len(risks) >= 9
    code = "".join(p.read_text() for p in (trees.REPO / "gputenancy" / "deliver").glob("*.py"))
    for risk in risks:
        assert f'"{risk}"' in code, risk


def test_every_rule_id_the_readme_names_is_listed() -> None:
    section = README.split("\n## Rules\n", 1)[1].split("\n## ", 1)[0]
    named = {n for n in re.findall(r"`([a-z0-9]+(?:-[a-z0-9]+)+)`", section) if not n.endswith("-")}
    assert named - set(ruleindex.ids()) == set()
