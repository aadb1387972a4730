"""Build a rendered Kueue install Application the way Argo CD does and compare it with the release.

Argo CD checks out `spec.source.repoURL` at `targetRevision`, runs `kustomize edit set image` for each
`kustomize.images` entry in `path`, appends `kustomize.patches` to that directory's kustomization.yaml,
and builds it. This script does the same from a local clone of Kueue's repository (`git archive` of
the tag, `kubectl kustomize`) and compares the result with the release's manifests.yaml: every object
must be identical but for the manager Configuration and the checksum annotation the patches set.

Used when adding a Kueue version (docs/adding-a-kueue-version.md); needs a clone of
https://github.com/kubernetes-sigs/kueue with its tags, so it is not part of the tests.

Usage: python tools/verify_kueue_application.py KUEUE_CLONE APPLICATION.yaml RELEASE_MANIFESTS.yaml
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path
from typing import Any

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from gputenancy.common import proc
from gputenancy.versions import kueue


def build(clone: Path, app: dict[str, Any], work: Path) -> list[dict[str, Any]]:
    source = app["spec"]["source"]
    tar = work / "source.tar"
    top = source["path"].split("/")[0]
    proc.run(["git", "-C", str(clone), "archive", "-o", str(tar), source["targetRevision"], top])
    proc.run(["tar", "-x", "-f", str(tar), "-C", str(work)])
    kustomization = work / source["path"] / "kustomization.yaml"
    body = yaml.safe_load(kustomization.read_text())
    for entry in source["kustomize"].get("images", []):
        name, _, new = entry.partition("=")
        new_name, _, tag = new.rpartition(":")
        body.setdefault("images", []).append({"name": name, "newName": new_name, "newTag": tag})
    body["patches"] = [*body.get("patches", []), *source["kustomize"].get("patches", [])]
    kustomization.write_text(yaml.safe_dump(body, sort_keys=False))
    out = proc.run([*proc.kustomize_command(), str(work / source["path"])]).out
    return [d for d in yaml.safe_load_all(out) if d]


def key(obj: dict[str, Any]) -> tuple[str, str, str]:
    meta = obj.get("metadata", {})
    return obj["kind"], meta.get("namespace", ""), meta["name"]


def main(argv: list[str]) -> int:
    clone, app_file, release_file = (Path(a) for a in argv)
    app = yaml.safe_load(app_file.read_text())
    release = {key(o): o for o in yaml.safe_load_all(release_file.read_text()) if o}
    with tempfile.TemporaryDirectory() as tmp:
        built = {key(o): o for o in build(clone, app, Path(tmp))}
    problems = [f"missing: {k}" for k in release if k not in built]
    problems += [f"extra: {k}" for k in built if k not in release]
    changed = sorted(k for k in release.keys() & built.keys() if release[k] != built[k])
    for k in changed:
        print(f"patched: {k[0]} {k[1]}/{k[2]}")
    rel = kueue.for_version(app["spec"]["source"]["targetRevision"]).release
    expected = {
        ("ConfigMap", rel.namespace, rel.configmap_installed_name),
        ("Deployment", rel.namespace, rel.deployment_installed_name),
    }
    problems += [f"changed beyond the patches: {k}" for k in changed if k not in expected]
    problems += [f"not patched: {k}" for k in expected if k not in changed]
    for p in problems:
        print(p, file=sys.stderr)
    print(f"{len(built)} objects built; {'OK' if not problems else f'{len(problems)} problem(s)'}")
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
