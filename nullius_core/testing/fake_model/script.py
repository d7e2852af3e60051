"""What a script is made of: rules, the replies they give, and the faults a reply may carry.

Every class is a frozen attrs class. A script file (JSON or TOML) is read into
them by the strict converter of `loading.py`; tests may build them directly.
Token counts in `Usage` are neutral: `input_tokens` is every prompt token of
the call (cached and cache writes included) and `output_tokens` every output
token (reasoning included); each API shape splits them as its provider does.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import Any, Literal

import attrs

from nullius_core.testing.fake_model.openrouter import OpenRouter

API = Literal["chat", "responses", "messages", "count_tokens", "gemini", "gemini_count_tokens"]
DEFAULT_TEXT = "Hello from the Nullius fake model."


@attrs.frozen(kw_only=True)
class Usage:
    """Token counts to report; any left out are derived from the request and the reply."""

    input_tokens: int | None = None
    cached_tokens: int | None = None
    cache_write_tokens: int | None = None
    output_tokens: int | None = None
    reasoning_tokens: int | None = None

    @classmethod
    def _invariants(cls, u: Usage) -> Iterator[tuple[tuple[str, ...], str]]:
        for a in attrs.fields(cls):
            value = getattr(u, a.name)
            if value is not None and value < 0:
                yield (a.name,), f"must be 0 or more, found {value}"
        if u.input_tokens is not None and (u.cached_tokens or 0) + (u.cache_write_tokens or 0) > u.input_tokens:
            yield ("input_tokens",), "must be at least cached_tokens + cache_write_tokens (it counts every prompt token)"
        if u.output_tokens is not None and (u.reasoning_tokens or 0) > u.output_tokens:
            yield ("output_tokens",), "must be at least reasoning_tokens (it counts every output token)"


@attrs.frozen(kw_only=True)
class ToolCall:
    """One tool call of a reply; `arguments_json` (raw text) wins over `arguments` when given.

    namespace: for the Responses API only, the `namespace` tool the function is nested in
    (Codex offers each MCP server's tools as one, `mcp__<server>`); the call item then names it.
    """

    name: str
    arguments: dict[str, Any] = attrs.field(factory=dict)
    arguments_json: str | None = None
    id: str | None = None
    namespace: str | None = None


@attrs.frozen(kw_only=True)
class Malformed:
    """After `after` events, a line that is not an SSE event of JSON; then the stream goes on or ends.
    Not streaming: the body is that line (without `data: `) under a 200 and a JSON content type."""

    after: int = 0
    then: Literal["continue", "end"] = "continue"
    line: str = "data: {this is not json"


@attrs.frozen(kw_only=True)
class InBandError:
    """An error inside a 200: in the body, or as a stream's event after `after` events.
    Left out, message and type are the provider's usual ones (OpenAI: server_error;
    Anthropic: overloaded_error)."""

    after: int = 0
    message: str | None = None
    type: str | None = None
    code: str | None = None


@attrs.frozen(kw_only=True)
class Fault:
    """What goes wrong with a reply. Fields combine (a slow first byte and then a reset, say).

    status/body/retry_after/headers: answer with this HTTP status (the provider's
    error JSON unless `body` is given) instead of the reply.
    first_byte_delay: seconds to wait before the status line.
    reset_after: reset the connection (TCP RST) after that many events.
    end_after: end the stream cleanly after that many events, with no terminal event.
    malformed: a line that is not JSON; error: an error inside a 200.
    """

    status: int | None = None
    body: Any = None
    retry_after: float | None = None
    headers: dict[str, str] = attrs.field(factory=dict)
    first_byte_delay: float = 0.0
    reset_after: int | None = None
    end_after: int | None = None
    malformed: Malformed | None = None
    error: InBandError | None = None

    @classmethod
    def _invariants(cls, f: Fault) -> Iterator[tuple[tuple[str, ...], str]]:
        if f.status is not None and not 100 <= f.status <= 599:
            yield ("status",), f"must be an HTTP status (100-599), found {f.status}"
        if f.status is None and (f.body is not None or f.retry_after is not None):
            yield ("status",), "is required when body or retry_after is given"
        for name in ("first_byte_delay", "reset_after", "end_after", "retry_after"):
            value = getattr(f, name)
            if value is not None and value < 0:
                yield (name,), f"must be 0 or more, found {value}"


@attrs.frozen(kw_only=True)
class Reply:
    """A reply: text and/or tool calls, counts to report, and how it is sent.

    truncated: the reply ends as cut by the output limit (finish_reason
    "length", status "incomplete", stop_reason "max_tokens").
    model: the model name the reply states (default: the one asked).
    pace: seconds between streamed events. chunk: characters per delta.
    """

    text: str | None = None
    tool_calls: list[ToolCall] = attrs.field(factory=list)
    usage: Usage | None = None
    fault: Fault | None = None
    truncated: bool = False
    model: str | None = None
    pace: float = 0.0
    chunk: int = 16

    @classmethod
    def _invariants(cls, r: Reply) -> Iterator[tuple[tuple[str, ...], str]]:
        if r.chunk < 1:
            yield ("chunk",), f"must be 1 or more, found {r.chunk}"
        if r.pace < 0:
            yield ("pace",), f"must be 0 or more, found {r.pace}"


def _regex_issue(pattern: str | None) -> str | None:
    if pattern is None:
        return None
    try:
        re.compile(pattern)
    except re.error as exc:
        return f"is not a regular expression: {exc}"
    return None


@attrs.frozen(kw_only=True)
class Match:
    """Conditions on a request; every one given must hold.

    contains/regex: the last message, which is the tool result when the request
    ends with one, else the last user message's text.
    user_contains/user_regex: the last user message's text only.
    after_tool_result: the request ends with a tool result containing this ("" for any).
    tool: a tool of that name is offered. call: the Nth model call (1-based)
    since the script was set. nth: the Nth time this rule's other conditions held.
    """

    api: API | None = None
    model: str | None = None
    model_regex: str | None = None
    contains: str | None = None
    regex: str | None = None
    user_contains: str | None = None
    user_regex: str | None = None
    after_tool_result: str | None = None
    tool: str | None = None
    stream: bool | None = None
    call: int | None = None
    nth: int | None = None

    @classmethod
    def _invariants(cls, m: Match) -> Iterator[tuple[tuple[str, ...], str]]:
        for name in ("model_regex", "regex", "user_regex"):
            issue = _regex_issue(getattr(m, name))
            if issue:
                yield (name,), issue
        for name in ("call", "nth"):
            value = getattr(m, name)
            if value is not None and value < 1:
                yield (name,), f"counts from 1, found {value}"


@attrs.frozen(kw_only=True)
class Rule:
    """When `when` holds (and the rule has uses left: `times`), answer with `reply`."""

    when: Match = attrs.field(factory=Match)
    reply: Reply = attrs.field(factory=Reply)
    times: int | None = None
    name: str | None = None

    @classmethod
    def _invariants(cls, r: Rule) -> Iterator[tuple[tuple[str, ...], str]]:
        if r.times is not None and r.times < 1:
            yield ("times",), f"must be 1 or more, found {r.times}"


Respond = Callable[..., Any]


@attrs.frozen(kw_only=True)
class Script:
    """Rules tried in order, then `default`. `respond`, when set, is asked first:
    `respond(request: FakeRequest) -> Reply | dict | None` (None: go on to the rules).
    `openrouter`: answer as OpenRouter does, each model served by several providers (openrouter.py).
    """

    rules: list[Rule] = attrs.field(factory=list)
    default: Reply = attrs.field(factory=lambda: Reply(text=DEFAULT_TEXT))
    respond: Respond | None = attrs.field(default=None, eq=False)
    openrouter: OpenRouter | None = None
