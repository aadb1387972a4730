"""SIGINT and SIGTERM as one exception, turned into a one-line message by the command line (a leaf).

While a command runs, the first of these signals kills the subprocesses still running
(`proc.stop_all`: kustomize is not waited for) and raises `Interrupted` in the main thread, so every
``finally`` and context manager runs (a swap of generated/ undone: `build.swap`), and the process
exits with 128 + the signal number after one line on stderr, never a traceback. Later signals of the
same command only stop processes again: the clean-up the first one started is not cut short.

Temporary directories of a command (kustomize's staging tree, generated/.staging-*, generated/.old-*,
publish's work tree) are made with `mkdtemp` and removed with `rmtree`, which register and forget
them with signals held (`deferred`); whatever a stop leaves registered, wherever the signal landed
(between two statements of a ``finally`` too), is removed before the command returns. Only SIGKILL
can leave one behind; generated/'s are then removed by the next `render` and reported by `check`.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from types import FrameType

from gputenancy.common import proc

SIGNALS = tuple(s for s in (signal.SIGINT, getattr(signal, "SIGTERM", None)) if s is not None)

_held = 0  # depth of `deferred` blocks in the main thread
_pending: int | None = None  # a signal that arrived inside a `deferred` block
_raised = False  # this command has raised Interrupted already
_temporary: dict[Path, None] = {}  # directories to remove when a command ends (insertion order)


class Interrupted(BaseException):
    """A signal asked the run to stop."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def _raise(signum: int, _frame: FrameType | None) -> None:
    global _pending, _raised
    proc.stop_all()  # kustomize processes end now; the pool's threads return at once
    if _raised or _pending is not None:
        return  # the run is stopping already
    if _held:
        _pending = signum  # raised when the outermost `deferred` block ends
        return
    _raised = True
    raise Interrupted(signum)


def _stopped(exc: Interrupted) -> int:
    sweep()
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
    that reports an `Interrupted` and gives the exit code. Temporary directories still registered when
    the command ends are removed."""
    global _pending, _raised
    if threading.current_thread() is not threading.main_thread():
        yield _stopped
        return
    proc.resume()
    _pending, _raised = None, False
    previous = {s: signal.signal(s, _raise) for s in SIGNALS}
    try:
        yield _stopped
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
        sweep()


@contextlib.contextmanager
def deferred() -> Iterator[None]:
    """SIGINT and SIGTERM wait until the block is done (a swap of directories that must not be left
    half-done; a directory made and registered). The handler only notes a signal that arrives meanwhile
    (whichever thread the kernel gave it to), and the block's end raises it; the signals are also
    masked in this thread, where that is possible, for code run without the handler."""
    global _held, _pending, _raised
    main = threading.current_thread() is threading.main_thread()
    try:
        old = signal.pthread_sigmask(signal.SIG_BLOCK, SIGNALS)
    except (AttributeError, ValueError, OSError):
        old = None
    if main:
        _held += 1
    try:
        yield
    finally:
        if old is not None:
            signal.pthread_sigmask(signal.SIG_SETMASK, old)  # a masked signal's handler runs here, held
        if main:
            _held -= 1
            if not _held and _pending is not None and not _raised:
                signum, _raised = _pending, True
                raise Interrupted(signum)


def pending() -> bool:
    """A SIGINT or SIGTERM is waiting (inside `deferred`)."""
    if _pending is not None:
        return True
    return hasattr(signal, "sigpending") and bool(signal.sigpending() & set(SIGNALS))


def mkdtemp(prefix: str, parent: Path | None = None) -> Path:
    """A new temporary directory (in `parent`, else the system's), registered for removal: `rmtree`
    removes it, and so does the end of the command if a signal stops it first."""
    with deferred():
        path = Path(tempfile.mkdtemp(prefix=prefix, dir=parent))
        _temporary[path] = None
    return path


def rmtree(path: Path) -> None:
    """Remove a directory made by `mkdtemp` (what cannot be removed stays) and forget it."""
    with deferred():
        shutil.rmtree(path, ignore_errors=True)
        _temporary.pop(path, None)


def forget(path: Path) -> None:
    """Stop tracking `path`: what is left of it is the caller's (a removal reported as failed)."""
    with deferred():
        _temporary.pop(path, None)


@contextlib.contextmanager
def temporary_directory(prefix: str, parent: Path | None = None) -> Iterator[Path]:
    """`mkdtemp` for the duration of a block, removed afterwards (`tempfile.TemporaryDirectory` that a
    signal cannot leave behind)."""
    path = mkdtemp(prefix, parent)
    try:
        yield path
    finally:
        rmtree(path)


def sweep() -> None:
    """Remove every registered directory still there (a command stopped by a signal)."""
    with deferred():
        for path in list(_temporary):
            if os.path.lexists(path):
                shutil.rmtree(path, ignore_errors=True)
            _temporary.pop(path, None)


PAUSE_AT = "GPUTENANCY_PAUSE_AT"
"""For tests that send real signals at a precise moment: `<point>=<file>` makes the command write its
pid to <file> when it reaches `checkpoint(<point>)`, then wait there for a signal."""


def checkpoint(point: str) -> None:
    """With $GPUTENANCY_PAUSE_AT naming `point`: announce it (the file) and wait for SIGINT or SIGTERM,
    which raises here, or, inside a `deferred` block, is noted and the block goes on."""
    spec = os.environ.get(PAUSE_AT, "")
    name, _, flag = spec.partition("=")
    if name != point or not flag:
        return
    Path(flag).write_text(f"{os.getpid()}\n", encoding="utf-8")
    while not (pending() or _raised):  # a pool thread returns once the main thread has raised
        time.sleep(0.01)
