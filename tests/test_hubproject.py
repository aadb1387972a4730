"""What the hub needs besides the Applications, in argocd/hub.yaml: the platform's AppProject, valid
against Argo CD's AppProject CRD and, under Argo CD's documented matching rules, permitting exactly
what the pipeline delivers (every Application's destination and source, every rendered object, Kueue's
install) and refusing any other cluster, namespace, kind or repository; the health checks in argocd-cm;
all kept in sync with the inputs by `check`.

Argo CD's rules, as its AppProject documentation and types give them:
- a destination is permitted when an entry's `server` (or `name`) glob matches the destination's
  server (or name) and the entry's `namespace` glob matches its namespace; every Application's own
  destination, and every namespaced resource's namespace, must be permitted;
- a cluster-scoped resource is permitted when an entry of `clusterResourceWhitelist` matches its
  group and kind (an empty or missing list permits none); a namespaced one when an entry of
  `namespaceResourceWhitelist` does (a missing list permits all, an empty one none);
- a source is permitted when a `sourceRepos` glob matches its repoURL.
"""

from __future__ import annotations

import fnmatch
import shutil
from pathlib import Path
from typing import Any

import pytest
import trees
import yaml
from test_appset import crd_errors, directory_files, hub_objects, kustomize_objects, root_app

from gputenancy.cli.app import main
from gputenancy.deliver import appset
from gputenancy.render import hubproject

_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
PROJECT = "gpu-platform"


# ---------------------------------------------------------------- Argo CD's matching rules


def _glob(pattern: str, value: str) -> bool:
    """Argo CD's globMatch: `*` alone matches anything; else a glob (gobwas) on the whole value; an
    empty pattern matches only the empty value."""
    if pattern == "*":
        return True
    return fnmatch.fnmatchcase(value, pattern) if pattern else value == ""


def destination_permitted(project: dict[str, Any], dest: dict[str, str]) -> bool:
    for item in project["spec"].get("destinations", []):
        server = (
            bool(dest.get("server")) and _glob(item.get("server", ""), dest["server"]) and "server" in item
        )
        name = bool(dest.get("name")) and _glob(item.get("name", ""), dest["name"]) and "name" in item
        if (server or name) and _glob(item.get("namespace", ""), dest.get("namespace", "")):
            return True
    return False


def kind_permitted(project: dict[str, Any], group: str, kind: str, *, namespaced: bool) -> bool:
    spec = project["spec"]
    if namespaced:
        listed = spec.get("namespaceResourceWhitelist")
        if listed is None:
            return True
    else:
        listed = spec.get("clusterResourceWhitelist") or []
    return any(_glob(e["group"], group) and _glob(e["kind"], kind) for e in listed)


def source_permitted(project: dict[str, Any], url: str) -> bool:
    return any(_glob(p, url) for p in project["spec"].get("sourceRepos", []))


def group_of(body: dict[str, Any]) -> str:
    api = str(body["apiVersion"])
    return api.rsplit("/", 1)[0] if "/" in api else ""


# ---------------------------------------------------------------- the repository


def _health(root: Path) -> None:
    """The project's argocd-cm health checks (built from argocd/resource_customizations), which the
    suite's example repository leaves out."""
    (root / "argocd").mkdir(exist_ok=True)
    shutil.copyfile(Path(__file__).resolve().parent.parent / appset.HEALTH, root / appset.HEALTH)


@pytest.fixture(scope="module")
def hub_repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = trees.example(tmp_path_factory.mktemp("hub"))
    _health(root)
    trees.edit(root, "base/platform.yaml", lambda d: d["argocd"].update(project=PROJECT))
    assert main(["--root", str(root), "render"]) == 0
    return root


def project_of(root: Path) -> dict[str, Any]:
    return hub_objects(root)["AppProject"]


def test_hub_yaml_holds_the_project_the_health_checks_and_the_app_of_apps(
    hub_repo: Path, shared: Path
) -> None:
    objects = hub_objects(hub_repo)
    assert list(objects) == ["AppProject", "ConfigMap", "Application"]  # the project before its Applications
    project = objects["AppProject"]
    assert crd_errors(shared, "AppProject", project) == []
    assert project["metadata"] == {
        "name": PROJECT,
        "namespace": "argocd",
        "labels": {"app.kubernetes.io/managed-by": "gputenancy"},
    }
    assert root_app(hub_repo)["spec"]["project"] == PROJECT
    text = (hub_repo / appset.PATH).read_text()
    assert "kubectl apply --server-side -n argocd -f argocd/hub.yaml" in text.split("apiVersion", 1)[0]


def test_the_project_crd_check_refuses_unknown_fields(hub_repo: Path, shared: Path) -> None:
    project = project_of(hub_repo)
    project["spec"]["destinations"][0]["cluster"] = "prod"
    assert crd_errors(shared, "AppProject", project)


def test_every_application_and_object_the_pipeline_delivers_is_permitted(
    hub_repo: Path, shared: Path, tmp_path: Path
) -> None:
    """The app-of-apps, each Application it syncs, each object of each cluster's directory, and every
    object of the Kueue release each install Application brings."""
    project = project_of(hub_repo)
    root = root_app(hub_repo)
    assert destination_permitted(project, root["spec"]["destination"])
    assert source_permitted(project, root["spec"]["source"]["repoURL"])
    apps = kustomize_objects(hub_repo, directory_files(hub_repo, root), tmp_path / "hub")
    assert len(apps) == 4
    checked = 0
    for app in apps:
        assert app["spec"]["project"] == PROJECT, app["metadata"]["name"]
        assert kind_permitted(project, "argoproj.io", "Application", namespaced=True)
        assert destination_permitted(
            project, {"server": "https://kubernetes.default.svc", "namespace": "argocd"}
        )
        dest = app["spec"]["destination"]
        assert destination_permitted(project, dest), (app["metadata"]["name"], dest)
        assert source_permitted(project, app["spec"]["source"]["repoURL"])
        where = {k: v for k, v in dest.items() if k != "namespace"}
        if app["metadata"]["name"].startswith("gputenancy-"):
            objects = kustomize_objects(
                hub_repo, directory_files(hub_repo, app), tmp_path / app["metadata"]["name"]
            )
        else:
            version = app["spec"]["source"]["targetRevision"].lstrip("v")
            manifests = shared / "kueue" / f"v{version}" / "manifests.yaml"
            objects = [d for d in yaml.load_all(manifests.read_text(), Loader=_Loader) if d]
        for body in objects:
            namespace = body["metadata"].get("namespace", "")
            assert kind_permitted(project, group_of(body), body["kind"], namespaced=bool(namespace)), body[
                "kind"
            ]
            if namespace:
                assert destination_permitted(project, {**where, "namespace": namespace}), (where, namespace)
            checked += 1
    assert checked > 100


@pytest.mark.parametrize(
    ("dest", "why"),
    [
        ({"name": "staging", "namespace": "vision-train"}, "a cluster the pipeline does not deliver to"),
        ({"name": "prod", "namespace": "default"}, "a namespace no Application uses"),
        ({"name": "prod", "namespace": "kube-public"}, "another system namespace"),
        ({"server": "https://10.0.0.9:6443", "namespace": ""}, "an unregistered API server"),
        (
            {"server": "https://kubernetes.default.svc", "namespace": "vision-train"},
            "prod's namespace on the hub",
        ),
        ({"name": "in-cluster", "namespace": "kube-system"}, "the hub by another name"),
    ],
)
def test_a_destination_the_pipeline_does_not_render_is_refused(
    hub_repo: Path, dest: dict[str, str], why: str
) -> None:
    assert not destination_permitted(project_of(hub_repo), dest), why


@pytest.mark.parametrize(
    ("group", "kind", "namespaced"),
    [
        ("", "Pod", True),
        ("apps", "DaemonSet", True),
        ("batch", "Job", True),
        ("kueue.x-k8s.io", "Workload", True),
        ("argoproj.io", "AppProject", True),  # the hub cannot widen its own project
        ("", "PersistentVolume", False),
        ("kueue.x-k8s.io", "Topology", False),
        ("storage.k8s.io", "StorageClass", False),
        ("kueue.x-k8s.io", "LocalQueue", False),  # a namespaced kind as cluster-scoped
        ("kueue.x-k8s.io", "ClusterQueue", True),
    ],
)
def test_a_kind_the_pipeline_does_not_render_is_refused(
    hub_repo: Path, group: str, kind: str, namespaced: bool
) -> None:
    assert not kind_permitted(project_of(hub_repo), group, kind, namespaced=namespaced)


def test_a_source_the_pipeline_does_not_use_is_refused(hub_repo: Path) -> None:
    project = project_of(hub_repo)
    assert not any("*" in p for p in project["spec"]["sourceRepos"])
    assert not source_permitted(project, "https://github.com/someone/else.git")


def test_the_kinds_of_kueues_install_are_those_of_every_release(shared: Path) -> None:
    """INSTALL_* is what each release's manifests hold, read from the releases in ../shared."""
    releases = sorted((shared / "kueue").glob("v*/manifests.yaml"))
    assert releases
    for manifests in releases:
        objects = [d for d in yaml.load_all(manifests.read_text(), Loader=_Loader) if d]
        cluster = {(group_of(o), o["kind"]) for o in objects if not o["metadata"].get("namespace")}
        namespaced = {(group_of(o), o["kind"]) for o in objects if o["metadata"].get("namespace")}
        spaces = {o["metadata"]["namespace"] for o in objects if o["metadata"].get("namespace")}
        assert cluster == set(hubproject.INSTALL_CLUSTER_KINDS), manifests
        assert namespaced == set(hubproject.INSTALL_NAMESPACED_KINDS), manifests
        assert spaces - {"kueue-system"} == set(hubproject.INSTALL_OTHER_NAMESPACES), manifests


def test_the_health_checks_are_argocd_cm_keys_of_every_kind(hub_repo: Path) -> None:
    cm = hub_objects(hub_repo)["ConfigMap"]
    assert (cm["metadata"]["name"], cm["metadata"]["namespace"]) == ("argocd-cm", "argocd")
    built = yaml.load((hub_repo / appset.HEALTH).read_text(), Loader=_Loader)["data"]
    assert cm["data"] == built
    kinds = {k.split("health.", 1)[1] for k in cm["data"]}
    assert kinds == {
        "kueue.x-k8s.io_ClusterQueue",
        "kueue.x-k8s.io_LocalQueue",
        "kueue.x-k8s.io_Cohort",
        "kueue.x-k8s.io_ResourceFlavor",
        "kueue.x-k8s.io_AdmissionCheck",
        "kueue.x-k8s.io_MultiKueueCluster",
        "argoproj.io_Application",
    }


def test_the_queues_wait_for_kueue(tmp_path: Path, hub_repo: Path) -> None:
    """The install is in an earlier sync wave of the app-of-apps than the queues, and the Application
    health check makes the later wave wait for the earlier one to be Healthy."""
    apps = {
        a["metadata"]["name"]: a
        for a in kustomize_objects(hub_repo, directory_files(hub_repo, root_app(hub_repo)), tmp_path)
    }
    for cluster in ("lab", "prod"):
        install = int(apps[f"kueue-{cluster}"]["metadata"]["annotations"]["argocd.argoproj.io/sync-wave"])
        queues = int(
            apps[f"gputenancy-{cluster}"]["metadata"]
            .get("annotations", {})
            .get("argocd.argoproj.io/sync-wave", "0")
        )
        assert install < queues
    assert (
        "resource.customizations.health.argoproj.io_Application" in hub_objects(hub_repo)["ConfigMap"]["data"]
    )


def test_check_keeps_the_project_in_step_with_the_inputs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A tenant's new namespace changes what the project permits: `check` fails until render, so the
    pull request that adds it shows the project change; so does a changed health check."""
    root = trees.example(tmp_path)
    _health(root)
    trees.edit(root, "base/platform.yaml", lambda d: d["argocd"].update(project=PROJECT))
    assert main(["--root", str(root), "render"]) == 0
    assert main(["--root", str(root), "check"]) == 0
    trees.edit(root, "tenants/sandbox.yaml", lambda d: d.update(namespaces=[*d["namespaces"], "sandbox-two"]))
    capsys.readouterr()
    assert main(["--root", str(root), "check"]) == 1
    assert "~ argocd/hub.yaml" in capsys.readouterr().out
    assert main(["--root", str(root), "render"]) == 0
    project = project_of(root)
    assert destination_permitted(
        project, {"server": "https://kubernetes.default.svc", "namespace": "sandbox-two"}
    )
    health = root / appset.HEALTH
    health.write_text(health.read_text().replace("Waiting for Kueue", "Waiting for the Kueue", 1))
    capsys.readouterr()
    assert main(["--root", str(root), "check"]) == 1
    assert "~ argocd/hub.yaml" in capsys.readouterr().out
    assert main(["--root", str(root), "render", "--cluster", "prod"]) == 0  # one cluster: the rest as written
    assert main(["--root", str(root), "check"]) == 0
    assert destination_permitted(
        project_of(root), {"server": "https://kubernetes.default.svc", "namespace": "sandbox-two"}
    )


def test_no_project_is_rendered_for_the_default_project(tmp_path: Path) -> None:
    """`default` may hold the hub's other Applications: the pipeline does not narrow it."""
    root = trees.example(tmp_path)
    assert main(["--root", str(root), "render"]) == 0
    assert "AppProject" not in hub_objects(root)


def test_the_plan_says_to_apply_the_hub_part_again_for_a_new_namespace(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A new tenant's namespaces are new destinations of the project: the plan's prerequisites say
    to apply argocd/hub.yaml again, which the same pull request changes."""
    root = trees.example(tmp_path)
    trees.edit(root, "base/platform.yaml", lambda d: d["argocd"].update(project=PROJECT))
    assert main(["--root", str(root), "render"]) == 0
    trees.write(
        root,
        "tenants/robotics.yaml",
        trees.tenant(
            "robotics",
            namespaces=["robotics-sim"],
            budgets={"default": [{"flavor": "h100", "devices": {"gpu.nvidia.com": 0}}]},
        ),
    )
    capsys.readouterr()
    assert main(["--root", str(root), "plan"]) == 2
    out = capsys.readouterr().out
    assert "create its namespace(s) robotics-sim" in out
    assert (
        f"apply argocd/hub.yaml again on the hub (AppProject {PROJECT!r} permits the new namespaces)" in out
    )
