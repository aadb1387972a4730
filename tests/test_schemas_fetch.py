"""`python pipeline.py schemas fetch` against a real HTTP server on 127.0.0.1 serving Kueue's release
manifests (../shared/kueue/<tag>/manifests.yaml): the lock, refusals, errors and atomicity."""

from __future__ import annotations

import hashlib
import http.server
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import minirepo
import pytest
import yaml

from gputenancy.cli import app as cli

TAGS = ("v0.18.1", "v0.19.2")
REPO = Path(__file__).resolve().parent.parent


@pytest.fixture
def served(tmp_path: Path, shared: Path) -> Path:
    """What the release server offers: <tag>/manifests.yaml for both tags."""
    out = tmp_path / "served"
    for tag in TAGS:
        (out / tag).mkdir(parents=True)
        shutil.copyfile(shared / "kueue" / tag / "manifests.yaml", out / tag / "manifests.yaml")
    return out


def repo(tmp_path: Path, url: str, versions: tuple[str, ...] = TAGS) -> Path:
    clusters = [minirepo.cluster(f"c{i}", kueue=v) for i, v in enumerate(versions)]
    return minirepo.make(tmp_path / "repo", clusters, url=f"{url}/{{version}}/manifests.yaml")


def canonical(data: bytes) -> str:
    """The lock entry of a release file, computed here independently: sha256 of its documents as
    canonical JSON."""
    docs = [d for d in yaml.load_all(data, Loader=yaml.SafeLoader) if d is not None]
    body = json.dumps(docs, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "parsed-sha256:" + hashlib.sha256(body.encode()).hexdigest()


def run(root: Path, *args: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = cli.main(["--root", str(root), "--no-cache", *args])
    captured = capsys.readouterr()
    return code, captured.out + captured.err  # notes go to stderr


def test_first_fetch_writes_the_lock_then_verifies_against_it(
    tmp_path: Path, served: Path, shared: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    schemas = tmp_path / "schemas"
    with minirepo.serve(served) as url:
        root = repo(tmp_path, url)
        code, out = run(root, "schemas", "fetch", "--update", "--schemas", str(schemas), capsys=capsys)
    assert code == 0, out
    lock = json.loads((root / "schemas.lock").read_text())["kueue"]
    assert sorted(lock) == list(TAGS)
    for tag in TAGS:
        data = (shared / "kueue" / tag / "manifests.yaml").read_bytes()
        assert (schemas / "kueue" / tag / "manifests.yaml").read_bytes() == data
        assert lock[tag]["manifests.yaml"] == canonical(data)
        crds = sorted(p.name for p in (schemas / "kueue" / tag / "crds").iterdir())
        assert crds == sorted(p.name for p in (shared / "kueue" / tag / "crds").iterdir())
        for name in crds:  # each one CRD document, with the sha256 the lock records
            body = (schemas / "kueue" / tag / "crds" / name).read_bytes()
            (doc,) = [
                d for d in yaml.load_all(body, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)) if d
            ]
            assert doc["kind"] == "CustomResourceDefinition"
            assert f"{doc['spec']['group']}_{doc['spec']['names']['plural']}.yaml" == name
            assert lock[tag][f"crds/{name}"] == canonical(body)
    # The server is gone: a fetch of what the lock holds needs no network.
    code, out = run(root, "schemas", "fetch", "--schemas", str(schemas), capsys=capsys)
    assert code == 0, out
    assert out.count("up to date") == 2
    # ... and validation against the fetched CRDs ran, per cluster.
    code, out = run(root, "validate", "--schemas", str(schemas), capsys=capsys)
    assert code == 0, out
    for i, tag in enumerate(TAGS):
        assert f"c{i}: Kueue CRD schema and CEL validation ran (Kueue {tag}" in out


def test_a_changed_file_is_refused_and_nothing_changes(
    tmp_path: Path, served: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    schemas = tmp_path / "schemas"
    with minirepo.serve(served) as url:
        root = repo(tmp_path, url)
        assert run(root, "schemas", "fetch", "--update", "--schemas", str(schemas), capsys=capsys)[0] == 0
        before, lock = minirepo.snapshot(schemas), (root / "schemas.lock").read_bytes()
        path = served / "v0.19.2" / "manifests.yaml"
        path.write_bytes(path.read_bytes().replace(b"kueue-webhook-service", b"evil-webhook-service", 1))
        shutil.rmtree(schemas / "kueue" / "v0.19.2")  # so that the fetch downloads it again
        before = minirepo.snapshot(schemas)
        code, out = run(root, "schemas", "fetch", "--schemas", str(schemas), capsys=capsys)
        assert code == 1
        assert "Kueue v0.19.2:" in out and "differs from schemas.lock" in out and "(schemas-lock)" in out
        assert "manifests.yaml: its parsed content is" in out
        assert minirepo.snapshot(schemas) == before
        assert (root / "schemas.lock").read_bytes() == lock
        # A reviewed re-publication: --update takes it and rewrites the lock.
        code, out = run(root, "schemas", "fetch", "--update", "--schemas", str(schemas), capsys=capsys)
    assert code == 0, out
    assert "v0.19.2: downloaded, DIFFERENT from what schemas.lock held (" in out, out
    new_lock = json.loads((root / "schemas.lock").read_text())["kueue"]
    assert new_lock["v0.19.2"]["manifests.yaml"] == canonical(path.read_bytes())
    assert new_lock["v0.18.1"] == json.loads(lock)["kueue"]["v0.18.1"]


def test_a_local_file_that_no_longer_matches_the_lock_is_downloaded_again(
    tmp_path: Path, served: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    schemas = tmp_path / "schemas"
    with minirepo.serve(served) as url:
        root = repo(tmp_path, url, ("v0.19.2",))
        assert run(root, "schemas", "fetch", "--update", "--schemas", str(schemas), capsys=capsys)[0] == 0
        crd = schemas / "kueue" / "v0.19.2" / "crds" / "kueue.x-k8s.io_clusterqueues.yaml"
        crd.write_text("tampered\n")
        code, out = run(root, "schemas", "fetch", "--schemas", str(schemas), capsys=capsys)
    assert code == 0, out
    assert "v0.19.2: downloaded" in out
    assert crd.read_bytes() != b"tampered\n"


def test_no_lock_entry_is_an_error_naming_the_version(
    tmp_path: Path, served: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    schemas = tmp_path / "schemas"
    with minirepo.serve(served) as url:
        root = repo(tmp_path, url)
        code, out = run(
            root, "schemas", "fetch", "--schemas", str(schemas), "--format", "json", capsys=capsys
        )
    assert code == 1
    found = json.loads(out)["findings"]
    assert [f["rule"] for f in found] == ["schemas-lock", "schemas-lock"]
    assert "Kueue v0.18.1 has no entry in schemas.lock" in found[0]["message"]
    assert "schemas fetch --update" in found[0]["message"]
    assert not schemas.exists() and not (root / "schemas.lock").exists()


def test_a_version_the_server_does_not_have(
    tmp_path: Path, served: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    schemas = tmp_path / "schemas"
    with minirepo.serve(served) as url:
        root = repo(tmp_path, url, ("v0.19.2", "v0.19.9"))
        code, out = run(root, "schemas", "fetch", "--update", "--schemas", str(schemas), capsys=capsys)
    assert code == 1
    assert f"Kueue v0.19.9: {url}/v0.19.9/manifests.yaml cannot be downloaded: HTTP 404" in out
    assert "(schemas-fetch)" in out
    assert not schemas.exists() and not (root / "schemas.lock").exists()  # v0.19.2 was not kept either


def test_a_dead_server(tmp_path: Path, served: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with minirepo.serve(served) as url:
        pass  # the port is closed again
    root = repo(tmp_path, url, ("v0.19.2",))
    code, out = run(
        root, "schemas", "fetch", "--update", "--schemas", str(tmp_path / "schemas"), capsys=capsys
    )
    assert code == 1
    assert f"Kueue v0.19.2: {url}/v0.19.2/manifests.yaml cannot be downloaded: " in out
    assert "refused" in out.lower()  # "[Errno 111] Connection refused"
    assert not (tmp_path / "schemas").exists()


def test_a_file_that_is_not_a_kueue_release(
    tmp_path: Path, served: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (served / "v0.19.2" / "manifests.yaml").write_text(
        "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: x\n"
    )
    with minirepo.serve(served) as url:
        root = repo(tmp_path, url, ("v0.19.2",))
        code, out = run(
            root, "schemas", "fetch", "--update", "--schemas", str(tmp_path / "schemas"), capsys=capsys
        )
    assert code == 1
    assert "is not a Kueue release manifest: no kueue.x-k8s.io CustomResourceDefinition" in out


def republish(path: Path) -> None:
    """A change of content: one more document."""
    doc = b"---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: re-published\n"
    path.write_bytes(path.read_bytes() + doc)


def _truncating(directory: Path, tag: str, stall: threading.Event | None) -> type[Any]:
    """A handler that serves `tag` only in part: it announces the whole length, sends half, then
    closes the connection (or, with `stall`, waits for it)."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            path = directory / self.path.lstrip("/")
            data = path.read_bytes()
            self.send_response(200)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            if tag not in self.path:
                self.wfile.write(data)
                return
            self.wfile.write(data[: len(data) // 2])
            self.wfile.flush()
            if stall is not None:
                stall.wait(60)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return Handler


def test_an_interrupted_download_leaves_everything_as_before(
    tmp_path: Path, served: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    schemas = tmp_path / "schemas"
    with minirepo.serve(served) as url:
        root = repo(tmp_path, url)
        assert run(root, "schemas", "fetch", "--update", "--schemas", str(schemas), capsys=capsys)[0] == 0
    before, lock = minirepo.snapshot(schemas), (root / "schemas.lock").read_bytes()
    republish(served / "v0.18.1" / "manifests.yaml")  # --update would take the new v0.18.1
    with minirepo.serve(served, _truncating(served, "v0.19.2", None)) as url2:
        (root / "base" / "platform.yaml").write_text(
            (root / "base" / "platform.yaml").read_text().replace(url, url2)
        )
        code, out = run(root, "schemas", "fetch", "--update", "--schemas", str(schemas), capsys=capsys)
    assert code == 1
    assert "Kueue v0.19.2:" in out and "cannot be downloaded" in out
    assert minirepo.snapshot(schemas) == before  # v0.18.1, downloaded fine, was not swapped in either
    assert (root / "schemas.lock").read_bytes() == lock


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_fetch_killed_by_a_signal_leaves_everything_as_before(
    tmp_path: Path, served: Path, capsys: pytest.CaptureFixture[str], sig: signal.Signals
) -> None:
    schemas = tmp_path / "schemas"
    with minirepo.serve(served) as url:
        root = repo(tmp_path, url)
        assert run(root, "schemas", "fetch", "--update", "--schemas", str(schemas), capsys=capsys)[0] == 0
    before, lock = minirepo.snapshot(schemas), (root / "schemas.lock").read_bytes()
    republish(served / "v0.18.1" / "manifests.yaml")  # --update would take the new v0.18.1
    stall = threading.Event()
    with minirepo.serve(served, _truncating(served, "v0.19.2", stall)) as url2:
        (root / "base" / "platform.yaml").write_text(
            (root / "base" / "platform.yaml").read_text().replace(url, url2)
        )
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        command = [sys.executable, str(REPO / "pipeline.py"), "--root", str(root), "schemas", "fetch"]
        command += ["--update", "--schemas", str(schemas)]
        with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env) as proc:
            try:
                assert proc.stdout is not None
                seen = b""
                while b"v0.19.2: downloading" not in seen:  # v0.18.1 is in memory, v0.19.2 half-way
                    line = proc.stdout.readline()
                    assert line, proc.stderr.read() if proc.stderr else ""
                    seen += line
                time.sleep(0.2)
                proc.send_signal(sig)
                proc.wait(30)
            finally:
                stall.set()
                if proc.poll() is None:
                    proc.kill()
                    proc.wait()
    assert proc.returncode != 0
    assert minirepo.snapshot(schemas) == before
    assert (root / "schemas.lock").read_bytes() == lock


def test_a_file_mirror_given_for_one_run_is_verified_against_the_same_lock(
    tmp_path: Path, served: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Air-gapped: the lock written from the release server verifies a copy on disk (--url)."""
    with minirepo.serve(served) as url:
        root = repo(tmp_path, url)
        assert (
            run(root, "schemas", "fetch", "--update", "--schemas", str(tmp_path / "a"), capsys=capsys)[0] == 0
        )
    lock = (root / "schemas.lock").read_bytes()
    mirror = f"file://{served}/{{version}}/manifests.yaml"
    code, out = run(
        root, "schemas", "fetch", "--schemas", str(tmp_path / "b"), "--url", mirror, capsys=capsys
    )
    assert code == 0, out
    assert minirepo.snapshot(tmp_path / "b") == minirepo.snapshot(tmp_path / "a")
    assert (root / "schemas.lock").read_bytes() == lock
    republish(served / "v0.19.2" / "manifests.yaml")
    code, out = run(
        root, "schemas", "fetch", "--schemas", str(tmp_path / "c"), "--url", mirror, capsys=capsys
    )
    assert code == 1 and "Kueue v0.19.2:" in out and "differs from schemas.lock" in out
    code, out = run(
        root, "schemas", "fetch", "--schemas", str(tmp_path / "c"), "--url", "file:///x", capsys=capsys
    )
    assert code == 1 and "has no {version}" in out


def test_a_schemas_directory_without_a_clusters_version_is_an_error(
    tmp_path: Path, served: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("GPUTENANCY_SCHEMAS", raising=False)
    schemas = tmp_path / "schemas"
    with minirepo.serve(served) as url:
        root = repo(tmp_path, url)
        assert run(root, "schemas", "fetch", "--update", "--schemas", str(schemas), capsys=capsys)[0] == 0
    shutil.rmtree(schemas / "kueue" / "v0.18.1")
    for directory in (schemas, tmp_path / "nonexistent"):
        code, out = run(root, "validate", "--schemas", str(directory), capsys=capsys)
        assert code == 1
        assert (
            f"overlays/c0/cluster.yaml:6:12: error: the schemas directory {directory} has no Kueue v0.18.1 "
            f"({directory}/kueue/v0.18.1/crds); run `python pipeline.py schemas fetch --schemas {directory}` "
            "(schemas-missing)"
        ) in out
    # Without schemas the plan comment says, per cluster, that CRD validation did not run.
    code, out = run(root, "plan", "--format", "markdown", capsys=capsys)
    assert code == 2
    validation = out.split("### Validation", 1)[1].split("```", 2)[1].splitlines()  # a plain-text block
    assert "c0: Kueue CRD schema validation skipped: no schema directory configured" in validation
    assert "c1: Kueue CRD schema validation skipped: no schema directory configured" in validation
