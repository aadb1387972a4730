"""Command line: parse arguments, call one command function, return the exit code.

Exit codes: 0 fine, 1 errors (findings, or check found generated/ out of date), 2 changes (plan).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from gputenancy import engine, output, report, rules
from gputenancy.findings import PipelineError, Severity


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="pipeline.py",
        description="GPU tenancy on Kubernetes: tenants/ + base/ + overlays/ -> generated/<cluster>/ for Argo CD.",
    )
    p.add_argument("--root", type=Path, default=Path("."), help="repository root (default: .)")
    sub = p.add_subparsers(dest="command", required=True)

    def common(sp: argparse.ArgumentParser) -> None:
        sp.add_argument("--cluster", help="only this cluster (overlays/<cluster>)")
        sp.add_argument(
            "--schemas",
            type=Path,
            default=None,
            help="directory with Kueue CRDs as kueue/<version>/crds/ (env GPUTENANCY_SCHEMAS)",
        )
        sp.add_argument(
            "--format",
            choices=report.FORMATS,
            default=None,
            help="findings format (default: github under GitHub Actions, else text)",
        )

    common(sub.add_parser("validate", help="check inputs and rendered objects; write nothing"))
    common(sub.add_parser("render", help="write generated/<cluster>/"))
    common(sub.add_parser("check", help="exit 1 when generated/ differs from what render would write"))
    sub.add_parser("rules", help="print the documentation of every rule")
    return p


def _schemas(arg: Path | None) -> Path | None:
    import os

    if arg is not None:
        return arg
    env = os.environ.get("GPUTENANCY_SCHEMAS")
    return Path(env) if env else None


def _print_findings(result_findings: Sequence[object], fmt: str | None, notes: Sequence[str] = ()) -> None:
    sys.stdout.write(report.format_findings(list(result_findings), fmt or report.default_format(), notes))  # type: ignore[arg-type]


def cmd_validate(root: Path, cluster: str | None, schemas: Path | None, fmt: str | None) -> int:
    result = engine.run(root, cluster=cluster, schemas=schemas)
    _print_findings(result.findings, fmt, result.notes)
    if not result.failed and (fmt or report.default_format()) != "json":
        print(
            f"ok: {len(result.model.tenants)} tenants, {len(result.clusters)} clusters, {sum(len(c.objects) for c in result.clusters.values())} objects"
        )
    return 1 if result.failed else 0


def cmd_render(root: Path, cluster: str | None, schemas: Path | None, fmt: str | None, *, check: bool) -> int:
    result = engine.run(root, cluster=cluster, schemas=schemas)
    if result.failed:
        _print_findings(result.findings, fmt, result.notes)
        return 1
    _print_findings(result.findings, fmt, result.notes)
    trees = {name: c.tree for name, c in result.clusters.items()}
    parent = root / output.GENERATED
    if check:
        stale_dirs = (
            []
            if cluster
            else sorted(
                p.name
                for p in parent.iterdir()
                if p.is_dir() and not p.name.startswith(".") and p.name not in trees
            )
            if parent.is_dir()
            else []
        )
        differences = [
            f"{name}: {d}"
            for name, tree in trees.items()
            for d in output.diff_paths(tree, output.read_tree(parent / name))
        ]
        differences += [f"{name}: - (whole cluster directory)" for name in stale_dirs]
        if differences:
            print("generated/ is out of date; run `python pipeline.py render`:")
            print("\n".join(f"  {d}" for d in differences))
            return 1
        print(f"generated/ is up to date ({sum(len(t) for t in trees.values())} files)")
        return 0
    changed = output.write_trees(parent, trees, prune=cluster is None)
    print(f"rendered {sum(len(t) for t in trees.values())} files; changed: {', '.join(changed) or 'nothing'}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        if args.command == "rules":
            sys.stdout.write(rules.documentation())
            return 0
        root = args.root.resolve()
        schemas = _schemas(args.schemas)
        if args.command == "validate":
            return cmd_validate(root, args.cluster, schemas, args.format)
        return cmd_render(root, args.cluster, schemas, args.format, check=args.command == "check")
    except PipelineError as exc:
        _print_findings(exc.findings, getattr(args, "format", None))
        return 1 if any(f.severity is Severity.ERROR for f in exc.findings) else 0
    except OSError as exc:
        print(f"error: {exc.strerror or exc}: {exc.filename or ''} (nothing was changed)".rstrip(), file=sys.stderr)
        return 1
