"""`schemas fetch` with a hostile pull request: its own schemas.lock and base/platform.yaml, a server
that drips, a named pipe, release files that are bombs or the wrong shape, all against the real Kueue
release files (../shared/kueue/<tag>/manifests.yaml) and a real HTTP server on 127.0.0.1. Each is
refused with a finding at a file the user can open; nothing is written outside the schemas
directory, and the directory and the lock stay as they were."""

from __future__ import annotations

import http.server
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import minirepo
import pytest
import yaml

from gputenancy.cli import app as cli
from gputenancy.deliver import fetch
from gputenancy.versions import releases

REPO = Path(__file__).resolve().parent.parent
TAG = "v0.19.2"


@pytest.fixture
def served(tmp_path: Path, shared: Path) -> Path:
    out = tmp_path / "served" / TAG
    out.mkdir(parents=True)
    shutil.copyfile(shared / "kueue" / TAG / "manifests.yaml", out / "manifests.yaml")
    return out.parent


def run(root: Path, *args: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = cli.main(["--root", str(root), "--no-cache", *args])
    captured = capsys.readouterr()
    return code, captured.out + captured.err


def make(tmp_path: Path, url: str, version: str = TAG) -> Path:
    root = tmp_path / "work" / "repo"
    return minirepo.make(
        root, [minirepo.cluster("c0", kueue=version)], url=f"{url}/{{version}}/manifests.yaml"
    )


def repoint(root: Path, url: str) -> None:
    """base/platform.yaml's kueueManifestsURL at the server `url`."""
    platform = root / "base" / "platform.yaml"
    platform.write_text(re.sub(r"http://127\.0\.0\.1:[0-9]+", url, platform.read_text()))


def platform_line(root: Path) -> str:
    """line:column of the kueueManifestsURL value in base/platform.yaml."""
    lines = (root / "base" / "platform.yaml").read_text().splitlines()
    number, line = next((i, line) for i, line in enumerate(lines, 1) if "kueueManifestsURL" in line)
    return f"{number}:{line.index('http') + 1}"


def locked(tmp_path: Path, served: Path, capsys: pytest.CaptureFixture[str]) -> tuple[Path, Path]:
    """A repository whose lock records the real release (written by --update from the real file)."""
    schemas = tmp_path / "work" / "schemas"
    with minirepo.serve(served) as url:
        root = make(tmp_path, url)
        code, out = run(root, "schemas", "fetch", "--update", "--schemas", str(schemas), capsys=capsys)
    assert code == 0, out
    return root, schemas


def test_a_lock_key_that_climbs_out_is_refused_and_nothing_is_written(
    tmp_path: Path, served: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root, schemas = locked(tmp_path, served, capsys)
    lock = json.loads((root / "schemas.lock").read_text())
    escaped = "../../zz-escaped-v0.19.2"
    lock["kueue"][escaped] = lock["kueue"][TAG]  # the real digests
    (root / "schemas.lock").write_text(json.dumps(lock, indent=2) + "\n")
    # The server drops the `..` of the request path: it serves the real release for that key.
    (served / "zz-escaped-v0.19.2").mkdir()
    shutil.copyfile(served / TAG / "manifests.yaml", served / "zz-escaped-v0.19.2" / "manifests.yaml")
    shutil.rmtree(schemas / "kueue" / TAG)  # so that a fetch would download
    before_work, before_lock = minirepo.snapshot(tmp_path / "work"), (root / "schemas.lock").read_bytes()
    line = (root / "schemas.lock").read_text().splitlines().index(f'    "{escaped}": {{') + 1
    with minirepo.serve(served) as url:
        repoint(root, url)
        before_work = minirepo.snapshot(tmp_path / "work")
        for update in ((), ("--update",)):
            code, out = run(root, "schemas", "fetch", *update, "--schemas", str(schemas), capsys=capsys)
            assert code == 1, out
            assert (
                f"schemas.lock:{line}:5: error: '../../zz-escaped-v0.19.2' is not a Kueue version "
                "(v<major>.<minor>.<patch>) (schemas-lock)"
            ) in out
            assert "Traceback" not in out
    assert not (tmp_path / "work" / "zz-escaped-v0.19.2").exists()  # where schemas/kueue/../../ leads
    assert minirepo.snapshot(tmp_path / "work") == before_work
    assert (root / "schemas.lock").read_bytes() == before_lock


def test_a_cluster_version_that_is_a_path_never_becomes_one(
    tmp_path: Path, served: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert releases.crd_dir(tmp_path, "../../etc") is None
    assert releases.manifests_file(tmp_path, "v0.19.2/../../x") is None
    with pytest.raises(ValueError, match="is not a Kueue version"):
        releases.version_dir(tmp_path, "../v0.19.2")
    for good in ("v0.19.2", "v0.20.0-rc.1"):
        assert releases.version_dir(tmp_path, good) == tmp_path / "kueue" / good


class _Drip(http.server.BaseHTTPRequestHandler):
    """Announces the whole release, then sends a byte every 50 ms; stops by itself after 20 s."""

    body = b""

    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Length", str(len(self.body)))
        self.end_headers()
        stop = time.monotonic() + 20
        for byte in self.body:
            if time.monotonic() > stop:
                return
            try:
                self.wfile.write(bytes([byte]))
                self.wfile.flush()
            except OSError:
                return
            time.sleep(0.05)

    def log_message(self, format: str, *args: Any) -> None:
        pass


def test_a_server_that_drips_is_cut_off_at_the_deadline(
    tmp_path: Path, served: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(fetch, "DEADLINE", 1.5)
    _Drip.body = (served / TAG / "manifests.yaml").read_bytes()
    schemas = tmp_path / "work" / "schemas"
    with minirepo.serve(served, _Drip) as url:
        root = make(tmp_path, url)
        code, out = run(root, "schemas", "fetch", "--update", "--schemas", str(schemas), capsys=capsys)
    assert code == 1
    assert (
        f"base/platform.yaml:{platform_line(root)}: error: Kueue {TAG}: {url}/{TAG}/manifests.yaml "
        "cannot be downloaded: not complete within 1.5 s"
    ) in out
    assert "(schemas-fetch)" in out
    assert not schemas.exists() and not (root / "schemas.lock").exists()


def test_a_file_url_to_a_named_pipe_is_refused_at_once(tmp_path: Path, served: Path) -> None:
    """In a child process with a time limit: a blocking open would fail the test, not hang it."""
    mirror = tmp_path / "mirror" / TAG
    mirror.mkdir(parents=True)
    os.mkfifo(mirror / "manifests.yaml")
    root = make(tmp_path, "http://127.0.0.1:9")
    schemas = tmp_path / "work" / "schemas"
    command = [sys.executable, str(REPO / "pipeline.py"), "--root", str(root), "--no-cache", "schemas"]
    command += [
        "fetch",
        "--update",
        "--schemas",
        str(schemas),
        "--url",
        f"file://{mirror.parent}/{{version}}/manifests.yaml",
    ]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, env=env, check=False)
    assert done.returncode == 1, done.stderr
    assert (
        f"--url: error: Kueue {TAG}: file://{mirror}/manifests.yaml cannot be downloaded: "
        f"{mirror}/manifests.yaml: not a regular file"
    ) in done.stdout
    assert "Traceback" not in done.stdout + done.stderr
    assert not schemas.exists() and not (root / "schemas.lock").exists()


def test_only_http_https_and_local_files_are_opened(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = make(tmp_path, "http://127.0.0.1:9")
    for url in ("ftp://127.0.0.1/{version}", "file://example.com/{version}/m.yaml"):
        code, out = run(
            root,
            "schemas",
            "fetch",
            "--update",
            "--url",
            url,
            "--schemas",
            str(tmp_path / "s"),
            capsys=capsys,
        )
        assert code == 1 and "--url: error: Kueue v0.19.2:" in out and "cannot be downloaded" in out, out
    assert not (tmp_path / "s").exists()


ALIAS_BOMB = "---\nkind: ConfigMap\nmetadata: {name: bomb}\ndata:\n  a: &a [x, x, x, x, x, x, x, x]\n  b: &b [*a, *a, *a, *a, *a, *a, *a, *a]\n  c: [*b, *b, *b, *b, *b, *b, *b, *b]\n"


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (lambda text: text + ALIAS_BOMB, "anchors and aliases are not allowed (source-alias)"),
        (
            lambda text: text.replace("\n  versions:\n  - ", "\n  versions: served\n  x:\n  - ", 1),
            "spec.versions must be a list of versions, each with a name (schemas-release)",
        ),
        (
            lambda text: text + "---\nkind: ConfigMap\nmetadata: {name: a, name: b}\n",
            "duplicate key 'name' (source-duplicate-key)",
        ),
    ],
    ids=["alias-bomb", "versions-a-string", "duplicate-key"],
)
def test_a_release_the_pipeline_could_not_walk_is_never_locked_or_written(
    tmp_path: Path, served: Path, capsys: pytest.CaptureFixture[str], change: Any, expected: str
) -> None:
    path = served / TAG / "manifests.yaml"
    path.write_text(change(path.read_text()))
    schemas = tmp_path / "work" / "schemas"
    with minirepo.serve(served) as url:
        root = make(tmp_path, url)
        code, out = run(root, "schemas", "fetch", "--update", "--schemas", str(schemas), capsys=capsys)
    assert code == 1
    assert (
        f"base/platform.yaml:{platform_line(root)}: error: Kueue {TAG}: {url}/{TAG}/manifests.yaml is not a usable release manifest:"
        in out
    )
    assert expected in out and "Traceback" not in out
    assert not schemas.exists() and not (root / "schemas.lock").exists()


def test_the_lock_holds_content_not_bytes(
    tmp_path: Path, served: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The release re-serialised by another writer (key order, indentation, quoting, comments) verifies
    against the lock written from the real file; a changed value does not."""
    root, _ = locked(tmp_path, served, capsys)
    lock = (root / "schemas.lock").read_bytes()
    path = served / TAG / "manifests.yaml"
    docs = [d for d in yaml.safe_load_all(path.read_text()) if d is not None]
    reformatted = "# mirrored\n" + yaml.safe_dump_all(
        docs, sort_keys=True, indent=4, width=4096, explicit_start=True
    )
    assert reformatted.encode() != path.read_bytes()
    path.write_text(reformatted)
    mirror = f"file://{served}/{{version}}/manifests.yaml"
    code, out = run(
        root, "schemas", "fetch", "--schemas", str(tmp_path / "b"), "--url", mirror, capsys=capsys
    )
    assert code == 0, out
    assert f"{TAG}: downloaded" in out
    changed = reformatted.replace("kueue-webhook-service", "evil-webhook-service", 1)
    assert changed != reformatted
    path.write_text(changed)
    code, out = run(
        root, "schemas", "fetch", "--schemas", str(tmp_path / "c"), "--url", mirror, capsys=capsys
    )
    assert code == 1
    line = (root / "schemas.lock").read_text().splitlines().index(f'    "{TAG}": {{') + 1
    assert (
        f"schemas.lock:{line}:5: error: Kueue {TAG}: {mirror.replace('{version}', TAG)} differs from schemas.lock in content"
        in out
    )
    assert "manifests.yaml: its parsed content is" in out
    assert not (tmp_path / "c").exists() and (root / "schemas.lock").read_bytes() == lock


def test_old_byte_digests_are_still_verified(
    tmp_path: Path, served: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root, _ = locked(tmp_path, served, capsys)
    files, _ = releases.release((served / TAG / "manifests.yaml").read_bytes(), "served")
    old = {"kueue": {TAG: {name: releases.sha256(data) for name, data in files.items()}}}
    (root / "schemas.lock").write_text(json.dumps(old))
    mirror = f"file://{served}/{{version}}/manifests.yaml"
    code, out = run(
        root, "schemas", "fetch", "--schemas", str(tmp_path / "b"), "--url", mirror, capsys=capsys
    )
    assert code == 0, out
    (served / TAG / "manifests.yaml").write_bytes((served / TAG / "manifests.yaml").read_bytes() + b"# x\n")
    code, out = run(
        root, "schemas", "fetch", "--schemas", str(tmp_path / "c"), "--url", mirror, capsys=capsys
    )
    assert code == 1 and "manifests.yaml: its sha256 is" in out, out


def test_after_a_version_bump_every_hint_names_the_command_that_works(
    tmp_path: Path, served: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("GPUTENANCY_SCHEMAS", raising=False)
    root, schemas = locked(tmp_path, served, capsys)
    (served / "v0.18.1").mkdir()
    shutil.copyfile(served / TAG / "manifests.yaml", served / "v0.18.1" / "manifests.yaml")
    cluster = root / "overlays" / "c0" / "cluster.yaml"
    cluster.write_text(cluster.read_text().replace(TAG, "v0.18.1"))
    code, out = run(root, "validate", "--schemas", str(schemas), capsys=capsys)
    assert code == 1
    hint = f"`python pipeline.py schemas fetch --update --schemas {schemas}` and commit schemas.lock"
    assert (
        f"overlays/c0/cluster.yaml:6:12: error: the schemas directory {schemas} has no Kueue v0.18.1" in out
    )
    assert hint in out
    code, out = run(root, "schemas", "fetch", "--schemas", str(schemas), capsys=capsys)
    assert code == 1
    assert (
        "overlays/c0/cluster.yaml:6:12: error: Kueue v0.18.1 has no entry in schemas.lock: run " + hint in out
    )
    with minirepo.serve(served) as url:
        repoint(root, url)
        code, out = run(root, "schemas", "fetch", "--update", "--schemas", str(schemas), capsys=capsys)
    assert code == 0, out
    assert "v0.18.1: downloaded, new in schemas.lock" in out
    assert f"{TAG}: downloaded, as schemas.lock held it" in out
    code, out = run(root, "validate", "--schemas", str(schemas), capsys=capsys)
    assert "schemas-missing" not in out


def test_malformed_release_data_in_the_schemas_directory_is_a_finding(
    tmp_path: Path, served: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root, schemas = locked(tmp_path, served, capsys)
    crd = schemas / "kueue" / TAG / "crds" / "kueue.x-k8s.io_clusterqueues.yaml"
    crd.write_text(crd.read_text().replace("\n  versions:\n", "\n  versions: served\n  x:\n", 1))
    code, out = run(root, "validate", "--schemas", str(schemas), capsys=capsys)
    assert code == 1
    assert (
        f"{crd}:1:1: error: document 1: CustomResourceDefinition clusterqueues.kueue.x-k8s.io: spec.versions must be a list"
        in out
    )
    assert "Traceback" not in out
