"""An agent on a Ray node, seen by the driver's ACP client as a process: its stdio a connection, its stderr and exit told on `ctl`."""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nullius_core.processes import CappedCopy, CappedLog

if TYPE_CHECKING:
    from nullius_backend_ray.room import RayRoom

LOST_CODE = -9  # what `wait()` says of an agent whose node was lost: the room says why


class RayAgentProcess:
    def __init__(self, room: RayRoom, stderr_path: Path):
        self._room = room
        self._exit: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        self._stderr_stream = asyncio.StreamReader()
        # there even when the agent cannot start, capped as the local backend's is
        self._stderr = CappedCopy(self._stderr_stream, CappedLog.to_file(stderr_path, what="the agent's stderr"))
        self.stdin: asyncio.StreamWriter | None = None
        self.stdout: asyncio.StreamReader | None = None
        self.pid = 0
        self.runtime: dict[str, Any] | None = None  # the trial's standard.agent.runtime: the node that ran it

    def attach(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, pid: int, runtime: dict[str, Any]) -> None:
        self.stdout, self.stdin, self.pid, self.runtime = reader, writer, pid, runtime

    def stderr_data(self, data: bytes) -> None:
        self._stderr_stream.feed_data(data)

    def exited(self, code: int) -> None:
        if not self._exit.done():
            self._exit.set_result(code)

    def lost(self) -> None:
        self.exited(LOST_CODE)
        if self.stdout is not None:
            self.stdout.feed_eof()

    @property
    def returncode(self) -> int | None:
        return self._exit.result() if self._exit.done() else None

    async def wait(self) -> int:
        return await asyncio.shield(self._exit)

    async def end(self) -> list[str]:
        """TERM every process of the agent on its node, then KILL what is left; name what had to be killed."""
        killed = await self._room.end_agent()
        if self.stdin is not None:
            with contextlib.suppress(Exception):
                self.stdin.close()
        return killed

    async def closed(self) -> None:
        """The unit is over: its stderr's copy ends."""
        self._stderr_stream.feed_eof()
        await self._stderr.close()
