"""A fake-model player for the agent under test on BFCL: it makes a question's calls, turn by turn, over MCP.

    export NULLIUS_BFCL_PLAYS=<a JSON file: [{"prompt": first user words, "turns": [[{"tool", "arguments"}, ...], ...]}]>
    nullius fake-model serve --script nullius_bench_bfcl.agent_player:respond

The play is the one whose `prompt` the conversation's first user message
contains; the turn is the count of the user's own messages (tool results
are not the user's words) less one; the next move is that turn's next call
not yet made (counted from the calls after the turn's message), as a call
of the MCP tool whose name is the call's or ends with `__<name>`; once none
is left, the reply is the words "Done." and the turn ends. `plays(...)`
makes one from plays in hand. Chat Completions and Messages shapes.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Callable, Optional

from nullius_core.testing.fake_model import FakeRequest, Reply, ToolCall

Respond = Callable[[FakeRequest], Optional[Reply]]


def plays(known: list[dict]) -> Respond:
    def respond(request: FakeRequest) -> Optional[Reply]:
        said, made = _turns(request.body)
        if not said:
            return None
        play = next((p for p in known if p["prompt"] in said[0]), None)
        if play is None:
            return None
        turn = len(said) - 1
        calls = play["turns"][turn] if turn < len(play["turns"]) else []
        if made < len(calls):
            call = calls[made]
            name = next((n for n in request.tools if n == call["tool"] or n.endswith("__" + call["tool"])), call["tool"])
            return Reply(tool_calls=[ToolCall(name=name, arguments=call["arguments"])])
        return Reply(text="Done.")

    return respond


_loaded: list[dict] = []


def respond(request: FakeRequest) -> Optional[Reply]:
    """The player over the plays NULLIUS_BFCL_PLAYS names, read once."""
    if not _loaded and os.environ.get("NULLIUS_BFCL_PLAYS"):
        _loaded.extend(json.loads(Path(os.environ["NULLIUS_BFCL_PLAYS"]).read_text()))
    return plays(_loaded)(request)


def _turns(body) -> tuple[list[str], int]:
    """The user's own messages, in order, and the tool calls made since the last of them."""
    said, made = [], 0
    for item in (body.get("messages") if isinstance(body, dict) else None) or []:
        if not isinstance(item, dict):
            continue
        role, content = item.get("role"), item.get("content")
        if role == "user":
            text = _user_text(content)
            if text is not None:
                said.append(text)
                made = 0
        elif role == "assistant":
            made += len(item.get("tool_calls") or [])
            if isinstance(content, list):
                made += sum(1 for b in content if isinstance(b, dict) and b.get("type") == "tool_use")
    return said, made


def _user_text(content) -> Optional[str]:
    """A user message's words; None for one that only carries tool results (the Messages shape)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        if any(isinstance(b, dict) and b.get("type") == "tool_result" for b in content):
            return None
        texts = [b.get("text", "") for b in content if isinstance(b, dict) and isinstance(b.get("text"), str)]
        return "\n".join(texts) if texts else None
    return None
