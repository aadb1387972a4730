"""Every command explains itself: each command and subcommand's --help has a description, exit codes and
an example; `pipeline.py` or `pipeline.py schemas` alone prints the help that names what to type; the
global options are offered only where they act; every JSON document names its schema; the rule
descriptions share one style."""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

import minirepo
import pytest
import trees

from gputenancy.cli import ruleindex
from gputenancy.cli.app import main
from gputenancy.cli.parsers import _parser


def parsers(parser: argparse.ArgumentParser, name: str = "") -> dict[str, argparse.ArgumentParser]:
    """Every command and subcommand, by its words (`schemas fetch`)."""
    found = {}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub_name, sub in action.choices.items():
                words = f"{name} {sub_name}".strip()
                found[words] = sub
                found.update(parsers(sub, words))
    return found


COMMANDS = parsers(_parser())


def test_the_walk_finds_the_subcommands() -> None:
    assert {"validate", "schemas", "schemas fetch", "rules"} <= set(COMMANDS)


@pytest.mark.parametrize("words", sorted(COMMANDS))
def test_every_command_and_subcommand_has_a_description_exit_codes_and_an_example(
    words: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as done:
        main([*words.split(), "--help"])
    assert done.value.code == 0
    out = capsys.readouterr().out
    usage, rest = out.split("\n\n", 1)
    assert usage.startswith(f"usage: pipeline.py {words}")
    description = rest.split("\n\n", 1)[0]
    assert not description.startswith(("options:", "positional")) and len(description.split()) >= 8, out
    exits = out.split("exit codes:\n", 1)[1].split("\n\n", 1)[0]
    assert re.findall(r"^  [0-9]  \S", exits, re.M), out
    example = out.split("example:\n", 1)[1]
    assert f"  python pipeline.py {words}" in example


@pytest.mark.parametrize("argv", [[], ["schemas"]])
def test_a_command_without_its_subcommand_prints_help_not_an_argparse_error(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == 1  # nothing done: not a success (2 is plan's "changes")
    captured = capsys.readouterr()
    assert "error" not in captured.err and "required" not in captured.out + captured.err
    assert "exit codes:" in captured.out and "example:" in captured.out
    assert ("fetch" if argv else "validate") in captured.out


@pytest.mark.parametrize("command", ["rules", "pr-comment", "job-summary"])
def test_global_options_are_not_offered_where_they_do_nothing(
    command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit):
        main([command, "--help"])
    out = capsys.readouterr().out
    assert "--root" not in out and "--no-cache" not in out
    needed = [] if command == "rules" else ["--body-file", "plan.md"]
    for flag in (["--root", "."], ["--no-cache"]):
        assert main([*flag, command, *needed]) == 1
        assert f"{flag[0]} has no effect on `{command}`" in capsys.readouterr().err


@pytest.mark.parametrize(
    "words", ["validate", "render", "check", "plan", "publish", "budgets", "schemas fetch"]
)
def test_global_options_are_offered_where_they_act(words: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main([*words.split(), "--help"])
    out = capsys.readouterr().out
    assert "--root" in out
    assert ("--no-cache" in out) is (words != "schemas fetch")  # fetch uses no cache


def documents(text: str) -> dict[str, object]:
    doc = json.loads(text)
    assert isinstance(doc, dict)
    return doc


def test_every_json_output_names_its_schema(
    tmp_path: Path, shared: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = trees.example(tmp_path)
    runs = {
        ("validate",): "gputenancy.common.findings/v1",
        ("render",): "gputenancy.common.findings/v1",
        ("check",): "gputenancy.common.findings/v1",
        ("budgets",): "gputenancy.budgets/v1",
        ("plan",): "gputenancy.plan/v1",
    }
    for args, schema in runs.items():
        code = main(["--root", str(root), "--no-cache", *args, "--format", "json"])
        assert code in (0, 2), args
        assert documents(capsys.readouterr().out)["schema"] == schema, args
    trees.edit(root, "tenants/speech.yaml", lambda d: d.update(cohort="nope"))
    assert main(["--root", str(root), "--no-cache", "validate", "--format", "json"]) == 1
    failed = documents(capsys.readouterr().out)
    assert failed["schema"] == "gputenancy.common.findings/v1" and failed["findings"]
    mini = minirepo.make(tmp_path / "mini", [minirepo.cluster("c1")])
    url = f"file://{shared}/kueue/{{version}}/manifests.yaml"
    fetch = ["--root", str(mini), "schemas", "fetch", "--schemas", str(tmp_path / "s"), "--url", url]
    assert main([*fetch, "--format", "json"]) == 1  # no entry in schemas.lock yet
    assert documents(capsys.readouterr().out)["schema"] == "gputenancy.common.findings/v1"
    assert main([*fetch, "--update", "--format", "json"]) == 0
    fetched = documents(capsys.readouterr().out)
    assert fetched["schema"] == "gputenancy.common.findings/v1" and fetched["findings"] == []
    assert any("v0.19.2" in note for note in fetched["notes"])  # type: ignore[attr-defined]


def test_rule_descriptions_share_one_style() -> None:
    for doc in ruleindex.all_rules():
        text = doc.summary
        level = re.match(r"\((warning|note)\) ", text)
        text = text[level.end() :] if level else text
        assert not re.match(r"(warning|note)\b", text, re.I), doc.id
        first = text.split()[0]
        # a sentence starts with a capital; an identifier (`lendingLimit`, `flavors[j]`, base/...) keeps
        # its own spelling
        assert first[0].isupper() or not first.isalpha() or not first.islower(), (doc.id, text)
    assert ruleindex.styled("warning: yes/no read as strings") == "(warning) yes/no read as strings"
    assert ruleindex.styled("note: a CEL rule") == "(note) A CEL rule"
    assert ruleindex.styled("lendingLimit <= nominal") == "lendingLimit <= nominal"


# ------------------------------------------------------------------------------ usage errors


@pytest.mark.parametrize(
    "argv",
    [
        ["plan", "--formt", "markdown"],
        ["plan", "--format", "yaml"],
        ["publish", "--dryrun"],
        ["validate", "extra"],
        ["nosuchcommand"],
        ["--root", ".", "rules"],
        ["schemas", "fetch", "--nope"],
    ],
)
def test_a_usage_error_exits_with_a_code_no_command_succeeds_with(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    """`plan` exits 2 for changes, so a usage error must not: it exits 1 (terraform's scheme: 1 error,
    2 changes), with argparse's usage and message on stderr and nothing on stdout."""
    assert main(argv) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "usage: pipeline.py" in captured.err and "error:" in captured.err


def test_a_usage_error_exits_1_from_the_shell(tmp_path: Path) -> None:
    import subprocess
    import sys

    done = subprocess.run(
        [
            sys.executable,
            str(Path(__file__).resolve().parent.parent / "pipeline.py"),
            "plan",
            "--formt",
            "markdown",
        ],
        capture_output=True,
        text=True,
        check=False,
        cwd=tmp_path,
    )
    assert done.returncode == 1, done.stderr
    assert "unrecognized arguments: --formt" in done.stderr and done.stdout == ""


def test_version_is_the_package_version(capsys: pytest.CaptureFixture[str]) -> None:
    """`--version` prints the version of the package's metadata (pyproject.toml's), exit 0."""
    import tomllib

    pyproject = tomllib.loads((Path(__file__).resolve().parent.parent / "pyproject.toml").read_text())
    assert main(["--version"]) == 0
    assert capsys.readouterr().out == f"pipeline.py {pyproject['project']['version']}\n"
