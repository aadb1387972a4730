"""Command line: parse arguments, call one command function, return the exit code.

Exit codes: 0 fine, 1 errors (findings, or check found generated/ out of date), 2 changes (plan).
A usage error (an unknown option or command, a missing or invalid argument) exits 1, like any other
error, never 2: `plan` exits 2 for changes, and a CI job that accepts 2 must not pass a mistyped flag.
`pipeline.py` or `pipeline.py schemas` alone prints its help and exits 1 too (nothing was done).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from gputenancy import engine
from gputenancy.assemble import output
from gputenancy.caching import cache
from gputenancy.cli import helptext as clihelp
from gputenancy.cli import progress
from gputenancy.cli.parsers import USAGE_ERROR, _parser, _UsageError
from gputenancy.common import report
from gputenancy.common.findings import Finding, PipelineError, Severity
from gputenancy.inputs import spec


def _plan_commands(args: argparse.Namespace, root: Path, schemas: Path | None) -> int:
    """`plan` and `publish`, each importing only its own modules: GitPython is loaded for publish (and
    for plan --against a git ref), not for every plan."""
    import os

    if args.command == "plan":
        from gputenancy.deliver import planview

        color = sys.stdout.isatty() and "NO_COLOR" not in os.environ
        live = None
        if args.live is not None or args.context is not None:
            from gputenancy.live import status

            live = status.read(args.live, args.context)
        return planview.command(
            root,
            cluster=args.cluster,
            against=args.against,
            schemas=schemas,
            fmt=args.format,
            output_file=args.output,
            allow_delete=args.allow_delete,
            color=color,
            findings_format=report.default_format(),
            emit=sys.stdout.write,
            emit_notes=sys.stderr.write,
            live=live,
        )
    from gputenancy.deliver import publish

    return publish.command(
        root,
        cluster=args.cluster,
        schemas=schemas,
        repo=args.repo,
        branch=args.branch,
        path=args.path,
        dry_run=args.dry_run,
        allow_delete=args.allow_delete,
        message_title=args.message_title,
        emit=sys.stdout.write,
        emit_notes=sys.stderr.write,
        force=args.force,
    )


def _schemas(arg: Path | None, root: Path) -> Path | None:
    """--schemas, else $GPUTENANCY_SCHEMAS, else .gputenancy-schemas/ of the repository when it exists."""
    import os

    from gputenancy.versions import releases

    if arg is not None:
        return arg
    env = os.environ.get("GPUTENANCY_SCHEMAS")
    if env:
        return Path(env)
    default = root / releases.DEFAULT_DIR
    return default if default.is_dir() else None


def _print_findings(result_findings: Sequence[Finding], fmt: str | None, notes: Sequence[str] = ()) -> None:
    """Findings (and the JSON document) on stdout; notes on stderr, except inside the JSON document."""
    import os

    fmt = fmt or report.default_format()
    if fmt == "json":
        sys.stdout.write(report.format_findings(list(result_findings), fmt, notes))
        return
    color = fmt == "text" and sys.stdout.isatty() and "NO_COLOR" not in os.environ
    sys.stdout.write(report.format_findings(list(result_findings), fmt, color=color))
    sys.stderr.write("".join(f"note: {n}\n" for n in notes))


def cmd_validate(root: Path, cluster: str | None, schemas: Path | None, fmt: str | None) -> int:
    result = engine.run(root, cluster=cluster, schemas=schemas)
    shown = (fmt or report.default_format()) != "json" and _print_for_the_author(root, result, fmt)
    if not shown:
        _print_findings(result.findings, fmt, result.notes)
    if not result.failed and (fmt or report.default_format()) != "json":
        print(
            f"ok: {len(result.model.tenants)} tenants, {len(result.clusters)} clusters, {sum(len(c.objects) for c in result.clusters.values())} objects"
        )
    return 1 if result.failed else 0


def _print_for_the_author(root: Path, result: engine.Result, fmt: str | None) -> bool:
    """On a pull request under GitHub Actions (the base of the change known), findings as `plan` shows
    them: the change's files first, one headline per full pool. False when there is no such base."""
    import os

    from gputenancy.deliver import authorview

    fmt = fmt or report.default_format()
    if not result.findings:
        return False
    touched = authorview.touched_files(root, authorview.change_base(None, os.environ))
    if touched is None:
        return False
    sys.stdout.write(authorview.formatted(result.findings, touched, fmt))
    sys.stderr.write("".join(f"note: {n}\n" for n in result.notes))
    return True


def cmd_render(root: Path, cluster: str | None, schemas: Path | None, fmt: str | None, *, check: bool) -> int:
    result = engine.run(root, cluster=cluster, schemas=schemas)
    json_out = (fmt or report.default_format()) == "json"
    if result.failed or not json_out:
        _print_findings(result.findings, fmt, result.notes)
    if result.failed:
        return 1
    told: list[str] = []
    say: Callable[[str], object] = told.append if json_out else print
    warnings: list[Finding] = []
    code = _write_or_check(root, cluster, result, say, warnings, check=check)
    if json_out:  # what render and check say, as notes of the one JSON document
        _print_findings([*result.findings, *warnings], fmt, [*result.notes, *"\n".join(told).splitlines()])
    elif warnings:
        _print_findings(warnings, fmt)
    return code


def _write_or_check(
    root: Path,
    cluster: str | None,
    result: engine.Result,
    say: Callable[[str], object],
    warnings: list[Finding],
    *,
    check: bool,
) -> int:
    """Check or write generated/; warnings of a write whose new tree is in place go to `warnings`."""
    trees = {name: c.tree for name, c in result.clusters.items()}
    parent = root / output.GENERATED
    if check:
        from gputenancy.assemble import swap

        refused = swap.guard(root, parent)
        if refused:
            raise PipelineError(refused)
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
            f"{d}: leftover of an interrupted run (generated-leftover)" for d in swap.leftovers(parent)
        ]
        differences += [
            f"{name}: {d}"
            for name, tree in trees.items()
            for d in output.diff_paths(tree, output.read_tree(parent / name))
        ]
        differences += [f"{name}: - (whole cluster directory)" for name in stale_dirs]
        stale = _stale_files(
            root, _derived_files(result.model, root, _every_tree(root, trees) if cluster else trees)
        )
        if differences:
            say("generated/ is out of date; run `python pipeline.py render`:")
            say("\n".join(f"  {d}" for d in differences))
        if stale:
            say("files rendered from the inputs are out of date; run `python pipeline.py render`:")
            say("\n".join(f"  {d}" for d in stale))
        if differences or stale:
            return 1
        say(f"generated/ is up to date ({sum(len(t) for t in trees.values())} files)")
        return 0
    from gputenancy.assemble import swap

    cleaned = swap.prepare(root, parent)
    if cleaned:
        say(f"removed leftovers of an interrupted run: {', '.join(cleaned)}")
    derived = _derived_files(result.model, root, _every_tree(root, trees) if cluster else trees)
    _stale_files(root, derived)  # refuses linked paths before anything is written
    try:
        changed = swap.write_trees(root, parent, trees, prune=cluster is None)
    except swap.Unremoved as exc:  # the new tree is in place; the old one waits for removal by hand
        changed = exc.changed
        warnings.extend(exc.warnings())
    changed += _write_files(root, derived)
    say(f"rendered {sum(len(t) for t in trees.values())} files; changed: {', '.join(changed) or 'nothing'}")
    return 0


def _derived_files(
    model: spec.Model, root: Path, trees: Mapping[str, Mapping[str, bytes]]
) -> dict[str, bytes | None]:
    """Files outside generated/ rendered from the inputs: CODEOWNERS and the hub's app-of-apps (with
    the AppProject of what every cluster's tree delivers). None means the file should not exist
    (removed only when the pipeline wrote it)."""
    from gputenancy.deliver import appset, ownership

    return {ownership.PATH: ownership.codeowners(model).encode(), **appset.files(model, trees, root)}


def _every_tree(root: Path, trees: Mapping[str, Mapping[str, bytes]]) -> dict[str, Mapping[str, bytes]]:
    """Every cluster's tree: the rendered ones, and for `--cluster` the others as generated/ holds
    them (render leaves them as they are)."""
    parent = root / output.GENERATED
    others = (
        {
            p.name: output.read_tree(p)
            for p in sorted(parent.iterdir())
            if p.is_dir() and not p.name.startswith(".") and p.name not in trees
        }
        if parent.is_dir()
        else {}
    )
    return {**others, **trees}


def _generated_by_us(path: Path) -> bool:
    from gputenancy.deliver import appset

    return path.is_file() and path.read_bytes().startswith(appset.HEADER.encode())


def _stale_files(root: Path, files: dict[str, bytes | None]) -> list[str]:
    from gputenancy.assemble import swap

    refused = [f for f in (swap.confined_file(root, rel) for rel in sorted(files)) if f is not None]
    if refused:
        raise PipelineError(refused)
    out = []
    for rel, want in sorted(files.items()):
        path = root / rel
        if want is None:
            out += [f"- {rel}"] if _generated_by_us(path) else []
        elif not path.is_file():
            out.append(f"+ {rel}")
        elif path.read_bytes() != want:
            out.append(f"~ {rel}")
    return out


def _write_files(root: Path, files: dict[str, bytes | None]) -> list[str]:
    """Write (atomically: temporary file + rename) or remove each stale file; returns what changed."""
    import os
    import tempfile

    changed = []
    for line in _stale_files(root, files):
        rel = line[2:]
        path = root / rel
        want = files[rel]
        if want is None:
            path.unlink()
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
            try:
                with os.fdopen(fd, "wb") as f:
                    f.write(want)
                os.chmod(tmp, 0o644)
                os.replace(tmp, path)
            except BaseException:
                Path(tmp).unlink(missing_ok=True)
                raise
        changed.append(rel)
    return changed


def boundary_docs() -> dict[str, str]:
    """Documentation of the rules that guard the trust boundary outside the model rules: reads
    confined to the repository, kustomizations, amounts, the swap of generated/."""
    from gputenancy.assemble import swap
    from gputenancy.inputs import amounts, confine, kustomizations

    return {**confine.DOCS, **kustomizations.DOCS, **amounts.DOCS, **swap.DOCS}


def version() -> str:
    """The installed package's version (its metadata), or the source tree's when not installed."""
    from importlib import metadata

    try:
        return metadata.version("gputenancy")
    except metadata.PackageNotFoundError:
        import gputenancy

        return gputenancy.__version__


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    try:
        args = parser.parse_args(argv)
        if "--root" not in clihelp.acting(args.command or ""):  # a command that reads no repository
            for flag, given in (("--root", args.root is not None), ("--no-cache", args.no_cache)):
                if given:
                    parser.error(f"{flag} has no effect on `{args.command}`")
    except _UsageError:
        return USAGE_ERROR
    if args.version:
        sys.stdout.write(f"{parser.prog} {version()}\n")
        return 0
    if args.command is None or (args.command == "schemas" and args.schemas_command is None):
        # `pipeline.py` or `pipeline.py schemas` alone: the help that names what to type, not a usage error
        shown = parser if args.command is None else _subparser(parser, "schemas")
        sys.stdout.write(shown.format_help())
        return USAGE_ERROR
    from gputenancy.common import interrupt

    with (
        interrupt.handled() as stopped,
        cache.disabled(args.no_cache),
        engine.without_cycle_collection(),
        progress.ticker(f"pipeline.py {args.command}", sys.stderr),
    ):
        try:
            return _main(args)
        except interrupt.Interrupted as exc:
            return stopped(exc)


def _subparser(parser: argparse.ArgumentParser, name: str) -> argparse.ArgumentParser:
    (action,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    found: argparse.ArgumentParser = action.choices[name]
    return found


def _main(args: argparse.Namespace) -> int:
    try:
        if args.command == "rules":
            from gputenancy.cli import commands  # the rule index: every check's module and examples

            return commands.cmd_rules(args.rule_id)
        if args.command in ("pr-comment", "job-summary"):
            import os

            from gputenancy.deliver import github

            if args.command == "pr-comment":
                return github.cmd_pr_comment(args.body_file, args.repo, args.pr, os.environ)
            return github.cmd_job_summary(args.body_file, os.environ)
        if args.command == "init":
            from gputenancy.adopt import command as adopt

            return adopt.cmd_init(args, sys.stdout.write)
        root = args.root.resolve() if args.root is not None else clihelp.find_root(Path.cwd())
        if args.command == "import":
            from gputenancy.adopt import command as adopt

            schemas = _schemas(args.schemas, root)
            return adopt.cmd_import(root, args, schemas, sys.stdout.write, sys.stderr.write)
        if args.command == "budgets":
            from gputenancy.cli import commands

            return commands.cmd_budgets(root, args.cluster, args.format, args.source)
        if args.command == "admit":
            from gputenancy.admission import command as admit

            return admit.main(root, args.files, args.cluster, args.from_dump, args.format)
        if args.command == "report":
            from gputenancy.deliver import htmlreport

            return htmlreport.command(
                root,
                args.cluster,
                args.output,
                sys.stdout.write,
                sys.stderr.write,
                args.against,
                args.source,
            )
        if args.command == "schemas":
            from gputenancy.deliver import fetch
            from gputenancy.versions import releases

            target = _schemas(args.schemas, root) or root / releases.DEFAULT_DIR
            fmt = args.format or report.default_format()
            return fetch.command(
                root,
                target,
                update=args.update,
                fmt=fmt,
                url=args.url,
                emit=sys.stdout.write,
                hint_schemas=args.schemas,
            )
        schemas = _schemas(args.schemas, root)
        if args.command == "status":
            from gputenancy.live import view

            return view.command(
                root,
                source=args.source,
                context=args.context,
                cluster=args.cluster,
                schemas=schemas,
                fmt=args.format,
                findings_format=report.default_format(),
                emit=sys.stdout.write,
                emit_notes=sys.stderr.write,
            )
        if args.command in ("plan", "publish"):
            return _plan_commands(args, root, schemas)
        if args.command == "validate":
            return cmd_validate(root, args.cluster, schemas, args.format)
        return cmd_render(root, args.cluster, schemas, args.format, check=args.command == "check")
    except PipelineError as exc:
        _print_findings(exc.findings, getattr(args, "format", None))
        return 1 if any(f.severity is Severity.ERROR for f in exc.findings) else 0
    except OSError as exc:
        print(
            f"error: {exc.strerror or exc}: {exc.filename or ''} (nothing was changed)".rstrip(),
            file=sys.stderr,
        )
        return 1


def main_entry() -> None:
    """The `gputenancy` console script (pre-commit hooks run it): `gputenancy <command>`."""
    raise SystemExit(main())
