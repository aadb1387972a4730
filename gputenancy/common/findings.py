"""Findings: what the pipeline reports about its inputs and outputs (a leaf module)."""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Iterable


class Severity(enum.StrEnum):
    ERROR = "error"
    WARNING = "warning"
    NOTE = "note"


@dataclasses.dataclass(frozen=True, order=True)
class Finding:
    """One problem at one place. Lines and columns are 1-based; 0 means unknown."""

    path: str
    line: int
    col: int
    severity: Severity
    rule: str
    message: str

    def format(self) -> str:
        where = self.path
        if self.line:
            where += f":{self.line}:{max(self.col, 1)}"
        return f"{where}: {self.severity.value}: {self.message} ({self.rule})"


@dataclasses.dataclass(frozen=True)
class Origin:
    """A place in an input file: repo-relative POSIX path, 1-based line and column (0 = unknown)."""

    path: str
    line: int = 0
    col: int = 0

    def finding(self, rule: str, message: str, severity: Severity = Severity.ERROR) -> Finding:
        return Finding(self.path, self.line, self.col, severity, rule, message)

    def __repr__(self) -> str:
        # The text dataclasses would write, without its recursion guard: a tenant record holds dozens
        # of Origins, and its repr is part of a cache key made for every tenant on every run.
        return f"Origin(path={self.path!r}, line={self.line!r}, col={self.col!r})"


# Findings about a cause other findings follow from (a mistyped name, unreadable YAML, an invalid file):
# they are printed first, so the first line of the output is the one to fix.
ROOT_CAUSE_RULES = frozenset(
    {
        "tenant-name-file",
        "tenant-duplicate",
        "cluster-unknown",
        "flavor-unknown",
        "device-class-unknown",
        "cohort-unknown",
        "namespace-owner",
        "kueue-feature-gate-unknown",
    }
)


def is_root_cause(finding: Finding) -> bool:
    rule = finding.rule
    return rule in ROOT_CAUSE_RULES or rule.startswith("source-") or rule.endswith("-schema")


def ordered(findings: Iterable[Finding]) -> list[Finding]:
    """Root causes first, then by place (path, line, column)."""
    return sorted(findings, key=lambda f: (not is_root_cause(f), f))


class PipelineError(Exception):
    """The one expected error: carries findings; the CLI prints them and exits 1."""

    def __init__(self, findings: Iterable[Finding]) -> None:
        self.findings = sorted(findings)
        super().__init__(f"{len(self.findings)} finding(s)")
