"""The real kubectl in tests: a kubeconfig whose only context points at a closed loopback port, so a
command that reads a cluster runs kubectl for real and gets its own connection error."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
import yaml


def unreachable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, context: str = "nowhere") -> None:
    """Require kubectl (fail under CI, skip elsewhere) and point KUBECONFIG at `context`, a cluster
    on 127.0.0.1:9 (discard: nothing listens), with a token that is never sent anywhere else."""
    if shutil.which("kubectl") is None:
        if os.environ.get("CI"):
            pytest.fail("kubectl is not installed")
        pytest.skip("kubectl is not installed")
    config = tmp_path / "kubeconfig"
    config.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": context, "cluster": {"server": "https://127.0.0.1:9"}}],
                "contexts": [{"name": context, "context": {"cluster": context, "user": "u"}}],
                "users": [{"name": "u", "user": {"token": "t"}}],
                "current-context": context,
            }
        )
    )
    monkeypatch.setenv("KUBECONFIG", str(config))
