"""JSON-RPC 2.0 over an agent's stdio, one message per line, every message recorded raw.

Nothing is validated away: an update of a kind this client does not know is
recorded and handed on like any other (the transcript is the record, not a
typed model's idea of it).
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable
from typing import Any

Handler = Callable[[dict[str, Any]], Awaitable[Any]]
LINE_LIMIT = 64 * 1024 * 1024


class ProtocolError(Exception):
    """The agent broke the protocol (a line that is not JSON-RPC) or its stdout closed."""


class RemoteError(Exception):
    """The agent answered a request with a JSON-RPC error."""

    def __init__(self, method: str, error: dict[str, Any]):
        self.method = method
        self.error = error
        super().__init__(f"{method}: {error.get('message', error)} (code {error.get('code')})")


class Connection:
    def __init__(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        record: Callable[[str, dict[str, Any]], None],
        on_notification: Callable[[dict[str, Any]], None],
        on_request: Handler,
    ):
        self._reader = reader
        self._writer = writer
        self._record = record
        self._on_notification = on_notification
        self._on_request = on_request
        self._pending: dict[int, tuple[str, asyncio.Future[Any]]] = {}
        self._next = 0
        self._task = asyncio.create_task(self._read())
        self.broken: str | None = None

    async def request(self, method: str, params: dict[str, Any]) -> Any:
        if self.broken:
            raise ProtocolError(self.broken)
        self._next += 1
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending[self._next] = (method, future)
        await self._send({"jsonrpc": "2.0", "id": self._next, "method": method, "params": params})
        return await future

    async def notify(self, method: str, params: dict[str, Any]) -> None:
        await self._send({"jsonrpc": "2.0", "method": method, "params": params})

    async def _send(self, message: dict[str, Any]) -> None:
        self._record("out", message)
        try:
            self._writer.write((json.dumps(message, ensure_ascii=False) + "\n").encode())
            await self._writer.drain()
        except (BrokenPipeError, ConnectionResetError) as exc:
            self._break(f"the agent's stdin closed ({exc})")
            raise ProtocolError(self.broken or "closed") from None

    async def _read(self) -> None:
        while True:
            try:
                line = await self._reader.readline()
            except (ValueError, asyncio.LimitOverrunError):
                self._break("the agent printed a line too long to be a message")
                return
            if not line:
                self._break("the agent's stdout closed")
                return
            if not line.strip():
                continue
            try:
                message = json.loads(line)
                if not isinstance(message, dict):
                    raise ValueError("not an object")
            except ValueError:
                self._record("in-garbage", {"line": line.decode("utf-8", "replace")[:2000]})
                self._break(f"the agent printed a line that is not JSON-RPC: {line[:120].decode('utf-8', 'replace')!r}")
                return
            self._record("in", message)
            self._dispatch(message)

    def _dispatch(self, message: dict[str, Any]) -> None:
        if "method" in message and "id" in message:
            asyncio.create_task(self._answer(message))
        elif "method" in message:
            self._on_notification(message)
        elif "id" in message:
            entry = self._pending.pop(message["id"], None)
            if entry is None:
                return
            method, future = entry
            if future.done():
                return
            if "error" in message:
                future.set_exception(RemoteError(method, message["error"] if isinstance(message["error"], dict) else {"message": str(message["error"])}))
            else:
                future.set_result(message.get("result"))

    async def _answer(self, message: dict[str, Any]) -> None:
        try:
            result = await self._on_request(message)
            reply = {"jsonrpc": "2.0", "id": message["id"], "result": result}
        except RemoteError as exc:
            reply = {"jsonrpc": "2.0", "id": message["id"], "error": exc.error}
        try:
            await self._send(reply)
        except ProtocolError:
            pass

    def _break(self, why: str) -> None:
        if self.broken is None:
            self.broken = why
        for method, future in self._pending.values():
            if not future.done():
                future.set_exception(ProtocolError(f"{why} (during {method})"))
        self._pending.clear()

    async def close(self) -> None:
        self._task.cancel()
        try:
            await self._task
        except (asyncio.CancelledError, Exception):  # noqa: BLE001 - closing: what it was doing no longer matters
            pass


def now() -> float:
    return time.time()
