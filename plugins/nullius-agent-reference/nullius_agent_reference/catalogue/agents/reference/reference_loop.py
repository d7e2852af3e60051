"""One prompt turn: the tool-calling loop over OpenAI Chat Completions, reported as ACP session updates."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
from datetime import datetime, timezone
from typing import Any

import acp
import openai
from acp import schema

from reference_tools import KINDS, NEEDS_PERMISSION, TOOL_NAMES, ToolFailure

log = logging.getLogger("nullius-reference.turn")
NO_EFFORT = ("", "default")
PERMISSION_OPTIONS = [
    schema.PermissionOption(option_id="allow_once", name="Allow", kind="allow_once"),
    schema.PermissionOption(option_id="reject_once", name="Reject", kind="reject_once"),
]


class ModelSettings:
    def __init__(self, client: openai.AsyncOpenAI, model: str, effort: str | None, max_calls: int) -> None:
        self.client, self.model, self.effort, self.max_calls = client, model, effort, max_calls


def model_settings() -> ModelSettings:
    """The model endpoint, from the environment Nullius fills from agent.json's `model.env`."""
    model = os.environ.get("NULLIUS_REFERENCE_MODEL", "").strip()
    if not model:
        raise acp.RequestError.internal_error({"kind": "config", "message": "NULLIUS_REFERENCE_MODEL is not set"})
    effort = os.environ.get("NULLIUS_REFERENCE_EFFORT", "").strip()
    client = openai.AsyncOpenAI(
        base_url=os.environ.get("OPENAI_BASE_URL") or None,
        api_key=os.environ.get("OPENAI_API_KEY") or "unset",
        max_retries=_env_int("NULLIUS_REFERENCE_MAX_RETRIES", 2),
    )
    return ModelSettings(client, model, None if effort in NO_EFFORT else effort,
                         max(1, _env_int("NULLIUS_REFERENCE_MAX_CALLS", 40)))


def _env_int(name: str, default: int) -> int:
    text = os.environ.get(name, "").strip()
    if not text:
        return default
    try:
        return int(text)
    except ValueError:
        raise acp.RequestError.internal_error(
            {"kind": "config", "message": f"{name} must be an integer, found {text!r}"}) from None


def model_error(status: int | None, message: str, **data: Any) -> acp.RequestError:
    """The JSON-RPC error session/prompt answers with when the model API fails."""
    where = f"HTTP {status}" if status is not None else "no HTTP status"
    log.warning("model API error (%s): %s", where, message)
    return acp.RequestError(-32603, f"model API error ({where}): {message}",
                            {"kind": "model_error", "status": status, "message": message, **data})


def prompt_text(blocks: list[Any]) -> tuple[str, list[str]]:
    """The user message of a prompt, and the kinds of blocks that could not be given to the model."""
    parts, dropped = [], []
    for block in blocks:
        kind = getattr(block, "type", None)
        if kind == "text":
            parts.append(block.text)
        elif kind == "resource_link":
            parts.append(f"[resource {block.name}: {block.uri}]")
        elif kind == "resource" and getattr(block.resource, "text", None) is not None:
            parts.append(f"[resource {block.resource.uri}]\n{block.resource.text}")
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
        await self.update(schema.SessionInfoUpdate(
            session_update="session_info_update", updated_at=datetime.now(timezone.utc).isoformat(),
            field_meta={"nullius": {"notice": {"kind": kind, "message": message}}}))

    async def run(self, blocks: list[Any]) -> schema.PromptResponse:
        response = await self._loop(blocks)
        log.info("session %s: turn ended (%s) after %d model calls", self.session.id, response.stop_reason, self.calls)
        return response

    async def _loop(self, blocks: list[Any]) -> schema.PromptResponse:
        text, dropped = prompt_text(blocks)
        if dropped:
            await self.notice("unsupported_content", f"prompt content not given to the model: {', '.join(dropped)}")
        history = self.session.history
        history.append({"role": "user", "content": text})
        specs = self.session.tool_specs()
        for _ in range(self.model.max_calls):
            message, finish = await self.call_model(history, specs)
            thought = (message.model_extra or {}).get("reasoning_content") or (message.model_extra or {}).get("reasoning")
            if isinstance(thought, str) and thought:
                await self.update(acp.update_agent_thought_text(thought))
            content = message.content or ""
            if content:
                await self.update(acp.update_agent_message_text(content))
            calls = message.tool_calls or []
            if not calls:
                history.append({"role": "assistant", "content": content})
                return self.response("max_tokens" if finish == "length" else "end_turn")
            assistant = {"role": "assistant", "content": content or None, "tool_calls": [
                {"id": c.id, "type": "function", "function": {"name": _name(c), "arguments": _arguments(c) or "{}"}}
                for c in calls]}
            results = [{"role": "tool", "tool_call_id": c.id, "content": await self.run_tool(c)} for c in calls]
            history.extend([assistant, *results])  # only whole exchanges: a cancelled one leaves no dangling call
        await self.notice("turn_limit", f"stopped after {self.model.max_calls} model calls in one prompt")
        return self.response("max_turn_requests")

    def response(self, stop_reason: str) -> schema.PromptResponse:
        u = self.usage
        usage = None
        if u["seen"]:
            usage = schema.Usage(input_tokens=u["input"], output_tokens=u["output"],
                                 total_tokens=u["input"] + u["output"], thought_tokens=u["reasoning"],
                                 cached_read_tokens=u["cached"])
        return schema.PromptResponse(stop_reason=stop_reason, usage=usage)

    async def call_model(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> tuple[Any, Any]:
        request: dict[str, Any] = {"model": self.model.model, "messages": messages, "tools": tools}
        if self.model.effort:
            request["reasoning_effort"] = self.model.effort
        self.calls += 1
        try:
            reply = await self.model.client.chat.completions.create(**request)
        except openai.APIStatusError as exc:
            body = exc.body if isinstance(exc.body, (dict, list, str)) else None
            raise model_error(exc.status_code, _message(exc), body=body,
                              request_id=exc.response.headers.get("x-request-id")) from None
        except openai.APIConnectionError as exc:
            raise model_error(None, f"{type(exc).__name__}: {exc}") from None
        except openai.OpenAIError as exc:
            raise model_error(None, f"{type(exc).__name__}: {exc}") from None
        choices = getattr(reply, "choices", None)
        if not choices:
            extra = getattr(reply, "model_extra", None) or {}
            error = extra.get("error")
            text = error.get("message") if isinstance(error, dict) else None
            raise model_error(200, text or "the reply had no choices", body=extra or None)
        self.count(getattr(reply, "usage", None))
        return choices[0].message, choices[0].finish_reason

    def count(self, usage: Any) -> None:
        if usage is None:
            return
        u = self.usage
        u["seen"] = True
        u["input"] += usage.prompt_tokens or 0
        u["output"] += usage.completion_tokens or 0
        u["cached"] += getattr(usage.prompt_tokens_details, "cached_tokens", None) or 0
        u["reasoning"] += getattr(usage.completion_tokens_details, "reasoning_tokens", None) or 0

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
        tool_id = self.acp_id(call.id)
        try:
            args = json.loads(raw or "{}")
            bad = None if isinstance(args, dict) else f"expected a JSON object of arguments, found {raw!r}"
        except json.JSONDecodeError as exc:
            args, bad = None, f"the arguments are not valid JSON ({exc}): {raw!r}"
        ws, mcp = self.session.workspace, self.session.mcp
        kind = KINDS.get(name, "other")
        title = ws.title(name, args) if isinstance(args, dict) and name in TOOL_NAMES else name
        await self.update(acp.start_tool_call(tool_id, title, kind=kind, status="pending",
                                              raw_input=args if bad is None else raw))
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
                await self.update(acp.update_tool_call(tool_id, status="in_progress"))
                result, ok, raw_output = await self.execute(name, args)
        except asyncio.CancelledError:
            with contextlib.suppress(Exception):
                await self.update(acp.update_tool_call(tool_id, status="failed", content=[
                    acp.tool_content(acp.text_block("cancelled"))]))
            raise
        await self.update(acp.update_tool_call(tool_id, status="completed" if ok else "failed",
                                               content=[acp.tool_content(acp.text_block(result))],
                                               raw_output=raw_output))
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
            answer = await self.conn.request_permission(
                session_id=self.session.id, options=PERMISSION_OPTIONS,
                tool_call=schema.ToolCallUpdate(tool_call_id=tool_id, title=title, kind=kind, status="pending",
                                                raw_input=args))
        except acp.RequestError as exc:
            log.warning("permission request failed, refusing %s: %s", tool_id, exc)
            return False
        outcome = answer.outcome
        return getattr(outcome, "outcome", None) == "selected" and getattr(outcome, "option_id", None) == "allow_once"


def _name(call: Any) -> str:
    function = getattr(call, "function", None)
    return getattr(function, "name", None) or getattr(getattr(call, "custom", None), "name", None) or ""


def _arguments(call: Any) -> str:
    function = getattr(call, "function", None)
    return getattr(function, "arguments", None) or ""


def _message(exc: openai.APIStatusError) -> str:
    body = exc.body
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and isinstance(inner.get("message"), str):
            return inner["message"]
    return str(exc.message)
