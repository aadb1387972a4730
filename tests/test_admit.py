"""`admit` agrees with the real Kueue managers: the jobs of the live dumps (../shared/clusters/live), rebuilt as
the batch Jobs they were (one pod, cpu 1, memory 4Gi, a claim from the named template, the queue label), get
the verdict, the flavor and the message Kueue gave them, on a repository made from the inputs the clusters
were built from; and bad input is a finding at its line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gputenancy.admission import judge, manifests, target
from gputenancy.cli.app import main
from gputenancy.cluster.dump import Dump, read_dump
from gputenancy.engine import check_only

JOB = """\
apiVersion: batch/v1
kind: Job
metadata:
  name: {name}
  namespace: {namespace}
  labels:
    kueue.x-k8s.io/queue-name: {queue}
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
        - name: main
          image: registry.k8s.io/pause:3.10
          resources:
            requests:
              cpu: "1"
              memory: 4Gi
            claims:
              - name: gpu
      resourceClaims:
        - name: gpu
          resourceClaimTemplateName: {template}
"""


def make_repo(tmp_path: Path, shared: Path) -> Path:
    """A repository made from the inputs the live clusters were built from."""
    root = tmp_path / "repo"
    source = shared / "clusters/live/inputs-6b92afc"
    for part in ("tenants", "base", "overlays", "generated"):
        _copy(source / part, root / part)
    return root


@pytest.fixture
def repo(tmp_path: Path, shared: Path) -> Path:
    return make_repo(tmp_path, shared)


def _copy(src: Path, dst: Path) -> None:
    for path in sorted(src.rglob("*")):
        if path.is_file():
            out = dst / path.relative_to(src)
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_bytes(path.read_bytes())


def _dump(shared: Path, cluster: str) -> Dump:
    return read_dump(shared / f"clusters/live/{cluster}/dump.yaml")


def _kueue_did(dump: Dump) -> list[tuple[str, str, str, str, str, str]]:
    """(namespace, job, queue, template, outcome, message) of every Workload, in the order they were created."""
    out = []
    workloads = sorted(dump.of_kind("Workload"), key=lambda w: str(w.body["metadata"]["creationTimestamp"]))
    for w in workloads:
        ps = w.body["spec"]["podSets"][0]
        job = ps["template"]["metadata"]["labels"]["batch.kubernetes.io/job-name"]
        template = ps["template"]["spec"]["resourceClaims"][0]["resourceClaimTemplateName"]
        conditions = {c["type"]: c for c in w.body["status"]["conditions"]}
        reserved = conditions["QuotaReserved"]
        if reserved["status"] == "True":
            outcome, message, flavor = judge.ADMITTED, "", ps and w.body["status"]["admission"]
            flavor = sorted(set(flavor["podSetAssignments"][0]["flavors"].values()))[0]
        else:
            outcome = judge.INADMISSIBLE if reserved["reason"] == "Inadmissible" else judge.PENDING
            message, flavor = reserved["message"], ""
        out.append((w.namespace, job, w.body["spec"]["queueName"], template, outcome, message + "|" + flavor))
    return out


def _jobs(tmp_path: Path, did: list[tuple[str, str, str, str, str, str]]) -> Path:
    path = tmp_path / "jobs.yaml"
    path.write_text(
        "---\n".join(JOB.format(name=j, namespace=ns, queue=q, template=t) for ns, j, q, t, _, _ in did)
    )
    return path


def _judge(
    root: Path, cluster: str, files: list[Path], dump: Dump | None, *, usage: bool = True
) -> list[judge.Verdict]:
    model, _ = check_only(root, cluster, cache=None)
    where = target.load(root, model, cluster, dump, usage=usage)
    verdicts, findings = judge.judge(where, manifests.read(files))
    assert findings == []
    return verdicts


def _flavor(v: judge.Verdict) -> str:
    return sorted({f for _, pairs in v.flavors for _, f in pairs})[0] if v.outcome == judge.ADMITTED else ""


@pytest.mark.parametrize("cluster", ["lab", "prod"])
def test_replayed_jobs_get_what_kueue_gave_them(
    repo: Path, tmp_path: Path, shared: Path, cluster: str
) -> None:
    """Every job of the dump, judged in the order it was submitted against the cluster's objects before any
    ran: admitted on Kueue's flavor, or pending / Inadmissible with Kueue's exact message."""
    dump = _dump(shared, cluster)
    did = _kueue_did(dump)
    assert len(did) == {"lab": 2, "prod": 7}[cluster]
    verdicts = _judge(repo, cluster, [_jobs(tmp_path, did)], dump, usage=False)
    got = [(v.outcome, (v.message + "|" + _flavor(v))) for v in verdicts]
    assert got == [(outcome, expected) for *_, outcome, expected in did]


def test_seed_second_job_waits_behind_the_first_with_the_lab_dump(
    repo: Path, tmp_path: Path, shared: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """With one GPU of quota and gpu-job-1 holding it (the lab dump), gpu-job-2 waits, behind gpu-job-1."""
    jobs = tmp_path / "job2.yaml"
    jobs.write_text(JOB.format(name="gpu-job-2", namespace="sandbox", queue="sandbox", template="single-gpu"))
    dump = str(shared / "clusters/live/lab/dump.yaml")
    code = main(
        ["--root", str(repo), "admit", str(jobs), "--cluster", "lab", "--from", dump, "--format", "json"]
    )
    [w] = json.loads(capsys.readouterr().out)["workloads"]
    assert code == 2
    assert w["outcome"] == "pending"
    assert w["kueueMessage"] == (
        "couldn't assign flavors to pod set main: insufficient unused quota for nvidia.com/gpu in flavor t4, "
        "1 more needed"
    )
    assert [b.split(" ")[0] for b in w["behind"]] == ["sandbox/job-gpu-job-1-1102d"]
    assert w["podSets"][0]["total"] == {"cpu": "1", "memory": "4Gi", "nvidia.com/gpu": "1"}


def test_seed_without_the_mapping_the_job_is_inadmissible(
    repo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The Configuration without a deviceClassMapping for gpu.nvidia.com: Kueue keeps the job Inadmissible."""
    app = repo / "generated/lab/_hub/application/argocd/kueue-lab.yaml"
    text = app.read_text()
    mapping = "              deviceClassMappings:\n              - name: nvidia.com/gpu\n                deviceClassNames:\n                - gpu.nvidia.com\n"
    assert mapping in text
    app.write_text(text.replace(mapping, ""))
    jobs = tmp_path / "job1.yaml"
    jobs.write_text(JOB.format(name="gpu-job-1", namespace="sandbox", queue="sandbox", template="single-gpu"))
    code = main(["--root", str(repo), "admit", str(jobs), "--cluster", "lab"])
    out = capsys.readouterr().out
    assert code == 1
    assert "INADMISSIBLE" in out
    assert (
        'spec.podSets[0].template.spec.resourceClaims[0].resourceClaimTemplateName: Not found: "DeviceClass '
        'gpu.nvidia.com is not mapped in DRA configuration for podset main"' in out
    )
    assert f"{jobs}:" in out and "fix: map DeviceClass gpu.nvidia.com" in out


def test_prod_dump_usage_keeps_the_finetune_job_pending_with_kueues_message(
    repo: Path, tmp_path: Path, shared: Path
) -> None:
    """With --from the prod dump (the cohort full), finetune-c gets Kueue's own message word for word."""
    dump = _dump(shared, "prod")
    did = [d for d in _kueue_did(dump) if d[1] in ("finetune-c", "fpga-test")]
    verdicts = _judge(repo, "prod", [_jobs(tmp_path, did)], dump)
    assert [(v.outcome, v.message) for v in verdicts] == [(d[4], d[5].rstrip("|")) for d in did]
    assert verdicts[0].behind  # the admitted workloads holding the cohort's H100


BAD = {
    "no-queue": (
        JOB.replace("  labels:\n    kueue.x-k8s.io/queue-name: {queue}\n", ""),
        "has no kueue.x-k8s.io/queue-name label",
    ),
    "unknown-kind": (
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n",
        "is not a job kind Kueue admits",
    ),
    "no-template": (
        JOB.replace("{template}", "nope"),
        "no ResourceClaimTemplate 'nope' in namespace sandbox",
    ),
    "not-objects": ("- just\n- a list\n", "not a Kubernetes object"),
    "bad-yaml": ("a: [\n", "source-"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_input_is_a_finding_at_its_line(
    repo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], case: str
) -> None:
    text, expected = BAD[case]
    path = tmp_path / "bad.yaml"
    good = JOB.format(name="ok", namespace="sandbox", queue="sandbox", template="single-gpu")
    path.write_text(
        good + "---\n" + text.format(name="j", namespace="sandbox", queue="sandbox", template="single-gpu")
    )
    code = main(["--root", str(repo), "admit", str(path), "--cluster", "lab"])
    captured = capsys.readouterr()
    both = captured.out + captured.err
    assert code == 1
    assert expected in both
    assert f"{path}:" in both
    line = int(both.split(f"{path}:")[-1].split(":")[0])
    assert line > good.count("\n")  # at the bad document, not the first one
    assert "Traceback" not in both
