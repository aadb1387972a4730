"""The `rules` and `budgets` commands (the others are in cli.py and deliver/)."""

from __future__ import annotations

import sys
from pathlib import Path

from gputenancy import engine
from gputenancy.cli import ruleindex
from gputenancy.common import report
from gputenancy.common.findings import PipelineError, Severity
from gputenancy.common.hints import did_you_mean


def cmd_rules(rule_id: str | None) -> int:
    """Without an id: every rule id by stage. With one: what it checks, a failing and a passing example."""
    if rule_id is None:
        sys.stdout.write(ruleindex.listing(ruleindex.all_rules()))
        return 0
    doc = ruleindex.find(rule_id)
    if doc is None:
        hint = did_you_mean(rule_id, ruleindex.ids())
        sys.stderr.write(f"error: no rule {rule_id!r}{hint} (python pipeline.py rules lists them)\n")
        return 1
    sys.stdout.write(ruleindex.explain(doc))
    return 0


def cmd_budgets(root: Path, cluster: str | None, fmt: str, source: Path | None = None) -> int:
    """Budgets per cluster, flavor and resource from the inputs; findings about them on stderr. With
    `source` (`--from FILE`, a cluster dump), what each tenant uses, reserves and borrows there too."""
    from gputenancy.deliver import budgets, fleetview

    try:
        model, findings = engine.check_only(root, cluster)
    except PipelineError as exc:
        sys.stdout.write(report.format_findings(exc.findings, "text"))
        return 1
    clusters = [cluster] if cluster is not None else None
    used = None
    if source is not None:
        from gputenancy.live import status

        try:
            used, name = status.usage_of(source, model, cluster, root)
        except PipelineError as exc:
            sys.stdout.write(report.format_findings(exc.findings, "text"))
            return 1
        clusters = [name]
    text = budgets.render(budgets.pools(model, clusters), fmt, used)
    sys.stdout.write(fleetview.extend(text, model, clusters, fmt))
    if findings:
        sys.stderr.write(report.format_findings(findings, "text"))
    return 1 if any(f.severity is Severity.ERROR for f in findings) else 0
