"""One ACP conversation with one agent: initialize, session/new, prompts, cancel; updates kept in order.

Nullius advertises no fs and no terminal, so the agent uses its own tools.
Permission requests are granted (allow_once where offered) and each grant is
recorded. Every message, both ways, goes to `agent/acp.jsonl` as it passes.
"""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

import attrs

from nullius_core.contracts.agent import AgentProcess, McpServerEntry
from nullius_core.fsutil import append_line
from nullius_core.jobs.records import iso, utcnow
from nullius_plugins.acp_client.jsonrpc import Connection, RemoteError

PROTOCOL_VERSION = 1
CLIENT_INFO = {"name": "nullius", "title": "Nullius", "version": "0.1.0"}
# Updates that carry no message of the agent's: they part two messages, end none.
METADATA = {
    "plan", "usage_update", "available_commands_update", "current_mode_update",
    "session_info_update", "config_option_update", "user_message_chunk",
}


@attrs.define
class Event:
    """One thing the agent did, in order: text, thought, tool, notice or meta."""

    kind: str
    at: float
    text: str = ""
    tool_id: str | None = None
    update: dict[str, Any] | None = None


def notice_of(update: dict[str, Any]) -> str | None:
    """A notice: an adapter's warning, never part of the answer (`_meta.nullius.notice`, or `_meta.notice`)."""
    meta = update.get("_meta")
    if not isinstance(meta, dict):
        return None
    notice = (meta.get("nullius") or {}).get("notice") if isinstance(meta.get("nullius"), dict) else None
    notice = notice or meta.get("notice")
    if isinstance(notice, dict):  # {"kind", "message"}: the reference agent's
        return str(notice.get("message") or notice.get("kind") or "")
    if notice is True:
        content = update.get("content") or {}
        return content.get("text", "") if isinstance(content, dict) else ""
    return notice if isinstance(notice, str) else None


class AcpSession:
    def __init__(self, process: AgentProcess, transcript: Path, notices: tuple[str, ...] = ()):
        self.transcript = transcript
        self.notices = [re.compile(p) for p in notices]
        self.events: list[Event] = []
        self.tools: dict[str, dict[str, Any]] = {}
        self.grants: list[dict[str, Any]] = []
        self.costs: dict[str, float] = {}  # session -> the cost its last usage_update reported, in USD
        self.cancelling = False
        self.conn = Connection(process.stdout, process.stdin, self._record, self._notification, self._request)

    def _record(self, direction: str, message: dict[str, Any]) -> None:
        append_line(self.transcript, {"at": iso(utcnow()), "dir": direction, "msg": message})

    # --- what the agent sends ------------------------------------------------

    def _notification(self, message: dict[str, Any]) -> None:
        if message.get("method") != "session/update":
            return
        update = (message.get("params") or {}).get("update") or {}
        kind = update.get("sessionUpdate")
        now = time.time()
        notice = notice_of(update)
        if notice is None and kind == "agent_message_chunk" and self.notices:
            text = _text(update.get("content")).strip()
            if any(p.fullmatch(text) for p in self.notices):
                notice = text  # the agent's definition says this text is its adapter's warning
        if notice is not None:
            self.events.append(Event("notice", now, text=notice, update=update))
        elif kind == "agent_message_chunk":
            self.events.append(Event("text", now, text=_text(update.get("content"))))
        elif kind == "agent_thought_chunk":
            self.events.append(Event("thought", now, text=_text(update.get("content"))))
        elif kind == "tool_call":
            tool_id = str(update.get("toolCallId"))
            self.tools[tool_id] = {**update, "_started": now}
            self.events.append(Event("tool", now, tool_id=tool_id, update=update))
            self._settle(tool_id, update, now)
        elif kind == "tool_call_update":
            tool_id = str(update.get("toolCallId"))
            known = self.tools.setdefault(tool_id, {"toolCallId": tool_id, "_started": now})
            known.update({k: v for k, v in update.items() if v is not None})
            if not any(e.kind == "tool" and e.tool_id == tool_id for e in self.events):
                self.events.append(Event("tool", now, tool_id=tool_id, update=update))
            self._settle(tool_id, update, now)
        else:
            if kind == "usage_update":
                self._cost(str((message.get("params") or {}).get("sessionId")), update.get("cost"))
            self.events.append(Event("meta", now, update=update))

    def _cost(self, session_id: str, cost: Any) -> None:
        """A usage_update's `cost` is the session's so far (Claude's adapter sends its SDK's total_cost_usd)."""
        if isinstance(cost, dict) and cost.get("currency", "USD") == "USD":
            amount = cost.get("amount")
            if isinstance(amount, (int, float)) and not isinstance(amount, bool):
                self.costs[session_id] = float(amount)

    def reported_cost(self) -> float | None:
        return round(sum(self.costs.values()), 9) if self.costs else None

    def _settle(self, tool_id: str, update: dict[str, Any], now: float) -> None:
        if update.get("status") in ("completed", "failed"):
            self.tools[tool_id]["_ended"] = now

    async def _request(self, message: dict[str, Any]) -> Any:
        method = message.get("method")
        params = message.get("params") or {}
        if method == "session/request_permission":
            if self.cancelling:
                return {"outcome": {"outcome": "cancelled"}}
            options = params.get("options") or []
            chosen = next((o for o in options if o.get("kind") == "allow_once"), None) or next(
                (o for o in options if str(o.get("kind", "")).startswith("allow")), None
            )
            tool = params.get("toolCall") or {}
            grant = {"at": iso(utcnow()), "tool_call": tool.get("toolCallId"), "title": tool.get("title"), "option": chosen and chosen.get("optionId"), "granted": chosen is not None}
            self.grants.append(grant)
            if chosen is None:
                return {"outcome": {"outcome": "cancelled"}}
            return {"outcome": {"outcome": "selected", "optionId": chosen["optionId"]}}
        raise RemoteError(str(method), {"code": -32601, "message": f"{method} is not offered: Nullius advertises no fs and no terminal"})

    # --- what Nullius sends ------------------------------------------------------

    async def initialize(self) -> dict[str, Any]:
        return await self.conn.request(
            "initialize",
            {
                "protocolVersion": PROTOCOL_VERSION,
                "clientCapabilities": {"fs": {"readTextFile": False, "writeTextFile": False}, "terminal": False},
                "clientInfo": CLIENT_INFO,
            },
        )

    async def new_session(self, cwd: Path, servers: list[McpServerEntry]) -> str:
        result = await self.conn.request(
            "session/new",
            {
                "cwd": str(cwd),
                "mcpServers": [
                    {"name": s.name, "command": s.command, "args": s.args, "env": [{"name": k, "value": v} for k, v in s.env.items()]}
                    for s in servers
                ],
            },
        )
        return str((result or {}).get("sessionId"))

    async def prompt(self, session_id: str, text: str) -> str | None:
        self.events.append(Event("turn", time.time(), text=text))
        result = await self.conn.request("session/prompt", {"sessionId": session_id, "prompt": [{"type": "text", "text": text}]})
        return (result or {}).get("stopReason")

    async def cancel(self, session_id: str) -> None:
        self.cancelling = True
        await self.conn.notify("session/cancel", {"sessionId": session_id})

    def last_message(self) -> str:
        """The agent's text after its last other event (a tool call, a notice), in the latest turn.

        Metadata parts two messages but ends nothing after the last one.
        """
        start = max((i for i, e in enumerate(self.events) if e.kind == "turn"), default=-1) + 1
        turn = self.events[start:]
        last_other = max((i for i, e in enumerate(turn) if e.kind in ("tool", "notice")), default=-1)
        messages: list[str] = []
        current: list[str] = []
        for event in turn[last_other + 1 :]:
            if event.kind == "text":
                current.append(event.text)
            elif event.kind == "meta" and current:
                messages.append("".join(current))
                current = []
        if current:
            messages.append("".join(current))
        messages = [m for m in messages if m.strip()]
        return messages[-1] if messages else ""

    async def close(self) -> None:
        await self.conn.close()


def _text(content: Any) -> str:
    if isinstance(content, dict):
        if content.get("type") == "text":
            return str(content.get("text", ""))
        if content.get("type") == "resource" and isinstance(content.get("resource"), dict):
            return str(content["resource"].get("text", ""))
    return ""
