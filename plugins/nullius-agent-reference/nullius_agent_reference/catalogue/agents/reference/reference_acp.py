"""ACP's agent side, as plain JSON-RPC 2.0 over newline-delimited JSON: what this agent sends and answers.

Why not the agent-client-protocol SDK: importing it builds its whole pydantic
schema, 1.7 s of CPU before the agent can answer `initialize`, paid by every
unit. The messages here are the ones the SDK sends (camelCase keys, fields
left out when empty), and the tests talk to this agent through the SDK's
client to hold the two to the same wire.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any

PROTOCOL_VERSION = 1
log = logging.getLogger("nullius-reference.acp")


class RequestError(Exception):
    """A JSON-RPC error answered to a request."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code, self.data = code, data

    @classmethod
    def invalid_request(cls, data: Any = None) -> RequestError:
        return cls(-32600, "Invalid request", data)

    @classmethod
    def method_not_found(cls, method: str) -> RequestError:
        return cls(-32601, "Method not found", {"method": method})

    @classmethod
    def invalid_params(cls, data: Any = None) -> RequestError:
        return cls(-32602, "Invalid params", data)

    @classmethod
    def internal_error(cls, data: Any = None) -> RequestError:
        return cls(-32603, "Internal error", data)

    def error_object(self) -> dict[str, Any]:
        return {"code": self.code, "message": str(self), "data": self.data}


def text_block(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def message_chunk(text: str) -> dict[str, Any]:
    return {"sessionUpdate": "agent_message_chunk", "content": text_block(text)}


def thought_chunk(text: str) -> dict[str, Any]:
    return {"sessionUpdate": "agent_thought_chunk", "content": text_block(text)}


def _present(**fields: Any) -> dict[str, Any]:
    return {k: v for k, v in fields.items() if v is not None}


def tool_call(tool_call_id: str, title: str, kind: str, status: str, raw_input: Any) -> dict[str, Any]:
    return _present(sessionUpdate="tool_call", toolCallId=tool_call_id, title=title, kind=kind, status=status, rawInput=raw_input)


def tool_call_update(tool_call_id: str, status: str, text: str | None = None, raw_output: Any = None) -> dict[str, Any]:
    content = None if text is None else [{"type": "content", "content": text_block(text)}]
    return _present(sessionUpdate="tool_call_update", toolCallId=tool_call_id, status=status, content=content, rawOutput=raw_output)


def info_update(updated_at: str, meta: dict[str, Any]) -> dict[str, Any]:
    return {"sessionUpdate": "session_info_update", "updatedAt": updated_at, "_meta": meta}


Handler = Callable[[dict[str, Any]], Awaitable[Any]]


class Connection:
    """One client over a reader and a writer: its requests each in a task, our requests answered by id."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, methods: dict[str, Handler],
                 notifications: dict[str, Handler]) -> None:
        self.reader, self.writer = reader, writer
        self.methods, self.notifications = methods, notifications
        self._lock = asyncio.Lock()
        self._next_id = 0
        self._waiting: dict[int, asyncio.Future[Any]] = {}
        self._tasks: set[asyncio.Task[None]] = set()

    async def send(self, message: dict[str, Any]) -> None:
        data = json.dumps({"jsonrpc": "2.0", **message}, ensure_ascii=False).encode() + b"\n"
        async with self._lock:  # one whole line at a time
            self.writer.write(data)
            await self.writer.drain()

    async def notify(self, method: str, params: dict[str, Any]) -> None:
        await self.send({"method": method, "params": params})

    async def request(self, method: str, params: dict[str, Any]) -> Any:
        self._next_id += 1
        ident = self._next_id
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._waiting[ident] = future
        try:
            await self.send({"id": ident, "method": method, "params": params})
            return await future
        finally:
            self._waiting.pop(ident, None)

    async def session_update(self, session_id: str, update: dict[str, Any]) -> None:
        await self.notify("session/update", {"sessionId": session_id, "update": update})

    async def request_permission(self, session_id: str, options: list[dict[str, Any]], tool_call: dict[str, Any]) -> Any:
        return await self.request("session/request_permission", {"sessionId": session_id, "options": options, "toolCall": tool_call})

    async def serve(self) -> None:
        """Until the client closes stdin; requests still running are cancelled then."""
        try:
            while line := await self.reader.readline():
                if line.strip():
                    self._receive(line)
        finally:
            for task in list(self._tasks):
                task.cancel()
            await asyncio.gather(*self._tasks, return_exceptions=True)
            for future in self._waiting.values():
                if not future.done():
                    future.set_exception(RequestError(-32603, "the client closed the connection"))

    def _receive(self, line: bytes) -> None:
        try:
            message = json.loads(line)
        except ValueError:
            self._spawn(self.send({"id": None, "error": {"code": -32700, "message": "Parse error", "data": None}}))
            return
        if not isinstance(message, dict):
            return
        method, ident = message.get("method"), message.get("id")
        if method is None:  # an answer to one of ours
            future = self._waiting.get(ident) if isinstance(ident, int) else None
            if future is not None and not future.done():
                error = message.get("error")
                if isinstance(error, dict):
                    future.set_exception(RequestError(error.get("code", -32603), str(error.get("message", "")), error.get("data")))
                else:
                    future.set_result(message.get("result"))
        elif ident is None:
            handler = self.notifications.get(method)
            if handler is not None:
                self._spawn(handler(message.get("params") or {}))
        else:
            self._spawn(self._answer(ident, method, message.get("params") or {}))

    def _spawn(self, work: Awaitable[Any]) -> None:
        task = asyncio.ensure_future(work)
        self._tasks.add(task)
        task.add_done_callback(self._done)

    def _done(self, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.warning("a notification's handler failed: %r", task.exception())

    async def _answer(self, ident: Any, method: str, params: dict[str, Any]) -> None:
        handler = self.methods.get(method)
        try:
            if handler is None:
                raise RequestError.method_not_found(method)
            reply: dict[str, Any] = {"id": ident, "result": await handler(params)}
        except RequestError as exc:
            reply = {"id": ident, "error": exc.error_object()}
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - any failure of a handler is the request's error, never the agent's end
            log.exception("%s failed", method)
            reply = {"id": ident, "error": RequestError.internal_error({"details": f"{type(exc).__name__}: {exc}"}).error_object()}
        await self.send(reply)
