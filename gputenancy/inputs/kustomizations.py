"""The kustomizations of base/ and an overlay, read with the hardened reader and checked before
kustomize runs: nothing fetched, nothing executed, nothing read outside what the build is given.

kustomize builds a cluster from a staging copy of ``base/`` and ``overlays/<cluster>/``. Starting
at the overlay's kustomization and its tenant Component, every file reference is followed
(``resources``, ``bases``, ``components``, ``crds``, ``configurations``, ``patches[].path``,
``patchesStrategicMerge``, ``patchesJson6902[].path``, ``replacements[].path``, ``openapi.path``,
``configMapGenerator``/``secretGenerator`` ``files``/``envs``/``env``, ``generators``,
``transformers``, ``validators``), and

* a remote address (``https://``, ``git::``, ``git@``, ``github.com/...``) is `kustomize-remote`;
* a path that climbs out of the repository, or out of base/ and the overlay (the only directories
  staged), or an absolute path, is `kustomize-outside`;
* ``helmCharts``, ``helmGlobals`` and ``HelmChartInflationGenerator`` are `kustomize-helm`;
* a generator, transformer or validator that is not one of kustomize's built-in plugins (a KRM
  function with ``config.kubernetes.io/function``, an exec or Go plugin) is `kustomize-plugin`.

Every kustomization file is read with `source.load` (size, syntax, tags, aliases, duplicate keys:
the `source-*` findings), never a plain YAML loader.
"""

from __future__ import annotations

import os
import posixpath
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from gputenancy.common.findings import Finding, Origin, PipelineError
from gputenancy.inputs.source import Document, load, load_text

KUSTOMIZATION_FILES = ("kustomization.yaml", "kustomization.yml", "Kustomization")
PLATFORM_DIR = "_platform"
TENANT_COMPONENT = "tenants"

_VENDOR = (
    "vendor it: download the files, commit them under base/ (for example base/vendor/<name>/) and"
    " list that directory instead"
)
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")
_HOSTED = re.compile(
    r"^(git@|git::|ssh:|github\.com/|gitlab\.com/|bitbucket\.org/|[a-z0-9-]+(\.[a-z0-9-]+)+(:[0-9]+)?/)"
)
_PATH_LISTS = ("resources", "bases", "components", "crds", "configurations", "patchesStrategicMerge")
_PLUGIN_LISTS = ("generators", "transformers", "validators")
_HELM = ("helmCharts", "helmGlobals", "helmChartInflationGenerator")
_FUNCTION_ANNOTATIONS = ("config.kubernetes.io/function", "config.k8s.io/function")
_BUILTINS = frozenset(
    {
        "AnnotationsTransformer",
        "ConfigMapGenerator",
        "HashTransformer",
        "IAMPolicyGenerator",
        "ImageTagTransformer",
        "LabelTransformer",
        "LegacyOrderTransformer",
        "NamespaceTransformer",
        "PatchJson6902Transformer",
        "PatchStrategicMergeTransformer",
        "PatchTransformer",
        "PrefixSuffixTransformer",
        "PrefixTransformer",
        "SuffixTransformer",
        "ReplacementTransformer",
        "ReplicaCountTransformer",
        "SecretGenerator",
        "SortOrderTransformer",
        "ValueAddTransformer",
    }
)

DOCS = {
    "kustomize-remote": """Kustomizations name only files in the repository: remote bases, resources and
components (URLs, git addresses) are refused, since the pipeline fetches nothing at render time
(what it renders must be what was reviewed, and a remote can change under the same address).
Vendor the content into base/ instead.

Passes: resources: [../../base, _platform].
Fails: resources: [https://github.com/acme/platform//base?ref=v1]; components: [git::https://x/y.git].
""",
    "kustomize-outside": """Every path a kustomization names stays inside base/ or the cluster's overlay
(the directories kustomize is given), and is relative: a path that climbs out of them would let
a pull request read any file of the machine that runs the pipeline.

Passes: overlays/prod/kustomization.yaml resources: [../../base].
Fails: patches: [{path: ../../../../etc/passwd}]; resources: [/etc]; resources: [../../tenants].
""",
    "kustomize-helm": """Helm charts are not inflated by the pipeline (`helmCharts`, `helmGlobals`,
`HelmChartInflationGenerator`): that would download charts and run helm. Render the chart once
(`helm template`), commit the output under base/ and list it in resources.

Passes: resources: [vendor/chart-x.yaml] holding the rendered chart.
Fails: helmCharts: [{name: kueue, repo: https://...}].
""",
    "kustomize-plugin": """Generators, transformers and validators are kustomize's built-in plugins
(`apiVersion: builtin`, e.g. PatchTransformer, LabelTransformer): KRM functions (containers or
exec, `config.kubernetes.io/function`) and Go or exec plugins would run code from the pull request.

Passes: transformers: [labels.yaml] with apiVersion: builtin, kind: LabelTransformer.
Fails: generators: [gen.yaml] with the annotation config.kubernetes.io/function: {exec: {path: ./x}}.
""",
    "cluster-kustomization": """Each overlay has a kustomization.yaml that lists `_platform` in its
resources: the directory where the pipeline puts the rendered cluster layer.

Passes: resources: [../../base, _platform].
Fails: an overlay without kustomization.yaml; resources: [../../base] alone.
""",
}


class _Parsed:
    """The kustomizations loaded in this process, as `source.load` caches files (keyed by path, bytes
    and software): each content is parsed once however many clusters read it (base/ is read for every
    cluster). Every read still checks the path and reads the bytes; a file with problems is never kept."""

    MAX = 1024

    def __init__(self) -> None:
        self.corrupt = 0
        self._entries: dict[str, Any] = {}

    def get(self, kind: str, key: str) -> Any:
        return self._entries.get(key)

    def put(self, kind: str, key: str, value: Any) -> bool:
        if len(self._entries) >= self.MAX:
            self._entries.clear()
        self._entries[key] = value
        return True


_PARSED = _Parsed()


class _Checker:
    def __init__(self, root: Path, cluster: str) -> None:
        self.root = root
        self.cluster = cluster
        self.allowed = ("base", f"overlays/{cluster}")
        self.findings: list[Finding] = []
        self.seen: set[str] = set()
        self.docs: dict[str, Document | None] = {}

    def add(self, origin: Origin, rule: str, message: str) -> None:
        self.findings.append(origin.finding(rule, message))

    def kustomization_in(self, directory: str) -> str | None:
        for name in KUSTOMIZATION_FILES:
            rel = f"{directory}/{name}"
            if os.path.isfile(self.root / rel):
                return rel
        return None

    def read(self, rel: str) -> Document | None:
        if rel in self.docs:
            return self.docs[rel]
        try:
            doc: Document | None = load(Path(rel), self.root, cache=_PARSED)
        except PipelineError as exc:
            self.findings.extend(exc.findings)
            doc = None
        if doc is not None:
            self.findings.extend(doc.findings)
        self.docs[rel] = doc
        return doc

    def resolve(self, doc: Document, base: str, entry: Any, where: tuple[str | int, ...]) -> str | None:
        """The repository-relative path of a file reference, or None after a finding."""
        origin = doc.origin(*where)
        if not isinstance(entry, str) or not entry.strip():
            return None  # kustomize reports malformed entries itself
        rel = posixpath.normpath(posixpath.join(base, entry))
        # kustomize takes an entry for a local path when one exists, else for a remote address.
        local = not rel.startswith(("/", "../")) and os.path.lexists(self.root / rel)
        if _SCHEME.match(entry) or (_HOSTED.match(entry) and not local):
            self.add(origin, "kustomize-remote", f"remote reference {entry!r} is not fetched; {_VENDOR}")
            return None
        if entry.startswith("/") or re.match(r"^[A-Za-z]:[\\/]", entry):
            self.add(origin, "kustomize-outside", f"absolute path {entry!r}: write it relative to {base}/")
            return None
        if rel == ".." or rel.startswith("../"):
            self.add(origin, "kustomize-outside", f"{entry!r} resolves outside the repository")
            return None
        if not any(rel == a or rel.startswith(f"{a}/") for a in self.allowed):
            self.add(
                origin,
                "kustomize-outside",
                f"{entry!r} resolves to {rel}, outside base/ and overlays/{self.cluster}/, the only"
                " directories kustomize is given",
            )
            return None
        return rel

    def kustomization(self, rel: str, plugins: bool = False) -> None:
        if rel in self.seen:
            return
        self.seen.add(rel)
        doc = self.read(rel)
        if doc is None or not isinstance(doc.data, dict):
            return
        base = posixpath.dirname(rel)
        data = doc.data
        for key in _HELM:
            if key in data:
                self.add(
                    doc.key_origin(key),
                    "kustomize-helm",
                    f"{key} would download and run helm; render the chart (helm template), commit the"
                    " output under base/ and list it in resources",
                )
        for field in (*_PATH_LISTS, *_PLUGIN_LISTS):
            items = data.get(field)
            if not isinstance(items, list):
                continue
            for i, entry in enumerate(items):
                inline = isinstance(entry, str) and "\n" in entry
                if inline and field in _PLUGIN_LISTS:
                    self.plugin_text(doc, (field, i), entry)
                    continue
                if inline:
                    continue  # an inline patch
                if field == "resources" and entry == PLATFORM_DIR and base == f"overlays/{self.cluster}":
                    continue
                target = self.resolve(doc, base, entry, (field, i))
                if target is not None:
                    self.follow(target, plugins or field in _PLUGIN_LISTS)
        for field in ("patches", "patchesJson6902", "replacements"):
            for i, item in enumerate(data.get(field) or [] if isinstance(data.get(field), list) else []):
                if isinstance(item, dict) and "path" in item:
                    self.resolve(doc, base, item["path"], (field, i, "path"))
        openapi = data.get("openapi")
        if isinstance(openapi, dict) and "path" in openapi:
            self.resolve(doc, base, openapi["path"], ("openapi", "path"))
        for field in ("configMapGenerator", "secretGenerator"):
            generators = data.get(field)
            for i, item in enumerate(generators if isinstance(generators, list) else []):
                if not isinstance(item, dict):
                    continue
                for key in ("files", "envs"):
                    values = item.get(key)
                    for j, value in enumerate(values if isinstance(values, list) else []):
                        if isinstance(value, str):
                            self.resolve(doc, base, value.split("=", 1)[-1], (field, i, key, j))
                if "env" in item:
                    self.resolve(doc, base, item["env"], (field, i, "env"))

    def follow(self, rel: str, plugins: bool) -> None:
        """Into a referenced directory's kustomization; a file named where plugins are expected is
        read as a plugin configuration."""
        path = self.root / rel
        if path.is_dir():
            inner = self.kustomization_in(rel)
            if inner is not None:
                self.kustomization(inner, plugins)
            return
        if plugins and path.is_file():
            doc = self.read(rel)
            if doc is not None:
                self.plugin(doc, ())

    def plugin_text(self, doc: Document, where: tuple[str | int, ...], text: str) -> None:
        origin = doc.origin(*where)
        try:
            inline = load_text(text, origin.path)
        except PipelineError:
            self.add(origin, "kustomize-plugin", "inline plugin configuration that cannot be read")
            return
        self.plugin(inline, (), origin)

    def plugin(self, doc: Document, where: tuple[str | int, ...], origin: Origin | None = None) -> None:
        data = doc.data
        at = origin or doc.origin(*where)
        if not isinstance(data, dict):
            return
        metadata = data.get("metadata")
        annotations = metadata.get("annotations") if isinstance(metadata, dict) else None
        kind, api = data.get("kind"), data.get("apiVersion")
        if isinstance(annotations, dict) and any(a in annotations for a in _FUNCTION_ANNOTATIONS):
            self.add(
                at,
                "kustomize-plugin",
                f"{kind} is a KRM function: the pipeline runs no containers or programs",
            )
        elif kind == "HelmChartInflationGenerator":
            self.add(
                at,
                "kustomize-helm",
                "HelmChartInflationGenerator would download and run helm; vendor the chart's output into base/",
            )
        elif api != "builtin" or kind not in _BUILTINS:
            self.add(
                at,
                "kustomize-plugin",
                f"{api}/{kind} is not one of kustomize's built-in plugins (apiVersion: builtin);"
                " exec and Go plugins are not run",
            )


def _overlay_findings(checker: _Checker, root: Path, cluster: str) -> Iterator[Finding]:
    rel = f"overlays/{cluster}/kustomization.yaml"
    if not (root / rel).is_file():
        yield Origin(rel).finding(
            "cluster-kustomization", f"{rel} is required (resources: [../../base, {PLATFORM_DIR}])"
        )
        return
    checker.kustomization(rel)
    doc = checker.read(rel)
    if doc is None:
        return  # reported by the checker
    data = doc.data if isinstance(doc.data, dict) else {}
    resources = data.get("resources")
    listed = [str(r).rstrip("/") for r in resources] if isinstance(resources, list) else []
    if PLATFORM_DIR not in listed:
        yield doc.origin().finding(
            "cluster-kustomization",
            f"{rel} must list {PLATFORM_DIR!r} in resources: it is where the pipeline puts the rendered"
            " cluster layer",
        )


def check(root: Path, cluster: str) -> list[Finding]:
    """Findings about the kustomizations kustomize would read for `cluster` (module docstring)."""
    checker = _Checker(root, cluster)
    findings = list(_overlay_findings(checker, root, cluster))
    component = checker.kustomization_in(f"overlays/{cluster}/{TENANT_COMPONENT}")
    if component is not None:
        checker.kustomization(component)
    return sorted(set(findings) | set(checker.findings))


__all__ = ["DOCS", "KUSTOMIZATION_FILES", "PLATFORM_DIR", "check"]
