"""The commands the app started (runs, proofs, conformance runs): each a process of this machine, its output kept, its end waited for.

Each start is recorded as `<app dir>/runs/<id>.json` (the command, when it
started and ended, its exit status, its log), so a restarted app still lists
them; the jobs they made are in the jobs folder, whatever became of the app.
A command still running when the app stops gets SIGINT, as Ctrl-C would give
it: a run ends cancelled, its records whole, resumable.
"""

from __future__ import annotations

import asyncio
import json
import signal
import time
import uuid
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import attrs

from nullius_app.cli_client import Nullius

STOP_SECONDS = 60  # a cancelled run writes its records before it ends


@attrs.define
class Started:
    id: str
    title: str
    args: list[str]
    log: Path
    started: str
    process: asyncio.subprocess.Process | None = None
    code: int | None = None
    ended: str | None = None
    jobs: list[str] = attrs.field(factory=list)  # the job names it makes (a run recipe's), for the runs page

    def record(self) -> dict[str, Any]:
        return {"id": self.id, "title": self.title, "args": self.args, "log": str(self.log), "started": self.started,
                "code": self.code, "ended": self.ended, "jobs": self.jobs}

    @property
    def running(self) -> bool:
        return self.code is None and self.process is not None


def log_tail(log: Path, size: int) -> str:
    """The last `size` bytes of a command's log, as text ("" while it has none)."""
    try:
        with open(log, "rb") as handle:
            handle.seek(0, 2)
            handle.seek(max(0, handle.tell() - size))
            return handle.read().decode(errors="replace")
    except OSError:
        return ""


def _now() -> str:
    return datetime.now(timezone.utc).isoformat().replace("+00:00", "Z")


class RunBook:
    def __init__(self, folder: Path, nullius: Nullius):
        self.folder = folder
        self.nullius = nullius
        self.started: dict[str, Started] = {}
        self._waits: set[asyncio.Task[Any]] = set()

    async def start(self, title: str, args: list[str], keys: bool = True, jobs: list[str] | None = None) -> Started:
        """`nullius ARGS` started now; its output goes to its log, its end is recorded when it comes."""
        self.folder.mkdir(parents=True, exist_ok=True)
        run_id = time.strftime("%Y%m%d-%H%M%S-") + uuid.uuid4().hex[:6]
        log = self.folder / f"{run_id}.log"
        entry = Started(id=run_id, title=title, args=list(args), log=log, started=_now(), jobs=list(jobs or []))
        with open(log, "wb") as out:
            entry.process = await asyncio.create_subprocess_exec(
                *self.nullius.argv(*args), stdin=asyncio.subprocess.DEVNULL, stdout=out, stderr=asyncio.subprocess.STDOUT,
                env=self.nullius.env(keys), start_new_session=True)
        self.started[run_id] = entry
        self._save(entry)
        task = asyncio.create_task(self._wait(entry))
        self._waits.add(task)
        task.add_done_callback(self._waits.discard)
        return entry

    async def _wait(self, entry: Started) -> None:
        assert entry.process is not None
        entry.code = await entry.process.wait()
        entry.ended = _now()
        self._save(entry)

    def _save(self, entry: Started) -> None:
        path = self.folder / f"{entry.id}.json"
        part = path.with_suffix(".part")
        part.write_text(json.dumps(entry.record(), indent=2))
        part.replace(path)

    def get(self, run_id: str) -> Started | None:
        """One the app started, in this session or an earlier one (read back from its record)."""
        if run_id in self.started:
            return self.started[run_id]
        path = self.folder / f"{run_id}.json"
        if not path.is_file() or path.parent != self.folder:
            return None
        data = json.loads(path.read_text())
        return Started(id=data["id"], title=data["title"], args=data["args"], log=Path(data["log"]), started=data["started"],
                       code=data.get("code") if data.get("code") is not None else -1, ended=data.get("ended"), jobs=data.get("jobs") or [])

    def all(self) -> list[Started]:
        """Every start on record, newest first."""
        ids = {p.stem for p in self.folder.glob("*.json")} | set(self.started)
        found = [s for s in (self.get(i) for i in ids) if s is not None]
        return sorted(found, key=lambda s: s.started, reverse=True)

    def cancel(self, run_id: str) -> bool:
        """SIGINT to a running command (Ctrl-C's): it ends cancelled, its records whole. False when it is not running."""
        entry = self.started.get(run_id)
        if entry is None or not entry.running or entry.process is None:
            return False
        entry.process.send_signal(signal.SIGINT)
        return True

    async def stop_all(self) -> None:
        for entry in self.started.values():
            if entry.running and entry.process is not None:
                entry.process.send_signal(signal.SIGINT)
        if self._waits:
            await asyncio.wait(list(self._waits), timeout=STOP_SECONDS)
