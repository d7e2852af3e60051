"""What stays on the machine for the containers: a benchmark's MCP servers, and a door to a loopback model server.

- `McpListeners`: a Unix socket per server per unit in a 0700 folder; each
  connection is one start of the server's own command, here, its stdio joined
  to the socket. The unit's door container mounts the folder.
- `LoopbackForwarder`: a model server on this machine's loopback reached by the
  relays as `host.docker.internal`: a TCP forwarder bound to the default
  bridge's gateway, answering the relays' addresses alone, so no agent reaches it.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

from nullius_core.run.agent import McpServerEntry


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter | asyncio.StreamWriter) -> None:
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


class McpListeners:
    def __init__(self, entries: Sequence[McpServerEntry], env: Mapping[str, str], log: Path):
        self.entries = list(entries)
        self.env = dict(env)
        self.log = log
        self.folder = Path(tempfile.mkdtemp(prefix="nullius-mcp-"))
        os.chmod(self.folder, 0o700)
        self._servers: list[asyncio.AbstractServer] = []
        self._procs: set[asyncio.subprocess.Process] = set()
        self._tasks: set[asyncio.Task[None]] = set()

    async def start(self) -> None:
        for entry in self.entries:
            server = await asyncio.start_unix_server(lambda r, w, e=entry: self._connection(e, r, w), path=str(self.folder / f"{entry.name}.sock"))
            self._servers.append(server)

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
                proc = await asyncio.create_subprocess_exec(
                    entry.command, *entry.args, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
                    stderr=err, env={**self.env, **entry.env}, start_new_session=True,
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
            await _end(proc)
            self._procs.discard(proc)

    async def close(self) -> None:
        for server in self._servers:
            server.close()
        for proc in list(self._procs):
            await _end(proc)
        for task in list(self._tasks):
            task.cancel()
        shutil.rmtree(self.folder, ignore_errors=True)


async def _end(proc: asyncio.subprocess.Process) -> None:
    if proc.returncode is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    try:
        await asyncio.wait_for(proc.wait(), 3)
    except asyncio.TimeoutError:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        await proc.wait()


class LoopbackForwarder:
    """host.docker.internal:<port> for the relays -> a model server on this machine's loopback."""

    def __init__(self, bind: str, target_host: str, target_port: int):
        self.bind, self.target = bind, (target_host, target_port)
        self.port = 0
        # the relays' addresses on the default bridge: a unit's internal network still routes to the
        # machine's own addresses, so binding to the gateway alone would not keep an agent out
        self.allowed: set[str] = set()
        self.refused = 0
        self._server: asyncio.AbstractServer | None = None

    async def start(self) -> int:
        self._server = await asyncio.start_server(self._connection, self.bind, 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self.port

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        peer = writer.get_extra_info("peername")
        if not peer or peer[0] not in self.allowed:
            self.refused += 1
            writer.close()
            return
        try:
            up_reader, up_writer = await asyncio.open_connection(*self.target)
        except OSError:
            writer.close()
            return
        await asyncio.gather(_pipe(reader, up_writer), _pipe(up_reader, writer))
        writer.close()
        up_writer.close()

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
