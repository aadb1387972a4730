"""SIGINT and SIGTERM as one exception, turned into a one-line message by the command line (a leaf).

While a command runs, both signals kill the subprocesses still running (`proc.stop_all`: kustomize
is not waited for) and raise `Interrupted` in the main thread, so every ``finally`` and context
manager runs (staging directories removed, a swap of generated/ undone: `build.swap`)
and the process exits with 128 + the signal number after one line on stderr, never a traceback.
"""

from __future__ import annotations

import contextlib
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from types import FrameType

from gputenancy.common import proc

SIGNALS = tuple(s for s in (signal.SIGINT, getattr(signal, "SIGTERM", None)) if s is not None)


class Interrupted(BaseException):
    """A signal asked the run to stop."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def _raise(signum: int, _frame: FrameType | None) -> None:
    proc.stop_all()  # kustomize processes end now; the pool's threads return at once
    raise Interrupted(signum)


def _stopped(exc: Interrupted) -> int:
    name = signal.Signals(exc.signum).name
    print(
        f"interrupted by {name}: stopped; generated/ is as before, or complete if the signal came"
        " after the swap, never half-written",
        file=sys.stderr,
    )
    return 128 + exc.signum


@contextlib.contextmanager
def handled() -> Iterator[Callable[[Interrupted], int]]:
    """Install the handlers for the duration of a command (main thread only); yields the function
    that reports an `Interrupted` and gives the exit code."""
    if threading.current_thread() is not threading.main_thread():
        yield _stopped
        return
    proc.resume()
    previous = {s: signal.signal(s, _raise) for s in SIGNALS}
    try:
        yield _stopped
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


@contextlib.contextmanager
def deferred() -> Iterator[None]:
    """SIGINT and SIGTERM wait until the block is done (a swap of directories that must not be left
    half-done); where signals cannot be masked, the block runs unmasked."""
    try:
        old = signal.pthread_sigmask(signal.SIG_BLOCK, SIGNALS)
    except (AttributeError, ValueError, OSError):
        yield
        return
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


def pending() -> bool:
    """A masked SIGINT or SIGTERM is waiting (inside `deferred`)."""
    return hasattr(signal, "sigpending") and bool(signal.sigpending() & set(SIGNALS))
