"""A log capped in size: its head as it comes, its tail at the end, and a line saying how much was cut between.

An agent's stderr (200 MiB has been seen) would otherwise go into the job
whole. The head is written as it comes, so a run killed half-way leaves it
readable; the tail is held in memory (at most `tail` bytes and one chunk)
and written when the log is closed. `CappedCopy` pumps a process's pipe
into one, so that the pipe is never left unread.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections import deque
from collections.abc import Callable
from pathlib import Path

HEAD = 1 << 20  # bytes kept from the start
TAIL = 1 << 20  # bytes kept from the end
LINE_SLACK = 64 << 10  # a cut moves to a line's edge when one is this near
CHUNK = 1 << 16


class CappedLog:
    """Bytes into `write`, at most about head + tail of them; what was cut is said in a line of its own."""

    def __init__(self, write: Callable[[bytes], None], *, head: int = HEAD, tail: int = TAIL, what: str = "stderr",
                 on_close: Callable[[], None] | None = None):
        self._write = write
        self._on_close = on_close
        self._what = what
        self._room = head
        self._limit_head = head
        self._tail_limit = tail
        self._tail_room = head + tail  # what the tail may hold before a cut: the tail, and whatever the head left unused
        self._tail: deque[bytes] = deque()
        self._tail_size = 0
        self.total = 0  # bytes given
        self.head = 0  # bytes written as they came
        self._dropped = 0  # bytes dropped from the front of the tail so far
        self._held = b""  # the head's unfinished last line
        self._line_start = True  # whether what was written last ends a line
        self._closed = False

    @classmethod
    def to_file(cls, path: Path, **options: object) -> CappedLog:
        """A capped log appended to `path` (made if missing)."""
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

        def write(data: bytes) -> None:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]

        return cls(write, on_close=lambda: os.close(fd), **options)  # type: ignore[arg-type]

    def write(self, data: bytes) -> None:
        if self._closed or not data:
            return
        self.total += len(data)
        if self._room:
            take, data = data[: self._room], data[self._room :]
            self._room -= len(take)
            held = self._held + take
            edge = held.rfind(b"\n")
            unfinished = len(held) - edge - 1  # the bytes after the last newline: held back, so that the head ends a line
            if unfinished > LINE_SLACK:
                unfinished = 0  # a line too long to wait for is written as it comes
            self._emit(held[: len(held) - unfinished])
            self.head += len(held) - unfinished
            self._held = held[len(held) - unfinished :]
            if self._room:
                return
            data, self._held = self._held + data, b""  # the head is full: its unfinished line goes on into the rest
            self._tail_room = self._tail_limit + self._limit_head - self.head
            if not data:
                return
        self._tail.append(data)
        self._tail_size += len(data)
        while self._tail_size > self._tail_room and self._tail_size - len(self._tail[0]) >= self._tail_limit:
            if not self._dropped:
                self._note(f"[nullius] {self._what} goes on past its first {self.head} bytes: cut from here; its last {self._tail_limit} bytes follow when it ends\n")
            dropped = self._tail.popleft()
            self._tail_size -= len(dropped)
            self._dropped += len(dropped)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        tail = self._held + b"".join(self._tail)
        self._tail.clear()
        try:
            if self._dropped or len(tail) > self._tail_room:
                extra = max(0, len(tail) - self._tail_limit)
                edge = tail.find(b"\n", extra, extra + LINE_SLACK)
                start = edge + 1 if edge >= 0 and edge + 1 < len(tail) else extra
                kept = tail[start:]
                cut = self.total - self.head - len(kept)
                self._note(f"[nullius] {cut} bytes of {self._what} cut ({cut / (1 << 20):.1f} MiB of {self.total / (1 << 20):.1f} MiB):"
                           f" its first {self.head} bytes are above, its last {len(kept)} bytes below\n")
                self._emit(kept)
            else:
                self._emit(tail)
        finally:
            if self._on_close is not None:
                self._on_close()

    def _note(self, line: str) -> None:
        self._emit(("" if self._line_start else "\n").encode() + line.encode())

    def _emit(self, data: bytes) -> None:
        if data:
            self._write(data)
            self._line_start = data.endswith(b"\n")


class CappedCopy:
    """A process's pipe (its stderr) read to its end by a task of its own, into a `CappedLog`."""

    def __init__(self, stream: asyncio.StreamReader, log: CappedLog):
        self.log = log
        self._task = asyncio.create_task(self._pump(stream))

    async def _pump(self, stream: asyncio.StreamReader) -> None:
        while True:
            chunk = await stream.read(CHUNK)
            if not chunk:
                return
            self.log.write(chunk)

    async def close(self, wait: float = 2.0) -> None:
        """Wait (up to `wait` s) for the pipe's end, then close the log: a child still holding the pipe cannot hold the unit."""
        try:
            await asyncio.wait_for(asyncio.shield(self._task), wait)
        except (asyncio.TimeoutError, OSError, ValueError):
            self._task.cancel()
            with contextlib.suppress(BaseException):
                await self._task
        finally:
            self.log.close()
