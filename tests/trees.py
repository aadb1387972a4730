"""Input trees for tests: the example repository copied under tmp_path, edited through dicts."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parent.parent


def example(tmp_path: Path, *, generated: bool = True) -> Path:
    """A copy of the example content (base/, overlays/, tenants/ and generated/) in tmp_path/repo."""
    root = tmp_path / "repo"
    for sub in ("base", "overlays", "tenants", *(("generated",) if generated else ())):
        if (REPO / sub).exists():
            shutil.copytree(REPO / sub, root / sub)
    return root


def read(root: Path, rel: str) -> Any:
    return yaml.safe_load((root / rel).read_text())


def write(root: Path, rel: str, data: Any) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def edit(root: Path, rel: str, change: Any) -> Path:
    """Load rel, let `change(data)` mutate it, write it back."""
    data = read(root, rel)
    change(data)
    return write(root, rel, data)


def tenant(name: str, **fields: Any) -> dict[str, Any]:
    """A minimal valid prod tenant; fields override."""
    body: dict[str, Any] = {
        "apiVersion": "gputenancy.io/v1",
        "kind": "Tenant",
        "name": name,
        "owners": [f"@acme/{name}"],
        "clusters": ["prod"],
        "namespaces": [f"{name}-ns"],
        "budgets": {"default": [{"flavor": "h100", "devices": {"gpu.nvidia.com": 0}}]},
    }
    body.update(fields)
    return body
