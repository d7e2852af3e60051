"""Choosing a reply: the script's `respond`, then its rules in order, then its default.

A runner holds the counters a script needs (the call number, each rule's uses
and matches); setting a new script makes a new runner, so counting starts again.
"""

from __future__ import annotations

import inspect
import json
import re
from collections.abc import Callable
from typing import Any

import attrs

from nullius_core.testing.fake_model.loading import as_reply
from nullius_core.testing.fake_model.request import FakeRequest
from nullius_core.testing.fake_model.script import Match, Reply, Script

COUNTING = frozenset({"count_tokens", "gemini_count_tokens"})  # token counts, not model calls

Predicate = Callable[[FakeRequest], bool]


def _contains(text: str | None, needle: str) -> bool:
    return text is not None and needle in text


def _predicates(m: Match) -> list[Predicate]:
    """The conditions of `m` (all but `nth`), cheapest first."""
    preds: list[Predicate] = []
    api = m.api
    if api is None:
        preds.append(lambda r: r.api not in COUNTING)
    else:
        preds.append(lambda r: r.api == api)
    if m.call is not None:
        preds.append(lambda r, n=m.call: r.call == n)
    if m.stream is not None:
        preds.append(lambda r, s=m.stream: r.stream is s)
    if m.model is not None:
        preds.append(lambda r, v=m.model: r.model == v)
    if m.model_regex is not None:
        preds.append(lambda r, rx=re.compile(m.model_regex): r.model is not None and rx.search(r.model) is not None)
    if m.tool is not None:
        preds.append(lambda r, t=m.tool: t in r.tools)
    if m.after_tool_result is not None:
        preds.append(lambda r, v=m.after_tool_result: _contains(r.last_tool_result, v))
    if m.contains is not None:
        preds.append(lambda r, v=m.contains: _contains(r.last_message, v))
    if m.regex is not None:
        preds.append(lambda r, rx=re.compile(m.regex): (t := r.last_message) is not None and rx.search(t) is not None)
    if m.user_contains is not None:
        preds.append(lambda r, v=m.user_contains: _contains(r.last_user_message, v))
    if m.user_regex is not None:
        preds.append(
            lambda r, rx=re.compile(m.user_regex): (t := r.last_user_message) is not None and rx.search(t) is not None
        )
    return preds


class RespondError(Exception):
    """The script's `respond` callable raised, or returned something that is not a reply."""


class ScriptRunner:
    def __init__(self, script: Script):
        self.script = script
        self.calls = 0
        self._rules = [(rule, _predicates(rule.when), rule.name or f"rules[{i}]") for i, rule in enumerate(script.rules)]
        self._uses = [0] * len(self._rules)
        self._held = [0] * len(self._rules)

    def next_call(self, api: str) -> int:
        """The number of this model call; count_tokens requests are not calls."""
        if api not in COUNTING:
            self.calls += 1
        return self.calls

    async def choose(self, request: FakeRequest) -> tuple[Reply, str]:
        respond = self.script.respond
        if respond is not None:
            try:
                result = respond(request)
                if inspect.isawaitable(result):
                    result = await result
                reply = as_reply(result)
            except Exception as exc:  # noqa: BLE001 - reported to the client as a 500
                raise RespondError(f"{type(exc).__name__}: {exc}") from exc
            if reply is not None:
                return reply, "respond"
        for i, (rule, preds, label) in enumerate(self._rules):
            if rule.times is not None and self._uses[i] >= rule.times:
                continue
            if not all(p(request) for p in preds):
                continue
            self._held[i] += 1
            if rule.when.nth is not None and self._held[i] != rule.when.nth:
                continue
            self._uses[i] += 1
            return rule.reply, label
        return self.script.default, "default"


# --- token counts ------------------------------------------------------------


@attrs.frozen
class Counts:
    """Neutral counts: input includes cached and cache writes; output includes reasoning."""

    input: int
    cached: int
    cache_write: int
    output: int
    reasoning: int


_PROMPT_KEYS = ("system", "instructions", "messages", "input", "tools", "systemInstruction", "contents")


def _chars(value: Any) -> int:
    if isinstance(value, str):
        return len(value)
    if isinstance(value, dict):
        return sum(_chars(v) for v in value.values())
    if isinstance(value, list):
        return sum(_chars(v) for v in value)
    return 0


def prompt_tokens(body: Any) -> int:
    """About four characters a token, over the prompt's strings: deterministic, at least 1."""
    if not isinstance(body, dict):
        return 1
    chars = sum(_chars(body.get(k)) for k in _PROMPT_KEYS)
    return max(1, (chars + 3) // 4)


def arguments_text(call: Any) -> str:
    if call.arguments_json is not None:
        return call.arguments_json
    return json.dumps(call.arguments, separators=(",", ":"), ensure_ascii=False)


def arguments_value(call: Any) -> Any:
    """The arguments as an object, for the shapes that send them so (Messages' `input`, Gemini's `args`):
    `arguments_json` parsed, or as text when it is not JSON."""
    if call.arguments_json is None:
        return call.arguments
    try:
        return json.loads(call.arguments_json)
    except ValueError:
        return call.arguments_json


def counts_for(reply: Reply, body: Any) -> Counts:
    u = reply.usage
    cached = (u.cached_tokens if u else None) or 0
    cache_write = (u.cache_write_tokens if u else None) or 0
    reasoning = (u.reasoning_tokens if u else None) or 0
    inp = u.input_tokens if u and u.input_tokens is not None else max(prompt_tokens(body), cached + cache_write)
    if u and u.output_tokens is not None:
        out = u.output_tokens
    else:
        chars = len(reply.text or "") + sum(len(tc.name) + len(arguments_text(tc)) for tc in reply.tool_calls)
        out = max(1, (chars + 3) // 4) + reasoning
    return Counts(inp, cached, cache_write, out, reasoning)
