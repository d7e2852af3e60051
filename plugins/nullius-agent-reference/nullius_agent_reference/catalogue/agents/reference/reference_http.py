"""A Chat Completions call over HTTP/1.1 on asyncio's streams: one POST, its JSON reply, the SDK's retry rule.

Why not the openai SDK: importing it takes about 1 s of CPU, paid by every
unit before its first call; the agent needs one request shape. Retries follow
the SDK's: a connection failure, a timeout, 408, 409, 429 and 5xx are tried
again up to NULLIUS_REFERENCE_MAX_RETRIES times (default 2), after
0.5 s x 2^n (at most 8 s, jittered) or the reply's retry-after (at most 60 s).
"""

from __future__ import annotations

import asyncio
import json
import random
from typing import Any
from urllib.parse import urlsplit

RETRIED = {408, 409, 429}
TIMEOUT = 600.0  # seconds for one call, as the SDK's default
LIMIT = 64 * 1024 * 1024  # bytes of a reply


class ModelCallError(Exception):
    """A call that failed: its HTTP status (None: no reply), message, body and request id."""

    def __init__(self, status: int | None, message: str, body: Any = None, request_id: str | None = None) -> None:
        super().__init__(message)
        self.status, self.message, self.body, self.request_id = status, message, body, request_id


class ChatClient:
    def __init__(self, base_url: str, api_key: str, max_retries: int = 2, timeout: float = TIMEOUT) -> None:
        url = urlsplit(base_url.rstrip("/") + "/chat/completions")
        if url.scheme not in ("http", "https") or not url.hostname:
            raise ValueError(f"OPENAI_BASE_URL must be an http(s) URL, found {base_url!r}")
        self.url, self.key, self.max_retries, self.timeout = url, api_key, max_retries, timeout

    async def create(self, body: dict[str, Any]) -> dict[str, Any]:
        data = json.dumps(body, ensure_ascii=False).encode()
        for attempt in range(self.max_retries + 1):
            last = attempt == self.max_retries
            try:
                status, headers, raw = await asyncio.wait_for(self._post(data), self.timeout)
            except (OSError, asyncio.TimeoutError, asyncio.IncompleteReadError, ValueError) as exc:
                if last:
                    name = "APITimeoutError" if isinstance(exc, asyncio.TimeoutError) else "APIConnectionError"
                    raise ModelCallError(None, f"{name}: {type(exc).__name__}: {exc}") from None
                await asyncio.sleep(_backoff(attempt, None))
                continue
            retry = headers.get("x-should-retry")
            if not last and (retry == "true" or (retry != "false" and (status in RETRIED or status >= 500))):
                await asyncio.sleep(_backoff(attempt, headers.get("retry-after")))
                continue
            return _reply(status, headers, raw)
        raise AssertionError("unreachable")

    async def _post(self, data: bytes) -> tuple[int, dict[str, str], bytes]:
        url = self.url
        ssl = None
        if url.scheme == "https":
            import ssl as ssl_module  # only for a remote endpoint: the relay is plain http on the loopback

            ssl = ssl_module.create_default_context()
        port = url.port or (443 if ssl else 80)
        reader, writer = await asyncio.open_connection(url.hostname, port, ssl=ssl, limit=LIMIT)
        try:
            path = url.path + (f"?{url.query}" if url.query else "")
            head = (f"POST {path} HTTP/1.1\r\nHost: {url.netloc}\r\nAuthorization: Bearer {self.key}\r\n"
                    f"Content-Type: application/json\r\nAccept: application/json\r\nContent-Length: {len(data)}\r\n"
                    "Connection: close\r\n\r\n")
            writer.write(head.encode("latin-1") + data)
            await writer.drain()
            return await _read_response(reader)
        finally:
            writer.close()


async def _read_response(reader: asyncio.StreamReader) -> tuple[int, dict[str, str], bytes]:
    status_line = (await reader.readline()).decode("latin-1")
    parts = status_line.split(" ", 2)
    if len(parts) < 2 or not parts[0].startswith("HTTP/") or not parts[1].isdigit():
        raise ValueError(f"not an HTTP reply: {status_line[:80]!r}")
    headers: dict[str, str] = {}
    while (line := (await reader.readline()).decode("latin-1").rstrip("\r\n")):
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    if headers.get("transfer-encoding", "").lower() == "chunked":
        body = bytearray()
        while (size := int((await reader.readline()).split(b";")[0].strip() or b"0", 16)) > 0:
            body += await reader.readexactly(size)
            await reader.readexactly(2)
        return int(parts[1]), headers, bytes(body)
    if "content-length" in headers:
        return int(parts[1]), headers, await reader.readexactly(int(headers["content-length"]))
    return int(parts[1]), headers, await reader.read()


def _backoff(attempt: int, retry_after: str | None) -> float:
    try:
        asked = float(retry_after) if retry_after is not None else None
    except ValueError:
        asked = None
    if asked is not None and 0 <= asked <= 60:
        return asked
    return min(0.5 * 2**attempt, 8.0) * (1 - 0.25 * random.random())


def _reply(status: int, headers: dict[str, str], raw: bytes) -> dict[str, Any]:
    request_id = headers.get("x-request-id")
    try:
        body = json.loads(raw) if raw else None
    except ValueError:
        body = raw.decode("utf-8", "replace")
    if status >= 400:
        raise ModelCallError(status, _message(body, status), body if isinstance(body, (dict, list, str)) else None, request_id)
    if not isinstance(body, dict):
        raise ModelCallError(status, "the reply is not a JSON object", body, request_id)
    return body


def _message(body: Any, status: int) -> str:
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and isinstance(inner.get("message"), str):
            return inner["message"]
    return f"Error code: {status}" + (f" - {body}" if body else "")
