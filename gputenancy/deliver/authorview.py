"""Findings ordered for the author of a change.

When the base of the change is known (`plan --against REF`, or the pull request's base under GitHub
Actions), the findings on the files the change touches come first: the author's own mistake leads,
not a platform file they cannot change. A pool over capacity is one headline finding per pool
("h100 nvidia.com/gpu on prod is fully allocated: 18 of 16 (...)"), placed on a line the author
touched when there is one (without a base: the cluster's own finding at its capacity line), with the
places of the per-tenant findings folded under it, so one
mistake takes a few lines, not one per tenant and pool. Every finding is still accounted for: the
folded ones are listed by place under their headline.
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Collection, Sequence
from pathlib import Path
from typing import Any

from gputenancy.common import report, safetext
from gputenancy.common.findings import Finding, Severity, is_root_cause

_TENANT = re.compile(
    r"^(?P<tenant>[^' ]+)'s nominal .+? (?P<resource>\S+) on flavor '(?P<flavor>[^']+)' counts toward "
    r"cluster '(?P<cluster>[^']+)', where the tenants' total (?P<total>.+?) exceeds capacity (?P<cap>.+?) \("
)
_CLUSTER = re.compile(
    r"^cluster '(?P<cluster>[^']+)' flavor '(?P<flavor>[^']+)': tenants' nominal (?P<resource>\S+) "
    r"(?P<total>.+?) exceeds capacity (?P<cap>.+?) \((?P<who>.*)\); lower a budget"
)


@dataclasses.dataclass(frozen=True)
class Entry:
    """A finding to print, and the places of the findings folded under it (same pool over capacity)."""

    finding: Finding
    folded: tuple[Finding, ...] = ()


def _pool(f: Finding) -> tuple[str, str, str] | None:
    if f.rule != "capacity" or f.severity is not Severity.ERROR:
        return None
    m = _TENANT.match(f.message) or _CLUSTER.match(f.message)
    return (m["cluster"], m["flavor"], m["resource"]) if m else None


def arrange(findings: Sequence[Finding], touched: Collection[str] | None) -> list[Entry]:
    """Fold each full pool into one headline, then order: findings on touched files first (root
    causes first within each part), then the rest."""
    pools: dict[tuple[str, str, str], list[Finding]] = {}
    rest: list[Entry] = []
    for f in findings:
        key = _pool(f)
        if key is None:
            rest.append(Entry(f))
        else:
            pools.setdefault(key, []).append(f)
    entries = rest + [_headline(key, group, touched or ()) for key, group in pools.items()]
    mine = set(touched or ())

    def order(e: Entry) -> tuple[bool, bool, Finding]:
        return (e.finding.path not in mine, not is_root_cause(e.finding), e.finding)

    return sorted(entries, key=order)


def _headline(key: tuple[str, str, str], group: list[Finding], touched: Collection[str]) -> Entry:
    cluster, flavor, resource = key
    if not touched:  # no base known: the cluster's own finding (at its capacity line) is the headline
        own = next((f for f in group if _CLUSTER.match(f.message)), None)
        if own is not None:
            return Entry(own, tuple(f for f in sorted(group) if f is not own))
    line = next((m for f in group if (m := _CLUSTER.match(f.message))), None)
    first = next((m for f in group if (m := _TENANT.match(f.message))), None)
    if line is None and first is None:
        return Entry(group[0], tuple(group[1:]))
    total = line["total"] if line else first["total"] if first else ""
    cap = line["cap"] if line else first["cap"] if first else ""
    who = f" ({line['who']})" if line else ""
    at = sorted(group, key=lambda f: (f.path not in touched, not f.path.startswith("overlays/"), f))[0]
    message = (
        f"{flavor} {resource} on {cluster} is fully allocated: {total} of {cap}{who}; lower a budget or set "
        "overcommit: true"
    )
    headline = Finding(at.path, at.line, at.col, Severity.ERROR, "capacity", message)
    return Entry(headline, tuple(f for f in sorted(group) if f is not at))


def format_text(entries: Sequence[Entry]) -> str:
    """`file:line:col: error: message (rule)` per entry; the places folded under a headline on one
    indented line after it."""
    lines = []
    for e in entries:
        f = e.finding
        shown = Finding(
            safetext.line(f.path, safetext.MAX_PATH), f.line, f.col, f.severity, f.rule, f.message
        )
        lines.append(safetext.line(shown.format(), safetext.MAX_MESSAGE + safetext.MAX_PATH))
        if e.folded:
            places = ", ".join(_place(f) for f in e.folded)
            lines.append(safetext.line(f"    the same pool, also reported at: {places}", 4000))
    return "\n".join(lines) + ("\n" if lines else "")


def headlines(findings: Sequence[Finding], touched: Collection[str] | None) -> list[Finding]:
    """One finding per entry, the folded places in its message: for annotations (one per full pool,
    on the line the author touched, instead of one on every budget line of the pool)."""
    out = []
    for e in arrange(findings, touched):
        f = e.finding
        also = f" (also reported at: {', '.join(map(_place, e.folded))})" if e.folded else ""
        out.append(dataclasses.replace(f, message=f.message + also))
    return out


def _place(f: Finding) -> str:
    return safetext.line(f.path, safetext.MAX_PATH) + (f":{f.line}:{max(f.col, 1)}" if f.line else "")


def listing(findings: Sequence[Finding], touched: Collection[str] | None, notes: Sequence[str] = ()) -> str:
    """The findings as the author reads them: arranged, then the notes and the summary of them all."""
    entries = arrange(findings, touched)
    text = format_text(entries) + "".join(f"note: {safetext.line(n)}\n" for n in notes)
    folded = sum(len(e.folded) for e in entries)
    pools = sum(1 for e in entries if e.folded)
    more = f" ({folded} capacity findings folded under {pools} full pool(s))" if folded else ""
    return text + (f"{report.summary(findings)}{more}\n" if findings else "")


def formatted(
    findings: Sequence[Finding], touched: Collection[str] | None, fmt: str, notes: Sequence[str] = ()
) -> str:
    """The findings in `fmt` for the author: the listing as text, one headline per full pool in the
    other formats, every finding as it is in JSON (a machine reads it whole)."""
    if fmt == "json":
        return report.format_findings(findings, "json", notes)
    if fmt == "text":
        return listing(findings, touched, notes)
    return report.format_findings(headlines(findings, touched), fmt, notes)


def touched_files(root: Path, base: str | None, within: Sequence[str] = ()) -> set[str] | None:
    """The root-relative paths the change touches since `base` (committed, staged, unstaged and
    untracked), only under the root-relative directories `within` when given (git then looks at
    nothing else); None when there is no base or it cannot be read."""
    if base is None or Path(base).is_dir():
        return None
    from gputenancy.deliver import gitrepo

    repo = gitrepo.open_repo_if_any(root)
    if repo is None:
        return None
    import git

    with repo:
        if gitrepo.resolve(repo, base) is None:
            return None
        prefix = gitrepo.relative(repo, root, ".")
        prefix = "" if prefix in ("", ".") else prefix + "/"
        spec = [f"{prefix}{w}" for w in within]
        try:
            names = repo.git.diff("--name-only", "--no-renames", base, "--", *spec).splitlines()
            names += repo.untracked_files if not spec else _untracked(repo, spec)
        except git.GitCommandError:  # a base that cannot be compared only loses the ordering
            return None
    return {n.removeprefix(prefix) for n in names if n.startswith(prefix)}


def _untracked(repo: Any, spec: Sequence[str]) -> list[str]:
    """Untracked files under `spec` that are not ignored, as `repo.untracked_files` lists them."""
    return [
        n for n in repo.git.ls_files("--others", "--exclude-standard", "-z", "--", *spec).split("\0") if n
    ]


def change_base(against: str | None, environ: os._Environ[str] | dict[str, str]) -> str | None:
    """--against when it is a ref; under GitHub Actions on a pull request, the merge commit's first
    parent (the base branch), as the pull-request workflow checks it out."""
    if against is not None:
        return against
    if environ.get("GITHUB_ACTIONS") == "true" and environ.get("GITHUB_BASE_REF"):
        return "HEAD^1"
    return None
