"""The relay's record of a unit: `calls.jsonl`, `bodies.jsonl`, `gateway.log`, and the `stop` file.

A record line is written whole with one call, or not at all: a relay killed
mid-run leaves files every line of which parses. What is recorded is cleaned
first (`cleaning.py`). The files are opened when the route is added, so a
relay out of file descriptors can still record why it refused a call.

Cleaning is CPU work (regexes over every byte). A call's lines are cleaned
and written on the event loop only while they are small and nothing of the
route waits before them; a bigger call's, and every call's after it until
the route has caught up, go to a thread (`Writer`), in order. `written()`
waits for them.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import threading
from collections import deque
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from nullius_core.logs import get_logger
from nullius_core.relay.cleaning import SLICE, Cleaner, breathe, decode

log = get_logger("nullius.relay")

INLINE = 64 * 1024  # a call whose bodies hold more than this is cleaned off the event loop
KEPT = ("calls.jsonl", "gateway.log")  # what a trial keeps of a route's record beside its other records; the bodies stay in .work

Reply = bytes | list[bytes] | None  # a whole body (JSON kept as JSON), a stream's or a cut body's bytes (kept as text), nothing


class Appender:
    """A file kept open for appending; each line goes in one write() call, whole."""

    def __init__(self, path: Path):
        self.path = path
        self._fd: int | None = None

    def open(self) -> None:
        if self._fd is None:
            self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)

    def line(self, text: str | list[str]) -> None:
        data = _encoded([text] if isinstance(text, str) else text)
        if self._fd is not None:
            _write(self._fd, data)
            return
        # a call that ended after its route was removed: its line still lands, and no descriptor is kept
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            _write(fd, data)
        finally:
            os.close(fd)

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def _encoded(pieces: list[str]) -> list[bytes]:
    """A line's pieces as bytes, its newline added: few enough for one writev(), none long to encode."""
    if len(pieces) == 1 and len(pieces[0]) <= SLICE:
        return [(pieces[0] + "\n").encode()]
    if sum(map(len, pieces)) <= SLICE:
        return [("".join(pieces) + "\n").encode()]
    out = []
    for piece in pieces:
        if len(piece) <= SLICE:
            out.append(piece.encode())
            continue
        for i in range(0, len(piece), SLICE):
            breathe()
            out.append(piece[i : i + SLICE].encode())
    out.append(b"\n")
    while len(out) > _IOV_MAX:  # a very long line: neighbours joined two by two
        out = [b"".join(out[i : i + 2]) for i in range(0, len(out), 2)]
    return out


_IOV_MAX = 1000


def _write(fd: int, pieces: list[bytes]) -> None:
    """One writev() (a regular file takes it whole, appended as one); the loop is for a write cut short."""
    written = os.write(fd, pieces[0]) if len(pieces) == 1 else os.writev(fd, pieces)
    total = len(pieces[0]) if len(pieces) == 1 else sum(map(len, pieces))
    if written < total:
        rest = b"".join(pieces)[written:]
        while rest:
            rest = rest[os.write(fd, rest) :]


class Writer:
    """The threads that clean and write records off the event loop, shared by every route of a relay."""

    def __init__(self, threads: int = 2):
        self._pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="nullius-relay-record")
        self._queues: set[Lines] = set()

    def lines(self) -> Lines:
        queue = Lines(self._pool)
        self._queues.add(queue)
        return queue

    def forget(self, queue: Lines) -> None:
        self._queues.discard(queue)

    async def drained(self) -> None:
        for queue in list(self._queues):
            await queue.done()

    def close(self) -> None:
        self._pool.shutdown(wait=True)


class Lines:
    """One route's record jobs, in order: run at once while small and none waits, else on the writer's threads."""

    def __init__(self, pool: ThreadPoolExecutor):
        self._pool = pool
        self._lock = threading.Lock()
        self._jobs: deque[Callable[[], None]] = deque()
        self._busy = False
        self._waiters: list[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]] = []

    def run(self, job: Callable[[], None], big: bool) -> None:
        with self._lock:
            if self._busy or big:
                self._jobs.append(job)
                if not self._busy:
                    self._busy = True
                    self._pool.submit(self._drain)
                return
        # only the event loop's thread adds jobs: with none queued, running this one now keeps the order
        _guarded(job)

    async def done(self) -> None:
        loop = asyncio.get_running_loop()
        with self._lock:
            if not self._busy:
                return
            future: asyncio.Future[None] = loop.create_future()
            self._waiters.append((loop, future))
        await future

    def _drain(self) -> None:
        while True:
            with self._lock:
                if not self._jobs:
                    self._busy = False
                    waiters, self._waiters = self._waiters, []
                    break
                job = self._jobs.popleft()
            _guarded(job)
        for loop, future in waiters:
            try:
                loop.call_soon_threadsafe(_resolve, future)
            except RuntimeError:  # that loop is closed: nobody waits any more
                pass


def _resolve(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


def _guarded(job: Callable[[], None]) -> None:
    try:
        job()
    except OSError as exc:  # a full disk, say: the call was answered; the record says so on stderr, and the relay goes on
        log.error("relay record not written", error=f"{type(exc).__name__}: {exc}")


class Recorder:
    """One unit's record folder."""

    def __init__(self, folder: Path, cleaner: Cleaner, writer: Writer, keep_bodies: bool = True):
        folder.mkdir(parents=True, exist_ok=True)
        self.folder = folder
        self.cleaner = cleaner
        self.keep_bodies = keep_bodies
        self.calls = folder / "calls.jsonl"
        self.bodies = folder / "bodies.jsonl"
        self.gateway = folder / "gateway.log"
        self.stop = folder / "stop"
        self._calls = Appender(self.calls)
        self._bodies = Appender(self.bodies)
        self._gateway = Appender(self.gateway)
        self._writer = writer
        self._lines = writer.lines()
        for appender in self._appenders():
            appender.open()
        self._stop_stamp: tuple[int, int] | None = None
        self._stop_guard: str | None = None

    def call(self, record: dict[str, Any]) -> None:
        """A call's line alone (one the stop file refused)."""
        self._lines.run(lambda: self._calls.line(self.cleaner.dumps(record)), big=False)

    def finish(self, record: dict[str, Any], request: bytes, reply: Reply, log_line: str) -> None:
        """A forwarded call's three lines: `calls.jsonl`, its bodies (the request as the caller sent it, the
        reply as the provider sent it, a stream as its text), and `gateway.log`."""
        size = len(request) + (sum(map(len, reply)) if isinstance(reply, list) else len(reply or b""))
        self._lines.run(lambda: self._finish(record, request, reply, log_line), big=size > INLINE)

    def _finish(self, record: dict[str, Any], request: bytes, reply: Reply, log_line: str) -> None:
        self._calls.line(self.cleaner.dumps(record))
        if self.keep_bodies:
            response = decode(reply) if isinstance(reply, list) else reply
            # a stream's reads as they came, by their sizes: replay plays it back read by read (relay/replay.py)
            chunks = ',"chunks":[' + ",".join(map(str, map(len, reply))) + "]" if isinstance(reply, list) and record.get("stream") else ""
            self._bodies.line([f'{{"id":"{record["id"]}","request":', *self.cleaner.raw(request, is_json=True),
                               ',"response":', *self.cleaner.raw(response), chunks, "}"])
        self._gateway.line(self.cleaner.text(log_line.rstrip("\n")))

    async def written(self) -> None:
        """Until every line handed over so far is in its file."""
        await self._lines.done()

    def close(self) -> None:
        """The files closed once the lines handed over are written."""
        self._lines.run(self._close, big=False)

    def _close(self) -> None:
        for appender in self._appenders():
            appender.close()
        self._writer.forget(self._lines)

    def _appenders(self) -> tuple[Appender, ...]:
        return (self._calls, self._bodies, self._gateway) if self.keep_bodies else (self._calls, self._gateway)

    def stopped(self) -> str | None:
        """A guard's line in the stop file refuses the agent's later calls; the relay's own notes do not."""
        try:
            info = os.stat(self.stop)
            stamp = (info.st_mtime_ns, info.st_size)  # a line appended in the same tick still changes the size
        except FileNotFoundError:
            return None
        if stamp != self._stop_stamp:  # read again only when the file changed
            lines = self.stop.read_text(encoding="utf-8").splitlines()
            guard = [line for line in lines if line.strip() and not line.startswith("relay:")]
            self._stop_guard, self._stop_stamp = (guard[-1] if guard else None), stamp
        return self._stop_guard

    def note_stop(self, note: str) -> None:
        with open(self.stop, "a", encoding="utf-8") as handle:
            handle.write(f"relay: {note}\n")


def keep_record(folder: Path, into: Path) -> None:
    """A route's calls and gateway log copied into the trial's records (`agent/`, `judge/`), once its route is done."""
    for name in KEPT:
        source = folder / name
        if source.exists():
            into.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, into / name)
