"""One unit on its node: its folders, its route on the node's relay, its agent, its records sent back as they are written.

On `ctl`, from the driver: `files` (the workspace and HOME, a tar), `launch`
(the agent's command, environment and folder, in the node's paths), `end`
(its processes ended), `close` (its route retired, its last records and its
folders sent back, `closed`). To the driver: `started` or `failed`, `rec`
(a record file's whole lines, as they land), `err` (the agent's stderr),
`exit`, `ended`, `files`. On `io`: the agent's stdin and stdout, each line
rewritten between the driver's paths and the node's (pathmap.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nullius_backend_ray import files, wire
from nullius_backend_ray.pathmap import PathMap

if TYPE_CHECKING:
    from nullius_backend_ray.node import NodeSide

RECORDS = ("calls.jsonl", "bodies.jsonl", "gateway.log")
LINE_LIMIT = 64 * 1024 * 1024
GRACE = 3.0


class NodeUnit:
    def __init__(self, node: NodeSide, name: str, folder: Path, token: str, route: dict[str, Any]):
        self.node = node
        self.name = name
        self.folder = folder
        self.workspace = folder / "workspace"
        self.home = folder / "home"
        self.records = folder / "relay"
        self.records.mkdir(parents=True, exist_ok=True)
        node.relay.add_route(name, self.records, token=token, kind=route.get("kind", "agent"), model=route.get("model"),
                             side_models=frozenset(route.get("side_models") or ()), call_seconds=route.get("call_seconds"))
        self.paths = PathMap([])
        self.proc: asyncio.subprocess.Process | None = None
        self._ctl: asyncio.StreamWriter | None = None
        self._io: asyncio.Future[tuple[asyncio.StreamReader, asyncio.StreamWriter]] = asyncio.get_running_loop().create_future()
        self._offsets = dict.fromkeys(RECORDS, 0)
        self._flush = asyncio.Lock()
        self._tasks: set[asyncio.Future[Any]] = set()
        self._done = False
        self._ended = False

    # --- connections -----------------------------------------------------------

    async def attach(self, role: str, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if role == "io":
            if not self._io.done():
                self._io.set_result((reader, writer))
            return
        self._ctl = writer
        try:
            while True:
                message, data = await wire.receive(reader)
                if await self._on(message, data):
                    return
        except wire.Lost:
            await self.abandon()  # the driver is gone: the unit ends here, and nothing is sent back
        finally:
            wire.close(writer)

    async def _on(self, message: dict[str, Any], data: bytes) -> bool:
        kind = message.get("t")
        if kind == "files":
            await asyncio.to_thread(files.unpack, data, {"workspace": self.workspace, "home": self.home})
        elif kind == "launch":
            await self._launch(message)
        elif kind == "stop":  # a benchmark guard's lines: the node's relay refuses the unit's later calls
            with open(self.records / "stop", "ab") as handle:
                handle.write(data)
        elif kind == "end":
            killed = await self._end()
            await self._send({"t": "ended", "killed": killed})
        elif kind == "close":
            await self._close()
            return True
        return False

    async def _send(self, message: dict[str, Any], data: bytes = b"") -> None:
        if self._ctl is not None:
            with contextlib.suppress(ConnectionError, OSError, RuntimeError):
                await wire.send(self._ctl, message, data)

    # --- the agent -----------------------------------------------------------

    async def _launch(self, message: dict[str, Any]) -> None:
        from nullius_core.processes import start_process

        self.paths = PathMap(message.get("paths") or [])
        missing = [p for p in message.get("reads") or [] if not os.path.exists(p)]
        if missing:  # the agent's install and definition are this node's own, at the driver's paths
            await self._send({"t": "failed", "error": f"not on this node ({self.node.folder.name}): {', '.join(missing)} "
                              "(install Nullius and the agent on every node, at the same paths)"})
            return
        self.node.life.__enter__()  # the agent is a process of the node's lifetime: its watcher ends it if this process dies
        try:
            self.proc = await start_process(*message["argv"], stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
                                            stderr=asyncio.subprocess.PIPE, cwd=message["cwd"], env=message["env"], limit=LINE_LIMIT)
        except OSError as exc:
            await self._send({"t": "failed", "error": f"{type(exc).__name__}: {exc}"})
            return
        await self._send({"t": "started", "pid": self.proc.pid})
        self._spawn(self._stdio())
        self._spawn(self._stderr())

    async def _stdio(self) -> None:
        """The agent's stdout to the driver and the driver's lines to its stdin, once the driver's `io` connection comes."""
        proc = self.proc
        assert proc is not None and proc.stdout is not None and proc.stdin is not None
        reader, writer = await self._io
        out = asyncio.ensure_future(_pipe_lines(proc.stdout, writer, self.paths.to_driver))
        into = asyncio.ensure_future(_pipe_lines(reader, proc.stdin, self.paths.to_node))
        code = await proc.wait()
        await out  # what it wrote before it ended reaches the driver first
        into.cancel()
        wire.close(writer)
        await self._send({"t": "exit", "code": code})

    async def _stderr(self) -> None:
        assert self.proc is not None and self.proc.stderr is not None
        while True:
            chunk = await self.proc.stderr.read(65536)
            if not chunk:
                return
            await self._send({"t": "err"}, self.paths.to_driver(chunk))

    async def _end(self) -> list[str]:
        from nullius_core.processes import end_process

        if self.proc is None or self._ended:
            return []
        self._ended = True  # once: a second look at the process table finds nothing more, and costs as much
        return await end_process(self.proc, GRACE)

    # --- records -----------------------------------------------------------

    def recorded(self) -> None:
        """A call of the unit's route finished: its lines go to the driver once they are written."""
        self._spawn(self.flush())

    async def flush(self) -> None:
        async with self._flush:
            route = self.node.relay.routes.get(self.name) if self.node.relay is not None else None
            if route is not None:
                await route.recorder.written()
            for name in RECORDS:
                path = self.records / name
                try:
                    with open(path, "rb") as handle:
                        handle.seek(self._offsets[name])
                        data = handle.read()
                except FileNotFoundError:
                    continue
                whole = data[: data.rfind(b"\n") + 1]  # a line still being written waits for the next flush
                if whole:
                    self._offsets[name] += len(whole)
                    await self._send({"t": "rec", "file": name}, whole)

    # --- the end -----------------------------------------------------------

    async def _close(self) -> None:
        """The route retired (its calls recorded), the last records, the relay's notes and the folders back; then gone."""
        await self._end()
        await self.node.relay.retire(self.name)
        await self.flush()
        stop = self.records / "stop"
        if stop.exists():
            await self._send({"t": "rec", "file": "stop"}, stop.read_bytes())
        data = await asyncio.to_thread(files.pack, {"workspace": self.workspace, "home": self.home})
        await self._send({"t": "files"}, data)
        await self._send({"t": "closed"})
        await self._forget()

    async def abandon(self) -> None:
        """The driver is gone: the agent ended, the route removed, the folder removed; nothing sent."""
        await self._end()
        if self.node.relay is not None:
            self.node.relay.remove_route(self.name)
        await self._forget()

    async def _forget(self) -> None:
        if self._done:
            return
        self._done = True
        for task in list(self._tasks):
            task.cancel()
        self.node.forget(self)
        await asyncio.to_thread(shutil.rmtree, self.folder, True)

    def _spawn(self, work: Any) -> None:
        task = asyncio.ensure_future(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)


async def _pipe_lines(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, rewrite: Any) -> None:
    """Line by line, each rewritten (a path never split across two writes); the writer's end closed after."""
    try:
        while True:
            line = await reader.readline()
            if not line:
                break
            writer.write(rewrite(line))
            await writer.drain()
    except (ConnectionError, OSError, ValueError):
        pass
    finally:
        with contextlib.suppress(OSError, RuntimeError, AttributeError):
            if writer.can_write_eof():
                writer.write_eof()
            else:
                writer.close()
