"""Where a run's time goes: wall seconds per stage, and CPU seconds per stage when asked for.

A `Clock` is lapped at the engine's stage boundaries: `lap(stage)` adds the time since the previous
lap to `stage`. Wall time is always kept (`Result.stats.seconds`, two `perf_counter` calls per lap).
CPU time is sampled only when `GPUTENANCY_TIMING` is set in the environment (the benchmark sets it),
so a normal run pays nothing for it: per stage, the process's user + system seconds (all its
threads: kustomize's collector and the writers run in threads, `time.process_time`) and those of the
child processes it has waited for (the kustomize processes, `getrusage(RUSAGE_CHILDREN)`). A child's
CPU counts in the stage in which it was collected, not the one in which it ran.
"""

from __future__ import annotations

import dataclasses
import os
import resource
import time

ENV = "GPUTENANCY_TIMING"


def enabled() -> bool:
    """True when CPU time per stage is sampled (GPUTENANCY_TIMING set to anything but "" or "0")."""
    return os.environ.get(ENV, "") not in ("", "0")


def _cpu() -> tuple[float, float]:
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time(), children.ru_utime + children.ru_stime


@dataclasses.dataclass
class Clock:
    """Laps of one run: `seconds` (wall) and, when `cpu_on`, `cpu` (process, children) per stage."""

    seconds: dict[str, float] = dataclasses.field(default_factory=dict)
    cpu: dict[str, tuple[float, float]] = dataclasses.field(default_factory=dict)
    cpu_on: bool = dataclasses.field(default_factory=enabled)
    last: float = dataclasses.field(default_factory=time.perf_counter)
    last_cpu: tuple[float, float] = (0.0, 0.0)

    def __post_init__(self) -> None:
        if self.cpu_on:
            self.last_cpu = _cpu()

    def lap(self, stage: str) -> None:
        now = time.perf_counter()
        self.seconds[stage] = self.seconds.get(stage, 0.0) + now - self.last
        self.last = now
        if self.cpu_on:
            own, children = _cpu()
            was_own, was_children = self.cpu.get(stage, (0.0, 0.0))
            self.cpu[stage] = (
                was_own + own - self.last_cpu[0],
                was_children + children - self.last_cpu[1],
            )
            self.last_cpu = (own, children)


def no_lap(stage: str) -> None:
    """A lap that records nothing: the default where a caller passes no clock."""
