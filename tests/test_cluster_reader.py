"""The cluster reader (gputenancy/cluster/): dumps as `kubectl get -o yaml` prints them, the real
`kubectl` run read-only, and the normalisation that makes live and rendered objects comparable. Real
server output from ../shared/clusters/ (brownfield setups and the live example clusters)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import kubekit
import pytest
import yaml
from conftest import shared_dir

from gputenancy.cluster import kubectl
from gputenancy.cluster.compare import MISSING, compare
from gputenancy.cluster.dump import read_dump, read_text
from gputenancy.cluster.normalise import normalise, strip_server
from gputenancy.common.findings import PipelineError


def _dumps() -> list[Path]:
    return sorted((shared_dir() / "clusters" / "brownfield" / "dumps").glob("*.yaml"))


def _brownfield_names() -> list[str]:
    path = Path(os.environ.get("GPUTENANCY_SHARED", Path(__file__).resolve().parents[2] / "shared"))
    found = sorted(p.name for p in (path / "clusters" / "brownfield" / "dumps").glob("*.yaml"))
    return found or ["(no brownfield dumps)"]


@pytest.mark.parametrize("name", _brownfield_names())
def test_every_brownfield_dump_reads_every_object(name: str) -> None:
    path = shared_dir() / "clusters" / "brownfield" / "dumps" / name
    dump = read_dump(path, shown=name)
    text = path.read_text()
    kinds = [line.split(":", 1)[1].strip() for line in text.splitlines() if line.startswith("  kind: ")]
    items = [o for o in dump.objects if o.kind != "ConfigMap"]
    assert [o.kind for o in items] == kinds  # every List item, in order
    for o in dump.objects:
        assert text.splitlines()[o.line - 1].lstrip("- ").startswith(("apiVersion:", "data:"))
    assert (dump.kueue_config() is not None) == ("kueue-manager-config" in text)


def test_the_live_dump_of_prod_is_read_with_its_command_and_configuration() -> None:
    dump = read_dump(shared_dir() / "clusters" / "live" / "prod" / "dump.yaml")
    assert dump.command.startswith("kubectl get namespaces,")
    assert len(dump.of_kind("Workload")) == 7
    assert dump.get("ClusterQueue", "speech") is not None
    assert dump.get("LocalQueue", "nlp", "nlp-serve") is None  # deleted by hand before the dump
    config = dump.kueue_config()
    assert config is not None and config["kind"] == "Configuration"
    assert config["waitForPodsReady"]["timeout"] == "10m"  # the hand edit


def _rendered(cluster: str) -> dict[tuple[str, str, str], dict[str, object]]:
    root = shared_dir() / "clusters" / "live" / "inputs-6b92afc" / "generated" / cluster
    out = {}
    for f in sorted(root.rglob("*.yaml")):
        if "_hub" in f.parts:
            continue
        body = yaml.safe_load(f.read_text())
        meta = body["metadata"]
        out[(body["kind"], meta.get("namespace", ""), meta["name"])] = body
    return out


@pytest.mark.parametrize(("cluster", "version"), [("lab", "v0.18.1"), ("prod", "v0.19.2")])
def test_live_objects_compare_equal_to_what_was_rendered_but_for_the_drift(
    cluster: str, version: str
) -> None:
    dump = read_dump(shared_dir() / "clusters" / "live" / cluster / "dump.yaml")
    crd_dir = shared_dir() / "kueue" / version / "crds"
    differences = {}
    missing = []
    for key, body in _rendered(cluster).items():
        live = dump.get(key[0], key[2], key[1])
        if live is None:
            missing.append(key)
            continue
        if diffs := compare(live.body, body, crd_dir=crd_dir):
            differences[key] = [d.describe() for d in diffs]
    if cluster == "lab":
        assert (differences, missing) == ({}, [])
    else:  # the README of ../shared/clusters/live: speech's quota edited, nlp-serve/nlp deleted
        assert differences == {
            ("ClusterQueue", "", "speech"): [
                "spec.resourceGroups[0].flavors[h100].resources[nvidia.com/gpu].nominalQuota: 3 -> 2"
            ]
        }
        assert missing == [("LocalQueue", "nlp-serve", "nlp")]


def test_normalise_converts_v1beta1_and_fills_the_crd_defaults() -> None:
    crd_dir = shared_dir() / "kueue" / "v0.19.2" / "crds"
    written = {
        "apiVersion": "kueue.x-k8s.io/v1beta1",
        "kind": "ClusterQueue",
        "metadata": {"name": "team-a"},
        "spec": {
            "cohort": "all",
            "admissionChecks": ["prov"],
            "flavorFungibility": {"whenCanBorrow": "Borrow"},
            "resourceGroups": [
                {
                    "coveredResources": ["nvidia.com/gpu"],
                    "flavors": [
                        {"name": "h100", "resources": [{"name": "nvidia.com/gpu", "nominalQuota": 8}]}
                    ],
                }
            ],
        },
    }
    out = normalise(written, crd_dir=crd_dir)
    assert out["apiVersion"] == "kueue.x-k8s.io/v1beta2"
    spec = out["spec"]
    assert spec["cohortName"] == "all" and "cohort" not in spec
    assert spec["admissionChecksStrategy"] == {"admissionChecks": [{"name": "prov"}]}
    assert spec["flavorFungibility"]["whenCanBorrow"] == "MayStopSearch"
    assert spec["queueingStrategy"] == "BestEffortFIFO"  # a CRD default
    assert spec["resourceGroups"][0]["flavors"][0]["resources"][0]["nominalQuota"] == "8"
    assert "cohort" in written["spec"]  # the input is not changed


def test_strip_server_removes_what_the_server_owns_and_keeps_the_authors_fields() -> None:
    body = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": "x",
            "namespace": "ns",
            "uid": "1",
            "resourceVersion": "2",
            "creationTimestamp": "t",
            "managedFields": [{}],
            "finalizers": ["kueue.x-k8s.io/resource-in-use", "example.com/keep"],
            "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{}", "team": "a"},
            "labels": {},
        },
        "data": {"k": "v"},
        "status": {"x": 1},
    }
    assert strip_server(body) == {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": "x",
            "namespace": "ns",
            "finalizers": ["example.com/keep"],
            "annotations": {"team": "a"},
        },
        "data": {"k": "v"},
    }


def test_compare_names_list_items_and_sides_where_a_field_is_absent() -> None:
    live = {
        "apiVersion": "v1",
        "kind": "X",
        "metadata": {"name": "a"},
        "spec": {"items": [{"name": "p", "v": 1}]},
    }
    rendered = {
        "apiVersion": "v1",
        "kind": "X",
        "metadata": {"name": "a"},
        "spec": {"items": [{"name": "p", "v": 2}], "w": True},
    }
    diffs = compare(live, rendered)
    assert [(d.path, d.live, d.rendered) for d in diffs] == [
        ("spec.items[p].v", 1, 2),
        ("spec.w", MISSING, True),
    ]
    assert diffs[1].describe() == "spec.w: (absent) -> true"
    assert compare(live, live) == ()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            b"apiVersion: v1\nkind: List\nitems: [\n",
            "dump.yaml:4:1: error: expected the node content",
        ),  # truncated
        (
            b"just text\n",
            "dump.yaml:1:1: error: a document or List item that is not a Kubernetes object (dump-read)",
        ),
        (
            b"apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: ../../etc}\n",
            "dump.yaml:4:1: error: ConfigMap '../../etc': not a name the API server accepts",
        ),
        (b"a: &x [1]\nb: *x\n", "(source-alias)"),
        (b"apiVersion: v1\nkind: List\nitems: []\n", "holds no Kubernetes objects"),
        (b"- 1\n", "not a Kubernetes object"),
    ],
)
def test_a_dump_that_is_not_one_is_a_finding_at_the_file_and_line(text: bytes, expected: str) -> None:
    with pytest.raises(PipelineError) as err:
        read_text(text, "dump.yaml")
    assert any(expected in f.format() for f in err.value.findings), [f.format() for f in err.value.findings]


def test_every_finding_of_a_multi_document_dump_in_one_run_at_its_own_line() -> None:
    text = (
        b"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, namespace: n}\n"
        b"---\nkind: ConfigMap\nmetadata: {name: b}\n"
        b"---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, namespace: n}\n"
    )
    with pytest.raises(PipelineError) as err:
        read_text(text, "d.yaml")
    shown = sorted(f.format() for f in err.value.findings)
    assert shown == [
        "d.yaml:5:1: error: not a Kubernetes object: apiVersion and kind are required (dump-read)",
        "d.yaml:8:1: error: ConfigMap n/a appears twice (first at line 1): a dump of one cluster holds each "
        "object once (dump-read)",
    ]


def test_the_kubectl_commands_only_get_and_name_every_kind() -> None:
    for argv in kubectl.commands("prod-admin"):
        assert argv[0] == "kubectl" and kubectl._verb(argv) == "get"
        assert argv[argv.index("--context") + 1] == "prod-admin" and "-o" in argv
    line = kubectl.command_line()
    assert "clusterqueues.kueue.x-k8s.io" in line and "resourceslices.resource.k8s.io" in line
    assert "configmap/kueue-manager-config" in line
    with pytest.raises(PipelineError) as err:
        kubectl.commands("--kubeconfig=/etc/x")
    assert "not a kubeconfig context name" in err.value.findings[0].message


def test_read_live_runs_the_real_kubectl_and_reports_an_unreachable_cluster(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    kubekit.unreachable(tmp_path, monkeypatch)
    with pytest.raises(PipelineError) as err:
        kubectl.read_live("nowhere")
    (finding,) = err.value.findings
    assert finding.rule == "kubectl-read" and "kubectl --context nowhere get namespaces," in finding.message


def test_the_documented_kubectl_line_writes_a_file_the_reader_reads() -> None:
    """Both commands print a List; the line separates them into two documents."""
    line = kubectl.command_line()
    assert "; echo ---; " in line
    lists = [
        "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Namespace\n  metadata: {name: team-a}\n",
        "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: ConfigMap\n"
        "  metadata: {name: kueue-manager-config, namespace: kueue-system}\n"
        "  data: {controller_manager_config.yaml: 'kind: Configuration'}\n",
    ]
    dump = read_text(("\n---\n".join(lists)).encode(), "cluster.yaml")
    assert [o.key for o in dump.objects] == [
        ("Namespace", "", "team-a"),
        ("ConfigMap", "kueue-system", "kueue-manager-config"),
    ]
    assert dump.objects[1].line == 12  # the item, after the separator and the List header
    docs = Path(__file__).resolve().parent.parent / "docs"
    shown = [p.name for p in docs.glob("*.md") if "kubectl get namespaces," in p.read_text()]
    assert shown, "no page shows the kubectl line"
    for name in shown:
        assert line in (docs / name).read_text(), (
            f"docs/{name} shows another kubectl line than `status --help`"
        )


def test_a_json_dump_reads_as_the_same_objects_as_its_yaml(tmp_path: Path) -> None:
    """`kubectl get -o json` (what --context reads, and a file may hold): the same objects and bodies,
    the two Lists of the documented line separated by its `---` or nothing."""
    path = shared_dir() / "clusters" / "live" / "prod" / "dump.yaml"
    from_yaml = read_dump(path)
    lists = [d for d in yaml.safe_load_all(path.read_text()) if d]
    for sep in ("\n---\n", "\n"):
        text = sep.join(json.dumps(d, indent=2) for d in lists)
        from_json = read_text(text.encode(), "cluster.json")
        assert [(o.key, o.body) for o in from_json.objects] == [(o.key, o.body) for o in from_yaml.objects]
        assert from_json.kueue_config() == from_yaml.kueue_config()
    with pytest.raises(PipelineError) as err:
        read_text(b'{"apiVersion": "v1", "kind": "List", "items": [\n{"kind": ', "cut.json")
    assert [f.format() for f in err.value.findings] == [
        "cut.json:2:10: error: not JSON: Expecting value (dump-read)"
    ]
    assert all("json" in argv for argv in kubectl.commands(None, "json"))


def test_namespaces_are_labels_and_every_object_names_one_the_api_server_accepts() -> None:
    """A Namespace's name is a DNS-1123 label (no dots) where other objects take a subdomain; an object's
    metadata.namespace is checked as a label too."""
    dump = read_text(
        b"apiVersion: v1\nkind: List\nitems:\n"
        b"- {apiVersion: v1, kind: Namespace, metadata: {name: team-a}}\n"
        b"- {apiVersion: v1, kind: ConfigMap, metadata: {name: a.b, namespace: team-a}}\n",
        "dump.yaml",
    )
    assert [o.key for o in dump.objects] == [("Namespace", "", "team-a"), ("ConfigMap", "team-a", "a.b")]
    for item, expected in (
        (b"{apiVersion: v1, kind: Namespace, metadata: {name: team.a}}", "Namespace 'team.a'"),
        (b"{apiVersion: v1, kind: ConfigMap, metadata: {name: x, namespace: ../etc}}", "ConfigMap 'x'"),
        (b"{apiVersion: v1, kind: ConfigMap, metadata: {name: x, namespace: a.b}}", "ConfigMap 'x'"),
    ):
        with pytest.raises(PipelineError) as err:
            read_text(b"apiVersion: v1\nkind: List\nitems:\n- " + item + b"\n", "dump.yaml")
        (finding,) = err.value.findings
        assert finding.format().startswith(
            f"dump.yaml:4:1: error: {expected}: not a name the API server accepts"
        ), finding.format()


@pytest.mark.parametrize(
    "context",
    ["-n", "--kubeconfig", "-", "prod admin", "prod\nadmin", "prod;id", "$(id)", "", "x" * 254],
)
def test_a_context_that_is_not_a_kubeconfig_name_is_refused(context: str) -> None:
    with pytest.raises(PipelineError) as err:
        kubectl.commands(context)
    (finding,) = err.value.findings
    assert finding.rule == "kubectl-context" and "not a kubeconfig context name" in finding.message


@pytest.mark.parametrize(
    "context", ["prod-admin", "arn:aws:eks:eu-west-1:123456789012:cluster/prod", "admin@prod.k8s", "x" * 253]
)
def test_kubeconfig_context_names_are_accepted(context: str) -> None:
    for argv in kubectl.commands(context):
        assert argv[1:3] == ["--context", context]


def test_read_live_starts_nothing_whose_verb_is_not_get(monkeypatch: pytest.MonkeyPatch) -> None:
    """The guard in front of every kubectl run: an argv with another verb (a context named `get` is no
    verb) stops before any process is started."""
    started: list[list[str]] = []
    monkeypatch.setattr(kubectl.proc, "run", lambda argv, **_: started.append(argv))
    for verb in ("delete", "apply", "patch", "edit", "label"):
        argv = ["kubectl", "--context", "get", "-n", "kueue-system", verb, "configmap/x"]
        monkeypatch.setattr(kubectl, "commands", lambda context=None, argv=argv: [argv])
        with pytest.raises(AssertionError, match="not a read verb"):
            kubectl.read_live("get")
    assert started == []


def test_compare_sees_a_flavor_order_changed_and_a_boolean_for_a_number() -> None:
    """Flavors are tried in their order: the same flavors in another order differ (the whole list is
    shown); `true` and `1` are not the same value."""
    flavors = [
        {"name": "h100", "resources": [{"name": "nvidia.com/gpu", "nominalQuota": "8"}]},
        {"name": "a100", "resources": [{"name": "nvidia.com/gpu", "nominalQuota": "4"}]},
    ]

    def queue(order: list[dict[str, object]], extra: object) -> dict[str, object]:
        return {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "ClusterQueue",
            "metadata": {"name": "q"},
            "spec": {
                "resourceGroups": [{"coveredResources": ["nvidia.com/gpu"], "flavors": order}],
                "x": extra,
            },
        }

    diffs = compare(queue(flavors[::-1], 1), queue(flavors, True))
    assert [(d.path, d.live, d.rendered) for d in diffs] == [
        ("spec.resourceGroups[0].flavors", flavors[::-1], flavors),
        ("spec.x", 1, True),
    ]
    assert compare(queue(flavors, False), queue(flavors, False)) == ()
