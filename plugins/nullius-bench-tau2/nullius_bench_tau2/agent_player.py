"""A fake-model player for the agent under test on τ²-bench: it acts from the task's expected actions.

    export NULLIUS_TAU2_TASKS=<the dataset's tasks.json>     # several: joined with os.pathsep
    nullius fake-model serve --script nullius_bench_tau2.agent_player:respond

`respond` answers tau2's user simulator and judge as `player.respond` does,
and the agent's own model calls (any API shape: Chat Completions, Responses,
Messages) like this: the task is the one whose reason for call and known
info the user's first message says (the user player's first words); the
agent's next move is the next expected assistant action not yet called
(counted from the tool calls already in the request), as a call of the
MCP tool whose name ends with the action's (`mcp__<server>__<tool>`); once
none is left, its words are the task's communicate_info and "Is there
anything else?", which the user player ends with ###STOP###. An agent whose
model this is reaches tau2's reward 1 on airline and retail units (not
telecom's: there the user acts on their phone, which the user player does
not). `agent_player(tasks)` makes one from tasks in hand.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Callable, Optional

from nullius_core.testing.fake_model import FakeRequest, Reply, ToolCall

from .player import respond as tau2_side

Respond = Callable[[FakeRequest], Optional[Reply]]


def agent_player(tasks: list[dict]) -> Respond:
    def respond(request: FakeRequest) -> Optional[Reply]:
        answered = tau2_side(request)
        if answered is not None:
            return answered
        texts = _texts(request.body)
        asked = [t for t in tasks if _asked_for(t, texts)]
        if not asked:
            return None
        task = max(asked, key=_scenario_size)  # the most specific scenario the user's words contain
        criteria = task.get("evaluation_criteria") or {}
        actions = [a for a in criteria.get("actions") or [] if a.get("requestor", "assistant") == "assistant"]
        made = _calls_made(request.body)
        if made < len(actions):
            action = actions[made]
            name = next((n for n in request.tools if n == action["name"] or n.endswith("__" + action["name"])),
                        action["name"])
            return Reply(tool_calls=[ToolCall(name=name, arguments=action["arguments"])])
        info = criteria.get("communicate_info") or []
        said = f"Here is what you asked for: {'; '.join(info)}. " if info else "It is done. "
        return Reply(text=said + "Is there anything else?")

    return respond


_loaded: list[dict] = []


def respond(request: FakeRequest) -> Optional[Reply]:
    """The player over the tasks files NULLIUS_TAU2_TASKS names, read once."""
    if not _loaded:
        for path in filter(None, os.environ.get("NULLIUS_TAU2_TASKS", "").split(os.pathsep)):
            _loaded.extend(json.loads(Path(path).read_text()))
    return agent_player(_loaded)(request)


def _norm(text: str) -> str:
    return re.sub(r"\s+", " ", text or "").strip()


def _asked_for(task: dict, texts: str) -> bool:
    instructions = (task.get("user_scenario") or {}).get("instructions") or {}
    if not isinstance(instructions, dict):
        return False
    reason, known = _norm(instructions.get("reason_for_call", "")), _norm(instructions.get("known_info") or "")
    return bool(reason) and reason in texts and known in texts


def _scenario_size(task: dict) -> int:
    instructions = task["user_scenario"]["instructions"]
    return len(_norm(instructions.get("reason_for_call", ""))) + len(_norm(instructions.get("known_info") or ""))


def _texts(body: dict) -> str:
    """Every user text of the request, joined: the user's first message is among them."""
    out = []
    for item in body.get("messages") or body.get("input") or []:
        if not isinstance(item, dict) or item.get("role") != "user":
            continue
        content = item.get("content")
        if isinstance(content, str):
            out.append(content)
        elif isinstance(content, list):
            out += [p.get("text", "") for p in content if isinstance(p, dict) and isinstance(p.get("text"), str)]
    if isinstance(body.get("input"), str):
        out.append(body["input"])
    return _norm(" ".join(out))


def _calls_made(body: dict) -> int:
    """Tool calls the agent already made in this conversation, in any of the three API shapes."""
    count = 0
    for item in body.get("messages") or body.get("input") or []:
        if not isinstance(item, dict):
            continue
        if item.get("type") == "function_call":  # Responses
            count += 1
        elif item.get("role") == "assistant":
            count += len(item.get("tool_calls") or [])  # Chat Completions
            content = item.get("content")
            if isinstance(content, list):  # Messages
                count += sum(1 for block in content if isinstance(block, dict) and block.get("type") == "tool_use")
    return count
