"""The package's layering, read from its source (ast): no import cycle, and no import from a later stage
into an earlier one. Stages in order: versions < inputs < policy < render < assemble < check < cluster < live < admission <
deliver < adopt;
the leaf rooms (LEAVES: `common`, the shared leaves, and `caching`) import only leaves and are usable by
all; `engine` and the command line (`cli/`) sit above the stages."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
import trees

PACKAGE = trees.REPO / "gputenancy"
STAGES = (
    "versions",
    "inputs",
    "policy",
    "render",
    "assemble",
    "check",
    "cluster",
    "live",
    "admission",
    "deliver",
    "adopt",
)
LEAVES = frozenset({"common", "caching"})
TOP = ("engine", "cli")
"""Above the stages: the engine, then the command line (the parser, its help texts, the commands that are
not a stage's own)."""
ALLOWED_UPWARD = {("deliver", "engine"), ("live", "engine"), ("admission", "engine"), ("adopt", "engine")}
"""plan and publish run the engine themselves (publish between its checks of the working tree and its
commit), so delivery may call the engine, as may the stages that compare a cluster with what the
repository renders (live: status, admission: admit, adopt: import's round trip); nothing else reaches above
its stage."""


def _modules(package: Path) -> dict[str, Path]:
    """Module name ('check.validate', 'engine', 'cachekey') -> file."""
    out = {}
    for path in sorted(package.rglob("*.py")):
        parts = path.relative_to(package).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        if parts:
            out[".".join(parts)] = path
    return out


def _imports(path: Path, name: str, known: set[str]) -> set[str]:
    """The package modules `path` imports, at any depth of the file (imports inside functions too)."""
    found: set[str] = set()
    here = name.split(".")
    package = here[:-1] if path.name != "__init__.py" else here
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                module = ".".join(["gputenancy", *base, *([node.module] if node.module else [])])
            else:
                module = node.module or ""
            targets = [module] + [f"{module}.{a.name}" for a in node.names]
        for target in targets:
            if target == "gputenancy" or not target.startswith("gputenancy."):
                continue
            rel = target.removeprefix("gputenancy.")
            while rel and rel not in known:
                rel = rel.rpartition(".")[0]
            if rel and rel != name:
                found.add(rel)
    return found


def _graph(package: Path) -> dict[str, set[str]]:
    modules = _modules(package)
    return {name: _imports(path, name, set(modules)) for name, path in modules.items()}


def _layer(module: str) -> tuple[int, str]:
    """(rank, layer name): leaves 0, stages 1.., engine and cli above them; unknown modules rank -1."""
    head = module.split(".")[0]
    if head in LEAVES:
        return 0, "leaf"
    if head in STAGES:
        return 1 + STAGES.index(head), head
    if head in TOP:
        return 1 + len(STAGES) + TOP.index(head), head
    return -1, head


def violations(graph: dict[str, set[str]]) -> list[str]:
    out = []
    for module, imported in sorted(graph.items()):
        rank, layer = _layer(module)
        if rank < 0:
            out.append(f"{module}: in no layer (a stage folder, a leaf, or engine/cli)")
            continue
        for target in sorted(imported):
            target_rank, target_layer = _layer(target)
            if (layer, target_layer) in ALLOWED_UPWARD:
                continue
            if rank == 0 and target_rank != 0:
                out.append(f"{module} (a leaf) imports {target} ({target_layer})")
            elif target_rank > rank:
                out.append(f"{module} ({layer}) imports {target} ({target_layer}), a later layer")
    return out


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every import cycle found by a depth-first walk (each reported once, from its first module)."""
    found: list[list[str]] = []
    state: dict[str, int] = {}  # 1 on the stack, 2 done
    stack: list[str] = []

    def visit(module: str) -> None:
        state[module] = 1
        stack.append(module)
        for target in sorted(graph.get(module, ())):
            if state.get(target) == 1:
                found.append([*stack[stack.index(target) :], target])
            elif target not in state:
                visit(target)
        stack.pop()
        state[module] = 2

    for module in sorted(graph):
        if module not in state:
            visit(module)
    return found


def test_no_import_cycles() -> None:
    assert cycles(_graph(PACKAGE)) == []


def test_no_import_from_a_later_stage_into_an_earlier_one() -> None:
    assert violations(_graph(PACKAGE)) == []


def test_every_stage_folder_and_leaf_exists() -> None:
    modules = _modules(PACKAGE)
    present = {m.split(".")[0] for m in modules}
    assert present <= {*STAGES, *LEAVES, *TOP}
    assert {*STAGES, *LEAVES, *TOP} - present <= {"live", "admission", "adopt"}


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        ({"inputs/a.py": "from gputenancy.render import b\n", "render/b.py": ""}, "later layer"),
        ({"inputs/a.py": "def f():\n    from gputenancy.check import c\n", "check/c.py": ""}, "later layer"),
        ({"common/findings.py": "from gputenancy.inputs import a\n", "inputs/a.py": ""}, "a leaf"),
        ({"render/x.py": "from ..assemble import y\n", "assemble/y.py": ""}, "later layer"),
        ({"engine.py": "from gputenancy import cli\n", "cli/__init__.py": ""}, "later layer"),
        ({"misc.py": ""}, "in no layer"),
    ],
)
def test_the_walk_sees_a_violation(tmp_path: Path, files: dict[str, str], expected: str) -> None:
    package = tmp_path / "gputenancy"
    for rel, text in files.items():
        (package / rel).parent.mkdir(parents=True, exist_ok=True)
        (package / rel).write_text(text)
    found = violations(_graph(package))
    assert len(found) == 1 and expected in found[0], found


def test_the_walk_sees_a_cycle(tmp_path: Path) -> None:
    package = tmp_path / "gputenancy"
    (package / "check").mkdir(parents=True)
    (package / "check" / "a.py").write_text("from gputenancy.check import b\n")
    (package / "check" / "b.py").write_text("import gputenancy.check.c\n")
    (package / "check" / "c.py").write_text("from gputenancy.check.a import thing\n")
    assert cycles(_graph(package)) == [["check.a", "check.b", "check.c", "check.a"]]
    assert violations(_graph(package)) == []  # within one stage, order is free; cycles are not
