"""Where a run's time goes: every stage the engine laps has its wall time, and CPU time only when
GPUTENANCY_TIMING asks for it (no timing asserted, only which stages are reported)."""

from __future__ import annotations

from pathlib import Path

import pytest
import trees

from gputenancy import engine
from gputenancy.common import timing

STAGES = {"load", "rules", "boundary", "kustomizations", "render", "cache", "kustomize", "validate"}
STAGES |= {"postbuild", "fleet", "serialise"}


@pytest.mark.parametrize("asked", ["", "1"])
def test_stages_and_cpu_when_asked(
    asked: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, shared: Path
) -> None:
    monkeypatch.setenv(timing.ENV, asked)
    root = trees.example(tmp_path, generated=False)
    result = engine.run(root, schemas=shared, cache=tmp_path / "cache")
    assert not result.failed, [f.format() for f in result.findings]
    assert set(result.stats.seconds) == STAGES
    assert all(v >= 0 for v in result.stats.seconds.values())
    if asked:
        assert set(result.stats.cpu) == STAGES
        assert all(own >= 0 and children >= 0 for own, children in result.stats.cpu.values())
        assert sum(children for _, children in result.stats.cpu.values()) > 0  # kustomize ran
    else:
        assert result.stats.cpu == {}


def test_a_clock_without_cpu_keeps_wall_time_only() -> None:
    clock = timing.Clock(cpu_on=False)
    clock.lap("a")
    clock.lap("a")
    clock.lap("b")
    assert set(clock.seconds) == {"a", "b"} and clock.cpu == {}
    timing.no_lap("anything")
