"""Input trees for tests: the suite's own example repository (tests/fixtures/repo/) copied under
tmp_path, edited through dicts.

Tests never read the live tenants/, base/ and overlays/ of the checkout: a team changes those freely
(`validate` and `check` in .ci/run and the workflows check them). The fixture holds the inputs and, as
the golden output of `render`, its generated/, .github/CODEOWNERS and argocd/hub.yaml;
refresh those with `python pipeline.py --root tests/fixtures/repo render` after a change that alters
rendered output on purpose. `example(generated=True)` takes generated/ from a render of the fixture
made once per test process, so an outdated golden tree fails the golden tests only.
"""

from __future__ import annotations

import atexit
import contextlib
import io
import shutil
import tempfile
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parent.parent
FIXTURE = REPO / "tests" / "fixtures" / "repo"
INPUTS = ("base", "overlays", "tenants")
DERIVED = (".github/CODEOWNERS", "argocd/hub.yaml")

_rendered: list[Path] = []


def rendered() -> Path:
    """The fixture's inputs rendered by the real command line (`render --no-cache`), once per process:
    a root holding the inputs, generated/ and the derived files. Read only."""
    if not _rendered:
        from gputenancy.cli import main

        root = Path(tempfile.mkdtemp(prefix="gputenancy-fixture-")) / "repo"
        atexit.register(shutil.rmtree, root.parent, True)
        for sub in INPUTS:
            shutil.copytree(FIXTURE / sub, root / sub)
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            code = main(["--root", str(root), "--no-cache", "render"])
        assert code == 0, f"the test fixture does not render:\n{out.getvalue()}"
        _rendered.append(root)
    return _rendered[0]


def example(tmp_path: Path, *, generated: bool = True) -> Path:
    """A copy of the fixture's inputs (base/, overlays/, tenants/) in tmp_path/repo, with generated/
    as `render` writes it when `generated`."""
    root = tmp_path / "repo"
    for sub in INPUTS:
        shutil.copytree(FIXTURE / sub, root / sub)
    if generated:
        shutil.copytree(rendered() / "generated", root / "generated")
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
