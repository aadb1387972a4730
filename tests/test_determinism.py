"""Determinism: two renders without the cache, in two processes with different hash seeds (so set and
dict orders that depend on string hashing differ), write the same bytes."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from bench import fleet
from gputenancy import cache
from gputenancy.build import output

REPO = Path(__file__).resolve().parent.parent


def test_render_in_two_processes_with_different_hash_seeds_is_byte_identical(tmp_path: Path) -> None:
    # three clusters (two with a tenant Component), cohorts, MIG classes, a class declared by tenants
    fleet.generate(tmp_path / "first", 8, seed=5)
    shutil.copytree(tmp_path / "first", tmp_path / "second")
    runs = []
    for name, seed in (("first", "1"), ("second", "4242")):
        env = {k: v for k, v in os.environ.items() if not k.startswith("GPUTENANCY_")}
        env.update(PYTHONHASHSEED=seed, PYTHONPATH=str(REPO))
        root = tmp_path / name
        argv = [sys.executable, str(REPO / "pipeline.py"), "--root", str(root), "--no-cache", "render"]
        runs.append((root, subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)))
    trees = []
    for root, proc in runs:
        out, _ = proc.communicate(timeout=300)
        assert proc.returncode == 0, out.decode()
        assert not (root / cache.DIRECTORY).exists()  # rendered, not read from a cache
        written = {p.name: output.read_tree(p) for p in sorted((root / output.GENERATED).iterdir())}
        extras = {
            rel: (root / rel).read_bytes()
            for rel in (".github/CODEOWNERS", "argocd/hub.yaml")
            if (root / rel).is_file()
        }
        trees.append((written, extras))
    (first, first_extras), (second, second_extras) = trees
    assert sorted(first) == ["ap-south", "eu-west", "us-east"]
    assert sum(len(t) for t in first.values()) > 100
    assert first == second
    assert first_extras == second_extras
