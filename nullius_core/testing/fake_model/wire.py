"""What the three shapes share: the reply being rendered, SSE framing, and error bodies."""

from __future__ import annotations

import json
from typing import Any

import attrs

from nullius_core.testing.fake_model.runner import Counts
from nullius_core.testing.fake_model.script import Reply

_dumps = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode


def dumps(value: Any) -> str:
    return _dumps(value)


def data_line(value: Any) -> bytes:
    """`data: {json}` and a blank line (Chat Completions' framing)."""
    return b"data: " + _dumps(value).encode() + b"\n\n"


def event(name: str, value: Any) -> bytes:
    """`event: NAME`, `data: {json}` and a blank line (Responses' and Messages' framing)."""
    return b"event: " + name.encode() + b"\ndata: " + _dumps(value).encode() + b"\n\n"


def pieces(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)] if text else []


@attrs.define(slots=True)
class Ctx:
    """One reply being rendered: `n` numbers its ids, `created` is its Unix time."""

    n: int
    model: str
    reply: Reply
    counts: Counts
    created: int
    include_usage: bool = False


# The providers' error types by HTTP status.
_OPENAI_ERRORS = {
    400: ("invalid_request_error", None, "Invalid request."),
    401: ("invalid_request_error", "invalid_api_key", "Incorrect API key provided."),
    403: ("invalid_request_error", "unsupported_country_region_territory", "Forbidden."),
    404: ("invalid_request_error", "unknown_url", "Not found."),
    429: ("requests", "rate_limit_exceeded", "Rate limit reached. Please try again later."),
    500: ("server_error", None, "The server had an error while processing your request. Sorry about that!"),
    503: ("server_error", None, "The engine is currently overloaded, please try again later."),
}
_ANTHROPIC_ERRORS = {
    400: ("invalid_request_error", "Invalid request."),
    401: ("authentication_error", "invalid x-api-key"),
    403: ("permission_error", "Your API key does not have permission to use the specified resource."),
    404: ("not_found_error", "Not found."),
    413: ("request_too_large", "Request exceeds the maximum allowed number of bytes."),
    429: ("rate_limit_error", "Number of request tokens has exceeded your per-minute rate limit."),
    500: ("api_error", "Internal server error"),
    529: ("overloaded_error", "Overloaded"),
}


def openai_error_body(status: int, message: str | None = None) -> dict[str, Any]:
    """`{"error": {message, type, param, code}}`, as OpenAI answers a non-2xx."""
    kind, code, default = _OPENAI_ERRORS.get(
        status, ("server_error" if status >= 500 else "invalid_request_error", None, f"Error {status}.")
    )
    return {"error": {"message": message or default, "type": kind, "param": None, "code": code}}


def anthropic_error_body(status: int, message: str | None = None, request_id: str | None = None) -> dict[str, Any]:
    """`{"type": "error", "error": {type, message}, "request_id"}`, as Anthropic answers a non-2xx."""
    kind, default = _ANTHROPIC_ERRORS.get(status, ("api_error" if status >= 500 else "invalid_request_error", f"Error {status}."))
    body: dict[str, Any] = {"type": "error", "error": {"type": kind, "message": message or default}}
    if request_id:
        body["request_id"] = request_id
    return body


def error_body(api: str | None, status: int, message: str | None = None, request_id: str | None = None) -> dict[str, Any]:
    if api in ("messages", "count_tokens"):
        return anthropic_error_body(status, message, request_id)
    return openai_error_body(status, message)
