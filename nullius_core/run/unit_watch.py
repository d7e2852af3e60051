"""A unit that runs long says so: `stage=unit unit=U state=running seconds=N doing=PHASE`, every 30 s of it.

Each trial in flight is said once it has run 30 s, and every 30 s after,
with the phase it is in (Harbor's names: `environment_setup`, `agent_setup`,
`agent_execution`, `verifier`), so a run whose units are slow, or stuck, is
never silent. One task in the run's loop sleeps until the next trial is due:
nothing is polled. NULLIUS_PROGRESS_EVERY sets the pace for tests.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

import attrs

from nullius_core.heartbeat import HEARTBEAT_SECONDS, every, whole


@attrs.define
class _Running:
    shown: str  # the unit, or the trial's name with --repeat: as its `unit` line will name it
    began: float
    due: float  # when it is said next (monotonic)
    phases: Any = None  # the trial's Phases, once run_trial has made them (jobs/harbor.py)


class UnitWatch:
    def __init__(self, say: Callable[..., None], clock: Callable[[], float] = time.monotonic) -> None:
        self._say = say
        self._clock = clock  # a test's own, to drive the beats by hand
        self._every = every(HEARTBEAT_SECONDS)
        self._running: dict[str, _Running] = {}

    def began(self, trial: str, shown: str) -> None:
        now = self._clock()
        self._running[trial] = _Running(shown, now, now + self._every)

    def phases(self, trial: str, phases: Any) -> None:
        """Where the trial is: its phases, as run_trial opens and closes them."""
        running = self._running.get(trial)
        if running is not None:
            running.phases = phases

    def ended(self, trial: str) -> None:
        self._running.pop(trial, None)

    async def watch(self) -> None:
        """Until cancelled: each trial said when it is due. A trial that begins is due after every other (or after an idle wait)."""
        while True:
            now = self._clock()
            due = min((r.due for r in self._running.values()), default=now + self._every)
            await asyncio.sleep(max(0.0, due - now))
            self.tick()

    def tick(self) -> None:
        """Each trial that is due said, and due again a beat later."""
        now = self._clock()
        for running in list(self._running.values()):
            if now < running.due:
                continue
            while running.due <= now:
                running.due += self._every
            doing = running.phases.current if running.phases is not None else None
            self._say("unit", unit=running.shown, state="running", seconds=whole(now - running.began), doing=doing)
