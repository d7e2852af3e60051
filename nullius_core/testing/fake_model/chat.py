"""OpenAI Chat Completions: `chat.completion` bodies and `chat.completion.chunk` streams.

A stream is `data: {chunk}` lines with no `event:` names, ending `data: [DONE]`.
The first chunk carries `delta.role`; text comes as `delta.content`; a tool
call as `delta.tool_calls[{index, id, type, function{name, arguments:""}}]`
then `{index, function{arguments}}` pieces; the last choice chunk has
`finish_reason`. Usage comes in one more chunk with `choices: []`, only when
the request set `stream_options.include_usage` (then every chunk also has
`"usage": null`, as OpenAI sends it).
"""

from __future__ import annotations

from typing import Any

from nullius_core.testing.fake_model.runner import arguments_text
from nullius_core.testing.fake_model.script import InBandError
from nullius_core.testing.fake_model.wire import Ctx, data_line, dumps, pieces

DONE = b"data: [DONE]\n\n"


def _id(c: Ctx) -> str:
    return f"chatcmpl-fake{c.n}"


def _call_id(c: Ctx, i: int) -> str:
    tc = c.reply.tool_calls[i]
    return tc.id or f"call_fake{c.n}_{i}"


def finish_reason(c: Ctx) -> str:
    if c.reply.truncated:
        return "length"
    return "tool_calls" if c.reply.tool_calls else "stop"


def usage(c: Ctx) -> dict[str, Any]:
    k = c.counts
    return {
        "prompt_tokens": k.input,
        "completion_tokens": k.output,
        "total_tokens": k.input + k.output,
        "prompt_tokens_details": {"cached_tokens": k.cached, "audio_tokens": 0},
        "completion_tokens_details": {
            "reasoning_tokens": k.reasoning,
            "audio_tokens": 0,
            "accepted_prediction_tokens": 0,
            "rejected_prediction_tokens": 0,
        },
    }


def body(c: Ctx) -> dict[str, Any]:
    reply = c.reply
    message: dict[str, Any] = {"role": "assistant", "content": reply.text, "refusal": None, "annotations": []}
    if reply.tool_calls:
        message["tool_calls"] = [
            {"id": _call_id(c, i), "type": "function", "function": {"name": tc.name, "arguments": arguments_text(tc)}}
            for i, tc in enumerate(reply.tool_calls)
        ]
    elif message["content"] is None:
        message["content"] = ""
    return {
        "id": _id(c),
        "object": "chat.completion",
        "created": c.created,
        "model": c.model,
        "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": finish_reason(c)}],
        "usage": usage(c),
        "service_tier": "default",
        "system_fingerprint": None,
    }


def events(c: Ctx) -> list[bytes]:
    # Every chunk shares its head; it is written once and the choices appended.
    head = dumps({"id": _id(c), "object": "chat.completion.chunk", "created": c.created, "model": c.model})[:-1]
    tail = ',"service_tier":"default","system_fingerprint":null' + (',"usage":null}' if c.include_usage else "}")

    def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
        return b"data: " + (head + ',"choices":[' + dumps(choice) + "]" + tail).encode() + b"\n\n"

    reply = c.reply
    out = [chunk({"role": "assistant", "content": "", "refusal": None})]
    for piece in pieces(reply.text or "", reply.chunk):
        out.append(chunk({"content": piece}))
    for i, tc in enumerate(reply.tool_calls):
        first = {"index": i, "id": _call_id(c, i), "type": "function", "function": {"name": tc.name, "arguments": ""}}
        out.append(chunk({"tool_calls": [first]}))
        for piece in pieces(arguments_text(tc), reply.chunk):
            out.append(chunk({"tool_calls": [{"index": i, "function": {"arguments": piece}}]}))
    out.append(chunk({}, finish_reason(c)))
    if c.include_usage:
        out.append(
            b"data: " + (head + ',"choices":[],"service_tier":"default","system_fingerprint":null,"usage":' + dumps(usage(c)) + "}").encode() + b"\n\n"
        )
    out.append(DONE)
    return out


def _error(err: InBandError) -> dict[str, Any]:
    message = err.message or "The server had an error while processing your request. Sorry about that!"
    return {"error": {"message": message, "type": err.type or "server_error", "param": None, "code": err.code}}


def error_event(c: Ctx, err: InBandError, seq: int) -> bytes:
    """An error chunk in a 200 stream; the stream then ends without `[DONE]`."""
    return data_line(_error(err))


def error_body(c: Ctx, err: InBandError) -> dict[str, Any]:
    return _error(err)
