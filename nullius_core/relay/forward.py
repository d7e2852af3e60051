"""One call's way to the provider and back: the request sent, the reply passed to the caller, what is kept of it.

A call holds at most `HOLD` bytes of its reply, whatever the provider sends:

* a whole reply (not `text/event-stream`) is read whole, up to `HOLD`, then
  sent (its facts read from it); a bigger one is passed on as it comes from
  there on, unread;
* a stream passes event by event; an event bigger than `HOLD` is passed on
  as it comes, unread by the API's tap;
* the record keeps the reply's first `HOLD` bytes and says when there were more.

Whatever goes back to the caller (status line, headers, body) goes through
the relay's shield: the provider's key never reaches the caller.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import aiohttp
import attrs
from aiohttp import web

from nullius_core import jsonfast
from nullius_core.contracts.model_api import Facts, ModelApi
from nullius_core.contracts.sse import Piece, Splitter
from nullius_core.limits import out_of_files
from nullius_core.relay.shield import Shield

HOLD = 16 * 2**20
READ = 64 * 1024  # what one pass of the loop takes from a reply; between two, the loop serves the other calls
HOP = frozenset(
    {"host", "content-length", "transfer-encoding", "connection", "keep-alive", "proxy-authorization",
     "proxy-authenticate", "te", "trailer", "upgrade", "accept-encoding", "content-encoding"}
)
# A reply's headers pass back but for hop-by-hop ones; a body compressed
# despite Accept-Encoding: identity keeps its Content-Encoding, so the caller can read it.
HOP_BACK = HOP - {"content-encoding"}


@attrs.define
class Kept:
    """The first `limit` bytes of a reply, for the record, and how many came in all."""

    limit: int = HOLD
    chunks: list[bytes] = attrs.field(factory=list)
    kept: int = 0
    total: int = 0

    def add(self, data: bytes) -> None:
        self.total += len(data)
        room = self.limit - self.kept
        if room > 0 and data:
            part = data if len(data) <= room else data[:room]
            self.chunks.append(part)
            self.kept += len(part)


@attrs.define
class Passage:
    """What one call has done so far: read when it fails half-way."""

    out: web.StreamResponse | None = None  # once prepared, the caller has had the status and headers
    tap: Any = None
    facts: Facts = attrs.field(factory=Facts)
    kept: Kept = attrs.field(factory=Kept)
    stream: bool = False
    unread: str | None = None

    def reply(self) -> bytes | list[bytes] | None:
        """The reply for the record: a whole body kept whole, anything else as text, None when nothing came."""
        if not self.kept.chunks:
            return None
        if not self.stream and self.kept.total == self.kept.kept and self.out is None:
            return b"".join(self.kept.chunks)
        return self.kept.chunks

    def current_facts(self) -> Facts:
        return self.tap.facts if self.tap is not None else self.facts


async def forward(
    session: aiohttp.ClientSession, request: web.Request, url: str, headers: dict[str, str], api: ModelApi, sent: Any,
    record: dict[str, Any], t0: float, call_seconds: float | None, shield: Shield, passage: Passage,
) -> web.StreamResponse:
    """Send the call and pass the reply back; record its status and timings in `record`."""
    timeout = aiohttp.ClientTimeout(total=call_seconds)
    try:
        async with session.post(url, data=jsonfast.dumps(sent.body), headers=headers, timeout=timeout) as up:
            record["status"] = up.status
            record["ms_first_byte"] = ms_since(t0)
            passed = shield.headers((k, v) for k, v in up.headers.items() if k.lower() not in HOP_BACK)
            reason = shield.text(up.reason or "") or None
            if up.headers.get("Content-Type", "").startswith("text/event-stream"):
                return await _stream(request, up, passed, reason, api, sent, record, t0, shield, passage)
            return await _whole(request, up, passed, reason, api, record, t0, shield, passage)
    except asyncio.TimeoutError:
        record["cut"] = f"past the call limit of {call_seconds:g} s"
        record.setdefault("status", 504)
        return passage.out or error_reply(504, "timeout", record["cut"])  # headers sent: the cut reply simply ends
    except (aiohttp.ClientError, ConnectionResetError, OSError) as exc:
        cause = f"{type(exc).__name__}: {exc}"
        record["cause"] = cause
        if passage.out is not None:
            record["broken"] = True  # the reply broke half-way: the caller's breaks too
            return passage.out
        if out_of_files(exc):
            record["status"] = 503
            return error_reply(503, "overloaded", f"the relay is out of file descriptors: {shield.text(cause)}")
        record["status"] = 502
        return error_reply(502, "upstream_unreachable", shield.text(cause))


async def _stream(request, up, passed, reason, api, sent, record, t0, shield: Shield, passage: Passage) -> web.StreamResponse:  # type: ignore[no-untyped-def]
    passage.stream = True
    out = passage.out = web.StreamResponse(status=up.status, reason=reason, headers=passed)
    await out.prepare(request)
    tap = passage.tap = api.tap(sent)
    splitter = Splitter(limit=HOLD)
    flow = shield.flow()
    caller = _Caller(out)
    async for chunk in up.content.iter_chunked(READ):
        passage.kept.add(chunk)
        send = []
        for item in splitter.feed(chunk):
            if isinstance(item, Piece):
                send.append(flow.piece(item.raw))
            elif _tap(tap, item, record):
                send.append(flow.event(item.raw))
        await caller.write(b"".join(send))
        await _turn(chunk)
    await caller.write(flow.piece(splitter.rest()) + flow.end())
    await caller.write_eof()
    if splitter.oversized:
        passage.unread = f"{splitter.oversized} events over {HOLD} bytes passed on unread"
    if caller.gone:
        # an SDK may hang up once it has the terminal event: the call is still recorded whole
        record["caller_gone"] = caller.gone
    record["ms_last_byte"] = ms_since(t0)
    return out


async def _whole(request, up, passed, reason, api, record, t0, shield: Shield, passage: Passage) -> web.StreamResponse:  # type: ignore[no-untyped-def]
    parts: list[bytes] = []
    if up.content_length is not None and up.content_length <= HOLD:
        parts.append(await up.read())  # the usual reply: its length said, within what a call holds
        passage.kept.add(parts[0])
    else:
        size = 0
        async for chunk in up.content.iter_chunked(READ):
            passage.kept.add(chunk)
            parts.append(chunk)
            size += len(chunk)
            if size > HOLD:
                break
    if sum(map(len, parts)) <= HOLD:
        data = b"".join(parts) if len(parts) != 1 else parts[0]
        record["ms_last_byte"] = ms_since(t0)
        try:
            passage.facts = api.reply(data)
        except Exception as exc:  # noqa: BLE001 - an adapter's bug never costs the caller its reply
            record["adapter_error"] = f"{type(exc).__name__}: {exc}"
        return web.Response(body=shield.bytes(data), status=up.status, reason=reason, headers=passed)
    # past what a call may hold: passed on as it comes, never read whole
    passage.unread = f"a whole reply over {HOLD} bytes: passed on as it came, not read"
    out = passage.out = web.StreamResponse(status=up.status, reason=reason, headers=passed)
    await out.prepare(request)
    flow = shield.flow()
    caller = _Caller(out)
    for part in parts:
        await caller.write(flow.piece(part))
        await _turn(part)
    parts.clear()
    async for chunk in up.content.iter_chunked(READ):
        passage.kept.add(chunk)
        await caller.write(flow.piece(chunk))
        await _turn(chunk)
    await caller.write(flow.end())
    await caller.write_eof()
    if caller.gone:
        record["caller_gone"] = caller.gone
    record["ms_last_byte"] = ms_since(t0)
    return out


async def _turn(chunk: bytes) -> None:
    """After a full read, the other calls' turn: data already buffered would otherwise be read without a pause."""
    if len(chunk) == READ:
        await asyncio.sleep(0)


class _Caller:
    """The caller's side of a stream: once it hangs up, the upstream is still read to its end and recorded."""

    def __init__(self, out: web.StreamResponse):
        self.out = out
        self.gone: str | None = None

    async def write(self, data: bytes) -> None:
        if self.gone is None and data:
            try:
                await self.out.write(data)
            except ConnectionResetError as exc:  # aiohttp's ClientConnectionResetError among them
                self.gone = f"{type(exc).__name__}: {exc}"

    async def write_eof(self) -> None:
        if self.gone is None:
            try:
                await self.out.write_eof()
            except ConnectionResetError as exc:
                self.gone = f"{type(exc).__name__}: {exc}"


def _tap(tap: Any, event: Any, record: dict[str, Any]) -> bool:
    try:
        return bool(tap.event(event))
    except Exception as exc:  # noqa: BLE001 - an adapter's bug never costs the caller an event
        record.setdefault("adapter_error", f"{type(exc).__name__}: {exc}")
        return True


def error_reply(status: int, kind: str, message: str) -> web.Response:
    return web.json_response({"error": {"type": kind, "message": message}}, status=status)


def ms_since(t0: float) -> float:
    return round((time.monotonic() - t0) * 1000, 3)
