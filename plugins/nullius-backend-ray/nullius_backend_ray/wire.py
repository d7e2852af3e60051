"""What the driver and a node say to each other: messages on a TCP connection, each a JSON line and its bytes.

    {"t": "rec", "file": "calls.jsonl", "n": 812}\\n<812 bytes>

A message's `n` (0 when absent) counts the bytes that follow its line. The
first line of every connection is its ticket (`hello`): a random string the
node made for that one connection, good once, which the node checks before
it reads anything else. The node's channel's ticket is the only one that
passes through Ray (the actor's reply); every other is asked for on that
channel, so none is in Ray's records before it is spent.
"""

from __future__ import annotations

import asyncio
import hmac
import json
import secrets
from typing import Any

LINE_LIMIT = 1024 * 1024  # a message's JSON line; bulk (files, record lines) goes in its bytes
HELLO_SECONDS = 30


class Lost(Exception):
    """The other side is gone (the connection ended, or broke) before the conversation did."""


def new_ticket() -> str:
    return secrets.token_urlsafe(32)


class Tickets:
    """The node's tickets not yet spent: each opens one connection, once."""

    def __init__(self) -> None:
        self._open: dict[str, Any] = {}

    def issue(self, purpose: Any) -> str:
        ticket = new_ticket()
        self._open[ticket] = purpose
        return ticket

    def spend(self, given: str) -> Any:
        """What the ticket was for, once; None for a ticket never issued or already spent."""
        for ticket in list(self._open):
            if hmac.compare_digest(ticket.encode(), given.encode()):
                return self._open.pop(ticket)
        return None


async def send(writer: asyncio.StreamWriter, message: dict[str, Any], data: bytes = b"") -> None:
    if data:
        message = {**message, "n": len(data)}
    writer.write(json.dumps(message).encode() + b"\n" + data)
    await writer.drain()


async def receive(reader: asyncio.StreamReader) -> tuple[dict[str, Any], bytes]:
    """The next message and its bytes; `Lost` when the connection ends or breaks."""
    try:
        line = await reader.readline()
        if not line.endswith(b"\n"):
            raise Lost("the connection ended")
        message = json.loads(line)
        n = int(message.get("n", 0))
        data = await reader.readexactly(n) if n else b""
    except (asyncio.IncompleteReadError, ConnectionError, OSError, ValueError) as exc:
        raise Lost(f"the connection broke: {type(exc).__name__}: {exc}") from None
    return message, data


async def connect(host: str, port: int, ticket: str, timeout: float = HELLO_SECONDS,
                  limit: int = LINE_LIMIT) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """A connection to a node, its ticket shown (`limit`: its longest line)."""
    reader, writer = await asyncio.wait_for(asyncio.open_connection(host, port, limit=limit), timeout)
    writer.write(ticket.encode() + b"\n")
    await writer.drain()
    return reader, writer


async def hello(reader: asyncio.StreamReader) -> str:
    """The ticket a connection shows first ('' when it shows none in time)."""
    try:
        line = await asyncio.wait_for(reader.readline(), HELLO_SECONDS)
    except (asyncio.TimeoutError, ConnectionError, ValueError):
        return ""
    return line.decode("ascii", "replace").strip()


def close(writer: asyncio.StreamWriter) -> None:
    try:
        writer.close()
    except (OSError, RuntimeError):
        pass
