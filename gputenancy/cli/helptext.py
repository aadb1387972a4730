"""What `pipeline.py COMMAND --help` says: a description, the exit codes and an example per command;
and where the repository root is when --root is not given."""

from __future__ import annotations

import dataclasses
import textwrap
from pathlib import Path

from gputenancy.cluster import kubectl


@dataclasses.dataclass(frozen=True)
class Help:
    summary: str  # one line, in `pipeline.py --help`
    description: str
    exits: tuple[tuple[int, str], ...]
    examples: tuple[str, ...]

    def epilog(self) -> str:
        codes = "\n".join(f"  {code}  {meaning}" for code, meaning in self.exits)
        examples = "\n".join(f"  {e}" for e in self.examples)
        return f"exit codes:\n{codes}\n\nexample:\n{examples}\n"


_FINDINGS = (1, "errors: findings printed as file:line:col: error: message (rule)")

COMMANDS: dict[str, Help] = {
    "validate": Help(
        "check the inputs and the rendered objects; write nothing",
        "Read tenants/, base/ and overlays/, run every rule, render, build with kustomize and validate the "
        "objects (against the Kueue CRDs with --schemas). Findings go to stdout, notes to stderr; colour "
        "on a terminal (NO_COLOR turns it off).",
        ((0, "no errors (warnings may be printed)"), _FINDINGS),
        ("python pipeline.py validate", "python pipeline.py validate --cluster prod --format json"),
    ),
    "render": Help(
        "write generated/<cluster>/, .github/CODEOWNERS and argocd/hub.yaml",
        "Validate, then replace generated/<cluster>/ atomically (stale files and clusters removed) and "
        "rewrite .github/CODEOWNERS and argocd/hub.yaml. On any error nothing is written.",
        ((0, "rendered"), _FINDINGS),
        ("python pipeline.py render", "python pipeline.py render --cluster lab"),
    ),
    "check": Help(
        "fail when generated/ (or CODEOWNERS, argocd/hub.yaml) differs from what render writes",
        "Render in memory and compare with the committed files; lists every file that differs.",
        ((0, "up to date"), (1, "out of date (run render), or errors")),
        ("python pipeline.py check",),
    ),
    "plan": Help(
        "what the change does on each cluster, compared with what Argo CD syncs",
        "Render in memory and compare, object by object, with generated/ of the work tree, a directory "
        "(--against DIR) or generated/ at a git ref (--against REF). Shows every changed field, what each "
        "added or changed tenant is granted (nominal, borrowing and lending limits, the most it can "
        "reach), capacity, and risks. The plan goes to stdout (or --output), findings and notes to stderr.",
        ((0, "no changes"), (2, "changes"), (1, "errors, or a tenant removal refused")),
        (
            "python pipeline.py plan",
            "python pipeline.py plan --against HEAD^1 --format markdown --output plan.md",
        ),
    ),
    "publish": Help(
        "render, plan, and commit the changes to the directory Argo CD syncs",
        "Writes <path>/<cluster>/ and commits it, in this repository or in a deploy repository (--repo), "
        "pushing with retries; refuses uncommitted inputs, stale sources and undrained removals.",
        ((0, "published, or nothing to do"), (1, "errors or refused")),
        (
            "python pipeline.py publish --dry-run",
            "python pipeline.py publish --repo git@github.com:acme/gpu-deploy.git --branch deploy",
        ),
    ),
    "budgets": Help(
        "who holds what: every tenant's budget per cluster and flavor, with capacity and headroom",
        "From the inputs (no render): per cluster, flavor and quota resource the capacity, the sum of "
        "nominal budgets and the headroom left, and per tenant its nominal quota, borrowing limit "
        "('unlimited' in a cohort without one: Kueue then lets it borrow all unused quota of the cohort), "
        "lending limit and the most it can reach.",
        (
            (0, "printed"),
            (1, "the inputs have errors (findings on stderr; budgets still printed when readable)"),
        ),
        ("python pipeline.py budgets", "python pipeline.py budgets --cluster prod --format markdown"),
    ),
    "rules": Help(
        "list every rule id a finding can carry, or explain one",
        "Without ID: every rule id by stage (read, schema, model, configuration, build, objects, "
        "admission, built, write, plan, publish, schemas). With ID: what it checks, a failing and a passing example.",
        ((0, "printed"), (1, "unknown rule id")),
        ("python pipeline.py rules", "python pipeline.py rules capacity"),
    ),
    "schemas": Help(
        "Kueue release manifests (CRDs, install) for validation and plans: `schemas fetch`",
        "Kueue's release manifests, kept in the schemas directory (--schemas, $GPUTENANCY_SCHEMAS or "
        ".gputenancy-schemas/) for CRD validation and upgrade plans. One subcommand: fetch.",
        ((0, "done"), (1, "errors (see the subcommand), or no subcommand given: this help is printed")),
        ("python pipeline.py schemas fetch", "python pipeline.py schemas fetch --help"),
    ),
    "pr-comment": Help(
        "create or update the sticky plan comment on a pull request",
        "Finds its own comment (by a hidden marker, written by the token's identity) and updates it, or "
        "creates one. Token from GITHUB_TOKEN, "
        "repository from GITHUB_REPOSITORY, pull request from GITHUB_EVENT_PATH.",
        ((0, "posted"), (1, "missing settings or an API error")),
        ("python pipeline.py pr-comment --body-file plan.md",),
    ),
    "job-summary": Help(
        "append a Markdown file to the GitHub Actions job summary",
        "Appends to $GITHUB_STEP_SUMMARY, cut to what is left of its 1 MiB.",
        ((0, "appended"), (1, "GITHUB_STEP_SUMMARY not set or not writable")),
        ("python pipeline.py job-summary --body-file plan.md",),
    ),
    "report": Help(
        "write one HTML page with a chart per cluster, flavor and quota resource",
        "From the inputs (no render): per pool the capacity, each tenant's nominal share and the most it "
        "can reach by borrowing, coloured by cohort. The page is self-contained (inline SVG, no script): "
        "it opens without network access, e.g. as a workflow artifact. Per cluster the GPU pools come "
        "first, apart from CPU and memory; with --against REF a pool the change moves is drawn before and "
        "after, side by side. The page is titled after the repository (argocd.repoURL) and its clusters.",
        ((0, "written"), _FINDINGS),
        (
            "python pipeline.py report",
            "python pipeline.py report --cluster prod --output prod.html",
            "python pipeline.py report --against origin/main",
        ),
    ),
    "admit": Help(
        "say before submission what Kueue will do with a job: its queue, charge, flavor and verdict",
        "Read job manifests (batch Job, JobSet, PyTorchJob, TrainJob, RayJob, RayCluster, Pod, Deployment; "
        "several documents per file) and judge each against the cluster as rendered in generated/<cluster>/ "
        "(with --from, as a `kubectl get -o yaml` dump shows it, usage and admitted workloads included): its "
        "LocalQueue and ClusterQueue, what Kueue charges per pod set (containers, init containers and "
        "sidecars, overhead, claim templates through deviceClassMappings, the Configuration's "
        "transformations), the flavor it gets and whether it is admitted, waits for quota (behind whom) or "
        "can never run, with Kueue's own message and the fix. Workloads are judged in order: one admitted "
        "uses quota the next ones do not get.",
        (
            (0, "every workload is admitted (now, with --from)"),
            (
                1,
                "a workload can never run (Inadmissible, or no flavor can hold it), or findings in the input",
            ),
            (2, "a workload waits for quota"),
        ),
        (
            "python pipeline.py admit jobs/train.yaml --cluster prod",
            "python pipeline.py admit jobs/*.yaml --cluster lab --from lab-dump.yaml --format markdown",
        ),
    ),
    "status": Help(
        "the cluster as it runs against Git: drift, the Kueue manager, devices, every team's usage",
        "Compare a cluster with generated/<cluster>/ (what Argo CD syncs): the objects Argo CD would "
        "change (each field live -> Git with the field manager that set the live value), those missing "
        "and those on the cluster Git does not hold; the Kueue manager's Configuration and restart "
        "marker; the devices the DRA drivers publish against the overlay's capacity; per team and flavor "
        "the nominal quota, usage, reservation and borrowing, and pending workloads by Kueue's reason. "
        "--from FILE reads what the kubectl line below prints; --context runs that kubectl itself (get "
        "only, never a write). The report goes to stdout, findings and notes to stderr.",
        (
            (0, "the cluster runs what Git says"),
            (1, "errors: an unreadable dump, a dump of another cluster, or findings in the inputs"),
            (2, "the cluster differs from Git (objects, the manager's Configuration, fewer devices)"),
        ),
        (
            kubectl.command_line(),
            "python pipeline.py status --from cluster.yaml",
            "python pipeline.py status --cluster prod --context prod-admin --format markdown",
        ),
    ),
    "init": Help(
        "create a repository with no tenants and no clusters, ready to import a cluster into",
        "Writes base/platform.yaml (an empty catalog, no flavors), base/kueue-config.yaml, "
        "base/kustomization.yaml and empty tenants/ and overlays/ into DIR, which must be empty or absent. "
        "It validates and renders an empty output.",
        ((0, "created"), (1, "DIR is not empty: nothing written")),
        ("python pipeline.py init gpu-tenancy --owner @acme/gpu-platform",),
    ),
    "import": Help(
        "adopt a cluster that already runs Kueue: its live queues -> tenant, platform and overlay files",
        "Reads ResourceFlavors, ClusterQueues, Cohorts, LocalQueues, WorkloadPriorityClasses, "
        "AdmissionChecks, Topologies, DeviceClasses, ResourceClaimTemplates (kueue.x-k8s.io v1beta1 or "
        "v1beta2) and the Kueue manager's ConfigMap and Deployment from FILE (the output of the kubectl "
        "line below) or, with --context, from the real kubectl (get only). Each ClusterQueue becomes a "
        "tenant named after it (its namespaces from the LocalQueues pointing to it), flavors, device "
        "classes and cohorts go to base/platform.yaml, versions, capacity and the Configuration to "
        "overlays/<cluster>/. Names stay the live names. Then it renders the cluster and compares each "
        "object with the live one: reproduced exactly, carried as a patch or kept verbatim in the overlay "
        "(not expressible, with why), or different (each field, live -> rendered). Namespaces, "
        "ResourceSlices and Workloads are read, not imported. A tenant file that exists gets the "
        "cluster's budget added, its comments and order kept. Nothing is written unless the round trip "
        "is exact (or --allow-partial), and then all files at once.",
        (
            (0, "imported: the round trip is exact (or --allow-partial)"),
            (1, "bad input (findings, nothing written), or objects differ (listed, nothing written)"),
        ),
        (
            kubectl.command_line(),
            "python pipeline.py import --cluster prod --from cluster.yaml",
            "python pipeline.py import --cluster prod --context prod-admin --dry-run",
        ),
    ),
}

SUBCOMMANDS: dict[str, Help] = {
    "schemas fetch": Help(
        "download the release manifests of every declared Kueue version, verified by schemas.lock",
        "Download the release manifests.yaml of every Kueue version the clusters declare (and every "
        "version already in schemas.lock, so the version a cluster upgrades from stays available to "
        "plan) from kueueManifestsURL of base/platform.yaml (or --url), cut each CRD out of it, and keep "
        "both in the schemas directory, verified against schemas.lock (the parsed content of each "
        "file: formatting may differ, content may not). Versions whose files already "
        "match the lock are not downloaded again; a download that differs from the lock is refused. "
        "--update downloads every version again and rewrites schemas.lock: review its diff. Nothing is "
        "changed unless every download succeeds.",
        (
            (0, "fetched and verified"),
            (1, "a download failed, is not a Kueue release, or does not match schemas.lock"),
        ),
        (
            "python pipeline.py schemas fetch",
            "python pipeline.py schemas fetch --update      # after changing a kueue.version",
            "python pipeline.py schemas fetch --url 'file:///mirror/kueue/{version}/manifests.yaml'",
        ),
    ),
}

# The global options each command acts on where not both (see `acting`); elsewhere they are not offered.
GLOBALS: dict[str, tuple[str, ...]] = {
    "validate": ("--root", "--no-cache"),
    "render": ("--root", "--no-cache"),
    "check": ("--root", "--no-cache"),
    "plan": ("--root", "--no-cache"),
    "publish": ("--root", "--no-cache"),
    "budgets": ("--root", "--no-cache"),
    "schemas": ("--root",),
    "report": ("--root",),
    "rules": (),
    "pr-comment": (),
    "job-summary": (),
    "admit": ("--root",),
    "status": ("--root",),
    "init": (),
    "import": ("--root",),
}


def acting(command: str) -> tuple[str, ...]:
    """The global options `command` acts on: both, unless GLOBALS says otherwise."""
    return GLOBALS.get(command, ("--root", "--no-cache"))


MAIN_EPILOG = (
    textwrap.fill(
        "--root and --no-cache go before the command, or after it where they act (--root: every command "
        "that reads the repository; --no-cache: those that render). Without --root, the repository root "
        "is the nearest directory above the current one holding base/platform.yaml.",
        100,
    )
    + "\n\n"
    "exit codes:\n  0  fine\n  1  errors (findings printed as file:line:col: error: message (rule)), a usage\n"
    "     error, or no command given (this help is printed)\n  2  plan: changes\n\n"
    "example:\n  python pipeline.py validate\n  python pipeline.py render\n"
    "  python pipeline.py plan --against origin/main\n\n"
    "`python pipeline.py COMMAND --help` describes a command, its exit codes and an example."
)


def find_root(start: Path) -> Path:
    """The nearest directory at or above `start` holding base/platform.yaml; `start` when none does."""
    start = start.resolve()
    for directory in (start, *start.parents):
        if (directory / "base" / "platform.yaml").is_file():
            return directory
    return start
