"""Progress: one line per stage on stderr and in the job's `progress.jsonl`.

`[nullius] stage=install driver=humaneval state=done seconds=41 at=...`,
`stage=units n=10`, `stage=unit i=3 of=10 unit=u0002 outcome=passed`,
`stage=done`. When stderr is a terminal, a rich progress bar stands in for
the per-unit lines (they still go to progress.jsonl). Long work is never
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


def now_iso() -> str:
    return datetime.now(timezone.utc).isoformat().replace("+00:00", "Z")


class Progress:
    def __init__(self, stream: TextIO | None = None, bar: bool | None = None):
        self.stream = stream or sys.stderr
        self.bar_wanted = self.stream.isatty() if bar is None else bar
        self._file: Any = None
        self._pending: list[str] = []
        self._bar: Any = None
        self._task: Any = None
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
            self._keep({"stage": stage, **{k: v for k, v in fields.items() if v is not None}, "at": now_iso()})

    def _keep(self, fields: dict[str, Any]) -> None:
        record = json.dumps(fields, ensure_ascii=False) + "\n"
        if self._file is not None:
            self._file.write(record)
        else:
            self._pending.append(record)

    def _stage(self, stage: str, **fields: Any) -> None:
        fields = {"stage": stage, **{k: v for k, v in fields.items() if v is not None}, "at": now_iso()}
        self._keep(fields)
        if stage == "unit" and self._bar is not None:
            if fields.get("state") == "running":
                return  # a unit still at work: the bar's clock says it goes on (the record keeps the line)
            self._bar.update(self._task, advance=1, description=f"{fields.get('unit')} {fields.get('outcome')}")
            if "cause" not in fields:
                return  # an errored unit's line is said above the bar, with its cause
        if stage == "units" and self.bar_wanted:
            self._start_bar(int(fields.get("n", 0)))
        if stage == "done" and self._bar is not None:
            self._bar.stop()
            self._bar = None
        text = "[nullius] " + " ".join(f"{k}={_plain(v)}" for k, v in fields.items())
        if self._bar is not None:
            self._bar.console.print(text, markup=False, highlight=False, soft_wrap=True)
            return
        self.stream.write(text + "\n")
        self.stream.flush()

    def _start_bar(self, total: int) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress as Bar, TextColumn, TimeElapsedColumn

        self._bar = Bar(
            TextColumn("[nullius] units"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TextColumn("{task.description}"),
            console=Console(file=self.stream),
            transient=False,
        )
        self._task = self._bar.add_task("", total=total)
        self._bar.start()

    def close(self) -> None:
        if self._bar is not None:
            self._bar.stop()
            self._bar = None
        if self._file is not None:
            self._file.close()
            self._file = None


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
