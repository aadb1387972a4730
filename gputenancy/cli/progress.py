"""Progress on stderr for long runs on a terminal: after a few seconds of silence, one line rewritten
in place with the time spent, cleared when the command finishes. Nothing when stderr is not a
terminal (CI logs, pipes), unless GPUTENANCY_PROGRESS=1; GPUTENANCY_PROGRESS=0 turns it off."""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Iterator
from typing import TextIO

AFTER = 2.0  # seconds before the first line
EVERY = 1.0


def enabled(stream: TextIO) -> bool:
    setting = os.environ.get("GPUTENANCY_PROGRESS", "")
    if setting in ("0", "1"):
        return setting == "1"
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


@contextlib.contextmanager
def ticker(label: str, stream: TextIO, *, after: float | None = None, every: float = EVERY) -> Iterator[None]:
    if not enabled(stream):
        yield
        return
    delay = float(os.environ.get("GPUTENANCY_PROGRESS_AFTER", AFTER)) if after is None else after
    stop = threading.Event()
    shown = threading.Event()
    start = time.monotonic()

    def run() -> None:
        if stop.wait(delay):
            return
        while True:
            stream.write(f"\r{label}: working… {time.monotonic() - start:.0f} s ")
            stream.flush()
            shown.set()
            if stop.wait(every):
                return

    thread = threading.Thread(target=run, name="gputenancy-progress", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()
        if shown.is_set():
            stream.write("\r\033[K")
            stream.flush()
