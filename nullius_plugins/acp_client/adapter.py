"""The ACP protocol adapter: a whole conversation with an agent, and the steps of its trajectory."""

from __future__ import annotations

import asyncio
import json
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from nullius_core.contracts.agent import AgentOutcome, AgentProcess, Conversation
from nullius_plugins.acp_client.jsonrpc import ProtocolError, RemoteError
from nullius_plugins.acp_client.session import AcpSession, Event

SETUP_SECONDS = 120.0  # initialize and session/new: an agent that cannot start in two minutes never will
CANCEL_GRACE = 10.0


def _iso(at: float) -> str:
    return datetime.fromtimestamp(at, timezone.utc).isoformat().replace("+00:00", "Z")


class AcpProtocol:
    name = "acp"

    async def converse(self, process: AgentProcess, conversation: Conversation, records: Path) -> AgentOutcome:
        records.mkdir(parents=True, exist_ok=True)
        session = AcpSession(process, records / "acp.jsonl", conversation.notices)
        outcome = AgentOutcome()
        try:
            await self._talk(session, process, conversation, outcome)
        finally:
            outcome.grants = list(session.grants)
            outcome.steps, outcome.tool_spans = steps_of(session)
            outcome.reported_cost_usd = session.reported_cost()
            await session.close()
        return outcome

    async def _talk(self, session: AcpSession, process: AgentProcess, conversation: Conversation, outcome: AgentOutcome) -> None:
        try:
            info = await asyncio.wait_for(session.initialize(), SETUP_SECONDS)
            outcome.info = (info or {}).get("agentInfo") or {}
            session_id = await asyncio.wait_for(session.new_session(conversation.workspace, conversation.mcp_servers), SETUP_SECONDS)
            text = conversation.prompt
            turns = 0
            outcome.prompted_at = time.time()  # initialize and session/new were the agent's setup
            while True:
                turns += 1
                outcome.transcript.append({"role": "user", "text": text})
                stop = await self._turn(session, session_id, text, conversation.seconds, outcome)
                answer = session.last_message()
                outcome.answer = answer
                outcome.transcript.append({"role": "agent", "text": answer})
                outcome.stop_reason = stop
                if outcome.timed_out or conversation.next_turn is None or turns >= conversation.max_turns:
                    return
                following = await conversation.next_turn(list(outcome.transcript))
                if following is None:
                    return
                if isinstance(following, tuple):  # ("restart", message): a new session
                    session_id = await asyncio.wait_for(session.new_session(conversation.workspace, conversation.mcp_servers), SETUP_SECONDS)
                    text = following[1]
                    continue
                text = following
        except asyncio.TimeoutError:
            outcome.failure, outcome.message = "AgentSetupTimeoutError", "the agent did not answer initialize or session/new in time"
        except RemoteError as exc:
            outcome.failure, outcome.message = "AgentError", str(exc)
        except ProtocolError as exc:
            code = await _exit_code(process)
            if code is not None:
                # Harbor's name is for a non-zero status; an agent that exits 0 mid-conversation is no better
                outcome.failure = "NonZeroAgentExitCodeError" if code != 0 else "AgentExitedError"
                outcome.message = f"the agent exited (status {code}): {exc}"
            else:
                outcome.failure, outcome.message = "AgentProtocolError", str(exc)

    async def _turn(self, session: AcpSession, session_id: str, text: str, seconds: float, outcome: AgentOutcome) -> str | None:
        prompt = asyncio.ensure_future(session.prompt(session_id, text))
        done, _ = await asyncio.wait({prompt}, timeout=seconds)
        if prompt in done:
            return prompt.result()  # raises the agent's error, if any
        outcome.timed_out = True
        outcome.failure, outcome.message = "AgentTimeoutError", f"the turn took longer than {seconds:g} s: session/cancel sent"
        await session.cancel(session_id)
        done, _ = await asyncio.wait({prompt}, timeout=CANCEL_GRACE)
        if prompt in done and not prompt.cancelled() and prompt.exception() is None:
            return prompt.result()
        prompt.cancel()
        return "cancelled"


async def _exit_code(process: AgentProcess) -> int | None:
    try:
        return await asyncio.wait_for(process.wait(), 2)
    except asyncio.TimeoutError:
        return None


def steps_of(session: AcpSession) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """ATIF steps (unnumbered) from what the agent did, and the tool calls' spans."""
    steps: list[dict[str, Any]] = []
    thought: list[str] = []
    text: list[str] = []
    text_at = 0.0

    def flush_text() -> None:
        nonlocal text, thought
        if text:
            step: dict[str, Any] = {"source": "agent", "message": "".join(text), "timestamp": _iso(text_at)}
            if thought:
                step["reasoning_content"] = "".join(thought)
                thought = []
            steps.append(step)
            text = []

    for event in session.events:
        if event.kind == "text":
            if not text:
                text_at = event.at
            text.append(event.text)
            continue
        flush_text()
        if event.kind == "thought":
            thought.append(event.text)
        elif event.kind == "turn":
            steps.append({"source": "user", "message": event.text, "timestamp": _iso(event.at)})
        elif event.kind == "notice":
            steps.append({"source": "system", "message": event.text, "timestamp": _iso(event.at), "extra": {"notice": True}})
        elif event.kind == "tool":
            steps.append(_tool_step(session, event, thought))
            thought = []
    flush_text()
    spans = [
        {
            "id": tool_id,
            "title": tool.get("title"),
            "kind": tool.get("kind"),
            "status": tool.get("status"),
            "started": _iso(tool["_started"]),
            "ended": _iso(tool["_ended"]) if "_ended" in tool else None,
        }
        for tool_id, tool in session.tools.items()
    ]
    return steps, spans


def _tool_step(session: AcpSession, event: Event, thought: list[str]) -> dict[str, Any]:
    tool = session.tools.get(str(event.tool_id), {})
    arguments = tool.get("rawInput")
    title = tool.get("title")
    call = {
        "tool_call_id": str(event.tool_id),
        "function_name": tool_name(tool) or str(title or tool.get("kind") or "tool"),
        "arguments": arguments if isinstance(arguments, dict) else {"input": arguments},
    }
    step: dict[str, Any] = {"source": "agent", "message": "", "timestamp": _iso(event.at), "tool_calls": [call]}
    if thought:
        step["reasoning_content"] = "".join(thought)
    output = _output(tool)
    if output is not None:
        step["observation"] = {"results": [{"source_call_id": str(event.tool_id), "content": output}]}
    extra = {k: tool[k] for k in ("kind", "status", "title") if tool.get(k)}
    if extra:
        step["extra"] = extra
    return step


def tool_name(tool: dict[str, Any]) -> str | None:
    """The tool's own name where the agent's ACP adapter gives it (ACP has only a title for people).

    Claude's adapter puts it in `_meta.claudeCode.toolName` (`Bash`, `mcp__kit__lookup`); any
    vendor's `_meta.<vendor>.toolName`, or `_meta.toolName`, is read the same way.
    """
    meta = tool.get("_meta")
    if not isinstance(meta, dict):
        return None
    if isinstance(meta.get("toolName"), str) and meta["toolName"]:
        return meta["toolName"]
    for value in meta.values():
        if isinstance(value, dict) and isinstance(value.get("toolName"), str) and value["toolName"]:
            return value["toolName"]
    return None


def _output(tool: dict[str, Any]) -> str | None:
    if "rawOutput" in tool and tool["rawOutput"] is not None:
        raw = tool["rawOutput"]
        return raw if isinstance(raw, str) else json.dumps(raw, ensure_ascii=False)
    parts = []
    for item in tool.get("content") or []:
        if isinstance(item, dict):
            inner = item.get("content")
            if isinstance(inner, dict) and inner.get("type") == "text":
                parts.append(str(inner.get("text", "")))
            elif item.get("type") == "diff":
                parts.append(f"diff {item.get('path')}")
    return "\n".join(parts) if parts else None
