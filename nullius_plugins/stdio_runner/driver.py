"""The stdio driver itself (imported when a run starts one)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Mapping
from typing import Any

from nullius_core.contracts.driver import DriverError, DriverLaunch
from nullius_core.processes import CappedLog, current, kill_process, start_process

LINE_LIMIT = 64 * 1024 * 1024  # a reply may carry a whole transcript or file


class StdioDriver:
    def __init__(self, launch: DriverLaunch):
        self.launch = launch
        self._proc: asyncio.subprocess.Process | None = None
        self._log: CappedLog | None = None
        self._stderr_task: asyncio.Task[None] | None = None
        self._lock = asyncio.Lock()
        self._dead: str | None = None

    @property
    def alive(self) -> bool:
        return self._dead is None and (self._proc is None or self._proc.returncode is None)

    def log_to(self, sink: Callable[[bytes], None] | None) -> None:
        """Its stderr to `sink` from now on, capped per sink: the last sink gets its tail when the next is set."""
        if self._log is not None:
            self._log.close()
        self._log = CappedLog(sink, what=f"the stderr of the {self.launch.label}") if sink is not None else None

    async def _start(self, op: str) -> asyncio.subprocess.Process:
        if self._proc is None:
            try:
                self._proc = await start_process(
                    *self.launch.argv,
                    stdin=asyncio.subprocess.PIPE,
                    stdout=asyncio.subprocess.PIPE,
                    stderr=asyncio.subprocess.PIPE,
                    env=dict(self.launch.env),
                    cwd=str(self.launch.cwd),
                    limit=LINE_LIMIT,
                )
            except OSError as exc:
                self._dead = str(exc)
                raise DriverError(op, "crashed", f"cannot start {self.launch.argv[0]!r}: {exc}") from None
            self._stderr_task = asyncio.create_task(self._pump_stderr(self._proc))
        return self._proc

    async def _pump_stderr(self, proc: asyncio.subprocess.Process) -> None:
        assert proc.stderr is not None
        while True:
            chunk = await proc.stderr.read(65536)
            if not chunk:
                return
            if self._log is not None:
                self._log.write(chunk)

    async def call(self, op: str, request: Mapping[str, Any], timeout: float) -> dict[str, Any]:
        async with self._lock:
            if self._dead is not None:
                raise DriverError(op, "crashed", self._dead)
            proc = await self._start(op)
            assert proc.stdin is not None and proc.stdout is not None
            line = json.dumps({"op": op, **request}, ensure_ascii=False) + "\n"
            try:
                proc.stdin.write(line.encode())
                await proc.stdin.drain()
                raw = await asyncio.wait_for(proc.stdout.readline(), timeout)
            except asyncio.TimeoutError:
                await self._kill(f"op {op!r} took longer than {timeout:g} s")
                raise DriverError(op, "timeout", f"no reply within {timeout:g} s") from None
            except (BrokenPipeError, ConnectionResetError):
                raw = b""
            except ValueError as exc:  # a line over the limit
                await self._kill(str(exc))
                raise DriverError(op, "garbage", f"a reply line too long: {exc}") from None
            if not raw:
                code = await self._exit_code()
                self._dead = f"the driver exited (status {code}) during op {op!r}"
                raise DriverError(op, "crashed", self._dead)
            try:
                reply = json.loads(raw)
            except json.JSONDecodeError:
                await self._kill("it printed a line that is not JSON")
                raise DriverError(op, "garbage", _preview(raw)) from None
            if not isinstance(reply, dict):
                await self._kill("it printed JSON that is not an object")
                raise DriverError(op, "garbage", _preview(raw))
            if "error" in reply:
                kind = reply.get("exception_type")
                raise DriverError(op, "error", str(reply["error"]), kind if isinstance(kind, str) else None)
            return reply

    async def _exit_code(self) -> int | None:
        assert self._proc is not None
        try:
            return await asyncio.wait_for(self._proc.wait(), 5)
        except asyncio.TimeoutError:
            await self._kill("it closed stdout but did not exit")
            return self._proc.returncode

    async def _kill(self, why: str) -> None:
        self._dead = why
        proc = self._proc
        if proc is None:
            return
        await asyncio.to_thread(kill_process, proc)  # its group, and whatever left it carrying its marker
        if proc.returncode is not None:
            return
        try:
            await asyncio.wait_for(proc.wait(), 10)
        except asyncio.TimeoutError:
            pass

    async def close(self) -> None:
        proc = self._proc
        if proc is not None and proc.returncode is None:
            if proc.stdin is not None:
                proc.stdin.close()
            try:
                await asyncio.wait_for(proc.wait(), 2)
            except asyncio.TimeoutError:
                pass
        # whatever the driver started dies with it
        if proc is not None:
            await asyncio.to_thread(kill_process, proc)
            current().forget(proc.pid)
            if proc.returncode is None:
                try:
                    await asyncio.wait_for(proc.wait(), 10)
                except asyncio.TimeoutError:
                    pass
        if self._stderr_task is not None:
            try:
                await asyncio.wait_for(self._stderr_task, 2)
            except (asyncio.TimeoutError, asyncio.CancelledError):
                self._stderr_task.cancel()
        self.log_to(None)  # the last sink's tail, when it was cut
        self._dead = self._dead or "closed"


def _preview(raw: bytes) -> str:
    text = raw.decode("utf-8", "replace").strip()
    return repr(text[:200] + ("..." if len(text) > 200 else ""))
