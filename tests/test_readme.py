"""README.md and the pages of docs/ say what the code does: the README is the front door (short, with
its contents, set-up, walkthrough and how-tos on the first screen, the test command the CI script
runs, honest numbers), every docs page is linked from it, every relative link resolves (anchors
included), every `python pipeline.py ...` shown names a real command and only options that command
accepts, every risk in the plan's table is one the plan can raise, and every rule id the rules page
names is listed by `python pipeline.py rules`."""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

import pytest
import trees

from gputenancy.cli import ruleindex
from gputenancy.cli.parsers import _parser

README_PATH = trees.REPO / "README.md"
README = README_PATH.read_text()
DOCS = sorted((trees.REPO / "docs").glob("*.md"))
PAGES = [README_PATH, *DOCS, trees.REPO / "argocd" / "README.md"]


def page(name: str) -> str:
    return (trees.REPO / "docs" / name).read_text()


def subcommands() -> dict[str, argparse.ArgumentParser]:
    parser = _parser()
    (action,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(action.choices)


def invocations() -> list[tuple[str, str]]:
    """`python pipeline.py ...` as shown in code blocks and inline code, with the page showing it."""
    found = []
    for path in PAGES:
        text = path.read_text()
        lines = re.findall(r"^\$? ?(python pipeline\.py [^\n#`]*)", text, re.M)
        lines += re.findall(r"`(python pipeline\.py [^`]*)`", text.replace("\n", " "))
        found += [(path.relative_to(trees.REPO).as_posix(), line.strip()) for line in lines]
    return sorted(set(found))


def options(parser: argparse.ArgumentParser) -> set[str]:
    """The parser's options and those of its own subcommands (`schemas fetch`)."""
    found = {s for a in parser._actions for s in a.option_strings}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                found |= options(sub)
    return found


@pytest.mark.parametrize(("where", "line"), invocations())
def test_every_documented_invocation_uses_a_real_command_and_real_options(where: str, line: str) -> None:
    commands = subcommands()
    words = [w for w in re.split(r"[\s\[\]|]+", line.removeprefix("python pipeline.py")) if w]
    named = [w for w in words if w in commands or w in ("COMMAND", "<command>")]
    top = {s for a in _parser()._actions for s in a.option_strings}
    if not named and words and all(w in top for w in words):  # `python pipeline.py --version`
        return
    assert named, f"{where}: no command in {line!r}"
    if named[0] in ("COMMAND", "<command>"):
        return
    accepted = options(commands[named[0]])
    for flag in re.findall(r"(?<![\w-])--[a-z][a-z-]*", line):
        assert flag in accepted, f"{where}: {line!r}: {named[0]} has no option {flag}"


def test_the_readme_shows_every_command_as_an_invocation() -> None:
    for command in subcommands():  # shown as an invocation, not merely a word somewhere in the README
        assert re.search(rf"pipeline\.py(?: \[[^\]]*\])* {re.escape(command)}\b", README), command


def test_the_readme_is_a_front_door() -> None:
    lines = README.splitlines()
    assert len(lines) <= 300, "reference material belongs in docs/"
    first_screen = "\n".join(lines[:40])
    for section in ("#set-up", "#five-minute-walkthrough", "#how-tos", "#reference"):
        assert f"]({section}" in first_screen, section
    headings = re.findall(r"^## (.+)$", README, re.M)
    assert headings[:4] == ["Contents", "Set up", "Five-minute walkthrough: change a budget", "How-tos"]


def slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces as hyphens."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    text = re.sub(r"^```.*?^```", "", path.read_text(), flags=re.M | re.S)  # no headings in code blocks
    return {slug(h) for h in re.findall(r"^#{1,6} (.+)$", text, re.M)}


def links(path: Path) -> list[str]:
    text = re.sub(r"^```.*?^```", "", path.read_text(), flags=re.M | re.S)
    text = re.sub(r"`[^`\n]*`", "", text)
    return re.findall(r"\]\(([^)\s]+)\)", text)


@pytest.mark.parametrize("path", PAGES, ids=lambda p: p.relative_to(trees.REPO).as_posix())
def test_every_relative_link_resolves(path: Path) -> None:
    for link in links(path):
        if re.match(r"[a-z]+:", link):
            continue  # https://, mailto:
        target, _, anchor = link.partition("#")
        file = (path.parent / target).resolve() if target else path
        assert file.exists(), f"{path.name}: {link}: no such file"
        if anchor:
            assert file.suffix == ".md", f"{path.name}: {link}"
            assert anchor in anchors(file), f"{path.name}: {link}: no such heading"


def test_every_docs_page_is_linked_from_the_readme() -> None:
    linked = {(README_PATH.parent / link.partition("#")[0]).resolve() for link in links(README_PATH)}
    for doc in DOCS:
        assert doc.resolve() in linked, f"docs/{doc.name} is not linked from README.md"


def test_the_readme_test_command_is_the_one_ci_runs() -> None:
    setup = README.split("\n## Set up\n", 1)[1].split("\n## ", 1)[0]
    block = setup.split("```sh\n", 1)[1].split("```", 1)[0]
    [tests] = [line for line in block.splitlines() if "pytest" in line]
    command = tests.split("&&")[-1].strip()
    ci = (trees.REPO / ".ci" / "run").read_text()
    assert re.search(rf"^{re.escape(command)}(?: |$)", ci, re.M), command


def collected() -> tuple[int, int]:
    """(tests, tests that read the reference data through the `shared` fixture), as pytest collects."""
    plugin = (
        "def pytest_collection_finish(session):\n"
        "    items = session.items\n"
        "    shared = sum('shared' in getattr(i, 'fixturenames', ()) for i in items)\n"
        "    print(f'COLLECTED {len(items)} {shared}')\n"
    )
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            f"import pytest, sys\nexec({plugin!r})\n"
            "sys.exit(pytest.main(['-q', '-p', 'no:cacheprovider', '--collect-only', 'tests'],"
            " plugins=[sys.modules['__main__']]))",
        ],
        cwd=trees.REPO,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    match = re.search(r"^COLLECTED (\d+) (\d+)$", done.stdout, re.M)
    assert match, done.stdout[-2000:] + done.stderr[-2000:]
    return int(match.group(1)), int(match.group(2))


def test_the_readme_counts_the_tests_honestly() -> None:
    total, shared = collected()
    said_total = int(re.search(r"about ([\d,]+) of them", README).group(1).replace(",", ""))  # type: ignore[union-attr]
    said_shared = int(re.search(r"About (\d+) tests check the output", README).group(1))  # type: ignore[union-attr]
    assert abs(total - said_total) <= said_total * 0.2, (total, said_total)
    assert abs(shared - said_shared) <= said_shared * 0.2, (shared, said_shared)


def test_every_risk_in_the_table_is_an_id_the_deliver_code_emits() -> None:
    table = page("plan-and-publish.md").split("## Risk flags", 1)[1].split("\n## ", 1)[0]
    risks = re.findall(r"^\| `([a-z-]+)` \|", table, re.M)
    assert len(risks) >= 9
    code = "".join(p.read_text() for p in (trees.REPO / "gputenancy" / "deliver").glob("*.py"))
    for risk in risks:
        assert f'"{risk}"' in code, risk


def test_every_rule_id_the_rules_page_names_is_listed() -> None:
    text = page("rules.md")
    named = {n for n in re.findall(r"`([a-z0-9]+(?:-[a-z0-9]+)+)`", text) if not n.endswith("-")}
    assert len(named) >= 40
    assert named - set(ruleindex.ids()) == set()


# ------------------------------------------------------------------ the outputs the README shows


def shown_sessions(text: str = README) -> list[list[tuple[str, list[str]]]]:
    """Every ```sh block that shows `$ python pipeline.py ...`: its commands (`$ ...` lines) in order,
    each with the output lines shown under it."""
    sessions = []
    for block in re.findall(r"^```sh\n(.*?)^```", text, re.M | re.S):
        if not re.search(r"^\$ python pipeline\.py ", block, re.M):
            continue
        steps: list[tuple[str, list[str]]] = []
        for line in block.splitlines():
            if line.startswith("$ "):
                steps.append((line[2:], []))
            elif steps:
                steps[-1][1].append(line)
        sessions.append(steps)
    return sessions


def shows(expected: list[str], actual: list[str]) -> bool:
    """Whether `actual` is what `expected` shows: line for line, a `...` line standing for any run of
    lines (none included)."""
    if not expected:
        return not actual
    if expected[0] == "...":
        return any(shows(expected[1:], actual[i:]) for i in range(len(actual) + 1))
    return bool(actual) and actual[0] == expected[0] and shows(expected[1:], actual[1:])


def test_the_elision_matches_runs_of_lines_only() -> None:
    assert shows(["a", "...", "d"], ["a", "b", "c", "d"]) and shows(["a", "...", "d"], ["a", "d"])
    assert not shows(["a", "...", "d"], ["a", "b", "c"]) and not shows(["a", "b"], ["a", "b", "c"])
    assert not shows(["a"], ["a "])


def test_every_command_output_the_readme_shows_is_what_the_command_prints(tmp_path: Path) -> None:
    """The README's sessions run in order on a fresh clone of the suite's example repository (a git
    repository whose one commit holds the inputs and generated/), each command through the shell;
    what each prints on stdout is what the README shows under it."""
    import os
    import shutil

    sessions = shown_sessions()
    assert sessions, "the walkthrough shows command output"
    root = trees.example(tmp_path / "clone")
    for rel in trees.DERIVED:  # a clone holds what render derives beside generated/ too
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(trees.rendered() / rel, root / rel)
    shutil.copyfile(trees.REPO / "pipeline.py", root / "pipeline.py")
    trees.committed(root).close()
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "python").write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
    (bin_dir / "python").chmod(0o755)
    env = {k: v for k, v in os.environ.items() if k not in ("GITHUB_ACTIONS", "GPUTENANCY_SCHEMAS")}
    env.update(PATH=f"{bin_dir}{os.pathsep}{env['PATH']}", PYTHONPATH=str(trees.REPO), NO_COLOR="1")
    for steps in sessions:
        for command, expected in steps:
            done = subprocess.run(
                ["bash", "--noprofile", "--norc", "-c", command],
                cwd=root,
                env=env,
                capture_output=True,
                text=True,
                timeout=300,
                check=False,
            )
            printed = done.stdout.splitlines()
            assert shows(expected, printed), (
                f"README shows under `$ {command}`:\n"
                + "\n".join(expected)
                + "\n\nit prints:\n"
                + done.stdout
            )


def test_the_offline_schemas_step_of_the_set_up_works_from_a_mirror(tmp_path: Path, shared: Path) -> None:
    """Set up's `schemas fetch --url 'file://<mirror>/kueue/{version}/manifests.yaml'`, with the
    reference data standing in for the mirror (the same layout), fills the schemas directory and
    verifies it against the fixture's lock."""
    import shlex

    from gputenancy.cli.app import main

    setup = README.split("\n## Set up\n", 1)[1].split("\n## ", 1)[0]
    (line,) = [
        x for x in setup.splitlines() if x.startswith("python pipeline.py schemas fetch --url 'file://")
    ]
    url = shlex.split(line)[-1]
    mirror = url.removeprefix("file://").split("/kueue/", 1)[0]
    import shutil

    root = trees.example(tmp_path)
    shutil.copyfile(trees.REPO / "schemas.lock", root / "schemas.lock")  # the project's lock
    args = shlex.split(line.removeprefix("python pipeline.py "))
    args[-1] = url.replace(mirror, str(shared))
    assert main(["--root", str(root), *args]) == 0
    assert sorted(p.name for p in (root / ".gputenancy-schemas" / "kueue").iterdir()) == [
        "v0.18.1",
        "v0.19.2",
    ]
