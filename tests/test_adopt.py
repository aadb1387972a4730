"""`init` and `import`: a cluster that already runs Kueue, adopted into a repository and rendered back.

Real parts: the brownfield dumps and the live example clusters of ../shared/clusters/ read by path (real
API server output), the real kustomize through the engine, the Kueue CRDs of ../shared/kueue, the real
`kubectl` for --context. Each test builds its repository under tmp_path with `init`."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import kubekit
import pytest
import yaml
from conftest import REPO, shared_dir

from gputenancy import engine
from gputenancy.adopt import compare, importing, init, output, records, sample
from gputenancy.adopt.proof import Verdict
from gputenancy.cli.app import main
from gputenancy.cluster import dump as dumps
from gputenancy.cluster import kubectl
from gputenancy.common.findings import PipelineError

FIXTURE = REPO / "tests" / "fixtures" / "repo"


def _brownfield() -> list[str]:
    path = Path(os.environ.get("GPUTENANCY_SHARED", REPO.parent / "shared"))
    found = sorted(p.name for p in (path / "clusters" / "brownfield" / "dumps").glob("*.yaml"))
    return found or ["(no brownfield dumps)"]


def _new_repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    init.init(root, ["@acme/gpu-platform"])
    return root


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _live_of(root: Path, cluster: str, schemas: Path) -> dict[tuple[str, str, str], dict[str, object]]:
    result = engine.run(root, cluster=cluster, schemas=schemas, cache=None)
    assert not result.failed, [f.format() for f in result.findings if f.severity.value == "error"]
    out = {}
    for o in result.clusters[cluster].objects:
        meta = o.body["metadata"]
        out[(o.body["kind"], meta.get("namespace", ""), meta["name"])] = dict(o.body)
    return out


# ------------------------------------------------------------------------------ init


def test_init_writes_a_repository_that_validates_and_renders_nothing(tmp_path: Path) -> None:
    root = tmp_path / "new"
    assert main(["init", str(root), "--owner", "@acme/platform"]) == 0
    assert main(["--root", str(root), "validate"]) == 0
    assert main(["--root", str(root), "render"]) == 0
    assert not list((root / "generated").rglob("*.yaml")) if (root / "generated").exists() else True
    assert '"@acme/platform"' in (root / "base" / "platform.yaml").read_text()


def test_init_refuses_a_directory_that_is_not_empty(tmp_path: Path) -> None:
    (tmp_path / "keep.txt").write_text("mine\n")
    assert main(["init", str(tmp_path)]) == 1
    assert [p.name for p in tmp_path.iterdir()] == ["keep.txt"]


# ------------------------------------------------------------------------------ the brownfield setups


@pytest.mark.parametrize("name", _brownfield())
def test_every_brownfield_setup_is_reproduced_or_each_difference_named(name: str, tmp_path: Path) -> None:
    """init + import + render: every object reproduced exactly, carried (as a patch or verbatim, with
    why), or different with each field named; rendering the written repository gives back exactly
    what the report claims, and nothing differs silently."""
    shared = shared_dir()
    path = shared / "clusters" / "brownfield" / "dumps" / name
    root = _new_repo(tmp_path)
    dump = dumps.read_dump(path)
    outcome = importing.plan(root, dump, importing.Options("c1", schemas=shared, allow_partial=True))
    assert not [f for f in outcome.findings if f.severity.value == "error"]
    by_key = {(r.kind, r.namespace, r.name): r for r in outcome.results}
    for o in dump.objects:
        if o.kind in records.IMPORTED:
            assert o.key in by_key, f"{o.key} has no verdict"
    for r in outcome.results:
        if r.verdict in (Verdict.DIFFERENT, Verdict.NEW, Verdict.PATCHED, Verdict.CARRIED, Verdict.SKIPPED):
            assert r.why or r.diffs, f"{r.shown()}: {r.verdict} without a reason"
    output.write(root, outcome.files)
    rendered = _live_of(root, "c1", shared)
    for o in dump.objects:
        r = by_key.get(o.key)
        if r is None or r.kind == "Configuration":
            continue
        if r.verdict in (Verdict.EXACT, Verdict.PATCHED, Verdict.CARRIED):
            assert o.key in rendered, f"{r.shown()} claimed {r.verdict} but is not rendered"
            assert compare.compare(o.body, rendered[o.key], None) == (), r.shown()
        elif r.verdict is Verdict.DIFFERENT and o.key in rendered:
            found = compare.compare(o.body, rendered[o.key], None)
            assert {d.path for d in found} == {d.path for d in r.diffs}, r.shown()
    live_config = dump.kueue_config()
    config_result = by_key.get(("Configuration", "", "kueue-system/kueue-manager-config"))
    assert (live_config is None) == (config_result is None)


def test_brownfield_results_per_setup_are_as_reviewed(tmp_path: Path) -> None:
    """The verdicts of three setups of distinct shapes, so a change in what is expressible shows."""
    shared = shared_dir()
    seen = {}
    for name in (
        "01-kueue-single-cq.yaml",
        "34-rhoai-workshop-gpu-teams.yaml",
        "15-gke-mix-train-inference.yaml",
    ):
        root = _new_repo(tmp_path / name)
        dump = dumps.read_dump(shared / "clusters" / "brownfield" / "dumps" / name)
        outcome = importing.plan(root, dump, importing.Options("c1", schemas=shared))
        seen[name] = {r.shown(): r.verdict for r in outcome.results}
    assert seen["01-kueue-single-cq.yaml"] == {
        "ResourceFlavor default-flavor": Verdict.EXACT,
        "LocalQueue default/user-queue": Verdict.EXACT,
        "ClusterQueue cluster-queue": Verdict.PATCHED,  # namespaceSelector: {} (every namespace)
    }
    assert seen["34-rhoai-workshop-gpu-teams.yaml"]["Cohort organization"] is Verdict.PATCHED  # no object
    assert seen["15-gke-mix-train-inference.yaml"]["Configuration kueue-system/kueue-manager-config"] is (
        Verdict.DIFFERENT  # config.kueue.x-k8s.io/v1beta1 on the cluster, the pipeline writes v1beta2
    )


# ------------------------------------------------------------------------------ the example round trip


def _dump_of_rendered(src: Path, cluster: str, kueue: str, shared: Path, out: Path) -> Path:
    """What `kubectl get -o yaml` would print for a cluster synced from `src`: the rendered objects of
    the imported kinds, the manager's ConfigMap with the rendered Configuration, its Deployment."""
    result = engine.run(src, cluster=cluster, schemas=shared, cache=None)
    assert not result.failed
    assert result.model.clusters[cluster].kueue_version == kueue
    out.write_text(yaml.safe_dump(sample.rendered_list(result, cluster)))
    return out


def test_the_example_clusters_dumped_import_into_an_empty_repository_and_render_back_byte_for_byte(
    tmp_path: Path,
) -> None:
    shared = shared_dir()
    src = tmp_path / "src"
    shutil.copytree(FIXTURE, src)
    root = _new_repo(tmp_path)
    for cluster, kueue, k8s in (("prod", "v0.19.2", "1.35"), ("lab", "v0.18.1", "1.36")):
        dump_file = _dump_of_rendered(src, cluster, kueue, shared, tmp_path / f"{cluster}.yaml")
        outcome = importing.plan(
            root,
            dumps.read_dump(dump_file),
            importing.Options(cluster, kubernetes_version=k8s, schemas=shared),
        )
        assert outcome.exact, [r for r in outcome.results if r.verdict in (Verdict.DIFFERENT, Verdict.NEW)]
        assert {r.verdict for r in outcome.results} <= {Verdict.EXACT, Verdict.CARRIED, Verdict.SKIPPED}
        output.write(root, outcome.files)
    before = engine.run(src, schemas=shared, cache=None)
    after = engine.run(root, schemas=shared, cache=None)
    assert not after.failed
    for cluster in ("prod", "lab"):
        # the Argo CD Applications (_hub/) name the repository and its settings, not the cluster's objects
        want = {k: v for k, v in before.clusters[cluster].tree.items() if not k.startswith("_hub/")}
        got = {k: v for k, v in after.clusters[cluster].tree.items() if not k.startswith("_hub/")}
        assert got == want


# ------------------------------------------------------------------------------ a second cluster


def test_a_second_cluster_adds_its_budgets_and_keeps_comments_and_order(tmp_path: Path) -> None:
    shared = shared_dir()
    root = _new_repo(tmp_path)
    path = shared / "clusters" / "brownfield" / "dumps" / "34-rhoai-workshop-gpu-teams.yaml"
    first = importing.plan(root, dumps.read_dump(path), importing.Options("east", schemas=shared))
    output.write(root, first.files)
    tenant = root / "tenants" / "team1.yaml"
    edited = tenant.read_text().replace("namespaces:", "# the alpha and beta projects of team 1\nnamespaces:")
    edited = edited.replace("cohort: organization", "cohort: organization   # shared with team2")
    tenant.write_text(edited)
    second = importing.plan(root, dumps.read_dump(path), importing.Options("west", schemas=shared))
    assert second.exact
    output.write(root, second.files)
    text = tenant.read_text()
    assert text.startswith(edited.replace("clusters: [east]", "clusters: [east, west]"))  # only appended
    assert "# the alpha and beta projects of team 1" in text and "# shared with team2" in text
    doc = yaml.safe_load(text)
    assert doc["clusters"] == ["east", "west"]
    assert doc["budgets"]["clusters"]["west"] == doc["budgets"]["clusters"]["east"]
    platform = (root / "base" / "platform.yaml").read_text()
    assert platform.startswith(
        init.files(["@acme/gpu-platform"])["base/platform.yaml"].split("deviceClasses:")[0]
    )
    assert "# The platform team: owns base/" in platform and platform.count("- name: nvidia-h100-80gb") == 1
    assert main(["--root", str(root), "validate"]) == 0


# ------------------------------------------------------------------------------ bad input


def _minimal_dump(items: list[dict[str, object]]) -> str:
    # through JSON: objects shared between items are written out, never as YAML aliases (refused)
    return yaml.safe_dump(json.loads(json.dumps({"apiVersion": "v1", "kind": "List", "items": items})))


CQ = {
    "apiVersion": "kueue.x-k8s.io/v1beta2",
    "kind": "ClusterQueue",
    "metadata": {"name": "team-a"},
    "spec": {
        "namespaceSelector": {},
        "resourceGroups": [
            {
                "coveredResources": ["cpu"],
                "flavors": [{"name": "f", "resources": [{"name": "cpu", "nominalQuota": "4"}]}],
            }
        ],
    },
}
LQ = {
    "apiVersion": "kueue.x-k8s.io/v1beta2",
    "kind": "LocalQueue",
    "metadata": {"name": "q", "namespace": "team-a"},
    "spec": {"clusterQueue": "team-a"},
}
RF = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": "f"}, "spec": {}}


def _import(root: Path, dump_file: Path, *extra: str) -> int:
    return main(["--root", str(root), "import", "--cluster", "c1", "--from", str(dump_file), *extra])


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            _minimal_dump(
                [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x", "namespace": "y"}}]
            ),
            "holds no ClusterQueue",
        ),
        (
            "apiVersion: v1\nkind: List\nitems:\n- apiVersion: kueue.x-k8s.io/v1beta2\n  kind: [",
            "dump.yaml:5:10: error:",
        ),
        (_minimal_dump([{**CQ, "apiVersion": "kueue.x-k8s.io/v1alpha1"}]), "v1alpha1"),
        (
            _minimal_dump(
                [
                    {**RF, "metadata": {"name": "f", "labels": {"gputenancy.io/cluster": "east"}}},
                    {**CQ, "metadata": {"name": "team-a", "labels": {"gputenancy.io/cluster": "west"}}},
                ]
            ),
            "several clusters are mixed",
        ),
        (_minimal_dump([{**CQ, "metadata": {"name": "../../etc"}}]), "dump-read"),
        ("a: &x [1]\nb: *x\n", "(source-alias)"),
    ],
    ids=["not-kueue", "truncated", "unknown-version", "two-clusters", "bad-name", "alias"],
)
def test_bad_dumps_are_findings_and_nothing_is_written(
    text: str, expected: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = _new_repo(tmp_path)
    before = _tree(root)
    dump_file = tmp_path / "dump.yaml"
    dump_file.write_text(text)
    assert _import(root, dump_file) == 1
    out = capsys.readouterr().out
    assert expected in out and "nothing was written" in out
    assert "Traceback" not in out
    assert _tree(root) == before


def test_a_queue_colliding_with_a_tenant_of_the_repository_is_a_finding_at_its_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = _new_repo(tmp_path)
    dump_file = tmp_path / "dump.yaml"
    dump_file.write_text(_minimal_dump([RF, CQ, LQ]))
    assert _import(root, dump_file, "--allow-partial") == 0
    before = _tree(root)
    moved = {**LQ, "metadata": {"name": "q", "namespace": "elsewhere"}}
    (tmp_path / "other.yaml").write_text(_minimal_dump([RF, CQ, moved]))
    rc = main(["--root", str(root), "import", "--cluster", "c2", "--from", str(tmp_path / "other.yaml")])
    out = capsys.readouterr().out
    assert rc == 1
    assert "collides with tenants/team-a.yaml: namespaces" in out and f"{tmp_path / 'other.yaml'}:" in out
    assert _tree(root) == before


def test_an_inexact_round_trip_writes_nothing_unless_partial_is_allowed(tmp_path: Path) -> None:
    shared = shared_dir()
    root = _new_repo(tmp_path)
    before = _tree(root)
    path = shared / "clusters" / "brownfield" / "dumps" / "15-gke-mix-train-inference.yaml"
    assert _import(root, path, "--schemas", str(shared)) == 1
    assert _tree(root) == before
    assert _import(root, path, "--schemas", str(shared), "--allow-partial") == 0
    assert (root / "overlays" / "c1" / "cluster.yaml").is_file()


def test_writes_stay_inside_the_repository_and_are_all_or_nothing(tmp_path: Path) -> None:
    root = _new_repo(tmp_path)
    before = _tree(root)
    with pytest.raises(PipelineError):
        output.write(root, {"tenants/a.yaml": b"a\n", "../outside.yaml": b"x\n"})
    assert _tree(root) == before and not (tmp_path / "outside.yaml").exists()
    (root / "tenants" / "link.yaml").symlink_to(tmp_path / "target.yaml")
    with pytest.raises(PipelineError):
        output.write(root, {"tenants/link.yaml": b"x\n"})
    assert not (tmp_path / "target.yaml").exists()


# ------------------------------------------------------------------------------ --context: the real kubectl


def test_context_runs_only_kubectl_get_and_an_unreachable_cluster_is_a_finding(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for argv in kubectl.commands("prod-admin"):
        assert argv[0] == "kubectl" and kubectl._verb(argv) == "get" and "-o" in argv
    kubekit.unreachable(tmp_path, monkeypatch)
    root = _new_repo(tmp_path)
    before = _tree(root)
    assert main(["--root", str(root), "import", "--cluster", "c1", "--context", "nowhere"]) == 1
    out = capsys.readouterr().out
    assert "kubectl --context nowhere get namespaces," in out and "(kubectl-read)" in out
    assert "nothing was written" in out and _tree(root) == before


def test_import_help_names_the_kinds_and_the_exact_kubectl_line(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["import", "--help"])
    out = capsys.readouterr().out
    assert kubectl.command_line() in out
    for kind in ("ResourceFlavors", "ClusterQueues", "Cohorts", "LocalQueues", "DeviceClasses", "Topologies"):
        assert kind in out


def test_the_cli_import_then_render_then_check_is_clean(tmp_path: Path) -> None:
    shared = shared_dir()
    root = _new_repo(tmp_path)
    path = shared / "clusters" / "brownfield" / "dumps" / "34-rhoai-workshop-gpu-teams.yaml"
    assert _import(root, path, "--schemas", str(shared)) == 0
    assert main(["--root", str(root), "render"]) == 0
    assert main(["--root", str(root), "check"]) == 0
    subprocess.run(["git", "init", "-q", str(root)], check=True)


# ------------------------------------------------------------------------------ --group


def test_group_makes_one_tenant_of_several_queues_and_reports_what_it_changes(tmp_path: Path) -> None:
    shared = shared_dir()
    root = _new_repo(tmp_path)
    dump = dumps.read_dump(shared / "clusters" / "brownfield" / "dumps" / "34-rhoai-workshop-gpu-teams.yaml")
    options = importing.Options("c1", schemas=shared, allow_partial=True, groups=("research=team1,team2",))
    outcome = importing.plan(root, dump, options)
    assert not outcome.exact
    verdicts = {r.shown(): r for r in outcome.results}
    assert verdicts["ClusterQueue research"].verdict is Verdict.NEW
    assert "grouped into tenant research" in verdicts["ClusterQueue team1"].why
    assert [d.describe() for d in verdicts["LocalQueue team1-alpha-project/team1"].diffs] == [
        "spec.clusterQueue: team1 -> research"
    ]
    output.write(root, outcome.files)
    tenant = yaml.safe_load((root / "tenants" / "research.yaml").read_text())
    assert tenant["namespaces"] == [
        "team1-alpha-project",
        "team1-beta-project",
        "team2-alpha-project",
        "team2-beta-project",
    ]
    h100 = tenant["budgets"]["clusters"]["c1"][0]
    assert h100["flavor"] == "nvidia-h100-80gb" and h100["resources"]["nvidia.com/gpu"] == 8  # 2 + 6
    assert not (root / "tenants" / "team1.yaml").exists()
    assert main(["--root", str(root), "validate"]) == 0
    with pytest.raises(PipelineError) as err:
        importing.plan(root, dump, importing.Options("c2", groups=("research=team1,nope",)))
    assert "no imported ClusterQueue nope" in err.value.findings[0].message


def test_selectors_by_label_become_tenant_keys_or_patches_where_the_model_refuses_them(
    tmp_path: Path,
) -> None:
    shared = shared_dir()

    def queue(name: str, labels: dict[str, str]) -> dict[str, object]:
        spec = dict(CQ["spec"])  # type: ignore[arg-type]
        return {
            **CQ,
            "metadata": {"name": name},
            "spec": {**spec, "namespaceSelector": {"matchLabels": labels}},
        }

    def local(namespace: str, queue_name: str) -> dict[str, object]:
        return {**LQ, "metadata": {"name": "q", "namespace": namespace}, "spec": {"clusterQueue": queue_name}}

    own = [
        RF,
        queue("team-a", {"team": "a"}),
        queue("team-b", {"team": "b"}),
        local("ns-a", "team-a"),
        local("ns-b", "team-b"),
    ]
    (tmp_path / "own.yaml").write_text(_minimal_dump(own))
    root = _new_repo(tmp_path / "own")
    outcome = importing.plan(
        root, dumps.read_dump(tmp_path / "own.yaml"), importing.Options("c1", schemas=shared)
    )
    assert outcome.exact and {r.verdict for r in outcome.results} == {Verdict.EXACT}
    output.write(root, outcome.files)
    tenant = yaml.safe_load((root / "tenants" / "team-a.yaml").read_text())
    assert tenant["namespaceSelector"] == {"matchLabels": {"team": "a"}} and tenant["namespaceLabels"] == {
        "team": "a"
    }
    # one label selecting both teams' namespaces: the model refuses it, the selectors are carried as patches
    shared_label = [
        RF,
        queue("team-a", {"gpu": "yes"}),
        queue("team-b", {"gpu": "yes"}),
        local("ns-a", "team-a"),
        local("ns-b", "team-b"),
    ]
    (tmp_path / "shared.yaml").write_text(_minimal_dump(shared_label))
    root = _new_repo(tmp_path / "shared")
    outcome = importing.plan(
        root, dumps.read_dump(tmp_path / "shared.yaml"), importing.Options("c1", schemas=shared)
    )
    assert outcome.exact
    verdicts = {r.shown(): r for r in outcome.results}
    assert verdicts["ClusterQueue team-a"].verdict is Verdict.PATCHED
    assert "spec.namespaceSelector" in verdicts["ClusterQueue team-a"].why


def test_a_queue_whose_name_cannot_be_a_tenant_file_is_kept_verbatim_not_made_a_path(tmp_path: Path) -> None:
    shared = shared_dir()
    dotted = {**CQ, "metadata": {"name": "team.a"}}
    local = {**LQ, "spec": {"clusterQueue": "team.a"}}
    (tmp_path / "dump.yaml").write_text(_minimal_dump([RF, dotted, local]))
    root = _new_repo(tmp_path)
    outcome = importing.plan(
        root, dumps.read_dump(tmp_path / "dump.yaml"), importing.Options("c1", schemas=shared)
    )
    assert outcome.exact
    verdicts = {r.shown(): r for r in outcome.results}
    assert verdicts["ClusterQueue team.a"].verdict is Verdict.CARRIED
    assert "DNS labels" in verdicts["ClusterQueue team.a"].why
    assert not any(rel.startswith("tenants/") for rel in outcome.files)


def test_the_live_prod_cluster_is_adopted_as_it_runs_with_what_cannot_be_kept_named(tmp_path: Path) -> None:
    """The live example cluster with its drift: the hand edits become the repository's truth (speech's
    H100 quota 3, waitForPodsReady 10m), the version comes from the manager's image, and the objects the
    pipeline would refuse (claim templates nothing admits) are named with the check that refuses them."""
    shared = shared_dir()
    root = _new_repo(tmp_path)
    dump = dumps.read_dump(shared / "clusters" / "live" / "prod" / "dump.yaml")
    outcome = importing.plan(root, dump, importing.Options("prod", schemas=shared, allow_partial=True))
    verdicts = {r.shown(): r for r in outcome.results}
    different = sorted(s for s, r in verdicts.items() if r.verdict is Verdict.DIFFERENT)
    assert different == [
        "ResourceClaimTemplate nlp-serve/mig-1g",
        "ResourceClaimTemplate nlp-serve/mig-3g",
        "ResourceClaimTemplate speech/fpga",
    ]
    assert (
        "no LocalQueue pointing at a ClusterQueue" in verdicts["ResourceClaimTemplate nlp-serve/mig-1g"].why
    )
    assert (
        "not in the Kueue Configuration's deviceClassMappings"
        in verdicts["ResourceClaimTemplate speech/fpga"].why
    )
    assert verdicts["Configuration kueue-system/kueue-manager-config"].verdict is Verdict.EXACT
    assert verdicts["ClusterQueue speech"].verdict is Verdict.EXACT
    assert all(
        r.verdict is Verdict.SKIPPED for s, r in verdicts.items() if s.startswith(("Workload ", "Namespace "))
    )
    output.write(root, outcome.files)
    speech = yaml.safe_load((root / "tenants" / "speech.yaml").read_text())
    h100 = speech["budgets"]["clusters"]["prod"][0]
    assert h100["flavor"] == "h100" and h100["devices"]["gpu.nvidia.com"]["nominal"] == 3
    cluster = yaml.safe_load((root / "overlays" / "prod" / "cluster.yaml").read_text())
    assert cluster["kueue"]["version"] == "v0.19.2"
    assert cluster["kueue"]["config"]["waitForPodsReady"]["timeout"] == "10m"


def test_a_resource_zero_in_every_flavor_is_imported_so_the_queue_still_covers_it(tmp_path: Path) -> None:
    """A queue covering nvidia.com/gpu with no GPU quota in either flavor (it may only borrow them): the
    tenant file writes the zero once, and the round trip is exact (coveredResources unchanged)."""
    shared = shared_dir()
    covered = ["cpu", "nvidia.com/gpu"]
    flavors = [
        {
            "name": name,
            "resources": [
                {"name": "cpu", "nominalQuota": cpu},
                {"name": "nvidia.com/gpu", "nominalQuota": "0"},
            ],
        }
        for name, cpu in (("f", "4"), ("g", "2"))
    ]
    cq = {
        **CQ,
        "spec": {
            "namespaceSelector": {
                "matchExpressions": [
                    {"key": "kubernetes.io/metadata.name", "operator": "In", "values": ["team-a"]}
                ]
            },
            "resourceGroups": [{"coveredResources": covered, "flavors": flavors}],
        },
    }
    rf2 = {**RF, "metadata": {"name": "g"}}
    (tmp_path / "dump.yaml").write_text(_minimal_dump([RF, rf2, cq, LQ]))
    root = _new_repo(tmp_path)
    outcome = importing.plan(
        root, dumps.read_dump(tmp_path / "dump.yaml"), importing.Options("c1", schemas=shared)
    )
    verdicts = {r.shown(): r for r in outcome.results}
    assert verdicts["ClusterQueue team-a"].verdict is Verdict.EXACT, verdicts["ClusterQueue team-a"].diffs
    assert outcome.exact
    output.write(root, outcome.files)
    budget = yaml.safe_load((root / "tenants" / "team-a.yaml").read_text())["budgets"]["clusters"]["c1"]
    assert [(b["flavor"], b["resources"]) for b in budget] == [
        ("f", {"cpu": 4, "nvidia.com/gpu": 0}),
        ("g", {"cpu": 2}),
    ]
