"""The real `kubectl`, read verbs only: what `import`, `status` and `admit --from` read from a cluster.

Only `kubectl get` is ever started, always with `-o yaml`; the argv is built here from fixed words and the
context name (checked first), never from a shell string. What comes back is read as an untrusted dump.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence

from gputenancy.cluster.dump import CONFIG_MAP, Dump, read_text
from gputenancy.common import proc
from gputenancy.common.findings import Finding, PipelineError, Severity

KINDS: tuple[str, ...] = (
    "namespaces",
    "nodes",
    "resourceflavors.kueue.x-k8s.io",
    "cohorts.kueue.x-k8s.io",
    "clusterqueues.kueue.x-k8s.io",
    "localqueues.kueue.x-k8s.io",
    "workloadpriorityclasses.kueue.x-k8s.io",
    "admissionchecks.kueue.x-k8s.io",
    "topologies.kueue.x-k8s.io",
    "workloads.kueue.x-k8s.io",
    "deviceclasses.resource.k8s.io",
    "resourceclaimtemplates.resource.k8s.io",
    "resourceclaims.resource.k8s.io",
    "resourceslices.resource.k8s.io",
)
"""Every kind read from a cluster, fully qualified (a CRD of another group with the same short name is not
read by mistake)."""
MANAGER: tuple[str, ...] = (f"configmap/{CONFIG_MAP[1]}", "deployment/kueue-controller-manager")
"""The Kueue manager's Configuration and its Deployment (the restart marker), in `kueue-system`."""
READ_VERBS = frozenset({"get"})
_CONTEXT = re.compile(r"[A-Za-z0-9@:/._-]{1,253}")


def _context_args(context: str | None) -> list[str]:
    if context is None:
        return []
    if not _CONTEXT.fullmatch(context) or context.startswith("-"):
        raise PipelineError(
            [
                Finding(
                    "--context",
                    0,
                    0,
                    Severity.ERROR,
                    "kubectl-context",
                    f"not a kubeconfig context name: {context!r}",
                )
            ]
        )
    return ["--context", context]


def commands(context: str | None = None, output: str = "yaml") -> list[list[str]]:
    """The argv of each `kubectl get` run (the objects, then the manager's ConfigMap and Deployment);
    `output` yaml (what people keep and read) or json (what `read_live` reads: the same objects, parsed
    many times faster)."""
    ctx = _context_args(context)
    if output not in ("yaml", "json"):
        raise ValueError(output)
    return [
        ["kubectl", *ctx, "get", ",".join(KINDS), "-A", "-o", output, "--show-managed-fields"],
        ["kubectl", *ctx, "-n", CONFIG_MAP[0], "get", *MANAGER, "-o", output, "--show-managed-fields"],
    ]


def command_line(context: str | None = None) -> str:
    """The exact shell line that writes the dump `--from` reads (for help texts and docs)."""
    first, second = (shlex.join(c) for c in commands(context))
    return f"{{ {first}; echo ---; {second} --ignore-not-found; }} > cluster.yaml"


def _verb(argv: Sequence[str]) -> str:
    rest = list(argv[1:])
    while rest and rest[0].startswith("-"):
        rest = rest[2:] if rest[0] in ("--context", "-n") else rest[1:]
    return rest[0] if rest else ""


def read_live(context: str | None, *, shown: str | None = None) -> Dump:
    """Run the read-only `kubectl get` commands and read their output as one dump."""
    if shown is None:
        shown = f"kubectl --context {context}" if context else "kubectl (current context)"
    parts: list[str] = []
    for i, argv in enumerate(commands(context, "json")):
        if _verb(argv) not in READ_VERBS:  # every argv is built above; this keeps it so
            raise AssertionError(f"not a read verb: {argv}")
        result = proc.run(argv if i == 0 else [*argv, "--ignore-not-found"], check=False, timeout=300)
        if result.rc != 0:
            raise PipelineError(
                [
                    Finding(
                        shown,
                        0,
                        0,
                        Severity.ERROR,
                        "kubectl-read",
                        f"`{shlex.join(argv)}` exited {result.rc}: {result.err.strip() or result.out.strip()}",
                    )
                ]
            )
        parts.append(result.out)
    text = "\n".join(p for p in parts if p.strip())
    return read_text(text.encode("utf-8"), shown)
