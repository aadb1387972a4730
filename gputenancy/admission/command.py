"""`pipeline.py admit FILE... [--cluster NAME] [--from DUMP] [--format text|markdown|json]`.

Exit codes: 0 every workload is admitted (now, with --from), 2 one waits for quota, 1 one can never run
(Inadmissible, or no flavor can ever hold it) or the input is wrong (findings file:line:col)."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

from gputenancy import engine
from gputenancy.admission import judge, manifests, report, target
from gputenancy.cluster.dump import read_dump
from gputenancy.common import report as findings_report
from gputenancy.common.findings import Finding, Origin, PipelineError, Severity


def run(
    root: Path, files: Sequence[Path], cluster: str | None, dump_path: Path | None
) -> tuple[list[judge.Verdict], list[Finding], str]:
    """Read, load and judge; PipelineError for input that cannot be judged."""
    workloads = manifests.read(list(files))
    model, model_findings = engine.check_only(root, cluster, cache=None)
    errors = [f for f in model_findings if f.severity is Severity.ERROR]
    if errors:
        raise PipelineError(errors)
    if cluster is None:
        if len(model.clusters) != 1:
            names = ", ".join(sorted(model.clusters))
            raise PipelineError(
                [
                    Origin("overlays").finding(
                        target.RULE, f"name the cluster to judge against with --cluster ({names})"
                    )
                ]
            )
        cluster = next(iter(model.clusters))
    if cluster not in model.clusters:
        names = ", ".join(sorted(model.clusters))
        raise PipelineError(
            [Origin("overlays").finding(target.RULE, f"no cluster {cluster!r} (clusters: {names})")]
        )
    dump = read_dump(dump_path) if dump_path is not None else None
    where = target.load(root, model, cluster, dump)
    verdicts, findings = judge.judge(where, workloads)
    return verdicts, findings, where.source


def main(root: Path, files: Sequence[Path], cluster: str | None, dump_path: Path | None, fmt: str) -> int:
    try:
        verdicts, findings, source = run(root, files, cluster, dump_path)
    except PipelineError as exc:
        sys.stdout.write(findings_report.format_findings(exc.findings, findings_report.default_format()))
        return 1
    sys.stdout.write(report.render(verdicts, fmt, source))
    if findings:
        sys.stderr.write(findings_report.format_findings(findings, findings_report.default_format()))
    return judge.exit_code(verdicts, findings)
