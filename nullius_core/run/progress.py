"""Progress: one line per stage on stderr and in the job's `progress.jsonl`.

`[nullius] stage=install driver=humaneval state=done seconds=41 at=...`,
`stage=units n=10`, `stage=unit i=3 of=10 unit=u0002 outcome=passed`,
`stage=done`. When stderr is a terminal, a rich progress bar stands in for
the per-unit lines (they still go to progress.jsonl): the units done, the
mean reward so far and the time left (progress_bar.py). Long work is never
silent: a download says its bytes every 5 s, an install or a unit that goes
on says `state=running seconds=N` every 30 s (nullius_core/heartbeat.py,
unit_watch.py).
"""

from __future__ import annotations

import json
import sys
import threading
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, TextIO

from nullius_core.run.progress_bar import UnitsBar


def now_iso() -> str:
    return datetime.now(timezone.utc).isoformat().replace("+00:00", "Z")


class Progress:
    def __init__(self, stream: TextIO | None = None, bar: bool | None = None):
        self.stream = stream or sys.stderr
        self.bar_wanted = self.stream.isatty() if bar is None else bar
        self.concurrency = 1  # the run's -j, set by the engine before its units: the bar's estimate of the time left
        self._file: Any = None
        self._pending: list[str] = []
        self._bar: UnitsBar | None = None
        self._lock = threading.Lock()  # a heartbeat says its lines from a thread of its own

    def attach(self, path: Path) -> None:
        """From now on, lines go to `path` too (and the ones said before it)."""
        path.parent.mkdir(parents=True, exist_ok=True)
        self._file = open(path, "a", encoding="utf-8", buffering=1)  # noqa: SIM115 - closed in close()
        for line in self._pending:
            self._file.write(line)
        self._pending.clear()

    def stage(self, stage: str, **fields: Any) -> None:
        with self._lock:
            self._stage(stage, **fields)

    def record(self, stage: str, **fields: Any) -> None:
        """A line for the record alone, never the console: a refusal, which the command itself says once (`nullius: run refused: ...`)."""
        with self._lock:
            self._keep(_fields(stage, fields))

    def _keep(self, fields: dict[str, Any]) -> None:
        record = json.dumps(fields, ensure_ascii=False) + "\n"
        if self._file is not None:
            self._file.write(record)
        else:
            self._pending.append(record)

    def _stage(self, stage: str, **given: Any) -> None:
        fields = _fields(stage, given)
        self._keep(fields)
        if stage == "unit" and self._bar is not None:
            self._bar.unit(fields)
            if "cause" not in fields:
                return  # an errored unit's line is said above the bar, with its cause
        if stage == "units" and self.bar_wanted:
            self._bar = UnitsBar(self.stream, int(fields.get("n", 0)), self.concurrency)
        if stage == "done" and self._bar is not None:
            self._bar.stop()
            self._bar = None
        text = "[nullius] " + " ".join(f"{k}={_plain(v)}" for k, v in fields.items())
        if self._bar is not None:
            self._bar.print(text)
            return
        self.stream.write(text + "\n")
        self.stream.flush()

    def bar_text(self) -> str | None:
        """The bar as it shows now, as plain text; None when there is none (no terminal, or no units yet)."""
        with self._lock:
            return self._bar.text() if self._bar is not None else None

    def close(self) -> None:
        if self._bar is not None:
            self._bar.stop()
            self._bar = None
        if self._file is not None:
            self._file.close()
            self._file = None


def _fields(stage: str, fields: dict[str, Any]) -> dict[str, Any]:
    return {"stage": stage, **{k: v for k, v in fields.items() if v is not None}, "at": now_iso()}


def _plain(value: Any) -> str:
    text = str(value)
    return json.dumps(text) if (" " in text or not text) else text


class Timer:
    def __init__(self) -> None:
        self.start = time.monotonic()

    @property
    def seconds(self) -> float:
        return round(time.monotonic() - self.start, 3)


def first_line(result: dict[str, Any]) -> str | None:
    """The first line of a trial's exception (result.json's exception_info), for the console."""
    exception = result.get("exception_info")
    if exception is None:
        return None
    lines = (exception.get("exception_message") or "").strip().splitlines()
    return lines[0][:300] if lines else None


def done_fields(summary: dict[str, Any]) -> dict[str, Any]:
    """The `stage=done` line's counts and mean, from the job's summary."""
    keys = ("trials", "passed", "failed", "scored", "errored", "cancelled", "mean")
    return {k: (round(summary[k], 4) if isinstance(summary.get(k), float) else summary.get(k)) for k in keys if k in summary}
