"""Shared fixtures: the repository root, the upstream reference data in ../shared, a guarded $HOME.

The reference data (Kueue CRDs and feature gates, Kubernetes schemas, Argo CD CRDs, upstream examples)
is found at $GPUTENANCY_SHARED, or ../shared beside the checkout. Every test that reads it asks for the
`shared` fixture, which fails under CI when the data is missing and skips otherwise. The product's own
option for Kueue CRDs (`--schemas`, $GPUTENANCY_SCHEMAS) is cleared for every test, so a test never
passes or fails because of how the shell running it is configured.

Hypothesis runs under a profile registered here. The default, "ci", is deterministic: derandomized
(the examples are a function of the test alone), no example database, no deadline, so the suite gives
the same result on every run and every machine. `GPUTENANCY_HYPOTHESIS=explore` draws fresh examples
on each run, for looking for new counterexamples (docs/testing.md)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

REPO = Path(__file__).resolve().parent.parent

_QUIET = {  # both profiles: no example database, no deadline (a loaded machine is slow, not wrong)
    "database": None,
    "deadline": None,
    "print_blob": True,
    "suppress_health_check": [HealthCheck.too_slow],
}
settings.register_profile("ci", derandomize=True, **_QUIET)
settings.register_profile("explore", derandomize=False, **_QUIET)
settings.load_profile(os.environ.get("GPUTENANCY_HYPOTHESIS", "ci"))


def shared_dir() -> Path:
    """../shared beside the checkout (or $GPUTENANCY_SHARED): fail under CI when missing, skip otherwise."""
    path = Path(os.environ.get("GPUTENANCY_SHARED", REPO.parent / "shared"))
    if not (path / "kueue").is_dir():
        message = f"upstream reference data not found at {path} (set GPUTENANCY_SHARED)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return path


@pytest.fixture(scope="session")
def shared() -> Path:
    return shared_dir()


@pytest.fixture
def repo_root() -> Path:
    return REPO


@pytest.fixture(autouse=True)
def _guard_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Any write to $HOME (git config --global, caches) lands in a throwaway directory."""
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("GPUTENANCY_CACHE", str(home / "gputenancy-cache"))
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)
    monkeypatch.delenv("GPUTENANCY_SCHEMAS", raising=False)
