"""Extract Kueue feature-gate tables into gputenancy/versions/data/kueue_feature_gates.json.

Reads every ``<kueue-dir>/<tag>/FEATURE_GATES.md`` (tags such as ``v0.19.2``), parses the "All gates"
table and writes one entry per minor version::

    {"v0.18": {"GateName": {"stage": "Beta", "default": true, "locked": false}, ...}, "v0.19": {...}}

Gates are the same across patch releases of one minor; two tags of the same minor with different tables
are an error. The file is written with sorted keys and a trailing newline.

Usage: python tools/extract_feature_gates.py [KUEUE_DIR] [--output PATH] [--check]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
DEFAULT_KUEUE_DIR = REPO.parent / "shared" / "kueue"
DEFAULT_OUTPUT = REPO / "gputenancy" / "versions" / "data" / "kueue_feature_gates.json"

STAGES = ("Alpha", "Beta", "GA", "Deprecated")
_TAG = re.compile(r"^v(\d+)\.(\d+)\.(\d+)$")
_TOTAL = re.compile(r"Total gates defined: (\d+) \(stages of the effective spec: ([^)]*)\)")
_BOOL = {"true": True, "false": False}
_YES_NO = {"yes": True, "no": False}

GateTable = dict[str, dict[str, Any]]


class ExtractError(Exception):
    """The FEATURE_GATES.md text does not have the expected shape."""


def _section(text: str, heading: str) -> list[str]:
    """Lines of the level-2 section whose heading starts with `heading` (without the heading line)."""
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("## ") and line[3:].strip().startswith(heading):
            body: list[str] = []
            for rest in lines[i + 1 :]:
                if rest.startswith("## "):
                    break
                body.append(rest)
            return body
    raise ExtractError(f"section {heading!r} not found")


def _table_rows(lines: list[str]) -> list[list[str]]:
    """Cells of the first markdown table in `lines`, without the header and separator rows."""
    rows: list[list[str]] = []
    started = False
    for line in lines:
        if line.startswith("|"):
            started = True
            rows.append([cell.strip() for cell in line.strip().strip("|").split("|")])
        elif started:
            break
    if len(rows) < 2:
        raise ExtractError("table not found")
    header, separator, *body = rows
    if [c.lower() for c in header[:4]] != ["feature gate", "stage", "default", "locked to default"]:
        raise ExtractError(f"unexpected table header {header!r}")
    if not all(set(cell) <= {"-", ":"} for cell in separator):
        raise ExtractError(f"unexpected separator row {separator!r}")
    return body


def _parse_rows(rows: list[list[str]]) -> GateTable:
    gates: GateTable = {}
    for cells in rows:
        if len(cells) < 4:
            raise ExtractError(f"short table row {cells!r}")
        name = cells[0].strip("*").strip()
        stage, default, locked = cells[1], cells[2].lower(), cells[3].lower()
        if not re.fullmatch(r"[A-Z][A-Za-z0-9]*", name):
            raise ExtractError(f"unexpected gate name {cells[0]!r}")
        if stage not in STAGES:
            raise ExtractError(f"{name}: unknown stage {stage!r}")
        if default not in _BOOL or locked not in _YES_NO:
            raise ExtractError(f"{name}: unexpected default/locked cells {cells[2]!r}/{cells[3]!r}")
        if name in gates:
            raise ExtractError(f"{name}: listed twice")
        gates[name] = {"stage": stage, "default": _BOOL[default], "locked": _YES_NO[locked]}
    return gates


def parse_feature_gates_md(text: str) -> GateTable:
    """Parse one FEATURE_GATES.md: the "All gates" table, checked against the total line and the DRA table."""
    gates = _parse_rows(_table_rows(_section(text, "All gates")))

    total = _TOTAL.search(text)
    if total is None:
        raise ExtractError("'Total gates defined' line not found")
    if int(total.group(1)) != len(gates):
        raise ExtractError(f"total says {total.group(1)} gates, the table has {len(gates)}")
    for part in total.group(2).split(","):
        stage, _, count = part.strip().rpartition(" ")
        found = sum(1 for g in gates.values() if g["stage"] == stage)
        if found != int(count):
            raise ExtractError(f"total says {count} {stage} gates, the table has {found}")

    for name, gate in _parse_rows(_table_rows(_section(text, "DRA-related gates"))).items():
        if gates.get(name) != gate:
            raise ExtractError(f"{name}: DRA table {gate} disagrees with the full table {gates.get(name)}")
    return gates


def minor_of_tag(tag: str) -> str:
    match = _TAG.match(tag)
    if match is None:
        raise ExtractError(f"not a release tag: {tag!r}")
    return f"v{match.group(1)}.{match.group(2)}"


def extract(kueue_dir: Path) -> dict[str, GateTable]:
    """Gate tables per minor version from every <tag>/FEATURE_GATES.md under `kueue_dir`."""
    result: dict[str, GateTable] = {}
    sources: dict[str, str] = {}
    paths = sorted(p for p in kueue_dir.glob("*/FEATURE_GATES.md") if _TAG.match(p.parent.name))
    if not paths:
        raise ExtractError(f"no <tag>/FEATURE_GATES.md under {kueue_dir}")
    for path in paths:
        tag = path.parent.name
        minor = minor_of_tag(tag)
        try:
            table = parse_feature_gates_md(path.read_text(encoding="utf-8"))
        except ExtractError as exc:
            raise ExtractError(f"{path}: {exc}") from exc
        if minor in result and result[minor] != table:
            raise ExtractError(f"{tag} and {sources[minor]} are both {minor} but list different gates")
        result[minor] = table
        sources[minor] = tag
    return result


def render(tables: dict[str, GateTable]) -> str:
    return json.dumps(tables, indent=2, sort_keys=True) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("kueue_dir", nargs="?", type=Path, default=DEFAULT_KUEUE_DIR)
    parser.add_argument("--output", type=Path, default=DEFAULT_OUTPUT)
    parser.add_argument("--check", action="store_true", help="exit 1 if the output file is out of date")
    args = parser.parse_args(argv)
    try:
        text = render(extract(args.kueue_dir))
    except (ExtractError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.check:
        current = args.output.read_text(encoding="utf-8") if args.output.exists() else ""
        if current != text:
            print(f"{args.output} is out of date; run {Path(__file__).name}", file=sys.stderr)
            return 1
        return 0
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
