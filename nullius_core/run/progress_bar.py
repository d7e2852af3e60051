"""The bar a run shows on a terminal while its units run: how many are done, the mean reward so far, the time left.

It stands in for the per-unit lines (which still go to progress.jsonl). The
time left is the trials still to run, at the mean duration of those done,
`-j` at a time: the first unit's end already gives a fair figure, where the
elapsed time over the units done would count `-j` units' time as one's.
rich is imported here alone, when a terminal shows the bar.
"""

from __future__ import annotations

import io
from typing import Any, TextIO


class Pace:
    """The figures the bar shows, from the `unit` lines: the rewards' running mean and the time left."""

    def __init__(self, total: int, concurrency: int) -> None:
        self.total = total
        self.concurrency = max(1, concurrency)
        self.done = 0
        self._rewards = 0.0
        self._scored = 0
        self._seconds = 0.0
        self._timed = 0

    def add(self, done: int | None, reward: float | None, seconds: float | None) -> None:
        """A unit line: `done` trials are done now (a resumed run's count includes those that stood; a trial to run again is not done)."""
        self.done = done if done is not None else self.done + 1
        if reward is not None:
            self._rewards += reward
            self._scored += 1
        if seconds is not None:
            self._seconds += seconds
            self._timed += 1

    @property
    def mean(self) -> float | None:
        return self._rewards / self._scored if self._scored else None

    @property
    def left(self) -> float | None:
        """Seconds until the last trial ends, at this pace; None before any trial has ended."""
        remaining = max(0, self.total - self.done)
        if remaining == 0:
            return 0.0
        if not self._timed:
            return None
        return remaining * (self._seconds / self._timed) / min(self.concurrency, remaining)

    def mean_text(self) -> str:
        return "" if self.mean is None else f"mean {self.mean:.4f}"

    def left_text(self) -> str:
        left = self.left
        return "" if left is None or self.done >= self.total else f"about {duration(left)} left"


def duration(seconds: float) -> str:
    """45 s, 12 min, 3.5 h: as close as an estimate is."""
    if seconds < 90:
        return f"{max(1, round(seconds))} s"
    if seconds < 90 * 60:
        return f"{round(seconds / 60)} min"
    return f"{seconds / 3600:.1f} h"


class UnitsBar:
    """The rich bar of one run's units, on the progress's stream."""

    def __init__(self, stream: TextIO, total: int, concurrency: int) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress as Bar, TextColumn, TimeElapsedColumn

        self.pace = Pace(total, concurrency)
        self._bar = Bar(
            TextColumn("[nullius] units", markup=False),  # as the lines are written: not rich's markup
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TextColumn("{task.fields[mean]}", markup=False),
            TextColumn("{task.fields[left]}", markup=False),
            TextColumn("{task.description}", markup=False),
            console=Console(file=stream),
            transient=False,
        )
        self._task = self._bar.add_task("", total=total, mean="", left="")
        self._bar.start()

    def unit(self, fields: dict[str, Any]) -> None:
        """A `unit` line: a trial that ended moves the bar on; one still running (`state=running`) is named as it goes."""
        if fields.get("state") == "running":
            doing = f" ({fields['doing']})" if fields.get("doing") else ""
            self._bar.update(self._task, description=f"{fields.get('unit')} running {fields.get('seconds')} s{doing}")
            return
        done = fields.get("i")
        self.pace.add(done if isinstance(done, int) else None, _number(fields.get("reward")), _number(fields.get("seconds")))
        self._bar.update(self._task, completed=self.pace.done, mean=self.pace.mean_text(), left=self.pace.left_text(),
                         description=f"{fields.get('unit')} {fields.get('outcome')}")

    def print(self, text: str) -> None:
        """A line above the bar."""
        self._bar.console.print(text, markup=False, highlight=False, soft_wrap=True)

    def text(self, width: int = 160) -> str:
        """The bar as it shows now, as plain text (what a test reads)."""
        from rich.console import Console

        out = io.StringIO()
        Console(file=out, width=width, color_system=None).print(self._bar.get_renderable())
        return out.getvalue().rstrip("\n")

    def stop(self) -> None:
        self._bar.stop()


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None
