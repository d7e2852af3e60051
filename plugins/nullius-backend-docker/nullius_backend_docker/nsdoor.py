"""A box's door without a container: the door's listeners made in the box's own network namespace by this process.

A box has a namespace of its own (`--network none`: a loopback and nothing
else). The door's fixed addresses (relay:61080, door:61090, egress:61128,
a licence server's own) must listen on that loopback, each joined to a Unix
socket of the unit's door folder, as container/forward.py joins them in a
door container. Where this process may enter the box's namespace (as root,
beside the daemon: the box's init is one of this machine's processes), a
thread of its own enters it, makes the listening sockets there and leaves;
a socket stays in the namespace it was made in, so the run's loop accepts on
them like any other. That spares a container a unit (its start, a `docker`
process, a Python start in it, its end: 0.4 s of CPU here). Elsewhere the
door is a container joined to the box (door.py).

What a connection reaches is what the door container's reaches: the socket
its address names (the MCP port's first line completing `mcp-*`), nothing
else; a socket that is not there closes the connection, saying so.
"""

from __future__ import annotations

import asyncio
import ctypes
import os
import re
import socket
import threading
from collections.abc import Sequence
from pathlib import Path

from nullius_core.sandbox.door import pipe_both

CLONE_NEWNET = 0x40000000
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")  # forward.py's: an MCP server's name


def usable(pid: int, container_id: str) -> bool:
    """This process may enter the box's namespace: root, and the box's init is a process of this machine (its cgroup names it)."""
    if os.geteuid() != 0 or pid <= 0 or not container_id:
        return False
    try:
        return container_id in Path(f"/proc/{pid}/cgroup").read_text() and os.access(f"/proc/{pid}/ns/net", os.R_OK)
    except OSError:
        return False


async def listen(pid: int, mappings: Sequence[tuple[str, int, str]], folder: Path) -> list[asyncio.AbstractServer]:
    """Each (address, port, socket name) listening in the namespace of `pid`, each connection joined to `folder`/NAME.sock."""
    sockets = await _made_in(pid, [(address, port) for address, port, _ in mappings])
    servers = []
    try:
        for sock, (_, _, name) in zip(sockets, mappings):
            servers.append(await asyncio.start_server(lambda r, w, n=name: _serve(folder, n, r, w), sock=sock))
    except BaseException:
        for server in servers:
            server.close()
        for sock in sockets[len(servers):]:
            sock.close()
        raise
    return servers


async def _made_in(pid: int, addresses: list[tuple[str, int]]) -> list[socket.socket]:
    """The sockets, made by a thread of their own in the namespace: no other thread's namespace ever changes (a pooled thread
    that failed to come back would be used again, in the box's namespace)."""
    loop = asyncio.get_running_loop()
    done: asyncio.Future[list[socket.socket]] = loop.create_future()

    def work() -> None:
        try:
            made = _in_namespace(pid, addresses)
        except BaseException as exc:  # noqa: BLE001 - handed to the loop, raised there
            loop.call_soon_threadsafe(lambda failed=exc: done.done() or done.set_exception(failed))  # `exc` is unbound after the block
        else:
            loop.call_soon_threadsafe(lambda: done.done() or done.set_result(made))

    threading.Thread(target=work, name="nullius-door-in-box", daemon=True).start()
    return await done


def _in_namespace(pid: int, addresses: list[tuple[str, int]]) -> list[socket.socket]:
    libc = ctypes.CDLL(None, use_errno=True)
    own = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
    box = os.open(f"/proc/{pid}/ns/net", os.O_RDONLY)
    made: list[socket.socket] = []
    try:
        if libc.setns(box, CLONE_NEWNET) != 0:
            raise OSError(ctypes.get_errno(), f"cannot enter the box's network namespace: {os.strerror(ctypes.get_errno())}")
        try:
            for address, port in addresses:
                sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                made.append(sock)
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                sock.bind((address, port))
                sock.listen(128)
                sock.setblocking(False)
        finally:
            if libc.setns(own, CLONE_NEWNET) != 0:  # this thread then ends here, in the box's namespace, and nothing reuses it
                raise OSError(ctypes.get_errno(), "cannot leave the box's network namespace")
    except BaseException:
        for sock in made:
            sock.close()
        raise
    finally:
        os.close(own)
        os.close(box)
    return made


async def _serve(folder: Path, name: str, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """forward.py's `serve`: the connection joined to the socket its address names (`mcp-*`: completed by its first line)."""
    try:
        if name.endswith("*"):
            first = (await reader.readline()).decode("utf-8", "replace").strip()
            if not NAME.match(first):
                writer.write(f"no such server: {first!r}\n".encode())
                writer.close()
                return
            name = name[:-1] + first
        up_reader, up_writer = await asyncio.open_unix_connection(str(folder / f"{name}.sock"))
    except (ConnectionError, OSError, ValueError) as exc:  # ValueError: a first line past the reader's limit
        writer.write(f"the door cannot reach {name}: {type(exc).__name__}\n".encode())
        writer.close()
        return
    await pipe_both(reader, writer, up_reader, up_writer)
