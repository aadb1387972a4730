"""The command line's parser: every command, its options and their help; a usage error exits 1 (never
argparse's 2, the code `plan` uses for changes)."""

from __future__ import annotations

import argparse
import sys
import textwrap
from pathlib import Path
from typing import Any, NoReturn

from gputenancy.assemble import output
from gputenancy.cli import helptext as clihelp
from gputenancy.common import report


def _globals(
    p: argparse.ArgumentParser, *, suppress: bool, acting: tuple[str, ...] = ("--root", "--no-cache")
) -> None:
    """--root and --no-cache, accepted before and after the command (after it, SUPPRESS keeps a value
    given before the command when it is not repeated); after a command, only those it acts on."""
    root_default: Any = argparse.SUPPRESS if suppress else None
    if "--root" in acting:
        p.add_argument(
            "--root",
            type=Path,
            default=root_default,
            help="repository root (default: the nearest directory at or above the current one with "
            "base/platform.yaml)",
        )
    if "--no-cache" not in acting:
        return
    p.add_argument(
        "--no-cache",
        action="store_true",
        default=argparse.SUPPRESS if suppress else False,
        help="do not read or write the cache of per-tenant results (.gputenancy-cache/ or "
        "$GPUTENANCY_CACHE; GPUTENANCY_CACHE=off does the same)",
    )


USAGE_ERROR = 1  # argparse's own is 2, the code `plan` uses for changes


class _UsageError(Exception):
    """A command line argparse refused; its usage and message are already on stderr."""


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error returns USAGE_ERROR from `main` instead of exiting 2."""

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        sys.stderr.write(f"{self.prog}: error: {message}\n")
        raise _UsageError(message)


def _parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog="pipeline.py",
        description="GPU tenancy on Kubernetes: tenants/ + base/ + overlays/ -> generated/<cluster>/ for Argo CD.",
        epilog=clihelp.MAIN_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _globals(p, suppress=False)
    p.add_argument("--version", action="store_true", help="print the version of gputenancy and exit")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")

    def command(name: str) -> argparse.ArgumentParser:
        h = clihelp.COMMANDS[name]
        sp = sub.add_parser(
            name,
            help=h.summary,
            description=textwrap.fill(h.description, 100),
            epilog=h.epilog(),
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        _globals(sp, suppress=True, acting=clihelp.acting(name))
        return sp

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

    for name in ("validate", "render", "check"):
        common(command(name))
    _plan_parsers(command("plan"), command("publish"))
    bp = command("budgets")
    bp.add_argument("--cluster", help="only this cluster (overlays/<cluster>)")
    bp.add_argument("--format", choices=("text", "markdown", "json"), default="text")
    bp.add_argument(
        "--from",
        dest="source",
        type=Path,
        help="a cluster dump (`status --help` gives the kubectl line): add what each tenant uses there",
    )
    rp = command("rules")
    rp.add_argument("rule_id", nargs="?", metavar="ID", help="explain this rule")
    sc = command("schemas")
    fetch_help = clihelp.SUBCOMMANDS["schemas fetch"]
    fetch_p = sc.add_subparsers(dest="schemas_command", metavar="SUBCOMMAND").add_parser(
        "fetch",
        help=fetch_help.summary,
        description=textwrap.fill(fetch_help.description, 100),
        epilog=fetch_help.epilog(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _globals(fetch_p, suppress=True, acting=clihelp.acting("schemas"))
    fetch_p.add_argument(
        "--update", action="store_true", help="download every version again, rewrite schemas.lock"
    )
    fetch_p.add_argument(
        "--schemas",
        type=Path,
        default=None,
        help="directory (default: $GPUTENANCY_SCHEMAS or .gputenancy-schemas)",
    )
    fetch_p.add_argument("--format", choices=report.FORMATS, default=None, help="findings format")
    fetch_p.add_argument(
        "--url",
        help="URL template for this run ({version}), instead of kueueManifestsURL of base/platform.yaml",
    )
    pc = command("pr-comment")
    pc.add_argument("--body-file", type=Path, required=True, help="Markdown body (e.g. plan.md)")
    pc.add_argument("--repo", help="OWNER/NAME (default: $GITHUB_REPOSITORY)")
    pc.add_argument("--pr", type=int, help="pull request number (default: from $GITHUB_EVENT_PATH)")
    js = command("job-summary")
    js.add_argument("--body-file", type=Path, required=True, help="Markdown body (e.g. plan.md)")
    hp = command("report")
    hp.add_argument("--cluster", help="only this cluster (overlays/<cluster>)")
    hp.add_argument(
        "--output", type=Path, default=Path("report.html"), help="HTML file (default: report.html)"
    )
    hp.add_argument(
        "--against",
        help="GIT-REF: pools the change since it moves are drawn before and after (as plan --against)",
    )
    hp.add_argument(
        "--from",
        dest="source",
        type=Path,
        help="a cluster dump (`status --help` gives the kubectl line): add what each tenant uses there",
    )
    _status_parser(command("status"))
    _admit_parser(command("admit"))
    from gputenancy.adopt import command as adopt

    adopt.add_arguments(command("init"), command("import"))
    return p


def _admit_parser(ap: argparse.ArgumentParser) -> None:
    ap.add_argument(
        "files", nargs="+", type=Path, metavar="FILE", help="job manifests (several documents each)"
    )
    ap.add_argument("--cluster", help="the cluster to judge against (needed when the repository has several)")
    ap.add_argument(
        "--from",
        dest="from_dump",
        type=Path,
        metavar="DUMP",
        help="a `kubectl get -o yaml` dump of the cluster: its queues, usage and admitted workloads",
    )
    ap.add_argument("--format", choices=("text", "markdown", "json"), default="text")


def _status_parser(sp: argparse.ArgumentParser) -> None:
    sp.add_argument("--cluster", help="the cluster the dump is of (default: read from the dump)")
    source = sp.add_mutually_exclusive_group(required=True)
    source.add_argument(
        "--from", dest="source", type=Path, help="what `kubectl get ... -o yaml` printed (see below)"
    )
    source.add_argument("--context", help="run kubectl (get only) against this kubeconfig context")
    sp.add_argument(
        "--schemas", type=Path, default=None, help="Kueue CRDs directory (env GPUTENANCY_SCHEMAS)"
    )
    sp.add_argument("--format", choices=("text", "markdown", "json"), default="text")


def _plan_parsers(plan_p: argparse.ArgumentParser, publish_p: argparse.ArgumentParser) -> None:
    for sp in (plan_p, publish_p):
        sp.add_argument("--cluster", help="only this cluster (overlays/<cluster>)")
        sp.add_argument(
            "--schemas", type=Path, default=None, help="Kueue CRDs directory (env GPUTENANCY_SCHEMAS)"
        )
        sp.add_argument(
            "--allow-delete", action="store_true", help="delete queues of tenants that were not drained"
        )
    plan_p.add_argument(
        "--against",
        help="DIR of <cluster>/ trees or GIT-REF (default: generated/ of the work tree, or the last commit "
        "when generated/ holds uncommitted output); with a GIT-REF, capacity, grants and reach are shown "
        "before and after and findings on the files changed since it come first",
    )
    plan_p.add_argument("--format", choices=("text", "markdown", "json"), default="text")
    live = plan_p.add_mutually_exclusive_group()
    live.add_argument(
        "--live",
        type=Path,
        help="the cluster as `status --from` reads it: a drained tenant's removal is refused while its "
        "queues hold workloads, allowed when they are empty",
    )
    live.add_argument("--context", help="as --live, reading the cluster with kubectl (get only)")
    plan_p.add_argument("--output", type=Path, default=None, help="write the plan to FILE instead of stdout")
    publish_p.add_argument("--repo", help="deploy repository URL or PATH (default: this repository)")
    publish_p.add_argument("--branch", help="deploy branch (default: the deploy repository's default branch)")
    publish_p.add_argument(
        "--path", default=output.GENERATED, help="directory of <cluster>/ trees (default: generated)"
    )
    publish_p.add_argument(
        "--dry-run", action="store_true", help="write nothing; print what would be committed"
    )
    publish_p.add_argument("--message-title", help="first line of the commit message")
    publish_p.add_argument(
        "--force",
        action="store_true",
        help="publish even when HEAD is not merged into the source branch (said in the output)",
    )
