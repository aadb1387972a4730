"""The trust boundary against the environment: a linked generated/, files that cannot be removed,
leftovers of a killed run, real signals during a render, special files, a real HTTP server that
must receive nothing, hostile schema directories, and output that input cannot hijack.
Real filesystem, real kustomize, real signals; no mocks."""

from __future__ import annotations

import contextlib
import http.server
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import trees
from markdown_it import MarkdownIt
from test_negative_trees import HIDDEN, commit_all, snapshot

from gputenancy.assemble import output
from gputenancy.cli.app import main

REPO = Path(__file__).resolve().parent.parent


def run(capsys: pytest.CaptureFixture[str], root: Path, *args: str) -> tuple[int, str]:
    rc = main(["--root", str(root), "--no-cache", *args])
    out = capsys.readouterr()
    text = out.out + out.err
    assert "Traceback" not in text
    return rc, text


def lock(path: Path) -> None:
    """`path` cannot be removed or moved to another directory: immutable as root (chattr +i),
    else its directory (or itself, for a directory) made read-only."""
    if os.geteuid() == 0:
        if shutil.which("chattr") is None:
            pytest.skip("chattr is needed to make a file unremovable as root")
        if subprocess.run(["chattr", "+i", str(path)], capture_output=True).returncode != 0:
            pytest.skip("this filesystem does not support chattr +i")
    else:
        (path if path.is_dir() else path.parent).chmod(0o555)


def unlock(path: Path) -> None:
    if os.geteuid() == 0:
        subprocess.run(["chattr", "-i", str(path)], check=True)
    else:
        (path if path.is_dir() else path.parent).chmod(0o755)


@contextlib.contextmanager
def unremovable(path: Path) -> Iterator[None]:
    lock(path)
    try:
        yield
    finally:
        unlock(path)


def add_tenant(root: Path, name: str, cluster: str = "prod") -> None:
    """A tenant on `cluster` using the first flavor of its capacity (whatever the example holds)."""
    capacity = trees.read(root, f"overlays/{cluster}/cluster.yaml")["capacity"][0]
    devices = {next(iter(capacity["devices"])): 0}
    trees.write(
        root,
        f"tenants/{name}.yaml",
        trees.tenant(
            name,
            clusters=[cluster],
            namespaces=[f"{name}-ns"],
            budgets={"default": [{"flavor": capacity["flavor"], "devices": devices}]},
        ),
    )


# ------------------------------------------------------------------ generated/ and links


def test_a_linked_generated_directory_is_refused_and_nothing_outside_is_touched(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = trees.example(tmp_path, generated=False)
    victim = tmp_path / "victim"
    (victim / "prod" / "keep").mkdir(parents=True)
    (victim / "prod" / "keep" / "file").write_text("precious\n")
    (victim / "stale").mkdir()
    (root / "generated").symlink_to(victim)
    before = snapshot(victim)
    for command in ("render", "check", "plan"):
        rc, text = run(capsys, root, command)
        assert rc == 1, command
        assert "generated: error: generated is a symlink" in text
        assert "(generated-symlink)" in text
        assert snapshot(victim) == before
    commit_all(root)
    rc, text = run(capsys, root, "publish")
    assert rc == 1 and "(generated-symlink)" in text
    assert snapshot(victim) == before


def test_a_linked_cluster_directory_is_never_followed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = trees.example(tmp_path)
    victim = tmp_path / "victim"
    (victim / "data").mkdir(parents=True)
    (victim / "data" / "file").write_text("precious\n")
    (root / "generated" / "gone").symlink_to(victim)  # would be pruned as a stale cluster
    before, tree = snapshot(victim), snapshot(root / "generated")
    for command in ("render", "check", "plan"):
        rc, text = run(capsys, root, command)
        assert rc == 1
        assert "generated/gone: error: generated/gone is a symlink" in text
    assert snapshot(victim) == before
    assert snapshot(root / "generated") == tree


def test_leftovers_of_a_killed_run_are_reported_by_check_and_cleaned_by_render(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = trees.example(tmp_path)
    assert run(capsys, root, "render")[0] == 0
    tree = output.read_tree(root / "generated")
    (root / "generated" / ".staging-4242" / "prod").mkdir(parents=True)
    (root / "generated" / ".staging-4242" / "prod" / "x.yaml").write_text("half\n")
    (root / "generated" / ".old-4242-x" / "lab").mkdir(parents=True)
    rc, text = run(capsys, root, "check")
    assert rc == 1
    assert ".old-4242-x: leftover of an interrupted run (generated-leftover)" in text
    assert ".staging-4242: leftover of an interrupted run (generated-leftover)" in text
    rc, text = run(capsys, root, "render")
    assert rc == 0
    assert "removed leftovers of an interrupted run: .old-4242-x, .staging-4242" in text
    assert not [n for n in os.listdir(root / "generated") if n.startswith(".")]
    assert output.read_tree(root / "generated") == tree
    assert run(capsys, root, "check")[0] == 0


def test_a_failed_removal_of_the_old_tree_is_a_warning_of_render_and_an_error_of_check(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """render's job is done when the new tree is in place: it warns about the old one and exits 0;
    check fails on the leftover until it is removed."""
    root = trees.example(tmp_path)
    assert run(capsys, root, "render")[0] == 0
    add_tenant(root, "extra")
    stuck = sorted((root / "generated" / "prod").rglob("*.yaml"))[0]
    rel = stuck.relative_to(root / "generated")
    lock(stuck)
    try:
        rc, text = run(capsys, root, "render")
        assert rc == 0, text
        assert re.search(
            r"generated/\.old-[^:]+: warning: the new tree is in place, but cannot remove generated/\.old-\S+"
            r" \(.*\); remove it by hand; `check` fails until it is gone \(generated-cleanup\)",
            text,
        ), text
        assert "rendered " in text and "changed: prod" in text
        # the new tree is in place whole; the old one waits to be removed
        assert (root / "generated" / "prod" / "clusterqueue" / "extra.yaml").is_file()
        rc, text = run(capsys, root, "check")
        assert rc == 1 and "(generated-leftover)" in text
    finally:
        for moved in (root / "generated").glob(f".old-*/{rel}"):
            unlock(moved)
    rc, text = run(capsys, root, "render")
    assert rc == 0 and "removed leftovers of an interrupted run: .old-" in text
    assert run(capsys, root, "check")[0] == 0


def test_clusters_are_replaced_all_together_or_not_at_all(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = trees.example(tmp_path)
    assert run(capsys, root, "render")[0] == 0
    add_tenant(root, "extra-lab", "lab")
    add_tenant(root, "extra-prod", "prod")
    before = snapshot(root / "generated")
    with unremovable(root / "generated" / "prod"):  # lab is swapped first, then prod fails
        rc, text = run(capsys, root, "render")
    assert rc == 1
    assert "generated/prod: error: cannot replace generated/prod:" in text
    assert "every cluster directory is as it was (generated-swap)" in text
    assert snapshot(root / "generated") == before
    assert run(capsys, root, "render")[0] == 0
    assert (root / "generated" / "lab" / "clusterqueue" / "extra-lab.yaml").is_file()


# ------------------------------------------------------------------ real signals


def _processes() -> Iterator[tuple[int, str]]:
    """(parent pid, command line) of every process."""
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat_line = Path(f"/proc/{entry}/stat").read_text()
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        yield int(stat_line.rsplit(")", 1)[1].split()[1]), cmdline


def _children(pid: int) -> list[str]:
    return [cmdline for parent, cmdline in _processes() if parent == pid]


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_signal_during_render_ends_it_with_one_line_and_the_tree_as_before(
    tmp_path: Path, signum: signal.Signals
) -> None:
    if not Path("/proc/self/stat").exists():
        pytest.skip("needs /proc to see the kustomize child")
    root = trees.example(tmp_path)
    # Enough platform objects that kustomize runs for a while: the signal lands while it does.
    objects = "".join(
        f"---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: filler-{i}\n  namespace: kueue-system\ndata:\n  k: v\n"
        for i in range(4000)
    )
    (root / "base" / "filler.yaml").write_text(objects)
    kustomization = trees.read(root, "base/kustomization.yaml")
    kustomization["resources"].append("filler.yaml")
    trees.write(root, "base/kustomization.yaml", kustomization)
    before = snapshot(root)
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    env = {**os.environ, "PYTHONPATH": str(REPO), "TMPDIR": str(scratch), "GPUTENANCY_CACHE": "off"}
    proc = subprocess.Popen(
        [sys.executable, str(REPO / "pipeline.py"), "--root", str(root), "render"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        text=True,
    )
    deadline = time.monotonic() + 120
    while not any("kustomize" in c for c in _children(proc.pid)):
        assert proc.poll() is None, "render ended before kustomize started"
        assert time.monotonic() < deadline
        time.sleep(0.01)
    proc.send_signal(signum)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 128 + signum
    assert "Traceback" not in out + err
    assert err.strip().splitlines() == [
        f"interrupted by {signum.name}: stopped; generated/ is as before, or complete if the signal came"
        " after the swap, never half-written"
    ]
    assert snapshot(root) == before
    assert os.listdir(scratch) == []  # staging trees removed
    assert not [c for _, c in _processes() if str(scratch) in c]  # no kustomize left running


# ------------------------------------------------------------------ special files, fetching


def test_special_files_are_refused_without_blocking(tmp_path: Path) -> None:
    root = trees.example(tmp_path)
    os.mkfifo(root / "base" / "pipe.yaml")
    os.mkfifo(root / "overlays" / "prod" / "pipe.yaml")
    done = subprocess.run(
        [sys.executable, str(REPO / "pipeline.py"), "--root", str(root), "--no-cache", "validate"],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert done.returncode == 1
    assert "base/pipe.yaml: error: a FIFO (source-not-regular)" in done.stdout
    assert "overlays/prod/pipe.yaml: error: a FIFO (source-not-regular)" in done.stdout


class _Counting(http.server.BaseHTTPRequestHandler):
    hits: list[str] = []

    def do_GET(self) -> None:
        _Counting.hits.append(self.path)
        body = b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: fetched\n"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


def test_nothing_is_fetched_from_a_real_server(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Counting)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        port = server.server_address[1]
        root = trees.example(tmp_path)
        kustomization = trees.read(root, "overlays/prod/kustomization.yaml")
        kustomization["resources"] += [
            f"http://127.0.0.1:{port}/objects.yaml",
            f"127.0.0.1:{port}/repo//base",
        ]
        trees.write(root, "overlays/prod/kustomization.yaml", kustomization)
        for command in ("validate", "render", "plan"):
            rc, text = run(capsys, root, command)
            assert rc == 1
            assert f"remote reference 'http://127.0.0.1:{port}/objects.yaml' is not fetched" in text
            assert f"remote reference '127.0.0.1:{port}/repo//base' is not fetched" in text
        assert _Counting.hits == []
    finally:
        server.shutdown()
        server.server_close()


def test_a_hostile_schema_directory_gives_findings(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = trees.example(tmp_path, generated=False)
    version = trees.read(root, "overlays/prod/cluster.yaml")["kueue"]["version"]
    crds = tmp_path / "schemas" / "kueue" / version / "crds"
    crds.mkdir(parents=True)
    lines = ["a: &a [x, x, x, x, x, x, x, x]"]
    lines += [f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 8)}]" for i in range(8)]
    (crds / "bomb.yaml").write_text("\n".join(lines) + "\n")
    schemas = ["validate", "--cluster", "prod", "--schemas", str(tmp_path / "schemas")]
    rc, text = run(capsys, root, *schemas)
    assert rc == 1
    assert f"{crds / 'bomb.yaml'}:1:4: error: anchors and aliases are not allowed (source-alias)" in text
    (crds / "bomb.yaml").unlink()
    os.mkfifo(crds / "pipe.yaml")
    rc, text = run(capsys, root, *schemas)
    assert rc == 1
    assert f"{crds / 'pipe.yaml'}: error: not a regular file (source-not-regular)" in text


# ------------------------------------------------------------------ output


def test_findings_are_capped_per_rule_and_paths_escaped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = trees.example(tmp_path, generated=False)
    for i in range(60):
        (root / "tenants" / f"t{i:02d}.yaml").write_text(f"name: t{i:02d}\nunknownKey: 1\n")
    (root / "tenants" / "evil\x1b[2J\u202e.yaml").write_text("name: [\n")
    for fmt in ("text", "github", "json"):
        rc, text = run(capsys, root, "validate", "--format", fmt)
        assert rc == 1
        assert not HIDDEN.search(text.replace("\n", "")), fmt
        assert "\x1b" not in text and "\u202e" not in text
        shown = json.loads(text)["findings"][0]["path"] if fmt == "json" else text
        assert "evil\\x1b[2J\\u202e.yaml" in shown
        assert text.count("(tenant-schema)" if fmt == "text" else "tenant-schema") <= 51 + (fmt == "json")
        assert "more tenant-schema findings not shown (at most 50 per rule)" in text
        if fmt == "json":
            document = json.loads(text)
            assert sum(f["rule"] == "tenant-schema" for f in document["findings"]) == 50
            errors = int(document["summary"].split()[0])  # every finding counted, 50 per rule shown
            assert errors == len(document["findings"]) + int(document["notes"][-1].split()[0])


def test_tenant_strings_cannot_hijack_the_markdown_plan(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = trees.example(tmp_path)
    flavor = trees.read(root, "overlays/prod/cluster.yaml")["capacity"][0]["flavor"]
    device_class = next(iter(trees.read(root, "overlays/prod/cluster.yaml")["capacity"][0]["devices"]))

    def allow_overcommit(data: dict[str, Any]) -> None:
        data["overcommit"] = True  # the claim below needs a budget; capacity is not what is tested
        for entry in data["capacity"]:  # nor which devices the selectors below would find (claim-devices)
            entry.pop("inventory", None)

    trees.edit(root, "overlays/prod/cluster.yaml", allow_overcommit)

    def tenant(selector: str) -> None:
        budget = {"flavor": flavor, "devices": {device_class: 1}, "resources": {"cpu": 1, "memory": "1Gi"}}
        trees.write(
            root,
            "tenants/extra.yaml",
            trees.tenant(
                "extra",
                budgets={"default": [budget]},
                claimTemplates=[{"name": "one", "deviceClass": device_class, "selectors": [selector]}],
            ),
        )

    tenant("device.attributes['x'].model == 'a'")
    assert run(capsys, root, "render")[0] == 0
    hostile = (
        "device.attributes['x'].model == '@evil #1 `` ``` ![i](http://127.0.0.1/i.png)"
        " [l](http://127.0.0.1/) <img src=x onerror=alert(1)> | \u202e'"
    )
    tenant(hostile)
    rc, md = run(capsys, root, "plan", "--format", "markdown")
    assert rc == 2
    html = MarkdownIt("commonmark").enable("table").render(md)
    assert "<img" not in html and "<a " not in html
    assert "\u202e" not in md
    outside_code = re.sub(r"<code>.*?</code>", "", html, flags=re.S)
    assert "@evil" not in outside_code and "![i]" not in outside_code
    assert any("@evil" in c for c in re.findall(r"<code>(.*?)</code>", html, flags=re.S))


def test_a_huge_file_committed_in_generated_is_not_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = trees.example(tmp_path)
    huge = root / "generated" / "prod" / "huge.yaml"
    with open(huge, "wb") as f:
        f.truncate(output.MAX_TREE_FILE_BYTES + 1)  # sparse: no disk used
    for command in ("check", "plan"):
        rc, text = run(capsys, root, command)
        assert rc == 1
        assert "generated/prod/huge.yaml: error: larger than" in text and "(source-size)" in text


@pytest.mark.parametrize("linked", [".github", "argocd/hub.yaml"])
def test_files_rendered_beside_generated_are_never_read_or_written_through_a_link(
    tmp_path: Path, linked: str, capsys: pytest.CaptureFixture[str]
) -> None:
    root = trees.example(tmp_path)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "hub.yaml").write_text("secret\n")
    (root / linked).parent.mkdir(parents=True, exist_ok=True)
    if (root / linked).exists():
        shutil.rmtree(root / linked) if (root / linked).is_dir() else (root / linked).unlink()
    (root / linked).symlink_to(outside if linked == ".github" else outside / "hub.yaml")
    before, tree = snapshot(outside), snapshot(root / "generated")
    trees.write(root, "tenants/extra.yaml", trees.tenant("extra"))  # render would change generated/
    for command in ("render", "check"):
        rc, text = run(capsys, root, command)
        assert rc == 1
        assert f"{linked}: error: {linked} is a symlink" in text and "(generated-symlink)" in text
        assert "secret" not in text
    assert snapshot(outside) == before
    assert snapshot(root / "generated") == tree  # refused before anything was written


def test_a_linked_cache_directory_is_not_used(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = trees.example(tmp_path, generated=False)
    outside = tmp_path / "outside"
    outside.mkdir()
    (root / ".gputenancy-cache").symlink_to(outside)
    monkeypatch.delenv("GPUTENANCY_CACHE", raising=False)
    assert main(["--root", str(root), "validate"]) == 0
    assert list(outside.iterdir()) == []


def test_a_200_kib_file_of_errors_gives_bounded_output(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = trees.example(tmp_path, generated=False)
    names = "\n".join(f"  - BAD_{'x' * 30}_{i}" for i in range(5000))
    long_value = "y" * 20_000
    text = "apiVersion: gputenancy.io/v1\nkind: Tenant\nname: big\nowners: ['@a/b']\ndescription: 1\n"
    text += f"cohort: {long_value}\nnamespaces:\n{names}\n"
    assert 200 * 1024 < len(text) < 256 * 1024
    (root / "tenants" / "big.yaml").write_text(text)
    for fmt in ("text", "github", "json"):
        rc, out = run(capsys, root, "validate", "--format", fmt)
        assert rc == 1
        assert len(out) < 64 * 1024, (fmt, len(out))
        assert "more tenant-schema findings not shown (at most 50 per rule)" in out
        assert long_value not in out  # clipped


def test_a_signal_that_arrives_during_the_swap_undoes_it(tmp_path: Path) -> None:
    """SIGTERM is sent for real while it is blocked, so it is pending when the swap reaches its
    commit point: every rename is undone, then the signal would be delivered."""
    from gputenancy.assemble import swap

    parent = tmp_path / "generated"
    old = {"a": {"k/x.yaml": b"a: 1\n"}, "b": {"k/y.yaml": b"b: 1\n"}, "gone": {"k/z.yaml": b"z\n"}}
    swap.write_trees(tmp_path, parent, old)
    before = snapshot(parent)
    new = {"a": {"k/x.yaml": b"a: 2\n"}, "b": {"k/y.yaml": b"b: 2\n"}}
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
    try:
        # to this thread, which blocks it: a signal to the process could go to another thread of the
        # test runner (an xdist worker's), whose default action ends the process
        signal.pthread_kill(threading.get_ident(), signal.SIGTERM)
        with pytest.raises(InterruptedError):
            swap.write_trees(tmp_path, parent, new, prune=True)
        assert snapshot(parent) == before
        assert signal.sigtimedwait({signal.SIGTERM}, 0) is not None  # still pending: consume it
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)
    assert swap.write_trees(tmp_path, parent, new, prune=True) == ["a", "b", "gone"]
    assert {n: output.read_tree(parent / n) for n in new} == new
    assert sorted(os.listdir(parent)) == ["a", "b"]
