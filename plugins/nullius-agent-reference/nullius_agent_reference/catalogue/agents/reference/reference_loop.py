"""One prompt turn: the tool-calling loop over OpenAI Chat Completions, reported as ACP session updates."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
from datetime import datetime, timezone
from typing import Any

from reference_acp import RequestError, info_update, message_chunk, thought_chunk, tool_call, tool_call_update
from reference_http import ChatClient, ModelCallError
from reference_tools import KINDS, NEEDS_PERMISSION, TOOL_NAMES, ToolFailure

log = logging.getLogger("nullius-reference.turn")
NO_EFFORT = ("", "default")
PERMISSION_OPTIONS = [
    {"optionId": "allow_once", "name": "Allow", "kind": "allow_once"},
    {"optionId": "reject_once", "name": "Reject", "kind": "reject_once"},
]


class ModelSettings:
    def __init__(self, client: ChatClient, model: str, effort: str | None, max_calls: int) -> None:
        self.client, self.model, self.effort, self.max_calls = client, model, effort, max_calls


def model_settings() -> ModelSettings:
    """The model endpoint, from the environment Nullius fills from agent.json's `model.env`."""
    model = os.environ.get("NULLIUS_REFERENCE_MODEL", "").strip()
    if not model:
        raise RequestError.internal_error({"kind": "config", "message": "NULLIUS_REFERENCE_MODEL is not set"})
    effort = os.environ.get("NULLIUS_REFERENCE_EFFORT", "").strip()
    try:
        client = ChatClient(os.environ.get("OPENAI_BASE_URL") or "https://api.openai.com/v1",
                            os.environ.get("OPENAI_API_KEY") or "unset",
                            max_retries=max(0, _env_int("NULLIUS_REFERENCE_MAX_RETRIES", 2)))
    except ValueError as exc:
        raise RequestError.internal_error({"kind": "config", "message": str(exc)}) from None
    return ModelSettings(client, model, None if effort in NO_EFFORT else effort,
                         max(1, _env_int("NULLIUS_REFERENCE_MAX_CALLS", 40)))


def _env_int(name: str, default: int) -> int:
    text = os.environ.get(name, "").strip()
    if not text:
        return default
    try:
        return int(text)
    except ValueError:
        raise RequestError.internal_error(
            {"kind": "config", "message": f"{name} must be an integer, found {text!r}"}) from None


def model_error(status: int | None, message: str, **data: Any) -> RequestError:
    """The JSON-RPC error session/prompt answers with when the model API fails."""
    where = f"HTTP {status}" if status is not None else "no HTTP status"
    log.warning("model API error (%s): %s", where, message)
    return RequestError(-32603, f"model API error ({where}): {message}",
                            {"kind": "model_error", "status": status, "message": message, **data})


def prompt_text(blocks: list[Any]) -> tuple[str, list[str]]:
    """The user message of a prompt, and the kinds of blocks that could not be given to the model."""
    parts, dropped = [], []
    for block in blocks:
        kind = block.get("type") if isinstance(block, dict) else None
        resource = block.get("resource") if kind == "resource" else None
        if kind == "text":
            parts.append(str(block.get("text", "")))
        elif kind == "resource_link":
            parts.append(f"[resource {block.get('name')}: {block.get('uri')}]")
        elif isinstance(resource, dict) and isinstance(resource.get("text"), str):
            parts.append(f"[resource {resource.get('uri')}]\n{resource['text']}")
        else:
            dropped.append(str(kind))
    return "\n\n".join(parts), dropped


class Turn:
    """One session/prompt: calls the model until it answers without tool calls."""

    def __init__(self, conn: Any, session: Any, model: ModelSettings) -> None:
        self.conn, self.session, self.model = conn, session, model
        self.usage = {"input": 0, "output": 0, "cached": 0, "reasoning": 0, "seen": False}
        self.calls = 0

    async def update(self, update: Any) -> None:
        await self.conn.session_update(session_id=self.session.id, update=update)

    async def notice(self, kind: str, message: str) -> None:
        """A warning, as the standard's notice: session_info_update with `_meta.nullius.notice`, never text."""
        log.warning("notice %s: %s", kind, message)
        await self.update(info_update(datetime.now(timezone.utc).isoformat(),
                                      {"nullius": {"notice": {"kind": kind, "message": message}}}))

    async def run(self, blocks: list[Any]) -> dict[str, Any]:
        response = await self._loop(blocks)
        log.info("session %s: turn ended (%s) after %d model calls", self.session.id, response["stopReason"], self.calls)
        return response

    async def _loop(self, blocks: list[Any]) -> dict[str, Any]:
        text, dropped = prompt_text(blocks)
        if dropped:
            await self.notice("unsupported_content", f"prompt content not given to the model: {', '.join(dropped)}")
        history = self.session.history
        history.append({"role": "user", "content": text})
        specs = self.session.tool_specs()
        for _ in range(self.model.max_calls):
            message, finish = await self.call_model(history, specs)
            thought = message.get("reasoning_content") or message.get("reasoning")
            if isinstance(thought, str) and thought:
                await self.update(thought_chunk(thought))
            content = message.get("content") or ""
            content = content if isinstance(content, str) else _text_of(content)
            if content:
                await self.update(message_chunk(content))
            calls = [c for c in message.get("tool_calls") or [] if isinstance(c, dict)]
            if not calls:
                history.append({"role": "assistant", "content": content})
                return self.response("max_tokens" if finish == "length" else "end_turn")
            assistant = {"role": "assistant", "content": content or None, "tool_calls": [
                {"id": c.get("id"), "type": "function", "function": {"name": _name(c), "arguments": _arguments(c) or "{}"}}
                for c in calls]}
            results = [{"role": "tool", "tool_call_id": c.get("id"), "content": await self.run_tool(c)} for c in calls]
            history.extend([assistant, *results])  # only whole exchanges: a cancelled one leaves no dangling call
        await self.notice("turn_limit", f"stopped after {self.model.max_calls} model calls in one prompt")
        return self.response("max_turn_requests")

    def response(self, stop_reason: str) -> dict[str, Any]:
        u = self.usage
        if not u["seen"]:
            return {"stopReason": stop_reason}
        return {"stopReason": stop_reason, "usage": {
            "totalTokens": u["input"] + u["output"], "inputTokens": u["input"], "outputTokens": u["output"],
            "thoughtTokens": u["reasoning"], "cachedReadTokens": u["cached"]}}

    async def call_model(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> tuple[Any, Any]:
        request: dict[str, Any] = {"model": self.model.model, "messages": messages, "tools": tools}
        if self.model.effort:
            request["reasoning_effort"] = self.model.effort
        self.calls += 1
        try:
            reply = await self.model.client.create(request)
        except ModelCallError as exc:
            if exc.status is None:
                raise model_error(None, exc.message) from None
            raise model_error(exc.status, exc.message, body=exc.body, request_id=exc.request_id) from None
        choices = reply.get("choices")
        if not choices or not isinstance(choices[0], dict) or not isinstance(choices[0].get("message"), dict):
            error = reply.get("error")
            text = error.get("message") if isinstance(error, dict) else None
            raise model_error(200, text or "the reply had no choices", body=reply or None)
        self.count(reply.get("usage"))
        return choices[0]["message"], choices[0].get("finish_reason")

    def count(self, usage: Any) -> None:
        if not isinstance(usage, dict):
            return
        u = self.usage
        u["seen"] = True
        u["input"] += usage.get("prompt_tokens") or 0
        u["output"] += usage.get("completion_tokens") or 0
        u["cached"] += (usage.get("prompt_tokens_details") or {}).get("cached_tokens") or 0
        u["reasoning"] += (usage.get("completion_tokens_details") or {}).get("reasoning_tokens") or 0

    def acp_id(self, model_id: str | None) -> str:
        """The model's tool call id, made unique within the session."""
        base = model_id or "call"
        candidate, n = base, 2
        while candidate in self.session.tool_call_ids:
            candidate, n = f"{base}#{n}", n + 1
        self.session.tool_call_ids.add(candidate)
        return candidate

    async def run_tool(self, call: Any) -> str:
        name, raw = _name(call), _arguments(call)
        tool_id = self.acp_id(call.get("id"))
        try:
            args = json.loads(raw or "{}")
            bad = None if isinstance(args, dict) else f"expected a JSON object of arguments, found {raw!r}"
        except json.JSONDecodeError as exc:
            args, bad = None, f"the arguments are not valid JSON ({exc}): {raw!r}"
        ws, mcp = self.session.workspace, self.session.mcp
        kind = KINDS.get(name, "other")
        title = ws.title(name, args) if isinstance(args, dict) and name in TOOL_NAMES else name
        await self.update(tool_call(tool_id, title, kind, "pending", args if bad is None else raw))
        raw_output = None
        try:
            if bad is not None:
                result, ok = f"Error: {bad}", False
            elif name not in TOOL_NAMES and name not in mcp.routes:
                result, ok = f"Error: there is no tool named {name!r}", False
            elif (refusal := self.precheck(name, args)) is not None:
                result, ok = refusal, False
            elif name in NEEDS_PERMISSION and not await self.permitted(tool_id, title, kind, args):
                result, ok = "Error: permission denied: the user refused this tool call", False
            else:
                await self.update(tool_call_update(tool_id, "in_progress"))
                result, ok, raw_output = await self.execute(name, args)
        except asyncio.CancelledError:
            with contextlib.suppress(Exception):
                await self.update(tool_call_update(tool_id, "failed", "cancelled"))
            raise
        await self.update(tool_call_update(tool_id, "completed" if ok else "failed", result, raw_output))
        return result

    def precheck(self, name: str, args: dict[str, Any]) -> str | None:
        if name not in TOOL_NAMES:
            return None
        try:
            self.session.workspace.precheck(name, args)
        except ToolFailure as exc:
            return f"Error: {exc}"
        return None

    async def execute(self, name: str, args: dict[str, Any]) -> tuple[str, bool, Any]:
        if name in TOOL_NAMES:
            try:
                return await self.session.workspace.call(name, args), True, None
            except ToolFailure as exc:
                return f"Error: {exc}", False, None
            except (OSError, UnicodeError) as exc:
                return f"Error: {type(exc).__name__}: {exc}", False, None
        server, tool = self.session.mcp.routes[name]
        try:
            text, is_error, raw = await server.call(tool, args)
        except Exception as exc:  # noqa: BLE001 - a transport or protocol failure goes back to the model
            return f"Error: MCP server {server.name!r} failed: {type(exc).__name__}: {exc}", False, None
        return text, not is_error, raw

    async def permitted(self, tool_id: str, title: str, kind: str, args: dict[str, Any]) -> bool:
        try:
            answer = await self.conn.request_permission(self.session.id, PERMISSION_OPTIONS, {
                "toolCallId": tool_id, "title": title, "kind": kind, "status": "pending", "rawInput": args})
        except RequestError as exc:
            log.warning("permission request failed, refusing %s: %s", tool_id, exc)
            return False
        outcome = answer.get("outcome") if isinstance(answer, dict) else None
        return isinstance(outcome, dict) and outcome.get("outcome") == "selected" and outcome.get("optionId") == "allow_once"


def _name(call: dict[str, Any]) -> str:
    function = call.get("function")
    return (function.get("name") if isinstance(function, dict) else None) or ""


def _arguments(call: dict[str, Any]) -> str:
    function = call.get("function")
    raw = function.get("arguments") if isinstance(function, dict) else None
    return raw if isinstance(raw, str) else ("" if raw is None else json.dumps(raw))


def _text_of(content: Any) -> str:
    """A message's content given as a list of parts: its text parts, joined."""
    if not isinstance(content, list):
        return ""
    return "".join(p.get("text", "") for p in content if isinstance(p, dict) and p.get("type") == "text")
