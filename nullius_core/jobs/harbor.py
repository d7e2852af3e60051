"""Harbor's fields, filled from what Nullius records, so that `harbor view` shows what the run knows.

* `environment`: Harbor reads a config without one as `docker`. A docker
  unit says `type: docker`; any other backend names itself by
  `import_path` (Harbor has no type for a local process), so it is never
  shown as docker.
* the Verifier tab opens `verifier/reward.json`, `reward-details.json`,
  `test-stdout.txt` or `ctrf.json`, whichever comes first: the score's
  detail goes in `test-stdout.txt`, where Harbor's verifier puts what the
  test printed.
* phase timings: each phase from its real start to its real end, the phase
  a failure cut short included (`Phases`).
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from typing import Any

from nullius_core.jobs.records import Timing, iso

HARBOR_TYPES = {"docker": "docker"}  # Nullius's backends that are one of Harbor's environment types


def environment_of(backend: str) -> dict[str, str]:
    kind = HARBOR_TYPES.get(backend)
    return {"type": kind} if kind else {"import_path": f"nullius.backends:{backend}"}


def verifier_text(score: dict[str, Any]) -> str:
    """What the score said, as the Verifier tab shows it: the reward, whether it passed, the detail."""
    lines = [f"reward: {score.get('reward')}"]
    if "passed" in score:
        lines.append(f"passed: {json.dumps(score['passed'])}")
    lines.append("detail:")
    lines.append(json.dumps(score.get("detail"), indent=2, ensure_ascii=False, default=str))
    if score.get("parts") is not None:
        lines.append("parts:")
        lines.append(json.dumps(score["parts"], indent=2, ensure_ascii=False, default=str))
    return "\n".join(lines) + "\n"


class Phases:
    """A trial's phases as they happen, from the trial's start (its environment's setup first).

    One phase is open at a time. A failure leaves the open one to be closed
    where the trial ended, so an errored trial's time is the phase it failed
    in, not all setup.
    """

    def __init__(self, started: datetime):
        self._open: tuple[str, datetime] | None = ("environment_setup", started)
        self.timings: dict[str, Timing] = {}

    @property
    def current(self) -> str | None:
        """The phase open now (`agent_execution`), None once the trial's phases have ended."""
        return self._open[0] if self._open is not None else None

    def begin(self, name: str, at: datetime | None = None) -> None:
        at = at or datetime.now(timezone.utc)
        self.end(at)
        self._open = (name, at)

    def end(self, at: datetime | None = None) -> None:
        if self._open is None:
            return
        name, began = self._open
        at = at or datetime.now(timezone.utc)
        self.timings[name] = Timing(started_at=iso(began), finished_at=iso(at))
        self._open = None

    def split(self, first: str, second: str, at_epoch: float | None) -> None:
        """The open phase cut in two at `at_epoch` (the agent's setup, then its execution), when the moment is known."""
        if self._open is None or at_epoch is None:
            return
        name, began = self._open
        at = datetime.fromtimestamp(at_epoch, timezone.utc)
        if not began <= at:
            return
        self.timings[first] = Timing(started_at=iso(began), finished_at=iso(at))
        self._open = (second, at)
