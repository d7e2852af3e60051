"""The run's side of outside/listeners.py: a sandbox's door listeners, made in its network namespace, handed to this process.

`ListenerMaker` starts the helper once a run and asks it, for each sandbox,
for listening sockets at the door's ports in the sandbox's own network
namespace (the helper says why not, raised here as an OSError).
`sandbox_pid` reads bwrap's `--info-fd`: the pid of the sandbox's first
process, whose /proc entry names its namespaces.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import sys
from collections.abc import Sequence
from pathlib import Path

from nullius_core.processes import end_process, start_process
from nullius_plugins.bwrap_backend import sandbox

HELPER = Path(__file__).resolve().parent / "outside" / "listeners.py"
WAIT = 30.0  # seconds: bwrap's info and the helper's answer each come in milliseconds; past this, something is stuck


class ListenerMaker:
    def __init__(self) -> None:
        self._channel: socket.socket | None = None
        self._proc: asyncio.subprocess.Process | None = None

    async def start(self, label: str) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            # -S: it needs nothing of site-packages; it carries the run's marker, so a killed run's watcher ends it
            self._proc = await start_process(sys.executable, "-I", "-S", str(HELPER), label, stdin=theirs.fileno(),
                                             stdout=asyncio.subprocess.DEVNULL, env=sandbox.probe_env())
        except BaseException:
            ours.close()
            raise
        finally:
            theirs.close()
        self._channel = ours

    async def listeners(self, netns: int, ports: Sequence[int]) -> list[socket.socket]:
        """Listening sockets at 127.0.0.1:PORT in the network namespace `netns` (a descriptor), in the order of `ports`."""
        if self._channel is None:
            raise OSError("the bwrap backend's listener maker is not started")
        mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            with theirs:
                socket.send_fds(self._channel, [" ".join(map(str, ports)).encode()], [netns, theirs.fileno()])
            text, fds = await asyncio.wait_for(_answer(mine, len(ports)), WAIT)
        finally:
            mine.close()
        socks = [socket.socket(fileno=fd) for fd in fds]
        if len(socks) != len(ports):
            for sock in socks:
                sock.close()
            raise OSError(f"the sandbox's door could not listen: {text.decode(errors='replace') or 'the helper ended'}")
        for sock in socks:
            sock.set_inheritable(False)  # recv_fds asks for no close-on-exec: no other process of the run may get them
        return socks

    async def close(self) -> None:
        if self._channel is not None:
            self._channel.close()  # the helper sees its end close and exits
            self._channel = None
        if self._proc is not None:
            try:
                await asyncio.wait_for(asyncio.shield(self._proc.wait()), 5)
            except asyncio.TimeoutError:
                await end_process(self._proc)
            self._proc = None


async def _answer(sock: socket.socket, count: int) -> tuple[bytes, list[int]]:
    """One message and its descriptors, read when it comes (the loop watches the socket; nothing blocks it)."""
    loop = asyncio.get_running_loop()
    ready: asyncio.Future[None] = loop.create_future()
    loop.add_reader(sock.fileno(), lambda: ready.done() or ready.set_result(None))
    try:
        await ready
    finally:
        loop.remove_reader(sock.fileno())
    text, fds, _, _ = socket.recv_fds(sock, 4096, count)
    return text, fds


async def sandbox_pid(info: int) -> int | None:
    """bwrap's --info-fd read to its end (bwrap closes it once written): the sandbox's first process; None if bwrap made none."""
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    transport, _ = await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(info, "rb", 0))
    try:
        data = await asyncio.wait_for(reader.read(), WAIT)
    finally:
        transport.close()
    if not data.strip():
        return None  # bwrap ended before its sandbox: its stderr, the agent's, says why
    return int(json.loads(data)["child-pid"])
