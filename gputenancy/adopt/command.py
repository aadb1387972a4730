"""The `import` and `init` commands: arguments in, files written (or not), an exit code out."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path

from gputenancy.adopt import importing, init, output, repository
from gputenancy.common import report
from gputenancy.common.findings import PipelineError

Emit = Callable[[str], object]


def add_arguments(init_p: argparse.ArgumentParser, import_p: argparse.ArgumentParser) -> None:
    init_p.add_argument(
        "directory", type=Path, metavar="DIR", help="where to create the repository (empty or absent)"
    )
    init_p.add_argument(
        "--owner",
        action="append",
        default=None,
        help="GitHub @user or @org/team owning the platform (repeatable; default @platform-team)",
    )
    import_p.add_argument(
        "--cluster", required=True, help="the cluster's name in the repository (overlays/<cluster>)"
    )
    source = import_p.add_mutually_exclusive_group(required=True)
    source.add_argument(
        "--from", dest="from_file", type=Path, metavar="FILE", help="a dump (see the kubectl line below)"
    )
    source.add_argument(
        "--context",
        nargs="?",
        const="",
        metavar="NAME",
        help="run the read-only kubectl get itself, in this kubeconfig context (without NAME: the current one)",
    )
    import_p.add_argument(
        "--allow-partial",
        action="store_true",
        help="write what can be expressed and exit 0 even when objects differ (the differences are listed)",
    )
    import_p.add_argument(
        "--owner", action="append", default=None, help="owners of new tenant files (repeatable)"
    )
    import_p.add_argument(
        "--group",
        action="append",
        default=[],
        metavar="TEAM=QUEUE,QUEUE",
        help="make these ClusterQueues one tenant TEAM (repeatable): a new queue TEAM replaces them, so the "
        "round trip is not exact and only --allow-partial writes it",
    )
    import_p.add_argument(
        "--kueue-version", help="the cluster's Kueue (default: from the manager's image in the dump)"
    )
    import_p.add_argument("--kubernetes-version", help=f"default {repository.DEFAULT_KUBERNETES}")
    import_p.add_argument(
        "--schemas",
        type=Path,
        default=None,
        help="Kueue CRDs directory (env GPUTENANCY_SCHEMAS): their defaults fill hand-written objects",
    )
    import_p.add_argument("--dry-run", action="store_true", help="write nothing; print the round trip")


def cmd_init(args: argparse.Namespace, emit: Emit) -> int:
    try:
        written = init.init(args.directory, tuple(args.owner or ("@platform-team",)))
    except PipelineError as exc:
        emit(report.format_findings(exc.findings, "text"))
        return 1
    emit(f"created {args.directory}: {', '.join(written)}\n")
    emit(
        "next: git init, then import a cluster: python pipeline.py --root "
        f"{args.directory} import --cluster NAME --from FILE\n"
    )
    return 0


def cmd_import(root: Path, args: argparse.Namespace, schemas: Path | None, emit: Emit, notes: Emit) -> int:
    """Read the dump (or the cluster), plan the files, print the round trip, write all or nothing."""
    from gputenancy.cluster import dump as dumps
    from gputenancy.cluster import kubectl

    try:
        if args.from_file is not None:
            dump = dumps.read_dump(args.from_file, shown=str(args.from_file))
        else:
            dump = kubectl.read_live(args.context or None)
        options = importing.Options(
            args.cluster,
            tuple(args.owner or ()),
            args.kueue_version,
            args.kubernetes_version,
            args.allow_partial,
            schemas,
            tuple(args.group),
        )
        outcome = importing.plan(root, dump, options)
    except PipelineError as exc:
        emit(report.format_findings(exc.findings, "text"))
        emit("nothing was written\n")
        return 1
    errors = [f for f in outcome.findings if f.severity.value == "error"]
    if errors or not outcome.results:
        emit(report.format_findings(list(outcome.findings), "text"))
        emit("the imported files do not render: nothing was written\n")
        return 1
    emit(f"import {args.cluster} from {dump.path}: the round trip, object by object\n")
    output.report(outcome.results, emit)
    for note in (*outcome.notes, *outcome.told):
        notes(f"note: {note}\n")
    warnings = [f for f in outcome.findings if f.severity.value != "error"]
    if warnings:
        notes(report.format_findings(warnings, "text"))
    if not outcome.exact and not args.allow_partial:
        emit(
            "the round trip is not exact: nothing was written (--allow-partial writes what can be expressed)\n"
        )
        return 1
    if args.dry_run:
        emit(f"dry run: would write {', '.join(sorted(outcome.files))}\n")
        return 0
    changed = output.write(root, outcome.files)
    emit(f"wrote {len(changed)} files: {', '.join(changed)}\n")
    if outcome.exact:
        emit("next: python pipeline.py render, review the diff, commit; Argo CD then syncs with no change\n")
    else:
        emit(
            "next: python pipeline.py render, review the diff, commit; the differences above are what Argo CD will change\n"
        )
    return 0
