"""Long work is never silent: a step that goes on says so at a steady pace, from a thread of its own.

A download says its bytes every 5 s (`state=downloading`); every install,
clone, image build and unit that runs past 30 s says `state=running
seconds=N` every 30 s. A thread, so that a step that is stuck (a server that
stopped sending, an installer that hangs) still says so: nothing has to
arrive for the line to come. `NULLIUS_PROGRESS_EVERY=SECONDS` sets every
pace at once; it is for tests, which wait for such a line without waiting
30 s.

Plugins (a backend building an image, a provider installing its runtime)
use `heartbeat` with the `progress` they are handed, as the core does.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, Protocol

EVERY_VARIABLE = "NULLIUS_PROGRESS_EVERY"
BYTES_SECONDS = 5.0  # a download's `state=downloading` lines
HEARTBEAT_SECONDS = 30.0  # a long step's `state=running` lines


class Stages(Protocol):
    def stage(self, stage: str, **fields: Any) -> None: ...


def every(default: float) -> float:
    """Seconds between a long step's lines: `default`, or what NULLIUS_PROGRESS_EVERY says (for tests)."""
    try:
        seconds = float(os.environ.get(EVERY_VARIABLE, default))
    except ValueError:
        return default
    return seconds if seconds > 0 else default


def whole(seconds: float) -> float:
    """Seconds as a line says them: whole ones, tenths under 10 s (a test's pace)."""
    return float(round(seconds)) if seconds >= 10 else round(seconds, 1)


class Ticker:
    """Calls `say()` every `seconds` (default: a download's pace), from a thread of its own, while the block runs."""

    def __init__(self, say: Callable[[], None], seconds: float | None = None) -> None:
        self._say = say
        self._seconds = seconds if seconds is not None else every(BYTES_SECONDS)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._tick, name="nullius-ticker", daemon=True)

    def _tick(self) -> None:
        while not self._stop.wait(self._seconds):
            self._say()

    def __enter__(self) -> Ticker:
        self._thread.start()
        return self

    def __exit__(self, *_: Any) -> None:
        self._stop.set()
        self._thread.join()


@contextmanager
def beating(say: Callable[[float], None]) -> Iterator[None]:
    """While the block runs: `say(seconds so far)` every 30 s (NULLIUS_PROGRESS_EVERY in tests)."""
    began = time.monotonic()
    with Ticker(lambda: say(whole(time.monotonic() - began)), every(HEARTBEAT_SECONDS)):
        yield


def heartbeat(progress: Stages, stage: str, state: str = "running", **fields: Any) -> Any:
    """While the block runs: `stage=STAGE FIELDS... state=running seconds=N` every 30 s (`install`, `agent=KEY/VERSION`)."""
    return beating(lambda seconds: progress.stage(stage, **fields, state=state, seconds=seconds))
