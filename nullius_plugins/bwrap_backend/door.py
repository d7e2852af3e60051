"""A unit's door: listeners on its sandbox's own loopback, served by the run's process from outside the sandbox.

    127.0.0.1:61080 -> the run's relay (its TCP port on this machine): the unit's route, its token checked there
    127.0.0.1:61090 -> a benchmark's MCP server (the connection's first line names it), started here for each connection

bwrap is started with `--info-fd` and `--block-fd`: it tells the pid of the
sandbox's first process, then waits before it runs the agent. The
listeners are made in that process's network namespace (maker.py), served
here with asyncio, and only then is bwrap let go on: the agent's first
connection finds its door listening. Nothing of the door runs inside the
sandbox (no process to start there, nothing the agent could end or take
the place of), and a connection reaches what its port names, nothing else.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import urllib.parse

from nullius_core.sandbox.door import McpListeners, connect_to
from nullius_plugins.bwrap_backend.maker import ListenerMaker, sandbox_pid

RELAY_PORT = 61080
MCP_PORT = 61090


async def open_door(maker: ListenerMaker, info: int, block: int, relay_url: str, mcp: McpListeners | None) -> list[asyncio.AbstractServer]:
    """The sandbox's door listening, then the sandbox let go on; no door when bwrap made no sandbox (its stderr says why).

    Takes `info` (bwrap's --info-fd, read to its end); `block` is written once the door listens, and stays the caller's.
    """
    pid = await sandbox_pid(info)
    if pid is None:
        return []
    netns = os.open(f"/proc/{pid}/ns/net", os.O_RDONLY | os.O_CLOEXEC)
    try:
        relay_sock, mcp_sock = await maker.listeners(netns, [RELAY_PORT, MCP_PORT])
    finally:
        os.close(netns)
    relay = urllib.parse.urlsplit(relay_url)
    target = (relay.hostname or "127.0.0.1", relay.port or 80)
    servers: list[asyncio.AbstractServer] = []
    try:
        servers.append(await asyncio.start_server(lambda r, w: connect_to(target, r, w), sock=relay_sock))
        servers.append(await asyncio.start_server(lambda r, w: _to_mcp(mcp, r, w), sock=mcp_sock))
    except BaseException:
        for server in servers:
            server.close()
        relay_sock.close()
        mcp_sock.close()
        raise
    os.write(block, b"\n")  # bwrap reads one byte, then runs the agent
    return servers


async def _to_mcp(mcp: McpListeners | None, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """The MCP bridge's connection (its first line names the server) to a start of that server; an unknown name is told so."""
    try:
        name = (await reader.readline()).decode("utf-8", "replace").strip()
    except (ConnectionError, ValueError):  # ValueError: a first line past the reader's limit
        name = "?"
    if mcp is None or not mcp.serve(name, reader, writer):
        with contextlib.suppress(OSError, RuntimeError):
            writer.write(f"no such server: {name!r}\n".encode())
            writer.close()
