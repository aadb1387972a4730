"""`status`: the live example clusters of ../shared/clusters/live against the repository they were built
from (inputs-6b92afc, copied into tmp_path as a repository), each difference their README lists and
nothing else; dumps derived from them for the cases the README does not cover (read by path, written to
tmp_path when changed)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import shared_dir

from gputenancy import engine
from gputenancy.assemble import output
from gputenancy.cli.app import main
from gputenancy.cluster.dump import read_text
from gputenancy.common.findings import PipelineError, Severity
from gputenancy.live import drain, drift, owners, status, teams

_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _live() -> Path:
    return shared_dir() / "clusters" / "live"


def _dump(cluster: str) -> Path:
    return _live() / cluster / "dump.yaml"


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The repository the live clusters were rendered from: tenants/, base/, overlays/, generated/."""
    root = tmp_path_factory.mktemp("live") / "repo"
    source = _live() / "inputs-6b92afc"
    for part in ("tenants", "base", "overlays", "generated"):
        shutil.copytree(source / part, root / part)
    return root


def _schemas() -> Path:
    return shared_dir() / "kueue"


def _status(repo: Path, dump: Path, cluster: str | None = None) -> status.Status:
    return status.build(repo, status.read(dump, None), cluster=cluster, schemas=_schemas())


def _derived(tmp_path: Path, cluster: str, change: Any) -> Path:
    """The cluster's dump with `change(items)` applied, written to tmp_path."""
    doc = yaml.load(_dump(cluster).read_text(), Loader=_LOADER)
    change(doc["items"])
    out = tmp_path / f"{cluster}-derived.yaml"
    out.write_text(yaml.safe_dump(doc, sort_keys=False))
    return out


def _find(items: list[dict[str, Any]], kind: str, name: str) -> dict[str, Any]:
    return next(o for o in items if o["kind"] == kind and o["metadata"]["name"] == name)


@pytest.mark.parametrize("cluster", ["lab", "prod"])
def test_the_inputs_render_the_generated_trees_the_clusters_were_built_from(repo: Path, cluster: str) -> None:
    result = engine.run(repo, cluster=cluster, schemas=_schemas(), cache=None)
    assert not result.failed, result.findings
    tree = result.clusters[cluster].tree
    differ = output.diff_paths(tree, output.read_tree(repo / "generated" / cluster))
    # What reaches the cluster renders as it did then; the hub's own Applications may have gained
    # settings since (ignoreDifferences of newer kinds), which status does not compare.
    assert [
        d for d in differ if not d.split(" ", 1)[-1].startswith("_hub/application/argocd/gputenancy-")
    ] == []


def test_lab_runs_what_git_says(repo: Path) -> None:
    s = _status(repo, _dump("lab"))
    assert s.cluster == "lab"  # read from the dump: lab's objects carry no cluster label
    assert not s.differs and s.drifted == ()
    assert {o.title for o in s.objects} == {
        "ResourceFlavor t4",
        "ClusterQueue sandbox",
        "LocalQueue sandbox/sandbox",
        "WorkloadPriorityClass batch",
        "WorkloadPriorityClass production",
        "ResourceClaimTemplate sandbox/single-gpu",
    }
    assert s.manager is not None and s.manager.changes == () and s.manager.restart == ""
    assert s.manager.live_checksum == s.manager.git_checksum  # the helm chart's ConfigMap holds Git's text
    assert [(r.flavor, r.device_class, r.published, r.declared) for r in s.devices] == [
        ("t4", "gpu.nvidia.com", 1, 1)
    ]
    assert s.findings == ()
    assert dict(s.workloads) == {"admitted": 1, "reserved": 0, "pending": 1, "finished": 0}
    ((group),) = s.waiting
    assert (group.queue, group.reason, group.workloads) == (
        "sandbox",
        "quota",
        ("sandbox/job-gpu-job-2-65a99",),
    )
    assert "insufficient unused quota for nvidia.com/gpu in flavor t4" in group.message
    gpu = next(u for u in s.usage if u.resource == "nvidia.com/gpu")
    assert (gpu.tenant, str(gpu.nominal.value), str(gpu.used.value), str(gpu.reserved.value)) == (
        "sandbox",
        "1",
        "1",
        "1",
    )


def test_prod_differs_in_exactly_what_its_readme_lists(repo: Path) -> None:
    s = _status(repo, _dump("prod"))
    assert s.cluster == "prod" and s.differs
    assert {(o.state, o.title) for o in s.drifted} == {
        ("changed", "ClusterQueue speech"),
        ("missing", "LocalQueue nlp-serve/nlp"),
        ("extra", "DeviceClass fpga.example.com"),
        ("extra", "ResourceClaimTemplate speech/fpga"),
        ("extra", "ClusterQueue legacy-batch"),
        ("extra", "LocalQueue legacy-batch/legacy"),
        ("extra", "Namespace legacy-batch"),
    }
    speech = next(o for o in s.drifted if o.title == "ClusterQueue speech")
    ((change),) = speech.changes
    assert change.path == "spec.resourceGroups[0].flavors[h100].resources[nvidia.com/gpu].nominalQuota"
    assert (change.live, change.git) == ("3", "2")
    assert [m.name for m in change.managers] == ["kubectl-edit"]
    assert change.origin.path == "generated/prod/clusterqueue/speech.yaml"
    assert (repo / change.origin.path).read_text().splitlines()[
        change.origin.line - 1
    ].strip() == "nominalQuota: '2'"
    for o in s.drifted:
        if o.state == "extra":  # made by hand: Argo CD never applied them, so prune leaves them
            assert o.argocd.startswith("leaves it alone"), o
    # the driver's DeviceClass the catalog names and the tenants' namespaces are not differences
    assert not any(o.title in ("DeviceClass gpu.nvidia.com", "Namespace speech") for o in s.objects)
    assert s.manager is not None
    assert [(c.path, c.live, c.git, [m.name for m in c.managers]) for c in s.manager.changes] == [
        ("waitForPodsReady.timeout", "10m", "30m", ["kubectl-edit"])
    ]
    assert s.manager.changes[0].origin.path == "overlays/prod/cluster.yaml"
    assert s.manager.marker == s.manager.git_checksum != s.manager.live_checksum
    assert "has not loaded" in s.manager.restart and "sync kueue-prod" in s.manager.restart
    assert [(r.flavor, r.device_class, r.published, r.declared) for r in s.devices] == [
        ("h100", "gpu.nvidia.com", 8, 16),
        ("a100-mig", "mig-1g.10gb.nvidia.com", 28, 28),
        ("a100-mig", "mig-3g.40gb.nvidia.com", 8, 8),
    ]
    ((finding),) = s.findings  # the capacity line, as a warning, naming the node that publishes
    line = (repo / "overlays/prod/cluster.yaml").read_text().splitlines()[finding.line - 1]
    assert (finding.path, finding.severity, finding.rule) == (
        "overlays/prod/cluster.yaml",
        Severity.WARNING,
        "live-devices",
    )
    assert line.strip().startswith("gpu.nvidia.com: 16")
    assert "h100-node-0: 8" in finding.message and "1 node(s)" in finding.message
    assert dict(s.workloads) == {"admitted": 5, "reserved": 0, "pending": 2, "finished": 0}
    assert [(g.queue, g.reason, g.workloads) for g in s.waiting] == [
        ("nlp", "quota", ("nlp-finetune/job-finetune-c-87a1b",)),
        ("speech", "inadmissible", ("speech/job-fpga-test-ad797",)),
    ]
    assert "fpga.example.com" in s.waiting[1].link and "catalog" in s.waiting[1].link
    assert s.inactive == ()
    # speech's quota raised by hand: the cohort holds 17 H100 on the cluster against 16 in Git, all in use
    assert [
        (c.cohort, c.flavor, c.resource, c.live.canonical(), c.git.canonical(), c.used.canonical())
        for c in s.cohorts
    ] == [("research", "h100", "nvidia.com/gpu", "17", "16", "17")]


@pytest.mark.parametrize("cluster", ["lab", "prod"])
def test_usage_per_team_is_the_clusterqueue_status_of_the_dump(repo: Path, cluster: str) -> None:
    s = _status(repo, _dump(cluster))
    items = yaml.load(_dump(cluster).read_text(), Loader=_LOADER)["items"]
    expected = {}
    for cq in (o for o in items if o["kind"] == "ClusterQueue"):
        for f in cq["status"].get("flavorsUsage", []):
            for r in f["resources"]:
                expected[(cq["metadata"]["name"], f["name"], r["name"])] = (r["total"], r["borrowed"])
    got = {(u.queue, u.flavor, u.resource): (u.used.canonical(), u.borrowed.canonical()) for u in s.usage}
    assert got == expected
    if cluster == "prod":  # nlp runs 8 H100 borrowing 2, vision 9 borrowing 1 (the README's steps 1-5)
        assert got[("nlp", "h100", "nvidia.com/gpu")] == ("8", "2")
        assert got[("vision", "h100", "nvidia.com/gpu")] == ("9", "1")


def test_the_command_exits_0_2_1_and_prints_text_markdown_json(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = ["--root", str(repo), "status", "--schemas", str(_schemas())]
    assert main([*base, "--from", str(_dump("lab"))]) == 0
    assert "cluster lab runs what Git says" in capsys.readouterr().out
    assert main([*base, "--from", str(_dump("prod")), "--format", "json"]) == 2
    doc = json.loads(capsys.readouterr().out)
    assert doc["cluster"] == "prod" and doc["differs"] is True
    assert {o["state"] for o in doc["objects"]} == {"changed", "missing", "extra"}
    assert doc["findings"][0]["rule"] == "live-devices"
    assert main([*base, "--from", str(_dump("prod")), "--format", "markdown"]) == 2
    out = capsys.readouterr()
    assert out.out.startswith("## gputenancy status: `prod`") and "### Devices" in out.out
    assert "warning:" in out.err  # findings on stderr


def test_a_dump_of_another_cluster_is_an_error_naming_the_file(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["--root", str(repo), "status", "--cluster", "prod", "--from", str(_dump("lab"))])
    out = capsys.readouterr().out
    assert code == 1
    assert (
        f"{_dump('lab')}:" in out
        and "a dump of cluster 'lab', not of 'prod'" in out
        and "(dump-cluster)" in out
    )
    with pytest.raises(PipelineError) as caught:  # prod's objects carry its cluster label
        _status(repo, _dump("prod"), cluster="lab")
    assert "gputenancy.io/cluster: prod" in caught.value.findings[0].message


def test_a_file_that_is_not_what_kubectl_get_prints_is_an_error(
    repo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    plain = tmp_path / "objects.yaml"  # Kubernetes objects, but not a cluster's listing
    plain.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n  namespace: y\n")
    assert main(["--root", str(repo), "status", "--from", str(plain)]) == 1
    assert f"{plain}: error: not what `kubectl get` prints" in capsys.readouterr().out
    broken = tmp_path / "broken.yaml"
    broken.write_text("items:\n- kind: Namespace\n  metadata: {}\nkind: List\napiVersion: v1\n")
    assert main(["--root", str(repo), "status", "--from", str(broken)]) == 1
    assert str(broken) in capsys.readouterr().out


def test_the_config_map_back_at_gits_with_the_manager_on_another_checksum_says_restart(
    repo: Path, tmp_path: Path
) -> None:
    git_text = yaml.safe_load(
        next(
            p["patch"]
            for p in yaml.safe_load(
                (repo / "generated/prod/_hub/application/argocd/kueue-prod.yaml").read_text()
            )["spec"]["source"]["kustomize"]["patches"]
            if "ConfigMap" in p["patch"]
        )
    )["data"]["controller_manager_config.yaml"]

    def change(items: list[dict[str, Any]]) -> None:
        _find(items, "ConfigMap", "kueue-manager-config")["data"]["controller_manager_config.yaml"] = git_text
        template = _find(items, "Deployment", "kueue-controller-manager")["spec"]["template"]["metadata"]
        template["annotations"]["gputenancy.io/kueue-config-checksum"] = "0" * 64

    s = _status(repo, _derived(tmp_path, "prod", change))
    assert s.manager is not None and s.manager.changes == ()
    assert "started with another" in s.manager.restart and "rollout restart" in s.manager.restart


def test_nodes_in_the_dump_name_the_node_that_publishes_nothing_and_more_devices_is_a_note(
    repo: Path, tmp_path: Path
) -> None:
    def change(items: list[dict[str, Any]]) -> None:
        labels = {
            "cloud.google.com/gke-nodepool": "h100-pool",
            "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3",
        }
        for name in ("h100-node-0", "h100-node-1"):
            items.append(
                {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": dict(labels)}}
            )
        extra = json.loads(json.dumps(_find(items, "ResourceSlice", "a100-3g-node-0-gpu.nvidia.com")))
        extra["metadata"]["name"] = "a100-3g-node-9-gpu.nvidia.com"
        extra["spec"]["nodeName"] = "a100-3g-node-9"
        items.append(extra)

    s = _status(repo, _derived(tmp_path, "prod", change))
    h100 = next(r for r in s.devices if r.flavor == "h100")
    assert h100.silent == ("h100-node-1",)
    warning = next(f for f in s.findings if f.severity is Severity.WARNING)
    assert "publishing none: h100-node-1" in warning.message
    note = next(f for f in s.findings if f.severity is Severity.NOTE)
    assert "mig-3g.40gb.nvidia.com" in note.message and "2 more than declared" in note.message


def test_the_field_manager_of_a_path_is_read_from_the_fieldsv1_trie() -> None:
    body = {
        "metadata": {
            "managedFields": [
                {
                    "manager": "argocd-controller",
                    "operation": "Apply",
                    "fieldsV1": {
                        "f:spec": {
                            "f:flavors": {
                                'k:{"name":"h100"}': {"f:quota": {}},
                                'k:{"name":"a100"}': {"f:quota": {}},
                            }
                        }
                    },
                },
                {"manager": "kubectl-edit", "operation": "Update", "fieldsV1": {"f:spec": {"f:groups": {}}}},
            ]
        },
        "spec": {
            "flavors": [{"name": "a100", "quota": 1}, {"name": "h100", "quota": 2}],
            "groups": [{"a": {"b": 1}}],
        },
    }
    assert [m.name for m in owners.owners_of(body, "spec.flavors[h100].quota")] == ["argocd-controller"]
    assert [m.name for m in owners.owners_of(body, "spec.groups[0].a.b")] == ["kubectl-edit"]  # atomic list
    # absent: those owning the nearest enclosing value; nothing outside what any manager holds
    assert [m.name for m in owners.owners_of(body, "spec.other")] == ["argocd-controller", "kubectl-edit"]
    assert owners.owners_of(body, "status.x") == ()
    # one list, two managers: each item's owner is read from its own key, not from another item's
    fields = body["metadata"]["managedFields"]
    fields[0]["fieldsV1"]["f:spec"]["f:flavors"] = {'k:{"name":"a100"}': {"f:quota": {}}}
    fields.append(
        {
            "manager": "quota-bot",
            "operation": "Apply",
            "fieldsV1": {"f:spec": {"f:flavors": {'k:{"name":"h100"}': {"f:quota": {}}}}},
        }
    )
    assert [m.name for m in owners.owners_of(body, "spec.flavors[h100].quota")] == ["quota-bot"]
    assert [m.name for m in owners.owners_of(body, "spec.flavors[a100].quota")] == ["argocd-controller"]


def _commit(repo: Path, message: str) -> None:
    env = {
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.invalid",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.invalid",
        "PATH": "/usr/bin:/bin",
    }
    subprocess.run(["git", "add", "-A"], cwd=repo, check=True, env=env)
    subprocess.run(["git", "commit", "-qm", message], cwd=repo, check=True, env=env)


@pytest.fixture
def drained(repo: Path, tmp_path: Path) -> Path:
    """The repository with speech drained (`state: draining`, rendered and committed), then its file
    deleted: the change that removes a drained tenant from prod."""
    root = tmp_path / "repo"
    shutil.copytree(repo, root)
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    _commit(root, "as built")
    tenant = root / "tenants" / "speech.yaml"
    tenant.write_text(tenant.read_text().replace("cohort: research\n", "cohort: research\nstate: draining\n"))
    assert main(["--root", str(root), "render", "--cluster", "prod"]) == 0
    _commit(root, "speech drains")
    tenant.unlink()
    return root


def test_plan_live_refuses_removing_a_drained_tenant_whose_queue_holds_workloads(
    drained: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["--root", str(drained), "plan", "--cluster", "prod", "--live", str(_dump("prod"))])
    out = capsys.readouterr()
    assert code == 1
    assert "tenants/speech.yaml: error: tenant 'speech' is drained on cluster 'prod', but" in out.err
    assert "still holding 2 workload(s) (1 admitted, 1 pending" in out.err and "(tenant-removal)" in out.err
    assert (
        main(["--root", str(drained), "plan", "--cluster", "prod"]) == 2
    )  # without --live: allowed, as before
    assert "check that the queue is empty" in capsys.readouterr().out


def test_plan_live_allows_removing_a_drained_tenant_whose_queue_is_empty(
    drained: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def change(items: list[dict[str, Any]]) -> None:
        items[:] = [
            o for o in items if not (o["kind"] == "Workload" and o["metadata"]["namespace"] == "speech")
        ]
        cq = _find(items, "ClusterQueue", "speech")
        cq["spec"]["stopPolicy"] = "HoldAndDrain"
        cq["status"].update(admittedWorkloads=0, reservingWorkloads=0, pendingWorkloads=0)

    empty = _derived(tmp_path, "prod", change)
    assert main(["--root", str(drained), "plan", "--cluster", "prod", "--live", str(empty)]) == 2
    out = capsys.readouterr()
    assert "tenant-removal" not in out.err
    assert "shows ClusterQueue speech empty" in out.out


def test_budgets_from_adds_what_each_tenant_uses_on_the_cluster(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--root", str(repo), "budgets", "--from", str(_dump("prod")), "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert {p["cluster"] for p in doc["pools"]} == {"prod"}
    grants = {(g["tenant"], g["flavor"], g["resource"]): g for p in doc["pools"] for g in p["grants"]}
    assert grants[("nlp", "h100", "nvidia.com/gpu")]["usage"] == {
        "inUse": "8",
        "reserved": "8",
        "borrowed": "2",
    }
    assert grants[("vision", "h100", "nvidia.com/gpu")]["usage"] == {
        "inUse": "9",
        "reserved": "9",
        "borrowed": "1",
    }
    assert grants[("speech", "a100-mig", "nvidia.com/mig-1g.10gb")]["usage"]["inUse"] == "2"
    assert main(["--root", str(repo), "budgets", "--from", str(_dump("prod")), "--format", "markdown"]) == 0
    assert "| in use | reserved | borrowed |" in capsys.readouterr().out
    assert main(["--root", str(repo), "budgets", "--cluster", "prod"]) == 0
    assert "uses" not in capsys.readouterr().out  # without --from, the budgets alone


def test_report_from_draws_what_each_tenant_uses(repo: Path, tmp_path: Path) -> None:
    page = tmp_path / "prod.html"
    code = main(["--root", str(repo), "report", "--from", str(_dump("prod")), "--output", str(page)])
    assert code == 0
    text = page.read_text()
    # the cohort runs 17 H100 against the 16 of Git: speech's quota raised by hand let nlp borrow
    assert "prod h100 nvidia.com/gpu: nominal 16 of 16, headroom 0, in use 17</figcaption>" in text
    assert "the black tick what each tenant uses on the cluster" in text


def test_a_tenants_namespace_missing_on_the_cluster_is_a_difference_argo_cd_cannot_mend(
    repo: Path, tmp_path: Path
) -> None:
    def change(items: list[dict[str, Any]]) -> None:
        items[:] = [o for o in items if not (o["kind"] == "Namespace" and o["metadata"]["name"] == "sandbox")]

    s = _status(repo, _derived(tmp_path, "lab", change))
    ((missing),) = s.drifted
    assert (missing.state, missing.title, missing.origin.path) == (
        "missing",
        "Namespace sandbox",
        "tenants/sandbox.yaml",
    )
    assert "CreateNamespace=false" in missing.argocd


def test_adopted_objects_inactive_queues_and_a_value_argo_cd_last_wrote(repo: Path, tmp_path: Path) -> None:
    def change(items: list[dict[str, Any]]) -> None:
        vision = _find(items, "ClusterQueue", "vision")  # made by hand before Argo CD's first sync
        for entry in vision["metadata"]["managedFields"]:
            entry["manager"] = (
                "kubectl-create" if entry["manager"] == "argocd-controller" else entry["manager"]
            )
        flavor = _find(items, "ResourceFlavor", "a100-mig")  # Git changed since Argo CD's last sync
        flavor["spec"]["nodeLabels"]["nvidia.com/gpu.product"] = "NVIDIA-A100-OLD"
        queue = next(o for o in items if o["kind"] == "LocalQueue" and o["metadata"]["namespace"] == "speech")
        queue["status"]["conditions"] = [
            {
                "type": "Active",
                "status": "False",
                "reason": "ClusterQueueIsInactive",
                "message": "Can't submit",
            }
        ]

    s = _status(repo, _derived(tmp_path, "prod", change))
    states = {o.title: o for o in s.drifted}
    assert states["ClusterQueue vision"].state == "adopted"
    assert "adopts it at its next sync" in states["ClusterQueue vision"].argocd
    ((label),) = states["ResourceFlavor a100-mig"].changes
    assert label.path == "spec.nodeLabels.nvidia.com/gpu.product" and not label.by_hand
    assert [m.name for m in label.managers] == ["argocd-controller"]
    ((inactive),) = s.inactive
    assert (inactive.kind, inactive.namespace, inactive.name, inactive.reason) == (
        "LocalQueue",
        "speech",
        "speech",
        "ClusterQueueIsInactive",
    )


def test_strings_from_the_cluster_cannot_take_over_the_terminal_or_the_markdown(
    repo: Path, tmp_path: Path
) -> None:
    from gputenancy.live import view

    def change(items: list[dict[str, Any]]) -> None:
        speech = _find(items, "ClusterQueue", "speech")
        for entry in speech["metadata"]["managedFields"]:
            if entry["manager"] == "kubectl-edit":
                entry["manager"] = "kubectl-edit\n::error::forged\x1b[31m"

    s = _status(repo, _derived(tmp_path, "prod", change))
    text = view.render(s, "text")
    assert "\x1b" not in text and not any(line.startswith("::") for line in text.splitlines())
    assert "kubectl-edit\\x0a::error::forged\\x1b[31m" in text
    markdown = view.render(s, "markdown")
    assert "\x1b" not in markdown and "\n::error" not in markdown


def test_a_helm_install_with_an_edited_config_map_says_what_the_manager_loaded_cannot_be_told(
    repo: Path, tmp_path: Path
) -> None:
    def change(items: list[dict[str, Any]]) -> None:
        cm = _find(items, "ConfigMap", "kueue-manager-config")
        text = cm["data"]["controller_manager_config.yaml"]
        cm["data"]["controller_manager_config.yaml"] = text.replace("qps: 50", "qps: 5")

    s = _status(repo, _derived(tmp_path, "lab", change))
    assert s.differs and s.manager is not None and s.manager.marker is None
    assert [(c.path, c.live, c.git) for c in s.manager.changes] == [("clientConnection.qps", 5, 50)]
    assert "no restart marker (helm)" in s.manager.restart and "rollout restart" in s.manager.restart


def _listed(*items: dict[str, Any]) -> Any:
    listed = {"apiVersion": "v1", "kind": "List", "items": json.loads(json.dumps(items))}
    return read_text(yaml.safe_dump(listed).encode(), "d.yaml")


def _queue(name: str, nominal: int, used: int, status: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ClusterQueue",
        "metadata": {"name": name},
        "spec": {
            "cohortName": "research",
            "resourceGroups": [
                {
                    "coveredResources": ["nvidia.com/gpu"],
                    "flavors": [
                        {"name": "h100", "resources": [{"name": "nvidia.com/gpu", "nominalQuota": nominal}]}
                    ],
                }
            ],
        },
        "status": {
            "flavorsUsage": [
                {"name": "h100", "resources": [{"name": "nvidia.com/gpu", "total": used, "borrowed": 0}]}
            ],
            **(status or {}),
        },
    }


def test_an_extra_object_argo_cd_tracks_is_pruned() -> None:
    """An object Git no longer holds is pruned when Argo CD applied it (its tracking id, or its field
    manager), left alone otherwise."""
    base = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue", "spec": {"clusterQueue": "q"}}
    marks: list[dict[str, Any]] = [
        {"annotations": {"argocd.argoproj.io/tracking-id": "tenant-a:kueue.x-k8s.io/LocalQueue:ns/a"}},
        {"labels": {"app.kubernetes.io/instance": "tenant-a"}},
        {"managedFields": [{"manager": "argocd-controller", "operation": "Apply", "fieldsV1": {}}]},
        {"managedFields": [{"manager": "kubectl-client-side-apply", "operation": "Update", "fieldsV1": {}}]},
    ]
    dump = _listed(
        *({**base, "metadata": {"name": f"q{i}", "namespace": "ns", **m}} for i, m in enumerate(marks))
    )
    said = [drift._extra(o).argocd.split(" ")[0] for o in dump.objects]
    assert said == ["prunes", "prunes", "prunes", "leaves"]


def test_a_queue_that_only_reserves_quota_is_not_empty() -> None:
    """A drained tenant's ClusterQueue is empty only when no workload is admitted, reserving quota or
    pending: one reserving (admittedWorkloads 0) holds it."""
    for reserving, empty in ((1, False), (0, True)):
        counters = {"admittedWorkloads": 0, "reservingWorkloads": reserving, "pendingWorkloads": 0}
        held = drain.held(_listed(_queue("speech", 4, 0, counters)), "speech")
        assert (held.on_cluster, held.empty, held.total) == (True, empty, reserving)
    assert not drain.held(_listed(_queue("speech", 4, 0)), "other").on_cluster


def test_a_cohorts_use_is_what_its_queues_use_not_their_quota() -> None:
    """speech raised by hand from 3 to 4: the cohort holds 8 on the cluster against 7 in Git, and uses
    what its queues' status says they use (2 + 1)."""
    dump = _listed(_queue("nlp", 4, 2), _queue("speech", 4, 1))
    git = [o.body for o in _listed(_queue("nlp", 4, 0), _queue("speech", 3, 0)).objects]
    assert [
        (c.cohort, c.flavor, c.resource, c.live.canonical(), c.git.canonical(), c.used.canonical())
        for c in teams.cohorts(dump, git)
    ] == [("research", "h100", "nvidia.com/gpu", "8", "7", "3")]
