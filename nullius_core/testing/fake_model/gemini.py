"""The Gemini API: GenerateContentResponse bodies and their `alt=sse` streams.

A reply is one candidate whose `content` (role "model") has a text part and
a `functionCall` part (`name`, `args`, `id`) per tool call. A stream is
`data: {GenerateContentResponse}` events with no `event:` names and no end
marker: the text in pieces, one event each; each function call whole in one
event (Gemini does not split a call's arguments); the last event carries the
candidate's `finishReason` ("STOP", "MAX_TOKENS") and the `usageMetadata`.
Without `alt=sse` a stream is one JSON array of the same chunks.
`usageMetadata.promptTokenCount` counts cached content
(`cachedContentTokenCount`); `candidatesTokenCount` leaves out the thoughts
(`thoughtsTokenCount`), as Google counts them.
"""

from __future__ import annotations

from typing import Any

from nullius_core.testing.fake_model.runner import arguments_value
from nullius_core.testing.fake_model.script import InBandError
from nullius_core.testing.fake_model.wire import Ctx, data_line, pieces

# Google's error statuses by HTTP status
STATUSES = {400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED", 404: "NOT_FOUND",
            429: "RESOURCE_EXHAUSTED", 500: "INTERNAL", 503: "UNAVAILABLE", 504: "DEADLINE_EXCEEDED"}


def finish_reason(c: Ctx) -> str:
    return "MAX_TOKENS" if c.reply.truncated else "STOP"


def usage(c: Ctx) -> dict[str, Any]:
    k = c.counts
    out: dict[str, Any] = {
        "promptTokenCount": k.input,
        "candidatesTokenCount": k.output - k.reasoning,
        "totalTokenCount": k.input + k.output,
        "promptTokensDetails": [{"modality": "TEXT", "tokenCount": k.input}],
    }
    if k.cached:
        out["cachedContentTokenCount"] = k.cached
    if k.reasoning:
        out["thoughtsTokenCount"] = k.reasoning
    return out


def _call_part(c: Ctx, i: int) -> dict[str, Any]:
    tc = c.reply.tool_calls[i]
    return {"functionCall": {"id": tc.id or f"call_fake{c.n}_{i}", "name": tc.name, "args": arguments_value(tc)}}


def _response(c: Ctx, parts: list[dict[str, Any]], last: bool) -> dict[str, Any]:
    candidate: dict[str, Any] = {"content": {"role": "model", "parts": parts}, "index": 0}
    out: dict[str, Any] = {"candidates": [candidate]}
    if last:
        candidate["finishReason"] = finish_reason(c)
        out["usageMetadata"] = usage(c)
    out["modelVersion"] = c.model
    out["responseId"] = f"fake{c.n}"
    return out


def body(c: Ctx) -> dict[str, Any]:
    parts = [{"text": c.reply.text}] if c.reply.text or not c.reply.tool_calls else []
    parts += [_call_part(c, i) for i in range(len(c.reply.tool_calls))]
    return _response(c, parts, last=True)


def chunks(c: Ctx) -> list[dict[str, Any]]:
    texts = [[{"text": p}] for p in pieces(c.reply.text or "", c.reply.chunk)]
    calls = [[_call_part(c, i)] for i in range(len(c.reply.tool_calls))]
    parts = texts + calls or [[{"text": ""}]]
    return [_response(c, p, last=i == len(parts) - 1) for i, p in enumerate(parts)]


def events(c: Ctx) -> list[bytes]:
    return [data_line(chunk) for chunk in chunks(c)]


def error_of(status: int, message: str | None = None) -> dict[str, Any]:
    """`{"error": {code, message, status}}`, as Google answers a non-2xx."""
    kind = STATUSES.get(status, "INTERNAL" if status >= 500 else "INVALID_ARGUMENT")
    return {"error": {"code": status, "message": message or f"Error {status}.", "status": kind}}


def _error(err: InBandError) -> dict[str, Any]:
    body = error_of(500, err.message or "An internal error has occurred.")
    if err.type:
        body["error"]["status"] = err.type
    return body


def error_event(c: Ctx, err: InBandError, seq: int) -> bytes:
    """An error object as a stream's event; the stream then ends."""
    return data_line(_error(err))


def error_body(c: Ctx, err: InBandError) -> dict[str, Any]:
    return _error(err)
