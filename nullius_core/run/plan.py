"""What a run plans to do: a driver's units checked, and on `--resume` the trials still to run."""

from __future__ import annotations

import re
import shutil
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from nullius_core.failures import stands_on_resume
from nullius_core.jobs.layout import JobDir
from nullius_core.run.shard import Plan
from nullius_core.run.unit import Work, trial_name

PLAIN_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


def resumed_work(job: JobDir, work: Iterable[Work], retry_errors: bool, stands: Callable[[dict[str, Any]], None]) -> list[Work]:
    """The trials to run; each result that stands (failures.stands_on_resume) is handed to `stands`, never kept here, and
    earlier attempts are moved aside."""
    todo = []
    for item in work:
        trial = job.trial(item.trial_name)
        result = trial.read_result()
        if result is not None and stands_on_resume(result, retry_errors):
            stands(result)
            continue
        set_aside(job, item.trial_name)
        todo.append(item)
    return todo


def set_aside(job: JobDir, trial_name: str) -> Path | None:
    """A trial about to run again: its earlier records (result.json, agent/, verifier/, .work/relay) moved whole to
    `.work/earlier/<trial>.<n>/`, never overwritten; None when it has none."""
    trial = job.trial(trial_name)
    if not trial.path.exists():
        return None
    earlier = job.path / ".work" / "earlier"
    n = 1
    while (earlier / f"{trial_name}.{n}").exists():
        n += 1
    earlier.mkdir(parents=True, exist_ok=True)
    target = earlier / f"{trial_name}.{n}"
    shutil.move(str(trial.path), str(target))
    return target


def unit_problem(units: Any, pinned: int | None) -> str | None:
    """Why a `units` reply is not a usable list of units, or None."""
    if not isinstance(units, list) or not all(isinstance(u, str) for u in units):
        return "expected a list of strings"
    bad = [u for u in units if not PLAIN_ID.match(u)]
    if bad:
        return f"ids must be plain enough to name a folder ([A-Za-z0-9._-]); not {bad[0]!r}"
    if len(set(units)) != len(units):
        seen: set[str] = set()
        dupe = next(u for u in units if u in seen or seen.add(u))  # type: ignore[func-returns-value]
        return f"ids must be unique; {dupe!r} comes twice"
    if pinned is None and not units:
        return "no units: the folder holds no task"
    if pinned is not None and len(units) != pinned:
        return f"{len(units)} units, but the dataset pins {pinned}"
    return None


class PlannedTrials:
    """A run's trials in order, each chosen unit's attempts together, made as they are taken (a run of 100,000 units holds
    its plan compactly, not a `Work` a trial)."""

    __slots__ = ("chosen", "repeat")

    def __init__(self, chosen: Plan, repeat: int) -> None:
        self.chosen = chosen
        self.repeat = repeat

    def __len__(self) -> int:
        return len(self.chosen) * self.repeat

    def __iter__(self) -> Iterator[Work]:
        for p in self.chosen:
            for attempt in range(1, self.repeat + 1):
                yield Work(unit=p.unit, position=p.position, attempt=attempt, trial_name=trial_name(p.unit, attempt, self.repeat))

    def units(self) -> Iterator[str]:
        """The chosen units, in the driver's order."""
        return iter(self.chosen.units)
