"""Every rule id a finding can carry, with what it checks and a failing and a passing example:
`python pipeline.py rules` lists them, `python pipeline.py rules ID` explains one.

Four sources: the model rules (`policy.rules.RULES`, each documented by its docstring), the admission
rules of Kueue's webhooks and of DRA (`check.webhooks.RULES`), the rules on the built objects
(`check.postbuild.RULES`, and across a MultiKueue fleet's clusters `check.fleet.RULES`), the
trust-boundary rules documented beside their code (`DOCS` of `inputs.confine`, `inputs.kustomizations`,
`inputs.amounts`, `build.swap`), and the table below for the rules that live in the reader, the
schemas, the Kueue Configuration checks, the build, the object validation, plan and publish. A rule
registered in any of those registries appears here without more work.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable

from gputenancy.check.chain import fleet, postbuild
from gputenancy.check.webhook import webhooks
from gputenancy.policy import rules


@dataclasses.dataclass(frozen=True)
class RuleDoc:
    id: str
    stage: str
    summary: str
    fails: str
    passes: str


# (id, stage, what it checks, a failing example, a passing example)
_TABLE: tuple[tuple[str, str, str, str, str], ...] = (
    (
        "source-read",
        "read",
        "an input file or directory can be read",
        "tenants/a.yaml without read permission",
        "a readable file",
    ),
    (
        "source-outside-root",
        "read",
        "files are read only from inside the repository root",
        "a path resolving outside --root",
        "tenants/a.yaml",
    ),
    ("source-empty", "read", "a file has content", "a file with only comments", "a file with a document"),
    (
        "source-multidoc",
        "read",
        "one YAML document per file",
        "two documents separated by ---",
        "one document",
    ),
    (
        "source-encoding",
        "read",
        "files are UTF-8 (no BOM, no other encoding)",
        "a UTF-16 file",
        "a UTF-8 file",
    ),
    ("source-tab", "read", "indentation uses spaces", "a tab before `name:`", "two spaces"),
    (
        "source-syntax",
        "read",
        "the file is valid YAML; a mistake is named in plain words at the line to change (a key indented "
        "unlike the keys beside it, a missing space after ':', a bracket or quote never closed)",
        "`cpu:32` (missing space after ':'); `name: [a` (the '[' is never closed)",
        "`cpu: 32`; `name: [a]`",
    ),
    (
        "source-duplicate-key",
        "read",
        "a key appears once per mapping",
        "`name: a` twice in one mapping",
        "each key once",
    ),
    (
        "source-alias",
        "read",
        "no anchors, aliases or merge keys",
        "`budgets: *shared`",
        "the value written out",
    ),
    ("source-tag", "read", "no explicit tags", "`count: !!str 4`", "`count: 4`"),
    (
        "source-ambiguous-bool",
        "read",
        "warning: yes/no/on/off read as strings, not booleans",
        "`enabled: yes`",
        "`enabled: true`",
    ),
    ("source-key-type", "read", "mapping keys are strings", "`4: gpu`", "`gpu: 4`"),
    (
        "source-depth",
        "read",
        "nesting stays within a sane depth",
        "a document nested 200 levels deep",
        "an ordinary tenant file",
    ),
    ("source-number", "read", "numbers are finite", "`nominal: .inf`", "`nominal: 4`"),
    (
        "tenant-schema",
        "schema",
        "a tenant file matches gputenancy/schemas/tenant.schema.json (unknown keys named with a did-you-mean)",
        "`borrowLimit: 2` in an amount",
        "`borrowingLimit: 2`",
    ),
    (
        "platform-schema",
        "schema",
        "base/platform.yaml matches platform.schema.json",
        "`flavours:` at the top level",
        "`flavors:`",
    ),
    (
        "cluster-schema",
        "schema",
        "overlays/<cluster>/cluster.yaml matches cluster.schema.json",
        "`kueue: {version: 0.19}` (not a string)",
        "`kueue: {version: v0.19.2}`",
    ),
    (
        "quantity",
        "model",
        "amounts are Kubernetes quantities; device counts are whole numbers",
        "`gpu.nvidia.com: 1.5`",
        "`gpu.nvidia.com: 2`",
    ),
    (
        "budget-empty",
        "model",
        "a flavor budget has devices or resources",
        "`- flavor: h100` alone",
        "`- flavor: h100` with `devices: {gpu.nvidia.com: 1}`",
    ),
    (
        "tenant-file-place",
        "read",
        "tenant files are directly in tenants/, named <tenant>.yaml or <tenant>.yml",
        "tenants/ml/vision.yaml, tenants/vision.YAML",
        "tenants/vision.yaml",
    ),
    (
        "tenant-name-file",
        "model",
        "a tenant's name equals its file name",
        "tenants/vision.yaml with `name: visoin`",
        "tenants/vision.yaml with `name: vision`",
    ),
    (
        "catalog-duplicate",
        "model",
        "a device class or flavor is declared once in base/platform.yaml",
        "two deviceClasses entries named gpu.nvidia.com",
        "one entry",
    ),
    (
        "platform-missing",
        "model",
        "base/platform.yaml exists (and the Kueue Configuration file it names)",
        "a repository without base/platform.yaml",
        "base/platform.yaml present",
    ),
    (
        "platform-kueue-config",
        "model",
        "the file `kueueConfig` names exists in base/",
        "`kueueConfig: kueue.yaml` that does not exist",
        "`kueueConfig: kueue-config.yaml`",
    ),
    (
        "cluster-missing",
        "model",
        "overlays/ has clusters, and --cluster names one of them",
        "`--cluster staging` without overlays/staging",
        "`--cluster prod`",
    ),
    (
        "cluster-name-dir",
        "model",
        "a cluster's name equals its directory name",
        "overlays/prod/cluster.yaml with `name: production`",
        "`name: prod`",
    ),
    (
        "cluster-install",
        "model",
        "the Kueue install settings fit the install method",
        "`install: helm` with `helm.values.managerConfig` set",
        "`install: helm` with the Configuration in kueue.config",
    ),
    (
        "mapping-conflict",
        "configuration",
        "a device class is mapped in one place: by the catalog, not also in the Kueue Configuration",
        "gpu.nvidia.com in base/kueue-config.yaml's deviceClassMappings",
        "mappings left to the catalog",
    ),
    (
        "kueue-config-version",
        "configuration",
        "the Kueue Configuration has the apiVersion and kind the cluster's Kueue version reads",
        "`apiVersion: config.kueue.x-k8s.io/v1alpha1`",
        "`apiVersion: config.kueue.x-k8s.io/v1beta2`",
    ),
    (
        "kueue-config-unknown-field",
        "configuration",
        "every field of the Configuration is known to that Kueue version (Kueue's strict loader)",
        "`waitForPodReady:`",
        "`waitForPodsReady:`",
    ),
    (
        "kueue-config-invalid",
        "configuration",
        "values Kueue's config validation refuses",
        "`waitForPodsReady.timeout: -1m`",
        "`timeout: 10m`",
    ),
    (
        "kueue-config-device-class-mappings",
        "configuration",
        "deviceClassMappings Kueue accepts (names, sizes)",
        "a mapping with an empty deviceClassNames",
        "one class or more per mapping",
    ),
    (
        "kueue-config-wait-for-pods-ready",
        "configuration",
        "waitForPodsReady settings Kueue accepts",
        "`recoveryTimeout` longer than allowed",
        "`timeout: 10m, recoveryTimeout: 3m`",
    ),
    (
        "kueue-feature-gate-unknown",
        "configuration",
        "feature gates exist in the cluster's Kueue version (with a did-you-mean)",
        "`KueueDRAIntegraton: true`",
        "`KueueDRAIntegration: true`",
    ),
    (
        "kueue-feature-gate-locked",
        "configuration",
        "locked (GA or deprecated) gates keep their locked value",
        "a GA gate set to false",
        "the gate left out",
    ),
    (
        "kueue-feature-gate-dependency",
        "configuration",
        "gates that need another gate have it",
        "a gate on without the gate it depends on",
        "both on",
    ),
    (
        "kueue-feature-gate-conflict",
        "configuration",
        "feature gates in one place: the Helm chart's controllerManager.featureGates or the Configuration, not both (reported at the overlay's chart values)",
        "`helm.values.controllerManager.featureGates` and kueue.featureGates",
        "kueue.featureGates only",
    ),
    (
        "kustomize",
        "build",
        "kustomize builds the overlay and the tenant Component",
        "overlays/lab/kustomization.yaml listing missing.yaml",
        "every listed file present",
    ),
    (
        "duplicate-object",
        "build",
        "an object is produced once per cluster",
        "a base/ object with the same kind and name as a rendered one",
        "distinct names",
    ),
    (
        "object-name",
        "objects",
        "each object gets its own file under generated/<cluster>/",
        "two objects mapping to the same path",
        "distinct objects",
    ),
    (
        "crd-schema",
        "objects",
        "rendered Kueue objects match the CRD schema of the cluster's Kueue version (--schemas)",
        "a ClusterQueue with `queueingStrategy: FIFO`",
        "`BestEffortFIFO`",
    ),
    (
        "crd-unknown-field",
        "objects",
        "no field the CRD does not define (the API server would drop it)",
        "`spec.nominalQuota` on a ClusterQueue",
        "fields of the CRD",
    ),
    (
        "crd-cel",
        "objects",
        "the CRD's CEL validation rules (x-kubernetes-validations) hold",
        "a rule of the ClusterQueue CRD broken",
        "the rule held",
    ),
    (
        "crd-cel-unsupported",
        "objects",
        "note: a CEL rule that cannot be evaluated here",
        "a rule using an unsupported function",
        "-",
    ),
    (
        "crd-kind-unknown",
        "objects",
        "the CRDs define the object's kind",
        "a kind missing from --schemas",
        "a Kueue kind",
    ),
    (
        "crd-list-duplicate",
        "objects",
        "list-type set/map items are unique",
        "a set list with a value twice",
        "unique items",
    ),
    (
        "crd-version-not-served",
        "objects",
        "the apiVersion is served by the CRD",
        "kueue.x-k8s.io/v1alpha9",
        "kueue.x-k8s.io/v1beta2",
    ),
    (
        "crd-version-deprecated",
        "objects",
        "warning: the apiVersion is deprecated in the CRD",
        "a deprecated version",
        "the storage version",
    ),
    (
        "crd-version-mismatch",
        "objects",
        "--schemas holds CRDs of the cluster's Kueue version",
        "CRDs of v0.18 for a v0.19 cluster",
        "matching CRDs",
    ),
    (
        "k8s-schema",
        "objects",
        "Kubernetes objects match the Kubernetes OpenAPI schema of kubernetesVersion",
        "a DeviceClass without spec",
        "a complete DeviceClass",
    ),
    (
        "k8s-unknown-field",
        "objects",
        "no field Kubernetes does not define",
        "`spec.selector` on a DeviceClass",
        "`spec.selectors`",
    ),
    (
        "k8s-metadata",
        "objects",
        "names, labels and annotations Kubernetes accepts",
        "a label value of 70 characters",
        "63 or fewer",
    ),
    (
        "k8s-schema-not-found",
        "objects",
        "a schema exists for the object's apiVersion and kind",
        "an unknown kind in base/",
        "a known kind",
    ),
    (
        "schemas-missing",
        "objects",
        "the schemas directory holds the CRDs of every Kueue version the clusters declare",
        "kueue.version: v0.19.2 with a schemas directory lacking kueue/v0.19.2/crds",
        "`python pipeline.py schemas fetch` run first",
    ),
    (
        "schemas-lock",
        "schemas",
        "a downloaded Kueue release matches schemas.lock in content (its parsed documents; formatting "
        "may differ), the lock covers every declared version, and its keys are versions and file names",
        'a release asset with a changed value; a lock key "../../x"',
        "the asset the lock was written from",
    ),
    (
        "schemas-fetch",
        "schemas",
        "the Kueue release manifests can be downloaded (http, https or a regular local file, within the "
        "size cap and the deadline) and are a Kueue release the hardened reader accepts",
        "a URL template answering 404; a server sending a byte a second; an alias bomb",
        "kueueManifestsURL of base/platform.yaml",
    ),
    (
        "tenant-removal",
        "plan",
        "a tenant's queues are removed only after draining (state: draining) or with --allow-delete",
        "tenants/speech.yaml deleted while its ClusterQueue is active",
        "state: draining merged and published first",
    ),
    (
        "plan-against",
        "plan",
        "--against names a directory or a git ref of the repository",
        "`--against no-such-ref`",
        "`--against HEAD^1`",
    ),
    (
        "plan-read",
        "plan",
        "the synced side (generated/) can be parsed",
        "a generated/ file that is not YAML",
        "files written by render",
    ),
    (
        "publish-dirty",
        "publish",
        "tenants/, base/ and overlays/ are committed before publishing",
        "an edited tenants/a.yaml not committed",
        "a clean work tree (or --dry-run)",
    ),
    (
        "publish-stale",
        "publish",
        "the deploy branch never goes backwards",
        "publishing an older source commit than the branch holds",
        "a newer commit",
    ),
    (
        "publish-push",
        "publish",
        "the push succeeds (retried on races)",
        "a remote that rejects the push",
        "a reachable remote",
    ),
    (
        "framework-not-installed",
        "configuration",
        "(note) a job framework the Kueue Configuration enables but the cluster's `frameworks` (its overlay's, "
        "else base/platform.yaml's) does not list is left out of that cluster's Configuration, said at the line "
        "that enables it: a note when base/kueue-config.yaml enables it for every cluster, a warning when the "
        "cluster's own kueue.config does. A single cluster would tolerate the missing CRD; a MultiKueue fleet "
        "does not (fleet-frameworks)",
        "base/kueue-config.yaml enables ray.io/raycluster and the cluster declares `frameworks: [batch/job]`",
        "`frameworks: [batch/job, ray.io/raycluster]` on that cluster",
    ),
    (
        "admit-input",
        "admit",
        "a job manifest given to `admit` is a Kubernetes object of a kind Kueue admits, managed by the cluster's Kueue (its integration enabled, a queue label or the namespace's default LocalQueue), whose claim templates exist in its namespace",
        "a batch Job without the kueue.x-k8s.io/queue-name label in a namespace with no LocalQueue `default`; a ConfigMap; resourceClaimTemplateName naming no template",
        "a batch Job labelled with its namespace's LocalQueue, using a claim template of that namespace",
    ),
    (
        "dump-cluster",
        "status",
        "the dump `status` and `plan --live` read is what `kubectl get` prints for a cluster (namespaces "
        "included) and of the cluster named: the pipeline's objects in it carry its gputenancy.io/cluster "
        "label, or are those of its generated/ tree",
        "`status --cluster prod --from lab.yaml`; a file of objects without a Namespace",
        "`status --from prod.yaml` (the cluster read from the dump)",
    ),
    (
        "status-git",
        "status",
        "generated/<cluster>/, what Argo CD syncs and `status` compares with, exists and is readable YAML",
        "`status` on a cluster never rendered",
        "`python pipeline.py render` committed",
    ),
    (
        "live-devices",
        "status",
        "(warning) the DRA drivers publish at least the devices an overlay's capacity declares, matched to "
        "each flavor by the DeviceClass's selectors, the inventory's attributes and the nodes' labels; "
        "more than declared is a note",
        "`gpu.nvidia.com: 16` on h100 with one of its two nodes down (8 published)",
        "16 H100 published by two nodes",
    ),
    (
        "import-input",
        "import",
        "a dump `import` adopts holds Kueue objects of one cluster, in API versions the pipeline reads, whose "
        "queues do not collide with the repository's tenants; nothing is written otherwise",
        "a List of ConfigMaps only; a kueue.x-k8s.io/v1alpha1 ClusterQueue; objects labelled "
        "gputenancy.io/cluster: east and west in one dump; a ClusterQueue named like a tenant whose namespaces differ",
        "the output of the kubectl line in `import --help` for one cluster",
    ),
    (
        "init-target",
        "import",
        "`init DIR` writes into an empty or absent directory only",
        "a directory holding files",
        "a new directory",
    ),
    (
        "publish-branch",
        "publish",
        "publish runs on the source branch: HEAD merged into the branch Argo CD's deploy follows "
        "(argocd.targetRevision in this repository, else the default branch), or --force",
        "publish from an unmerged feature branch",
        "publish from main after the merge (or --force, said in the output)",
    ),
)


def _model_doc(rule_id: str, doc: str) -> RuleDoc:
    text = " ".join(doc.split())
    passes = re.search(r"Passes:\s*(.*?)(?=\s*Fails:|$)", text)
    fails = re.search(r"Fails:\s*(.*?)(?=\s*Passes:|$)", text)
    summary = re.split(r"\s*Passes:|\s*Fails:", text)[0]
    return RuleDoc(
        rule_id, "model", summary, fails.group(1) if fails else "", passes.group(1) if passes else ""
    )


def _boundary() -> list[RuleDoc]:
    """The trust-boundary rules documented beside their code (reads, kustomizations, amounts, the swap)."""
    from gputenancy.assemble import swap
    from gputenancy.inputs import amounts, confine, kustomizations
    from gputenancy.versions import releasedata

    docs = {**confine.DOCS, **kustomizations.DOCS, **amounts.DOCS, **swap.DOCS, **releasedata.DOCS}
    out = []
    for rule_id, doc in docs.items():
        stage = (
            "read"
            if rule_id.startswith("source-")
            else "build"
            if rule_id.startswith("kustomize-") or rule_id == "cluster-kustomization"
            else "write"
            if rule_id.startswith("generated-")
            else "schemas"
            if rule_id.startswith("schemas-")
            else "model"
        )
        out.append(dataclasses.replace(_model_doc(rule_id, doc), stage=stage))
    return out


def all_rules() -> list[RuleDoc]:
    """Every rule id, in stage order: read, schema, model, configuration, build, objects, admission,
    built, write, plan, publish."""
    out = _boundary()  # rules documented beside their code, or in a registry, have no row in the table
    out += [RuleDoc(*row) for row in _TABLE]
    out += [_model_doc(rule_id, fn.__doc__ or "") for rule_id, fn in rules.RULES.items()]
    out += [dataclasses.replace(_model_doc(r.id, r.doc), stage="admission") for r in webhooks.RULES]
    out += [
        dataclasses.replace(_model_doc(i, fn.__doc__ or ""), stage="built")
        for i, fn in [*postbuild.RULES.items(), *fleet.RULES.items()]
    ]
    order = (
        "read",
        "schema",
        "model",
        "configuration",
        "build",
        "objects",
        "admission",
        "built",
        "write",
        "plan",
        "publish",
        "schemas",
        "status",
        "import",
    )
    seen: dict[str, RuleDoc] = {}
    for doc in sorted(out, key=lambda d: order.index(d.stage) if d.stage in order else len(order)):
        seen.setdefault(doc.id, dataclasses.replace(doc, summary=styled(doc.summary)))
    return list(seen.values())


def styled(summary: str) -> str:
    """One style for every rule's description, whichever registry wrote it: a sentence starting with a
    capital (an identifier such as `lendingLimit` or `flavors[j]` keeps its spelling), and the severity
    of a rule that is not an error as a `(warning)` or `(note)` prefix."""
    level = re.match(r"\((warning|note)\)\s*|(warning|note):\s*", summary)
    if level:
        summary = summary[level.end() :]
    if re.match(r"[a-z]+\b(?![./\[(_-])", summary):
        summary = summary[0].upper() + summary[1:]
    return f"({level.group(1) or level.group(2)}) {summary}" if level else summary


def ids() -> list[str]:
    return [d.id for d in all_rules()]


def find(rule_id: str) -> RuleDoc | None:
    return next((d for d in all_rules() if d.id == rule_id), None)


def listing(docs: Iterable[RuleDoc]) -> str:
    docs = list(docs)
    width = min(max((len(d.id) for d in docs), default=0), 34)
    lines: list[str] = []
    stage = None
    for d in docs:
        if d.stage != stage:
            stage = d.stage
            lines += ["", f"{stage}:"] if lines else [f"{stage}:"]
        first = re.split(r"(?<=[a-z)])\. ", d.summary, maxsplit=1)[0].rstrip(".")
        lines.append(f"  {d.id:<{width}}  {first}")
    lines += ["", "python pipeline.py rules ID explains one, with a failing and a passing example."]
    return "\n".join(lines) + "\n"


def explain(d: RuleDoc) -> str:
    return f"{d.id} ({d.stage})\n\n{d.summary}\n\nFails:  {d.fails}\nPasses: {d.passes}\n"
