"""argocd/applicationset.yaml: valid against Argo CD's own CRDs (unknown fields are errors), and the
Applications it generates are the ones each cluster needs."""

from __future__ import annotations

import copy
import functools
import re
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import trees
import yaml

from gputenancy.check.crdschema import json_schema
from gputenancy.cli import main
from gputenancy.deliver import appset
from gputenancy.inputs import spec

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


def committed() -> dict[str, Any]:
    text = (trees.FIXTURE / appset.PATH).read_text()
    assert text.startswith(appset.HEADER)
    body = yaml.load(text, Loader=_Loader)
    assert isinstance(body, dict)
    return body


def model(root: Path) -> spec.Model:
    loaded, findings = spec.load_model(root)
    assert not findings
    return loaded


# ---------------------------------------------------------------- Argo CD's schemas


def test_applicationset_is_valid_against_the_crd(shared: Path) -> None:
    assert crd_errors(shared, "ApplicationSet", committed()) == []


def test_the_crd_check_rejects_unknown_fields(shared: Path) -> None:
    """The schema is strict: a misspelt field anywhere is an error, as the API server would prune it."""
    for path in (
        ("spec", "template", "spec", "syncPolicy", "automated"),
        ("spec", "syncPolicy"),
        ("metadata",),
    ):
        body = copy.deepcopy(committed())
        node = body
        for key in path:
            node = node[key]
        node["selfHeel"] = True
        assert any("selfHeel" in e for e in crd_errors(shared, "ApplicationSet", body)), path


def test_helm_application_is_valid_against_the_crd(shared: Path) -> None:
    """The Kueue Application that `render` writes for clusters with kueue.install: helm."""
    found = sorted((trees.FIXTURE / "generated").glob("*/application/*/*.yaml"))
    assert found, "the lab cluster installs Kueue from its chart"
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


# ---------------------------------------------------------------- what Argo CD generates from it


def _generated_dirs(root: Path, pattern: str) -> list[str]:
    """What the git directory generator lists: directories matching `<path>/*`."""
    base = pattern.rstrip("*").rstrip("/")
    return sorted(
        f"{base}/{p.name}" for p in (root / base).iterdir() if p.is_dir() and not p.name.startswith(".")
    )


def _substitute(value: Any, params: dict[str, str]) -> Any:
    """Argo CD's default (fasttemplate) rendering: `{{key}}` replaced in every string."""
    if isinstance(value, dict):
        return {k: _substitute(v, params) for k, v in value.items()}
    if isinstance(value, list):
        return [_substitute(v, params) for v in value]
    if isinstance(value, str):
        return re.sub(r"\{\{\s*([^{}\s]+)\s*\}\}", lambda m: params.get(m.group(1), m.group(0)), value)
    return value


def generate(root: Path, body: dict[str, Any]) -> list[dict[str, Any]]:
    """The Applications Argo CD would create: git directories merged with the list on path.basename."""
    s = body["spec"]
    assert s["goTemplate"] is False
    ((kind, merge),) = s["generators"][0].items()
    assert kind == "merge"
    git, listed = merge["generators"][0]["git"], merge["generators"][1]["list"]
    (key,) = merge["mergeKeys"]
    assert key == "path.basename"
    base = [
        {"path": d, "path.basename": d.rsplit("/", 1)[1]}
        for item in git["directories"]
        for d in _generated_dirs(root, item["path"])
    ]
    overrides = {e[key]: e for e in listed["elements"]}
    assert len(overrides) == len(listed["elements"]), "merge keys must be unique"
    apps = []
    for params in base:
        merged = {**params, **overrides.get(params[key], {})}
        app = _substitute(s["template"], merged)
        apps.append({"apiVersion": "argoproj.io/v1alpha1", "kind": "Application", **app})
    return apps


def test_one_application_per_cluster_with_its_destination(shared: Path) -> None:
    body = committed()
    apps = {a["metadata"]["name"]: a for a in generate(trees.FIXTURE, body)}
    assert set(apps) == {"gputenancy-lab", "gputenancy-prod"}
    lab, prod = apps["gputenancy-lab"], apps["gputenancy-prod"]
    assert lab["spec"]["destination"] == {"server": "https://kubernetes.default.svc", "name": ""}
    assert prod["spec"]["destination"] == {"server": "", "name": "prod"}
    for name, app in apps.items():
        cluster = name.removeprefix("gputenancy-")
        text = yaml.safe_dump(app)
        assert "{{" not in text, f"{name}: a parameter was not replaced"
        dest = app["spec"]["destination"]
        assert bool(dest["server"]) != bool(dest["name"]), "exactly one of server and name"
        source = app["spec"]["source"]
        assert source == {
            "repoURL": "https://github.com/acme/gpu-tenancy.git",
            "targetRevision": "deploy",
            "path": f"generated/{cluster}",
            "directory": {"recurse": True},
        }
        assert app["metadata"]["labels"]["gputenancy.io/cluster"] == cluster
        sync = app["spec"]["syncPolicy"]
        assert sync["automated"] == {"prune": True, "selfHeal": True}
        assert sync["syncOptions"][:2] == ["ServerSideApply=true", "CreateNamespace=false"]
        assert crd_errors(shared, "Application", app) == [], name


def test_ignore_differences_only_for_kueue_finalizers() -> None:
    (app, *_) = generate(trees.FIXTURE, committed())
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
    text = appset.render(model(root))
    assert text is not None
    elements = yaml.safe_load(text)["spec"]["generators"][0]["merge"]["generators"][1]["list"]["elements"]
    assert {"path.basename": "prod", "destinationServer": "", "destinationName": "prod"} in elements


def test_settings_and_defaults(tmp_path: Path) -> None:
    root = trees.example(tmp_path)
    trees.edit(root, "base/platform.yaml", lambda d: d.update(argocd={"repoURL": "git@example.com:x/y.git"}))
    body = yaml.safe_load(appset.render(model(root)) or "")
    assert body["metadata"] == {
        "name": "gputenancy",
        "namespace": "argocd",
        "labels": {"app.kubernetes.io/managed-by": "gputenancy"},
    }
    git = body["spec"]["generators"][0]["merge"]["generators"][0]["git"]
    assert git == {
        "repoURL": "git@example.com:x/y.git",
        "revision": "HEAD",
        "directories": [{"path": "generated/*"}],
    }
    assert body["spec"]["template"]["spec"]["project"] == "default"


# ---------------------------------------------------------------- render and check


def test_check_lists_a_stale_applicationset_and_render_fixes_it(
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
    assert "out of date" in out and "~ argocd/applicationset.yaml" in out
    assert "generated/ is out of date" not in out
    assert main(["--root", str(root), "render"]) == 0
    assert "argocd/applicationset.yaml" in capsys.readouterr().out
    assert "targetRevision: release" in (root / appset.PATH).read_text()
    assert main(["--root", str(root), "check"]) == 0


def test_without_settings_no_applicationset_and_an_old_one_is_removed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = trees.example(tmp_path)
    assert main(["--root", str(root), "render"]) == 0
    trees.edit(root, "base/platform.yaml", lambda d: d.pop("argocd"))
    capsys.readouterr()
    assert main(["--root", str(root), "check"]) == 1
    assert "- argocd/applicationset.yaml" in capsys.readouterr().out
    assert main(["--root", str(root), "render"]) == 0
    assert not (root / appset.PATH).exists()
    assert main(["--root", str(root), "check"]) == 0
    # A hand-written file there is not the pipeline's: left alone.
    (root / appset.PATH).write_text("# mine\n")
    assert main(["--root", str(root), "check"]) == 0


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
