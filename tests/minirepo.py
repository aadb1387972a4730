"""A small input repository built from scratch (not the example content), and a loopback HTTP server
serving files from a directory, for the tests of schemas fetch, the Kueue install and upgrades."""

from __future__ import annotations

import contextlib
import functools
import http.server
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import trees

PLATFORM = {
    "apiVersion": "gputenancy.io/v1",
    "kind": "Platform",
    "kueueConfig": "kueue-config.yaml",
    "deviceClasses": [{"name": "gpu.nvidia.com", "resource": "nvidia.com/gpu"}],
    "flavors": [{"name": "f1"}],
}
CONFIG = {
    "apiVersion": "config.kueue.x-k8s.io/v1beta2",
    "kind": "Configuration",
    "integrations": {"frameworks": ["batch/job"]},
}


def cluster(name: str, kueue: str = "v0.19.2", k8s: str = "1.35", **kueue_fields: Any) -> dict[str, Any]:
    return {
        "apiVersion": "gputenancy.io/v1",
        "kind": "Cluster",
        "name": name,
        "kubernetesVersion": k8s,
        "kueue": {"version": kueue, "install": "manifests", **kueue_fields},
        "capacity": [{"flavor": "f1", "devices": {"gpu.nvidia.com": 8}}],
    }


def dump(path: Path, data: Any) -> None:
    trees.write(path.parent, path.name, data)


def make(root: Path, clusters: list[dict[str, Any]], *, url: str | None = None) -> Path:
    """base/, one overlay per cluster and one tenant with 2 GPUs on each cluster."""
    platform = dict(PLATFORM, **({"kueueManifestsURL": url} if url else {}))
    dump(root / "base" / "platform.yaml", platform)
    dump(root / "base" / "kueue-config.yaml", CONFIG)
    for c in clusters:
        dump(root / "overlays" / c["name"] / "cluster.yaml", c)
        (root / "overlays" / c["name"] / "kustomization.yaml").write_text("resources:\n  - _platform\n")
    dump(
        root / "tenants" / "t1.yaml",
        {
            "apiVersion": "gputenancy.io/v1",
            "kind": "Tenant",
            "name": "t1",
            "owners": ["@acme/t1"],
            "namespaces": ["t1"],
            "budgets": {"default": [{"flavor": "f1", "devices": {"gpu.nvidia.com": 2}}]},
        },
    )
    return root


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


@contextlib.contextmanager
def serve(directory: Path, handler: type[http.server.BaseHTTPRequestHandler] | None = None) -> Iterator[str]:
    """An HTTP server on 127.0.0.1 serving `directory` in a thread; yields its base URL."""
    factory = handler or functools.partial(_Quiet, directory=str(directory))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), factory)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def snapshot(directory: Path) -> dict[str, bytes]:
    """Every file under `directory` (hidden ones too) by relative path."""
    if not directory.exists():
        return {}
    return {
        str(p.relative_to(directory)): p.read_bytes() for p in sorted(directory.rglob("*")) if p.is_file()
    }
