"""What the hub Argo CD syncs: argocd/hub.yaml (the app-of-apps) and each cluster's `_hub/`
Applications, valid against Argo CD's own CRDs (unknown fields are errors), selected from the rendered
tree with Argo CD's directory semantics, each in the hub's namespace and destined for its cluster."""

from __future__ import annotations

import copy
import functools
import re
import shutil
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import trees
import yaml

from gputenancy.check.kubernetes.crdschema import json_schema
from gputenancy.cli.app import main
from gputenancy.common import proc
from gputenancy.deliver import appset
from gputenancy.render import hub

ARGOCD_VERSION = "v3.5.1"
_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

# ObjectMeta as far as these objects use it; anything else in metadata is an error here.
_OBJECT_META = {
    "type": "object",
    "additionalProperties": False,
    "required": ["name"],
    "properties": {
        "name": {"type": "string", "pattern": r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$", "maxLength": 253},
        "namespace": {"type": "string", "pattern": r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$", "maxLength": 63},
        "labels": {"type": "object", "additionalProperties": {"type": "string"}},
        "annotations": {"type": "object", "additionalProperties": {"type": "string"}},
        "finalizers": {"type": "array", "items": {"type": "string"}},
    },
}


@functools.cache
def _validator(crd_file: Path) -> jsonschema.Draft202012Validator:
    crd = yaml.load(crd_file.read_text(), Loader=_Loader)
    (version,) = [v for v in crd["spec"]["versions"] if v["name"] == "v1alpha1"]
    schema = json_schema(version["schema"]["openAPIV3Schema"])  # strict: unknown fields are errors
    schema["properties"]["metadata"] = _OBJECT_META
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def crd_errors(shared: Path, kind: str, body: Any) -> list[str]:
    crd_file = shared / "argocd" / ARGOCD_VERSION / "crds" / f"{kind.lower()}-crd.yaml"
    assert crd_file.is_file(), crd_file
    assert body["apiVersion"] == "argoproj.io/v1alpha1" and body["kind"] == kind
    return [
        f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in _validator(crd_file).iter_errors(body)
    ]


def hub_objects(root: Path) -> dict[str, dict[str, Any]]:
    """argocd/hub.yaml's objects by kind (AppProject, ConfigMap, Application)."""
    text = (root / appset.PATH).read_text()
    assert text.startswith(appset.HEADER)
    found = {d["kind"]: d for d in yaml.load_all(text, Loader=_Loader) if d}
    assert len(found) == len([d for d in yaml.load_all(text, Loader=_Loader) if d]), "one object per kind"
    return found


def root_app(root: Path) -> dict[str, Any]:
    body = hub_objects(root)["Application"]
    assert isinstance(body, dict)
    return body


# ---------------------------------------------------------------- Argo CD's directory semantics


def _glob(pattern: str) -> re.Pattern[str]:
    """Argo CD's `directory.include`/`exclude` glob (util/glob without separators): `*` matches any
    run of characters, `/` included; `?` one; `{a,b}` either."""
    out, i = "", 0
    while i < len(pattern):
        c = pattern[i]
        if c == "*":
            out += ".*"
        elif c == "?":
            out += "."
        elif c == "{":
            close = pattern.index("}", i)
            out += "(?:" + "|".join(re.escape(a) for a in pattern[i + 1 : close].split(",")) + ")"
            i = close
        else:
            out += re.escape(c)
        i += 1
    return re.compile(out + r"\Z", re.S)


def directory_files(repo: Path, app: dict[str, Any]) -> list[str]:
    """The files a directory-type Application syncs (reposerver `findManifests`): under its path,
    recursively when `recurse`, names ending .yaml/.yml/.json, the path relative to the Application's
    path matched against `exclude` and `include`."""
    source = app["spec"]["source"]
    directory = source.get("directory", {})
    base = repo / source["path"]
    found = base.rglob("*") if directory.get("recurse") else base.glob("*")
    out = []
    for path in sorted(p for p in found if p.is_file()):
        rel = path.relative_to(base).as_posix()
        if not re.search(r"\.(yaml|yml|json)$", path.name):
            continue
        if "exclude" in directory and _glob(directory["exclude"]).match(rel):
            continue
        if "include" in directory and not _glob(directory["include"]).match(rel):
            continue
        out.append(f"{source['path']}/{rel}")
    return out


def kustomize_objects(repo: Path, files: list[str], tmp_path: Path) -> list[dict[str, Any]]:
    """The objects of `files` as the real kustomize reads them (no transformation): each file must be
    a valid Kubernetes object, and no two the same object."""
    work = tmp_path / "synced"
    for rel in files:
        (work / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(repo / rel, work / rel)
    (work / "kustomization.yaml").write_text(yaml.safe_dump({"resources": files}))
    built = proc.run([*proc.kustomize_command(), str(work)])
    return [d for d in yaml.load_all(built.out, Loader=_Loader) if d]


def hub_sync(repo: Path, tmp_path: Path) -> dict[str, dict[str, Any]]:
    """What the app-of-apps puts into the hub, by name."""
    files = directory_files(repo, root_app(repo))
    return {o["metadata"]["name"]: o for o in kustomize_objects(repo, files, tmp_path)}


# ---------------------------------------------------------------- Argo CD's schemas


def test_root_application_is_valid_against_the_crd(shared: Path) -> None:
    body = root_app(trees.FIXTURE)
    assert crd_errors(shared, "Application", body) == []
    assert body["metadata"]["namespace"] == "argocd" and body["metadata"]["name"] == "gputenancy"
    assert body["spec"]["destination"] == {"server": "https://kubernetes.default.svc", "namespace": "argocd"}
    assert body["spec"]["source"]["targetRevision"] == "deploy"
    assert "finalizers" not in body["metadata"], "deleting the root must not delete the clusters' objects"


def test_the_crd_check_rejects_unknown_fields(shared: Path) -> None:
    """The schema is strict: a misspelt field anywhere is an error, as the API server would prune it."""
    for path in (("spec", "syncPolicy", "automated"), ("spec", "source", "directory"), ("metadata",)):
        body = copy.deepcopy(root_app(trees.FIXTURE))
        node = body
        for key in path:
            node = node[key]
        node["selfHeel"] = True
        assert any("selfHeel" in e for e in crd_errors(shared, "Application", body)), path


def test_every_hub_application_is_valid_against_the_crd(shared: Path) -> None:
    found = sorted((trees.FIXTURE / "generated").glob(f"*/{hub.HUB_DIR}/application/*/*.yaml"))
    assert len(found) == 4, "two clusters, two Applications each"
    for path in found:
        body = yaml.load(path.read_text(), Loader=_Loader)
        assert crd_errors(shared, "Application", body) == [], path
        if "helm" not in body["spec"]["source"]:
            continue  # the install: manifests Application (tests/test_kueue_install.py)
        bad = copy.deepcopy(body)
        bad["spec"]["source"]["helm"]["valuesFile"] = "x"
        assert crd_errors(shared, "Application", bad), "unknown fields are errors"
        # valuesObject preserves unknown fields: chart values are free-form.
        ok = copy.deepcopy(body)
        ok["spec"]["source"]["helm"]["valuesObject"]["anything"] = {"goes": 1}
        assert crd_errors(shared, "Application", ok) == []


# ---------------------------------------------------------------- what the hub syncs


def test_the_hub_syncs_every_application_into_its_namespace_destined_for_the_cluster(
    shared: Path, tmp_path: Path
) -> None:
    """lab is the hub's own cluster (server https://kubernetes.default.svc), prod a remote one
    reached by its registered name: both get their install and their objects from the hub."""
    apps = hub_sync(trees.FIXTURE, tmp_path)
    assert set(apps) == {"gputenancy-lab", "gputenancy-prod", "kueue-lab", "kueue-prod"}
    for name, app in apps.items():
        assert app["kind"] == "Application" and app["metadata"]["namespace"] == "argocd", name
        assert "finalizers" not in app["metadata"], f"{name}: its removal must not cascade"
        assert app["metadata"]["labels"]["gputenancy.io/cluster"] == name.split("-", 1)[1], name
        assert crd_errors(shared, "Application", app) == [], name
    in_cluster = {"server": "https://kubernetes.default.svc"}
    assert apps["gputenancy-lab"]["spec"]["destination"] == in_cluster
    assert apps["kueue-lab"]["spec"]["destination"] == {**in_cluster, "namespace": "kueue-system"}
    assert apps["gputenancy-prod"]["spec"]["destination"] == {"name": "prod"}
    assert apps["kueue-prod"]["spec"]["destination"] == {"name": "prod", "namespace": "kueue-system"}
    # the install carries the Configuration that maps DeviceClasses to quota resources
    patches = apps["kueue-prod"]["spec"]["source"]["kustomize"]["patches"]
    assert "deviceClassMappings" in patches[0]["patch"]


def test_each_spoke_application_syncs_its_cluster_directory_but_the_hub_part(tmp_path: Path) -> None:
    apps = hub_sync(trees.FIXTURE, tmp_path)
    for cluster in ("lab", "prod"):
        app = apps[f"gputenancy-{cluster}"]
        files = directory_files(trees.FIXTURE, app)
        everything = sorted(
            f"generated/{cluster}/{p.relative_to(trees.FIXTURE / 'generated' / cluster).as_posix()}"
            for p in (trees.FIXTURE / "generated" / cluster).rglob("*.yaml")
        )
        hub_files = [f for f in everything if f"/{hub.HUB_DIR}/" in f]
        assert hub_files and files == [f for f in everything if f not in hub_files]
        objects = kustomize_objects(trees.FIXTURE, files, tmp_path / cluster)
        kinds = {o["kind"] for o in objects}
        assert "ClusterQueue" in kinds and "Application" not in kinds
        assert app["spec"]["source"]["path"] == f"generated/{cluster}"
        assert app["metadata"]["labels"]["gputenancy.io/cluster"] == cluster
        sync = app["spec"]["syncPolicy"]
        assert sync["automated"] == {"prune": True, "selfHeal": True}
        assert sync["syncOptions"][:2] == ["ServerSideApply=true", "CreateNamespace=false"]


def test_the_globs_split_trees_whatever_the_names(tmp_path: Path) -> None:
    """A tenant namespace or object named like the hub directory does not move to the hub."""
    assert _glob(hub.HUB_GLOB).match("prod/_hub/application/argocd/kueue-prod.yaml")
    assert not _glob(hub.HUB_GLOB).match("prod/localqueue/hub/hub.yaml")
    assert _glob(hub.SPOKE_EXCLUDE).match("_hub/application/argocd/gputenancy-prod.yaml")
    assert not _glob(hub.SPOKE_EXCLUDE).match("localqueue/hub/_hub.yaml")
    assert not _glob("{a,b}/x").match("c/x") and _glob("{a,b}/x").match("b/x")


def test_ignore_differences_only_for_kueue_finalizers(tmp_path: Path) -> None:
    app = hub_sync(trees.FIXTURE, tmp_path)["gputenancy-prod"]
    assert app["spec"]["ignoreDifferences"] == [
        {"group": "kueue.x-k8s.io", "kind": "ClusterQueue", "jsonPointers": ["/metadata/finalizers"]},
        {"group": "kueue.x-k8s.io", "kind": "ResourceFlavor", "jsonPointers": ["/metadata/finalizers"]},
    ]


def test_objects_carry_the_sync_waves_the_applications_rely_on() -> None:
    """Every object the pipeline renders is ordered (static base/ objects go in the default wave 0)."""
    rendered = 0
    for path in sorted((trees.FIXTURE / "generated").rglob("*.yaml")):
        annotations = yaml.load(path.read_text(), Loader=_Loader)["metadata"].get("annotations", {})
        if "gputenancy.io/source" in annotations:
            rendered += 1
            assert "argocd.argoproj.io/sync-wave" in annotations, path
    assert rendered > 10


def test_a_cluster_without_argocd_settings_goes_to_the_cluster_of_its_name(tmp_path: Path) -> None:
    root = trees.example(tmp_path)
    trees.edit(root, "overlays/prod/cluster.yaml", lambda d: d.pop("argocd"))
    assert main(["--root", str(root), "render"]) == 0
    apps = hub_sync(root, tmp_path)
    assert apps["gputenancy-prod"]["spec"]["destination"] == {"name": "prod"}
    trees.edit(root, "overlays/prod/cluster.yaml", lambda d: d.update(argocd={"name": "prod-eu"}))
    assert main(["--root", str(root), "render"]) == 0
    apps = hub_sync(root, tmp_path / "again")
    assert apps["gputenancy-prod"]["spec"]["destination"] == {"name": "prod-eu"}
    assert apps["kueue-prod"]["spec"]["destination"] == {"name": "prod-eu", "namespace": "kueue-system"}


def test_settings_and_defaults(tmp_path: Path) -> None:
    root = trees.example(tmp_path)
    trees.edit(root, "base/platform.yaml", lambda d: d.update(argocd={"repoURL": "git@example.com:x/y.git"}))
    assert main(["--root", str(root), "render"]) == 0
    body = root_app(root)
    assert body["metadata"] == {
        "name": "gputenancy",
        "namespace": "argocd",
        "labels": {"app.kubernetes.io/managed-by": "gputenancy"},
    }
    assert body["spec"]["source"] == {
        "repoURL": "git@example.com:x/y.git",
        "targetRevision": "HEAD",
        "path": "generated",
        "directory": {"recurse": True, "include": "*/_hub/*"},
    }
    assert body["spec"]["project"] == "default"
    spoke = hub_sync(root, tmp_path)["gputenancy-prod"]
    assert spoke["spec"]["source"]["repoURL"] == "git@example.com:x/y.git"


def test_another_argocd_namespace_moves_every_application(tmp_path: Path) -> None:
    root = trees.example(tmp_path)
    trees.edit(root, "base/platform.yaml", lambda d: d["argocd"].update(namespace="gitops"))
    assert main(["--root", str(root), "render"]) == 0
    assert root_app(root)["spec"]["destination"]["namespace"] == "gitops"
    apps = hub_sync(root, tmp_path)
    assert {a["metadata"]["namespace"] for a in apps.values()} == {"gitops"}


# ---------------------------------------------------------------- render and check


def test_check_lists_a_stale_root_application_and_render_fixes_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = trees.example(tmp_path)
    assert main(["--root", str(root), "render"]) == 0
    assert main(["--root", str(root), "check"]) == 0
    platform = root / "base/platform.yaml"
    platform.write_text(platform.read_text().replace("targetRevision: deploy", "targetRevision: release"))
    capsys.readouterr()
    assert main(["--root", str(root), "check"]) == 1
    out = capsys.readouterr().out
    assert "out of date" in out and "~ argocd/hub.yaml" in out
    assert main(["--root", str(root), "render"]) == 0
    assert "argocd/hub.yaml" in capsys.readouterr().out
    assert "targetRevision: release" in (root / appset.PATH).read_text()
    assert main(["--root", str(root), "check"]) == 0


def test_the_retired_applicationset_is_removed_when_the_pipeline_wrote_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = trees.example(tmp_path)
    old = root / appset.RETIRED
    old.parent.mkdir(exist_ok=True)
    old.write_text(f"{appset.HEADER} from base/platform.yaml; do not edit.\nkind: ApplicationSet\n")
    assert main(["--root", str(root), "check"]) == 1
    assert f"- {appset.RETIRED}" in capsys.readouterr().out
    assert main(["--root", str(root), "render"]) == 0
    assert not old.exists()
    old.write_text("# mine\n")  # a hand-written file there is not the pipeline's: left alone
    assert main(["--root", str(root), "check"]) == 0


def test_without_settings_no_root_application_and_an_old_one_is_removed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = trees.example(tmp_path)
    assert main(["--root", str(root), "render"]) == 0
    trees.edit(root, "base/platform.yaml", lambda d: d.pop("argocd"))
    capsys.readouterr()
    assert main(["--root", str(root), "check"]) == 1
    assert "- argocd/hub.yaml" in capsys.readouterr().out
    assert main(["--root", str(root), "render"]) == 0
    assert not (root / appset.PATH).exists()
    assert main(["--root", str(root), "check"]) == 0
    # without a repository to read, only the installs are rendered, still for the hub
    left = sorted(p.name for p in (root / "generated").glob(f"*/{hub.HUB_DIR}/application/argocd/*"))
    assert left == ["kueue-lab.yaml", "kueue-prod.yaml"]


@pytest.mark.parametrize(
    ("rel", "change", "message"),
    [
        (
            "overlays/prod/cluster.yaml",
            lambda d: d.update(argocd={"server": "https://x", "name": "prod"}),
            "has too many properties",
        ),
        (
            "overlays/prod/cluster.yaml",
            lambda d: d.update(argocd={"sever": "https://x"}),
            "did you mean 'server'",
        ),
        ("overlays/prod/cluster.yaml", lambda d: d.update(argocd={"server": "prod"}), "is not valid"),
        ("base/platform.yaml", lambda d: d["argocd"].update(repoUrl="x"), "did you mean 'repoURL'"),
        ("base/platform.yaml", lambda d: d["argocd"].update(path="../elsewhere"), "$.argocd.path"),
        (
            "base/platform.yaml",
            lambda d: d.update(argocd={"project": "p"}),
            "'repoURL' is a required property",
        ),
    ],
)
def test_settings_are_checked_by_the_schemas(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], rel: str, change: Any, message: str
) -> None:
    root = trees.example(tmp_path)
    trees.edit(root, rel, change)
    assert main(["--root", str(root), "validate"]) == 1
    out = capsys.readouterr().out
    assert rel in out and message in out, out


def test_the_install_applications_follow_the_platform_project(tmp_path: Path) -> None:
    """`argocd.project` places every Application the hub syncs, Kueue's install included; an explicit
    `kueue.manifests.project` (or `kueue.helm.project`) still wins for its cluster."""
    root = trees.example(tmp_path)
    trees.edit(root, "base/platform.yaml", lambda d: d["argocd"].update(project="gpu-platform"))
    assert main(["--root", str(root), "render"]) == 0
    assert root_app(root)["spec"]["project"] == "gpu-platform"
    apps = hub_sync(root, tmp_path)
    assert {name: a["spec"]["project"] for name, a in apps.items()} == dict.fromkeys(apps, "gpu-platform")
    install = trees.read(root, "overlays/prod/cluster.yaml")["kueue"]["install"]
    trees.edit(
        root, "overlays/prod/cluster.yaml", lambda d: d["kueue"].update({install: {"project": "kueue"}})
    )
    assert main(["--root", str(root), "render"]) == 0
    assert hub_sync(root, tmp_path / "again")["kueue-prod"]["spec"]["project"] == "kueue"
