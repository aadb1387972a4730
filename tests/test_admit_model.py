"""`admit`'s model of Kueue on the prod and lab clusters the live dumps were made from: how pods are summed,
the pod sets of each job kind, flavor order, taints and node selectors, the queue checks, what can never run,
and the exit codes; through the command line on a copy of the inputs under tmp_path."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from test_admit import JOB, make_repo

from gputenancy.check.chain.charging import transformed
from gputenancy.cli.app import main
from gputenancy.inputs.quantity import parse
from gputenancy.versions import hami


@pytest.fixture
def repo(tmp_path: Path, shared: Path) -> Path:
    return make_repo(tmp_path, shared)


def _admit(
    root: Path,
    tmp_path: Path,
    docs: list[dict[str, Any]] | str,
    capsys: pytest.CaptureFixture[str],
    cluster: str = "prod",
) -> tuple[int, list[dict[str, Any]], str]:
    path = tmp_path / "jobs.yaml"
    path.write_text(docs if isinstance(docs, str) else yaml.safe_dump_all(docs))
    code = main(["--root", str(root), "admit", str(path), "--cluster", cluster, "--format", "json"])
    out = capsys.readouterr()
    workloads = json.loads(out.out)["workloads"] if out.out.startswith("{") else []
    return code, workloads, out.out + out.err


def _job(
    name: str = "j", namespace: str = "nlp-pretrain", queue: str = "nlp", template: str = "h100-x4"
) -> dict[str, Any]:
    doc = yaml.safe_load(JOB.format(name=name, namespace=namespace, queue=queue, template=template))
    assert isinstance(doc, dict)
    return doc


def _pod(doc: dict[str, Any]) -> dict[str, Any]:
    spec = doc["spec"]["template"]["spec"]
    assert isinstance(spec, dict)
    return spec


def test_a_pod_is_charged_as_kueue_sums_it(
    repo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Containers summed, a sidecar added, an init container (plus the sidecars before it) when it asks for
    more, pod overhead; a container with limits only is charged its limits; parallelism capped by completions."""
    job = _job()
    job["spec"].update({"parallelism": 3, "completions": 2})
    pod = _pod(job)
    pod["containers"].append(
        {"name": "side", "image": "x", "resources": {"limits": {"cpu": "2", "memory": "2Gi"}}}
    )
    pod["initContainers"] = [
        {"name": "proxy", "image": "x", "restartPolicy": "Always", "resources": {"requests": {"cpu": "1"}}},
        {"name": "fetch", "image": "x", "resources": {"requests": {"cpu": "5", "memory": "1Gi"}}},
    ]
    pod["overhead"] = {"cpu": "250m"}
    code, [w], _ = _admit(repo, tmp_path, [job], capsys)
    [ps] = w["podSets"]
    # cpu: containers 1 + 2 + sidecar 1 = 4 < init 5 + sidecar 1 = 6; + overhead 250m
    assert ps["perPod"] == {"cpu": "6250m", "memory": "6Gi", "nvidia.com/gpu": "4"}
    assert ps["count"] == 2
    assert ps["total"] == {"cpu": "12500m", "memory": "12Gi", "nvidia.com/gpu": "8"}
    assert "init container fetch" in ps["why"]["cpu"]
    assert (code, w["outcome"], w["flavors"]) == (
        0,
        "admitted",
        {"main": {"cpu": "h100", "memory": "h100", "nvidia.com/gpu": "h100"}},
    )
    assert w["borrowing"] and "from cohort research" in w["borrowing"][0]


def test_more_than_any_flavor_can_hold_never_runs(
    repo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    job = _job()
    job["spec"]["parallelism"] = 4  # 16 H100: nlp reaches 6 + 6 borrowed at most (Git: speech lends 2)
    code, [w], _ = _admit(repo, tmp_path, [job], capsys)
    assert (code, w["outcome"]) == (1, "never")
    assert w["kueueMessage"] == (
        "couldn't assign flavors to pod set main: insufficient quota for nvidia.com/gpu in flavor a100-mig, previously "
        "considered podsets requests (0) + current podset request (16) > maximum capacity (0), insufficient quota for "
        "nvidia.com/gpu in flavor h100, previously considered podsets requests (0) + current podset request (16) > "
        "maximum capacity (12)"
    )


def test_a_resource_the_queue_does_not_cover(
    repo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    job = _job()
    _pod(job)["containers"][0]["resources"]["limits"] = {"example.com/fpga": "1"}
    code, [w], _ = _admit(repo, tmp_path, [job], capsys)
    assert (code, w["outcome"]) == (1, "never")
    assert "resource example.com/fpga unavailable in ClusterQueue" in w["kueueMessage"]


def test_node_selector_and_taints_rule_flavors_out(
    repo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A nodeSelector for the A100 nodes leaves only a100-mig (no H100 quota there); a taint on h100 that the
    pod does not tolerate skips it, tolerated it is used."""
    job = _job()
    _pod(job)["nodeSelector"] = {"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB"}
    code, [w], _ = _admit(repo, tmp_path, [job], capsys)
    assert code == 1
    assert "flavor h100 doesn't match node affinity" in w["kueueMessage"]
    flavor = repo / "generated/prod/resourceflavor/h100.yaml"
    body = yaml.safe_load(flavor.read_text())
    body["spec"]["nodeTaints"] = [{"key": "dedicated", "value": "training", "effect": "NoSchedule"}]
    flavor.write_text(yaml.safe_dump(body))
    code, [w], _ = _admit(repo, tmp_path, [_job()], capsys)
    assert "untolerated taint dedicated=training:NoSchedule in flavor h100" in w["kueueMessage"]
    tolerated = _job()
    _pod(tolerated)["tolerations"] = [
        {"key": "dedicated", "operator": "Equal", "value": "training", "effect": "NoSchedule"}
    ]
    code, [w], _ = _admit(repo, tmp_path, [tolerated], capsys)
    assert (code, w["outcome"], w["flavors"]["main"]["nvidia.com/gpu"]) == (0, "admitted", "h100")


def test_job_kinds_make_kueues_pod_sets(
    repo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pod = _pod(_job())
    template = {"spec": pod}
    jobset = {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {
            "name": "js",
            "namespace": "nlp-pretrain",
            "labels": {"kueue.x-k8s.io/queue-name": "nlp"},
        },
        "spec": {
            "replicatedJobs": [
                {
                    "name": "workers",
                    "replicas": 2,
                    "template": {"spec": {"parallelism": 1, "template": template}},
                }
            ]
        },
    }
    ray = {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {
            "name": "rc",
            "namespace": "vision-train",
            "labels": {"kueue.x-k8s.io/queue-name": "vision"},
        },
        "spec": {
            "headGroupSpec": {
                "template": {
                    "spec": {"containers": [{"name": "head", "resources": {"requests": {"cpu": "2"}}}]}
                }
            },
            "workerGroupSpecs": [
                {
                    "groupName": "gpu",
                    "replicas": 2,
                    "template": {
                        "spec": {
                            **pod,
                            "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "h100-x1"}],
                        }
                    },
                }
            ],
        },
    }
    train = {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {
            "name": "tj",
            "namespace": "vision-train",
            "labels": {"kueue.x-k8s.io/queue-name": "vision"},
        },
        "spec": {"trainer": {"numNodes": 3, "resourcesPerNode": {"requests": {"cpu": "4", "memory": "8Gi"}}}},
    }
    rayjob = {
        "apiVersion": "ray.io/v1",
        "kind": "RayJob",
        "metadata": {
            "name": "rj",
            "namespace": "vision-train",
            "labels": {"kueue.x-k8s.io/queue-name": "vision"},
        },
        "spec": {"entrypoint": "python x.py", "rayClusterSpec": ray["spec"]},
    }
    code, ws, _ = _admit(repo, tmp_path, [jobset, ray, train, rayjob], capsys)
    assert [(w["kind"], [(p["name"], p["count"]) for p in w["podSets"]]) for w in ws] == [
        ("JobSet", [("workers", 2)]),
        ("RayCluster", [("head", 1), ("gpu", 2)]),
        ("TrainJob", [("node", 3)]),
        ("RayJob", [("head", 1), ("gpu", 2), ("submitter", 1)]),
    ]
    assert ws[3]["podSets"][2]["perPod"] == {"cpu": "500m", "memory": "200Mi"}
    assert ws[1]["podSets"][1]["total"]["nvidia.com/gpu"] == "2"
    assert code == 0


def test_a_kind_whose_integration_is_off_is_a_finding(
    repo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytorch = {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {
            "name": "pt",
            "namespace": "nlp-pretrain",
            "labels": {"kueue.x-k8s.io/queue-name": "nlp"},
        },
        "spec": {"pytorchReplicaSpecs": {"Master": {"replicas": 1, "template": {"spec": _pod(_job())}}}},
    }
    code, _, out = _admit(repo, tmp_path, [pytorch], capsys)
    assert code == 1
    assert "does not enable the 'kubeflow.org/pytorchjob' integration" in out
    assert "(admit-input)" in out


def test_queue_checks(repo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The namespace's LocalQueue `default` is used for a job without the label (Kueue v0.19 always defaults);
    a missing LocalQueue, a stopped ClusterQueue and a namespace the queue does not select are Kueue's."""
    unlabelled = _job(namespace="speech", queue="speech", template="gpu")
    del unlabelled["metadata"]["labels"]
    lq = repo / "generated/prod/localqueue/speech/speech.yaml"
    body = yaml.safe_load(lq.read_text())
    body["metadata"]["name"] = "default"
    (lq.parent / "default.yaml").write_text(yaml.safe_dump(body))
    code, [w], _ = _admit(repo, tmp_path, [unlabelled], capsys)
    assert (code, w["localQueue"], w["outcome"]) == (0, "default", "admitted")

    code, [w], _ = _admit(repo, tmp_path, [_job(queue="nope")], capsys)
    assert (code, w["outcome"], w["kueueMessage"]) == (1, "inadmissible", "LocalQueue nope doesn't exist")

    body["metadata"].update({"name": "elsewhere", "namespace": "sandbox-x"})
    (lq.parent / "elsewhere.yaml").write_text(yaml.safe_dump(body))
    rct = yaml.safe_load((repo / "generated/prod/resourceclaimtemplate/speech/gpu.yaml").read_text())
    rct["metadata"]["namespace"] = "sandbox-x"
    (repo / "generated/prod/resourceclaimtemplate/speech/x.yaml").write_text(yaml.safe_dump(rct))
    code, [w], _ = _admit(
        repo, tmp_path, [_job(namespace="sandbox-x", queue="elsewhere", template="gpu")], capsys
    )
    assert (code, w["outcome"]) == (1, "never")
    assert w["kueueMessage"] == "Workload namespace doesn't match ClusterQueue selector"

    cq = repo / "generated/prod/clusterqueue/nlp.yaml"
    body = yaml.safe_load(cq.read_text())
    body["spec"]["stopPolicy"] = "Hold"
    cq.write_text(yaml.safe_dump(body))
    code, [w], _ = _admit(repo, tmp_path, [_job()], capsys)
    assert (code, w["outcome"], w["kueueMessage"]) == (1, "inadmissible", "ClusterQueue nlp is inactive")


def test_allocation_mode_all_is_inadmissible(
    repo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = repo / "generated/prod/resourceclaimtemplate/nlp-pretrain/h100-x4.yaml"
    body = yaml.safe_load(path.read_text())
    exactly = body["spec"]["spec"]["devices"]["requests"][0]["exactly"]
    exactly.pop("count", None)
    exactly["allocationMode"] = "All"
    path.write_text(yaml.safe_dump(body))
    code, [w], _ = _admit(repo, tmp_path, [_job()], capsys)
    assert (code, w["outcome"]) == (1, "inadmissible")
    assert "ResourceClaimTemplate h100-x4: AllocationMode 'All' is not supported" in w["kueueMessage"]


def test_an_extended_resource_a_device_class_serves(
    repo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Kueue v0.19 (KueueDRAIntegrationExtendedResource on) charges `nvidia.com/gpu: 2` in a container as the
    NVIDIA driver's DeviceClass gpu.nvidia.com maps it; v0.18 (the gate off) as the plain resource."""
    job = _job()
    pod = _pod(job)
    del pod["resourceClaims"]
    pod["containers"][0]["resources"] = {"requests": {"cpu": "1"}, "limits": {"nvidia.com/gpu": "2"}}
    _, [w], _ = _admit(repo, tmp_path, [job], capsys)
    assert w["podSets"][0]["perPod"]["nvidia.com/gpu"] == "2"
    assert "served by DeviceClass gpu.nvidia.com" in w["podSets"][0]["why"]["nvidia.com/gpu"]
    lab = _job(namespace="sandbox", queue="sandbox")
    _pod(lab).clear()
    _pod(lab).update(pod)
    code, [w], _ = _admit(repo, tmp_path, [lab], capsys, cluster="lab")
    assert "served by" not in w["podSets"][0]["why"]["nvidia.com/gpu"]
    assert (code, w["outcome"]) == (1, "never")  # 2 GPUs, the lab queue holds 1


def test_retain_charges_its_input_multiplied_up_to_v018_only() -> None:
    """shared/docs/hami-kueue-verified.md: with `strategy: Retain`, the raw input is charged multiplied by the
    multiplyBy resource on v0.18.1 and as requested on v0.19.2."""
    rules = (("nvidia.com/gpumem", True, (("nvidia.com/total-gpumem", parse(1)),), "nvidia.com/gpu"),)
    needs = {"nvidia.com/gpu": (parse(2), "c"), "nvidia.com/gpumem": (parse(3000), "c")}
    for version, raw in (("v0.18.1", "6k"), ("v0.19.2", "3k")):
        out = transformed(needs, rules, retain_multiplied=hami.retain_multiplied(version))
        assert out["nvidia.com/total-gpumem"][0].canonical() == "6k"
        assert out["nvidia.com/gpumem"][0].canonical() == raw


def test_markdown_and_text(repo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "j.yaml"
    path.write_text(yaml.safe_dump(_job()))
    assert main(["--root", str(repo), "admit", str(path), "--cluster", "prod", "--format", "markdown"]) == 0
    out = capsys.readouterr().out
    assert "| `Job nlp-pretrain/j` (" in out and "ADMITTED" in out
    assert main(["--root", str(repo), "admit", str(path)]) == 1  # several clusters: --cluster needed
    assert "name the cluster to judge against with --cluster" in capsys.readouterr().out


def test_pod_sets_count_what_the_ones_before_them_took(
    repo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Four replicated jobs of 4 H100 each: the fourth finds 12 taken on h100 (nlp's most) and no H100 on
    a100-mig; only its pod set is in Kueue's message."""
    template = {"spec": _pod(_job())}
    jobset = {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {
            "name": "js",
            "namespace": "nlp-pretrain",
            "labels": {"kueue.x-k8s.io/queue-name": "nlp"},
        },
        "spec": {
            "replicatedJobs": [
                {"name": f"r{i}", "template": {"spec": {"template": copy.deepcopy(template)}}}
                for i in range(4)
            ]
        },
    }
    code, [w], _ = _admit(repo, tmp_path, [jobset], capsys)
    assert (code, w["outcome"]) == (1, "never")
    assert w["kueueMessage"] == (
        "couldn't assign flavors to pod set r3: insufficient quota for nvidia.com/gpu in flavor a100-mig, previously "
        "considered podsets requests (0) + current podset request (4) > maximum capacity (0), insufficient quota for "
        "nvidia.com/gpu in flavor h100, previously considered podsets requests (12) + current podset request (4) > "
        "maximum capacity (12)"
    )


def test_excluded_resources_are_not_charged(
    repo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`resources.excludeResourcePrefixes` of the Kueue Configuration: what it names is not charged."""
    job = _job(namespace="sandbox", queue="sandbox", template="single-gpu")
    _pod(job)["containers"][0]["resources"]["limits"] = {"example.com/fpga": "1"}
    code, [w], _ = _admit(repo, tmp_path, [job], capsys, cluster="lab")
    assert (code, w["outcome"]) == (1, "never")
    app = repo / "generated/lab/_hub/application/argocd/kueue-lab.yaml"
    text = app.read_text()
    mappings = "              deviceClassMappings:\n"
    assert mappings in text
    app.write_text(
        text.replace(
            mappings, "              excludeResourcePrefixes:\n              - example.com/\n" + mappings
        )
    )
    code, [w], _ = _admit(repo, tmp_path, [job], capsys, cluster="lab")
    assert (code, w["outcome"]) == (0, "admitted")
    assert "example.com/fpga" not in w["podSets"][0]["perPod"]


def test_with_a_dump_the_cluster_objects_decide(
    repo: Path, tmp_path: Path, shared: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """LocalQueue nlp-serve/nlp is in Git but was deleted on prod: admitted against Git, Inadmissible with the
    dump (Kueue's "LocalQueue nlp doesn't exist"), decided at the job's queue label."""
    job = _job(namespace="nlp-serve", queue="nlp", template="mig-1g")
    code, [w], _ = _admit(repo, tmp_path, [job], capsys)
    assert (code, w["outcome"]) == (0, "admitted")
    path = tmp_path / "serve.yaml"
    path.write_text(yaml.safe_dump(job))
    dump = str(shared / "clusters/live/prod/dump.yaml")
    code = main(
        ["--root", str(repo), "admit", str(path), "--cluster", "prod", "--from", dump, "--format", "json"]
    )
    [w] = json.loads(capsys.readouterr().out)["workloads"]
    assert (code, w["outcome"], w["kueueMessage"]) == (1, "inadmissible", "LocalQueue nlp doesn't exist")
    label = next(n for n, line in enumerate(path.read_text().splitlines(), 1) if "queue-name" in line)
    assert w["decidedAt"] == f"{path}:{label}"  # the kueue.x-k8s.io/queue-name label


RACKS = {
    "apiVersion": "kueue.x-k8s.io/v1beta2",
    "kind": "Topology",
    "metadata": {"name": "racks"},
    "spec": {
        "levels": [
            {"nodeLabel": "topology.acme.io/block"},
            {"nodeLabel": "topology.acme.io/rack"},
            {"nodeLabel": "kubernetes.io/hostname"},
        ]
    },
}


def _tas(repo: Path, *flavors: str) -> None:
    """Bind prod's rendered `flavors` to the Topology racks, as a cluster.yaml's capacity[].topologyName does."""
    (repo / "generated/prod/topology").mkdir(exist_ok=True)
    (repo / "generated/prod/topology/racks.yaml").write_text(yaml.safe_dump(RACKS))
    for name in flavors:
        path = repo / f"generated/prod/resourceflavor/{name}.yaml"
        body = yaml.safe_load(path.read_text())
        body["spec"]["topologyName"] = "racks"
        path.write_text(yaml.safe_dump(body))


def _asking(level: str) -> dict[str, Any]:
    job = _job()
    job["spec"]["template"]["metadata"] = {"annotations": {"kueue.x-k8s.io/podset-required-topology": level}}
    return job


def test_a_queue_mixing_tas_flavors_refuses_jobs_as_kueue_does(
    repo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """h100 bound to a Topology, a100-mig not (nlp's queue holds both): a job without a topology annotation
    is refused on h100 and can never run (a100-mig has no H100s); one asking for a rack is admitted on h100;
    one asking for a level the Topology lacks is refused there too."""
    _tas(repo, "h100")
    code, [w], _ = _admit(repo, tmp_path, [_job()], capsys)
    assert (code, w["outcome"]) == (1, "never")
    assert 'Flavor "h100" supports only TopologyAwareScheduling' in w["kueueMessage"]
    assert w["kueueMessage"].startswith("couldn't assign flavors to pod set main: ")
    assert "Topology Aware Scheduling rules out h100" in w["why"]
    assert "kueue.x-k8s.io/podset-required-topology" in w["fix"] and "topology-mixed-queue" in w["fix"]

    code, [w], _ = _admit(repo, tmp_path, [_asking("topology.acme.io/rack")], capsys)
    assert (code, w["outcome"], w["flavors"]["main"]["nvidia.com/gpu"]) == (0, "admitted", "h100")

    code, [w], _ = _admit(repo, tmp_path, [_asking("example.com/pod")], capsys)
    assert (code, w["outcome"]) == (1, "never")
    assert 'Flavor "h100" does not contain the requested level' in w["kueueMessage"]


def test_an_annotated_job_is_refused_on_a_flavor_without_topology(
    repo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """a100-mig bound, h100 not: a job asking for a rack is refused on h100 (it requests cpu, a resource of
    the group) and a100-mig has no H100s for it."""
    _tas(repo, "a100-mig")
    code, [w], _ = _admit(repo, tmp_path, [_asking("topology.acme.io/rack")], capsys)
    assert (code, w["outcome"]) == (1, "never")
    assert 'Flavor "h100" does not support TopologyAwareScheduling' in w["kueueMessage"]
    assert "drop the topology annotations" in w["fix"]
    code, [w], _ = _admit(repo, tmp_path, [_job()], capsys)  # no annotation: h100 as before
    assert (code, w["outcome"], w["flavors"]["main"]["nvidia.com/gpu"]) == (0, "admitted", "h100")


def test_a_tas_only_queue_admits_jobs_with_and_without_a_topology_annotation(
    repo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _tas(repo, "h100", "a100-mig")
    code, workloads, _ = _admit(repo, tmp_path, [_job("plain"), _asking("topology.acme.io/rack")], capsys)
    assert [(w["outcome"], w["flavors"]["main"]["nvidia.com/gpu"]) for w in workloads] == [
        ("admitted", "h100"),
        ("admitted", "h100"),
    ]
    assert code == 0


def test_a_claim_without_a_count_is_charged_one_device(
    repo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`exactly` without `count` (allocationMode ExactCount, as the API server defaults it) is one device."""
    path = repo / "generated/prod/resourceclaimtemplate/nlp-pretrain/h100-x4.yaml"
    body = yaml.safe_load(path.read_text())
    del body["spec"]["spec"]["devices"]["requests"][0]["exactly"]["count"]
    path.write_text(yaml.safe_dump(body))
    code, [w], _ = _admit(repo, tmp_path, [_job()], capsys)
    assert (code, w["outcome"], w["podSets"][0]["perPod"]["nvidia.com/gpu"]) == (0, "admitted", "1")


def test_the_first_flavor_that_fits_is_taken_in_the_queues_order(
    repo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A job of CPU and memory only fits both of nlp's flavors: it gets h100, the first; with the flavors
    listed the other way round, a100-mig."""
    job = _job()
    pod = _pod(job)
    del pod["resourceClaims"]
    del pod["containers"][0]["resources"]["claims"]
    code, [w], _ = _admit(repo, tmp_path, [job], capsys)
    assert (code, w["flavors"]) == (0, {"main": {"cpu": "h100", "memory": "h100"}})
    path = repo / "generated/prod/clusterqueue/nlp.yaml"
    body = yaml.safe_load(path.read_text())
    group = body["spec"]["resourceGroups"][0]
    group["flavors"].reverse()
    assert [f["name"] for f in group["flavors"]] == ["a100-mig", "h100"]
    path.write_text(yaml.safe_dump(body))
    code, [w], _ = _admit(repo, tmp_path, [job], capsys)
    assert (code, w["flavors"]) == (0, {"main": {"cpu": "a100-mig", "memory": "a100-mig"}})


def test_requests_are_charged_not_limits(
    repo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A container asking for 1 CPU up to 8 is charged 1 (its request); one with a limit only, its limit."""
    job = _job()
    containers = _pod(job)["containers"]
    containers[0]["resources"].update(
        requests={"cpu": "1", "memory": "4Gi"}, limits={"cpu": "8", "memory": "8Gi"}
    )
    containers.append({"name": "side", "image": "x", "resources": {"limits": {"cpu": "2"}}})
    _, [w], _ = _admit(repo, tmp_path, [job], capsys)
    assert {r: w["podSets"][0]["perPod"][r] for r in ("cpu", "memory")} == {"cpu": "3", "memory": "4Gi"}
    assert "container side (limits, no requests)" in w["podSets"][0]["why"]["cpu"]


def test_the_borrowing_limit_bounds_what_a_queue_can_ever_take(
    repo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """nlp's H100 borrowingLimit lowered from 8 to 2 (the cohort could lend it 6): 6 + 2 = 8 GPUs at most;
    8 are admitted, borrowing 2, and 12 can never run, with Kueue's maximum capacity of 8."""
    path = repo / "generated/prod/clusterqueue/nlp.yaml"
    body = yaml.safe_load(path.read_text())
    h100 = body["spec"]["resourceGroups"][0]["flavors"][0]
    gpu = next(r for r in h100["resources"] if r["name"] == "nvidia.com/gpu")
    assert (h100["name"], gpu["borrowingLimit"]) == ("h100", "8")
    gpu["borrowingLimit"] = "2"
    path.write_text(yaml.safe_dump(body))
    job = _job()
    job["spec"]["parallelism"] = 2
    code, [w], _ = _admit(repo, tmp_path, [job], capsys)
    assert (code, w["outcome"], w["flavors"]["main"]["nvidia.com/gpu"]) == (0, "admitted", "h100")
    job["spec"]["parallelism"] = 3
    code, [w], _ = _admit(repo, tmp_path, [job], capsys)
    assert (code, w["outcome"]) == (1, "never")
    assert (
        "insufficient quota for nvidia.com/gpu in flavor h100, previously considered podsets requests (0) + "
        "current podset request (12) > maximum capacity (8)" in w["kueueMessage"]
    )
