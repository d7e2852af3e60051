"""Anthropic Messages: `message` bodies and their event streams.

Each event is `event: <type>` then `data: {"type": <type>, ...}`. Order:
message_start (its `message.usage` has input_tokens, cache_creation_input_tokens,
cache_read_input_tokens and output_tokens 1), then per content block
content_block_start / content_block_delta (text_delta, or input_json_delta with
`partial_json`) / content_block_stop, with one `ping` after the first block
starts; then message_delta (`delta.stop_reason`, `usage.output_tokens`
cumulative) and message_stop. Input tokens on the wire exclude cache reads and
writes, as Anthropic counts them.
"""

from __future__ import annotations

from typing import Any

from nullius_core.testing.fake_model.runner import arguments_text, arguments_value
from nullius_core.testing.fake_model.script import InBandError
from nullius_core.testing.fake_model.wire import Ctx, event, pieces

PING = event("ping", {"type": "ping"})
STOP = event("message_stop", {"type": "message_stop"})


def stop_reason(c: Ctx) -> str:
    if c.reply.truncated:
        return "max_tokens"
    return "tool_use" if c.reply.tool_calls else "end_turn"


def usage(c: Ctx, output_tokens: int) -> dict[str, Any]:
    k = c.counts
    return {
        "input_tokens": k.input - k.cached - k.cache_write,
        "cache_creation_input_tokens": k.cache_write,
        "cache_read_input_tokens": k.cached,
        "output_tokens": output_tokens,
        "service_tier": "standard",
    }


def _tool_id(c: Ctx, i: int) -> str:
    return c.reply.tool_calls[i].id or f"toolu_fake{c.n}_{i}"


def _has_text(c: Ctx) -> bool:
    return bool(c.reply.text) or not c.reply.tool_calls


def content(c: Ctx) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = [{"type": "text", "text": c.reply.text or ""}] if _has_text(c) else []
    for i, tc in enumerate(c.reply.tool_calls):
        blocks.append({"type": "tool_use", "id": _tool_id(c, i), "name": tc.name, "input": arguments_value(tc)})
    return blocks


def _message(c: Ctx, blocks: list[dict[str, Any]], stop: str | None, output_tokens: int) -> dict[str, Any]:
    return {
        "id": f"msg_fake{c.n}",
        "type": "message",
        "role": "assistant",
        "model": c.model,
        "content": blocks,
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": usage(c, output_tokens),
    }


def body(c: Ctx) -> dict[str, Any]:
    return _message(c, content(c), stop_reason(c), c.counts.output)


def events(c: Ctx) -> list[bytes]:
    reply = c.reply
    out = [event("message_start", {"type": "message_start", "message": _message(c, [], None, 1)})]

    def block(index: int, start: dict[str, Any], deltas: list[dict[str, Any]]) -> None:
        out.append(event("content_block_start", {"type": "content_block_start", "index": index, "content_block": start}))
        if index == 0:
            out.append(PING)
        for delta in deltas:
            out.append(event("content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}))
        out.append(event("content_block_stop", {"type": "content_block_stop", "index": index}))

    index = 0
    if _has_text(c):
        deltas = [{"type": "text_delta", "text": p} for p in pieces(reply.text or "", reply.chunk)]
        block(0, {"type": "text", "text": ""}, deltas)
        index = 1
    for i, tc in enumerate(reply.tool_calls):
        start = {"type": "tool_use", "id": _tool_id(c, i), "name": tc.name, "input": {}}
        parts = pieces(arguments_text(tc), reply.chunk)
        deltas = [{"type": "input_json_delta", "partial_json": p} for p in ["", *parts]]
        block(index, start, deltas)
        index += 1
    delta = {
        "type": "message_delta",
        "delta": {"stop_reason": stop_reason(c), "stop_sequence": None},
        "usage": {"output_tokens": c.counts.output},
    }
    out.append(event("message_delta", delta))
    out.append(STOP)
    return out


def _error(err: InBandError) -> dict[str, Any]:
    return {"type": "error", "error": {"type": err.type or "overloaded_error", "message": err.message or "Overloaded"}}


def error_event(c: Ctx, err: InBandError, seq: int) -> bytes:
    """`event: error` with `{"type": "error", "error": {type, message}}`; the stream then ends."""
    return event("error", _error(err))


def error_body(c: Ctx, err: InBandError) -> dict[str, Any]:
    return _error(err)
