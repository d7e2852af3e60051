"""OpenAI Responses: `response` objects and their event streams.

Each event is `event: <type>` then `data: {"type": <type>, "sequence_number": n, ...}`,
n counting from 0. Order: response.created, response.in_progress; for text a
message item (response.output_item.added, response.content_part.added,
response.output_text.delta..., response.output_text.done,
response.content_part.done, response.output_item.done); for each tool call a
function_call item (response.output_item.added,
response.function_call_arguments.delta..., response.function_call_arguments.done,
response.output_item.done); then the terminal response.completed (or
response.incomplete when truncated) whose `response.usage` is the only usage.
"""

from __future__ import annotations

from typing import Any

from nullius_core.testing.fake_model.runner import arguments_text
from nullius_core.testing.fake_model.script import InBandError
from nullius_core.testing.fake_model.wire import Ctx, event, pieces


def usage(c: Ctx) -> dict[str, Any]:
    k = c.counts
    return {
        "input_tokens": k.input,
        "input_tokens_details": {"cached_tokens": k.cached},
        "output_tokens": k.output,
        "output_tokens_details": {"reasoning_tokens": k.reasoning},
        "total_tokens": k.input + k.output,
    }


def _message_item(c: Ctx, done: bool) -> dict[str, Any]:
    content = [{"type": "output_text", "text": c.reply.text or "", "annotations": [], "logprobs": []}] if done else []
    return {
        "id": f"msg_fake{c.n}",
        "type": "message",
        "status": "completed" if done else "in_progress",
        "role": "assistant",
        "content": content,
    }


def _call_item(c: Ctx, i: int, done: bool) -> dict[str, Any]:
    tc = c.reply.tool_calls[i]
    item = {
        "id": f"fc_fake{c.n}_{i}",
        "type": "function_call",
        "status": "completed" if done else "in_progress",
        "arguments": arguments_text(tc) if done else "",
        "call_id": tc.id or f"call_fake{c.n}_{i}",
        "name": tc.name,
    }
    if tc.namespace is not None:  # a function of a `namespace` tool, as OpenAI names it
        item["namespace"] = tc.namespace
    return item


def _has_message(c: Ctx) -> bool:
    return bool(c.reply.text) or not c.reply.tool_calls


def output(c: Ctx) -> list[dict[str, Any]]:
    items = [_message_item(c, True)] if _has_message(c) else []
    return items + [_call_item(c, i, True) for i in range(len(c.reply.tool_calls))]


def response(c: Ctx, status: str, items: list[dict[str, Any]], with_usage: bool, error: Any = None) -> dict[str, Any]:
    return {
        "id": f"resp_fake{c.n}",
        "object": "response",
        "created_at": c.created,
        "status": status,
        "background": False,
        "error": error,
        "incomplete_details": {"reason": "max_output_tokens"} if status == "incomplete" else None,
        "instructions": None,
        "max_output_tokens": None,
        "model": c.model,
        "output": items,
        "parallel_tool_calls": True,
        "previous_response_id": None,
        "reasoning": {"effort": None, "summary": None},
        "store": False,
        "temperature": 1.0,
        "text": {"format": {"type": "text"}},
        "tool_choice": "auto",
        "tools": [],
        "top_p": 1.0,
        "truncation": "disabled",
        "usage": usage(c) if with_usage else None,
        "user": None,
        "metadata": {},
    }


def _final_status(c: Ctx) -> str:
    return "incomplete" if c.reply.truncated else "completed"


def body(c: Ctx) -> dict[str, Any]:
    return response(c, _final_status(c), output(c), True)


def events(c: Ctx) -> list[bytes]:
    out: list[bytes] = []

    def emit(kind: str, **fields: Any) -> None:
        out.append(event(kind, {"type": kind, "sequence_number": len(out), **fields}))

    emit("response.created", response=response(c, "in_progress", [], False))
    emit("response.in_progress", response=response(c, "in_progress", [], False))
    index = 0
    reply = c.reply
    if _has_message(c):
        item_id = f"msg_fake{c.n}"
        at = {"item_id": item_id, "output_index": 0, "content_index": 0}
        emit("response.output_item.added", output_index=0, item=_message_item(c, False))
        emit("response.content_part.added", **at, part={"type": "output_text", "text": "", "annotations": []})
        for piece in pieces(reply.text or "", reply.chunk):
            emit("response.output_text.delta", **at, delta=piece, logprobs=[])
        emit("response.output_text.done", **at, text=reply.text or "", logprobs=[])
        part = {"type": "output_text", "text": reply.text or "", "annotations": [], "logprobs": []}
        emit("response.content_part.done", **at, part=part)
        emit("response.output_item.done", output_index=0, item=_message_item(c, True))
        index = 1
    for i, tc in enumerate(reply.tool_calls):
        item_id = f"fc_fake{c.n}_{i}"
        emit("response.output_item.added", output_index=index, item=_call_item(c, i, False))
        arguments = arguments_text(tc)
        for piece in pieces(arguments, reply.chunk):
            emit("response.function_call_arguments.delta", item_id=item_id, output_index=index, delta=piece)
        emit("response.function_call_arguments.done", item_id=item_id, output_index=index, name=tc.name, arguments=arguments)
        emit("response.output_item.done", output_index=index, item=_call_item(c, i, True))
        index += 1
    status = _final_status(c)
    emit(f"response.{status}", response=response(c, status, output(c), True))
    return out


def _error(err: InBandError) -> dict[str, Any]:
    message = err.message or "The model failed to generate a response."
    return {"code": err.code or err.type or "server_error", "message": message}


def error_event(c: Ctx, err: InBandError, seq: int) -> bytes:
    """A terminal `response.failed` whose response has status "failed", the error, and no usage."""
    failed = response(c, "failed", [], False, _error(err))
    return event("response.failed", {"type": "response.failed", "sequence_number": seq, "response": failed})


def error_body(c: Ctx, err: InBandError) -> dict[str, Any]:
    return response(c, "failed", [], False, _error(err))
