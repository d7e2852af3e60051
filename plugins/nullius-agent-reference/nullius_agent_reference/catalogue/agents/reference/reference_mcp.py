"""The MCP servers of a session: started over stdio, their tools offered as `mcp__<server>__<tool>`.

The mcp SDK's Client is an anyio context whose task group must be entered
and left by the same task, while ACP handles each request in a task of its
own. So each server gets an owner task that enters the Client, lists its
tools, then waits for `close()`; tool calls from any task go through it.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
from typing import Any

from mcp import Client, StdioServerParameters
from mcp.types import Implementation

log = logging.getLogger("nullius-reference.mcp")
NAME_RE = re.compile(r"[^A-Za-z0-9_-]")
MAX_NAME = 64  # OpenAI function names: ^[A-Za-z0-9_-]{1,64}$


class McpStartError(Exception):
    """A server that did not start or list its tools."""

    def __init__(self, server: str, message: str) -> None:
        super().__init__(f"MCP server {server!r}: {message}")
        self.server = server
        self.detail = message


class McpServer:
    """One stdio MCP server, owned by a task of its own."""

    def __init__(self, name: str, params: StdioServerParameters, client_info: Implementation,
                 call_timeout: float) -> None:
        self.name = name
        self.params = params
        self.client_info = client_info
        self.call_timeout = call_timeout
        self.client: Client | None = None
        self.tools: list[Any] = []
        self._stop = asyncio.Event()
        self._ready: asyncio.Future[None] | None = None
        self._task: asyncio.Task[None] | None = None

    async def start(self, timeout: float) -> None:
        self._ready = asyncio.get_running_loop().create_future()
        self._task = asyncio.create_task(self._own(), name=f"mcp:{self.name}")
        try:
            await asyncio.wait_for(asyncio.shield(self._ready), timeout)
        except asyncio.TimeoutError:
            await self.close()
            raise McpStartError(self.name, f"did not list its tools within {timeout:g} s") from None
        except McpStartError:
            await self.close()
            raise

    async def _own(self) -> None:
        assert self._ready is not None
        try:
            async with Client(self.params, client_info=self.client_info, mode="legacy",
                              read_timeout_seconds=self.call_timeout) as client:
                tools: list[Any] = []
                cursor: str | None = None
                while True:
                    page = await client.list_tools(cursor=cursor)
                    tools.extend(page.tools)
                    cursor = page.next_cursor
                    if not cursor:
                        break
                self.client, self.tools = client, tools
                self._ready.set_result(None)
                await self._stop.wait()
        except BaseException as exc:  # noqa: BLE001 - reported to whoever waits, else logged
            if not self._ready.done():
                self._ready.set_exception(McpStartError(self.name, _describe(exc)))
            elif not isinstance(exc, asyncio.CancelledError):
                log.warning("MCP server %r ended: %s", self.name, _describe(exc))
            if isinstance(exc, asyncio.CancelledError):
                raise
        finally:
            self.client = None

    async def call(self, tool: str, args: dict[str, Any]) -> tuple[str, bool, Any]:
        """(text for the model, is_error, the raw result as JSON)."""
        if self.client is None:
            return f"Error: MCP server {self.name!r} is not running", True, None
        result = await self.client.call_tool(tool, args)
        raw = result.model_dump(mode="json", by_alias=True, exclude_none=True)
        return result_text(result), bool(result.is_error), raw

    async def close(self) -> None:
        self._stop.set()
        task = self._task
        if task is None or task.done():
            return
        try:
            await asyncio.wait_for(asyncio.shield(task), 10)
        except (asyncio.TimeoutError, Exception):
            task.cancel()
            try:
                await task
            except BaseException:  # noqa: BLE001 - it is being torn down
                pass


def _describe(exc: BaseException) -> str:
    if isinstance(exc, BaseExceptionGroup):
        return "; ".join(_describe(e) for e in exc.exceptions)
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


def result_text(result: Any) -> str:
    """What the model reads of a CallToolResult."""
    parts: list[str] = []
    for block in result.content or []:
        kind = getattr(block, "type", None)
        if kind == "text":
            parts.append(block.text)
        elif kind == "resource" and getattr(block.resource, "text", None) is not None:
            parts.append(block.resource.text)
        else:
            dumped = block.model_dump(mode="json", by_alias=True, exclude_none=True)
            dumped.pop("data", None)
            dumped.pop("blob", None)
            parts.append(f"[{kind} content: {json.dumps(dumped)}]")
    if not parts and result.structured_content is not None:
        parts.append(json.dumps(result.structured_content))
    return "\n".join(parts)


def tool_name(server: str, tool: str, taken: set[str]) -> str:
    """`mcp__<server>__<tool>`, made a valid and unused function name."""
    name = NAME_RE.sub("_", f"mcp__{server}__{tool}")[:MAX_NAME]
    candidate, n = name, 2
    while candidate in taken:
        suffix = f"_{n}"
        candidate, n = name[: MAX_NAME - len(suffix)] + suffix, n + 1
    return candidate


def parameters(schema: Any) -> dict[str, Any]:
    """A tool's inputSchema as function parameters (always an object schema)."""
    if isinstance(schema, dict) and schema.get("type") == "object":
        return schema
    return {"type": "object", "properties": {}}


class McpTools:
    """Every MCP server of a session and the function names of their tools."""

    def __init__(self) -> None:
        self.servers: list[McpServer] = []
        self.routes: dict[str, tuple[McpServer, str]] = {}
        self.specs: list[dict[str, Any]] = []

    async def add(self, server: McpServer, timeout: float, taken: set[str]) -> None:
        self.servers.append(server)
        await server.start(timeout)
        for tool in server.tools:
            name = tool_name(server.name, tool.name, taken | set(self.routes))
            self.routes[name] = (server, tool.name)
            description = tool.description or tool.title or ""
            self.specs.append({"type": "function", "function": {
                "name": name, "description": description, "parameters": parameters(tool.input_schema)}})
        log.info("MCP server %r: %d tools", server.name, len(server.tools))

    async def close(self) -> None:
        await asyncio.gather(*(s.close() for s in self.servers), return_exceptions=True)
        self.servers.clear()
