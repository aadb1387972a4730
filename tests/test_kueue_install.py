"""install: manifests: one Argo CD Application owns the Kueue install and its Configuration.

The Application's kustomize settings are applied by the real kustomize to Kueue's release manifests
(../shared/kueue/<tag>/manifests.yaml) the way Argo CD applies them inside Kueue's config/default (where
the ConfigMap and Deployment do not have the `kueue-` name prefix yet, and the manager image is the
staging one): the only differences from the release are the Configuration and the restart checksum.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import minirepo
import pytest
import test_appset
import yaml

from gputenancy import engine, proc
from gputenancy.findings import PipelineError
from gputenancy.objects import to_yaml
from gputenancy.versions import kueue as kueue_versions

# The release manifests are 1.7 MB of CRDs: the C loader and dumper read and write them in a fraction of the time.
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)

TAGS = ("v0.18.1", "v0.19.2")
STAGING_IMAGE = "us-central1-docker.pkg.dev/k8s-staging-images/kueue/kueue:main"


def render(root: Path) -> engine.Result:
    result = engine.run(root, cache=None)
    assert not result.failed, [f.format() for f in result.findings]
    return result


def objects(result: engine.Result, cluster: str) -> list[dict[str, Any]]:
    return [dict(o.body) for o in result.clusters[cluster].objects]


def the_application(result: engine.Result, cluster: str) -> dict[str, Any]:
    (app,) = [
        o
        for o in objects(result, cluster)
        if o["kind"] == "Application" and o["metadata"]["name"].startswith("kueue-")
    ]
    return app


@pytest.mark.parametrize("tag", TAGS)
def test_one_application_owns_the_install_and_nothing_else_delivers_the_configmap(
    tmp_path: Path, tag: str, shared: Path
) -> None:
    root = minirepo.make(tmp_path, [minirepo.cluster("c1", kueue=tag)])
    result = render(root)
    kinds = sorted(o["kind"] for o in objects(result, "c1"))
    assert "ConfigMap" not in kinds and "Deployment" not in kinds
    app = the_application(result, "c1")
    source = app["spec"]["source"]
    assert source["repoURL"] == "https://github.com/kubernetes-sigs/kueue.git"
    assert source["targetRevision"] == tag and source["path"] == "config/default"
    assert source["kustomize"]["images"] == [
        f"us-central1-docker.pkg.dev/k8s-staging-images/kueue/kueue=registry.k8s.io/kueue/kueue:{tag}"
    ]
    assert app["spec"]["destination"]["namespace"] == "kueue-system"
    assert "ServerSideApply=true" in app["spec"]["syncPolicy"]["syncOptions"]
    assert test_appset.crd_errors(shared, "Application", app) == []
    bad = yaml.safe_load(to_yaml(app))
    bad["spec"]["source"]["kustomize"]["patches"][0]["patchh"] = "x"
    assert test_appset.crd_errors(shared, "Application", bad), "unknown fields are errors"


def _release_inside_config_default(shared: Path, tag: str) -> list[dict[str, Any]]:
    """The release's objects as config/default holds them before its own transformers: the two patched
    objects without the name prefix, the manager with the staging image."""
    release = kueue_versions.for_version(tag).release
    docs = [
        d for d in yaml.load_all((shared / "kueue" / tag / "manifests.yaml").read_text(), Loader=_LOADER) if d
    ]
    for d in docs:
        name = d["metadata"]["name"]
        if d["kind"] == "ConfigMap" and name == release.configmap_installed_name:
            d["metadata"]["name"] = release.configmap_name
        if d["kind"] == "Deployment" and name == release.deployment_installed_name:
            d["metadata"]["name"] = release.deployment_name
            for c in d["spec"]["template"]["spec"]["containers"]:
                c["image"] = STAGING_IMAGE
    return docs


def _kustomize(directory: Path, resources: list[dict[str, Any]], app: dict[str, Any]) -> list[dict[str, Any]]:
    """What Argo CD does with spec.source.kustomize: `kustomize edit set image`, patches appended."""
    directory.mkdir()
    (directory / "release.yaml").write_text(yaml.dump_all(resources, Dumper=_DUMPER, sort_keys=False))
    images = []
    for entry in app["spec"]["source"]["kustomize"]["images"]:
        name, _, new = entry.partition("=")
        new_name, _, tag = new.rpartition(":")
        images.append({"name": name, "newName": new_name, "newTag": tag})
    kustomization = {
        "resources": ["release.yaml"],
        "images": images,
        "patches": app["spec"]["source"]["kustomize"]["patches"],
    }
    (directory / "kustomization.yaml").write_text(yaml.safe_dump(kustomization, sort_keys=False))
    out = proc.run([*proc.kustomize_command(), str(directory)]).out
    return [d for d in yaml.load_all(out, Loader=_LOADER) if d]


@pytest.mark.parametrize("tag", TAGS)
def test_the_patches_change_exactly_the_configuration_and_the_restart_trigger(
    tmp_path: Path, tag: str, shared: Path
) -> None:
    root = minirepo.make(tmp_path / "repo", [minirepo.cluster("c1", kueue=tag)])
    result = render(root)
    app = the_application(result, "c1")
    before = _release_inside_config_default(shared, tag)
    after = _kustomize(tmp_path / "k", before, app)
    key = lambda d: (d["kind"], d["metadata"].get("namespace", ""), d["metadata"]["name"])  # noqa: E731
    old, new = {key(d): d for d in before}, {key(d): d for d in after}
    assert old.keys() == new.keys()
    release = kueue_versions.for_version(tag).release
    changed = sorted(k for k in old if old[k] != new[k])
    cm_key = ("ConfigMap", "kueue-system", release.configmap_name)
    deploy_key = ("Deployment", "kueue-system", release.deployment_name)
    assert changed == sorted([cm_key, deploy_key])
    config_text = new[cm_key]["data"][release.configmap_key]
    config = yaml.safe_load(config_text)
    assert config["kind"] == "Configuration"
    assert config["resources"]["deviceClassMappings"] == [
        {"name": "nvidia.com/gpu", "deviceClassNames": ["gpu.nvidia.com"]}
    ]
    template = new[deploy_key]["spec"]["template"]
    checksum = template["metadata"]["annotations"]["gputenancy.io/kueue-config-checksum"]
    assert checksum == hashlib.sha256(config_text.encode()).hexdigest()
    assert template["spec"]["containers"][0]["image"] == f"registry.k8s.io/kueue/kueue:{tag}"
    # Everything else in the Deployment is the release's.
    released = yaml.load_all((shared / "kueue" / tag / "manifests.yaml").read_text(), Loader=_LOADER)
    (original,) = [d for d in released if d and d["kind"] == "Deployment"]
    del template["metadata"]["annotations"]["gputenancy.io/kueue-config-checksum"]
    assert new[deploy_key]["spec"] == original["spec"]


def test_a_configuration_change_changes_only_the_patches(tmp_path: Path) -> None:
    root = minirepo.make(tmp_path, [minirepo.cluster("c1")])
    first = the_application(render(root), "c1")
    minirepo.dump(
        root / "overlays" / "c1" / "cluster.yaml",
        minirepo.cluster("c1", config={"clientConnection": {"qps": 77, "burst": 99}}),
    )
    second = the_application(render(root), "c1")
    assert first["spec"]["source"]["kustomize"]["images"] == second["spec"]["source"]["kustomize"]["images"]
    p1, p2 = first["spec"]["source"]["kustomize"]["patches"], second["spec"]["source"]["kustomize"]["patches"]
    assert "qps: 77" in p2[0]["patch"] and "qps: 77" not in p1[0]["patch"]
    assert p1[1]["patch"] != p2[1]["patch"]  # the checksum rolls the manager


def test_mirrors_and_argocd_settings(tmp_path: Path, shared: Path) -> None:
    settings = {
        "repoURL": "https://git.internal/mirrors/kueue.git",
        "image": "registry.internal/kueue/kueue",
        "project": "platform",
        "argocdNamespace": "gitops",
        "destinationServer": "https://prod.example:6443",
    }
    # destinationServer (kept for older files) must be the cluster's own destination
    cluster = {
        **minirepo.cluster("c1", manifests=settings),
        "argocd": {"server": "https://prod.example:6443"},
    }
    root = minirepo.make(tmp_path, [cluster])
    app = the_application(render(root), "c1")
    assert app["metadata"]["namespace"] == "gitops" and app["spec"]["project"] == "platform"
    assert app["spec"]["source"]["repoURL"] == settings["repoURL"]
    assert app["spec"]["source"]["kustomize"]["images"][0].endswith("=registry.internal/kueue/kueue:v0.19.2")
    assert app["spec"]["destination"]["server"] == "https://prod.example:6443"
    assert test_appset.crd_errors(shared, "Application", app) == []


@pytest.mark.parametrize(
    ("kueue_fields", "message"),
    [
        ({"namespace": "kueue"}, "Kueue's release manifests install into 'kueue-system', not 'kueue'"),
        ({"install": "helm", "manifests": {}}, "kueue.manifests is only used with kueue.install: manifests"),
    ],
)
def test_settings_that_cannot_work(tmp_path: Path, kueue_fields: dict[str, Any], message: str) -> None:
    root = minirepo.make(tmp_path, [minirepo.cluster("c1", **kueue_fields)])
    with pytest.raises(PipelineError) as raised:
        engine.run(root, cache=None)
    found = raised.value.findings
    assert any(f.rule == "cluster-install" and message in f.message for f in found), found
