"""Headless Chromium for the tests that look at what people see: the HTML report and the Mermaid
charts of the PR comment.

Chromium is Debian's `chromium` (or $CHROMIUM); Playwright's driver and Mermaid are the npm packages
pinned in tests/browser/package.json and package-lock.json, installed with `npm ci` there (.ci/run
does both). Missing pieces fail the test under CI and skip it otherwise, like the `shared` fixture."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

BROWSER = Path(__file__).resolve().parent / "browser"
MERMAID = BROWSER / "node_modules" / "mermaid" / "dist" / "mermaid.min.js"


def require() -> tuple[str, str]:
    """(node, chromium), or fail under CI / skip with the reason."""
    chromium = os.environ.get("CHROMIUM") or shutil.which("chromium") or ""
    node = shutil.which("node") or ""
    missing = [
        what
        for what, ok in (
            ("Debian's chromium (apt-get install chromium)", bool(chromium)),
            ("node", bool(node)),
            (
                "the npm packages of tests/browser (npm ci --prefix tests/browser)",
                (BROWSER / "node_modules" / "playwright-core").is_dir() and MERMAID.is_file(),
            ),
        )
        if not ok
    ]
    if missing:
        message = "browser tests need " + ", ".join(missing)
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return node, chromium


def render(page: Path, tmp_path: Path, name: str) -> dict[str, Any]:
    """Open `page` in headless Chromium (fresh profile, no network); the charts' marks, the console
    errors, the refused requests. The screenshot is kept at tmp_path/<name>.png."""
    node, chromium = require()
    profile = tmp_path / f"{name}-profile"
    shot = tmp_path / f"{name}.png"
    done = subprocess.run(
        [node, str(BROWSER / "render.mjs"), str(page), str(shot), str(profile)],
        capture_output=True,
        text=True,
        timeout=180,
        env={**os.environ, "CHROMIUM": chromium},
        check=False,
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout)
    assert shot.is_file() and shot.stat().st_size > 0
    result["screenshot"] = shot
    return result


def mermaid_page(blocks: list[str], path: Path) -> Path:
    """An HTML page drawing each Mermaid block as GitHub does (Mermaid in the browser), one figure each."""
    import html

    figures = "\n".join(f'<figure><pre class="mermaid">{html.escape(b)}</pre></figure>' for b in blocks)
    path.write_text(
        "<!DOCTYPE html><html><head><meta charset='utf-8'><script>window.chartsPending = true;</script>"
        f"<script src='{MERMAID.as_uri()}'></script></head><body>{figures}<script>"
        "mermaid.initialize({startOnLoad: false, securityLevel: 'strict'});"
        "mermaid.run({querySelector: 'pre.mermaid'})"
        ".catch((e) => console.error('mermaid: ' + e))"
        ".finally(() => { window.chartsDone = true; });"
        "</script></body></html>",
        encoding="utf-8",
    )
    return path
