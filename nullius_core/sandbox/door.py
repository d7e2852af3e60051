"""What stays on this machine for a sandboxed unit: its services behind Unix sockets of the unit's door folder.

`McpListeners`: a Unix socket per benchmark MCP server (`mcp-<name>.sock`),
or a connection handed to it by name (`serve`: the bwrap backend's door,
served by this process); each connection is one start of the server's own
command, here, its stdio joined to the connection. `tcp_behind`: a Unix
socket whose connections go on to a TCP service of this machine (the run's
relay). `pipe_both` joins two connections. The sandbox reaches these
sockets, never this machine's ports.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Mapping, Sequence
from pathlib import Path

from nullius_core.contracts.agent import McpServerEntry
from nullius_core.processes import end_process, start_process

BRIDGE = Path(__file__).resolve().parent / "inside" / "mcp_bridge.py"  # the agent's stdio entry for a server behind the door


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    except (ConnectionError, OSError):
        pass
    finally:
        with contextlib.suppress(OSError, RuntimeError):
            if writer.can_write_eof():
                writer.write_eof()
            else:
                writer.close()


async def pipe_both(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, up_reader: asyncio.StreamReader, up_writer: asyncio.StreamWriter) -> None:
    """Two connections joined both ways until each side has ended."""
    await asyncio.gather(_pipe(reader, up_writer), _pipe(up_reader, writer))
    writer.close()
    up_writer.close()


async def connect_to(target: tuple[str, int], reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """A connection from the unit, made on to a service of this machine."""
    try:
        up_reader, up_writer = await asyncio.open_connection(*target)
    except OSError:
        writer.close()
        return
    await pipe_both(reader, writer, up_reader, up_writer)


async def tcp_behind(path: Path, target: tuple[str, int]) -> asyncio.AbstractServer:
    """A Unix socket at `path` whose every connection is joined to `target`, a TCP service of this machine."""
    return await asyncio.start_unix_server(lambda r, w: connect_to(target, r, w), path=str(path))


class McpListeners:
    def __init__(self, entries: Sequence[McpServerEntry], env: Mapping[str, str], log: Path, folder: Path | None = None):
        self.entries = list(entries)
        self.env = dict(env)
        self.log = log
        self.folder = folder  # the unit's door folder, for start()'s sockets: it goes with the door
        self._servers: list[asyncio.AbstractServer] = []
        self._procs: set[asyncio.subprocess.Process] = set()
        self._tasks: set[asyncio.Task[None]] = set()

    async def start(self) -> None:
        """A Unix socket in the door folder for each server."""
        assert self.folder is not None, "start() needs the unit's door folder"
        for entry in self.entries:
            server = await asyncio.start_unix_server(lambda r, w, e=entry: self._connection(e, r, w), path=str(self.folder / f"mcp-{entry.name}.sock"))
            self._servers.append(server)

    def serve(self, name: str, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bool:
        """A connection to the server `name`, already accepted (no socket of the door folder); False when there is no such server."""
        entry = next((e for e in self.entries if e.name == name), None)
        if entry is None:
            return False
        self._connection(entry, reader, writer)
        return True

    def _connection(self, entry: McpServerEntry, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.ensure_future(self._serve(entry, reader, writer))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _serve(self, entry: McpServerEntry, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.log.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log, "ab") as err:
            err.write(f"[nullius] MCP server {entry.name!r} started for a connection through the door\n".encode())
            err.flush()
            try:
                proc = await start_process(
                    entry.command, *entry.args, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
                    stderr=err, env={**self.env, **entry.env},
                )
            except OSError as exc:
                err.write(f"[nullius] MCP server {entry.name!r} could not start: {exc}\n".encode())
                writer.close()
                return
        self._procs.add(proc)
        assert proc.stdin is not None and proc.stdout is not None
        try:
            await asyncio.gather(_pipe(reader, proc.stdin), _pipe(proc.stdout, writer))  # type: ignore[arg-type]
        finally:
            writer.close()
            await end_process(proc)
            self._procs.discard(proc)

    async def close(self) -> None:
        for server in self._servers:
            server.close()
        for proc in list(self._procs):
            await end_process(proc)
        for task in list(self._tasks):
            task.cancel()
