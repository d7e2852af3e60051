"""The replay relay: a route's calls answered from a job's own record, never from a provider.

`ReplayRelay` is the relay with another upstream: its client session is a
`Replayer`, which answers each call with the recorded reply of the same
route, matched by order and by the digest of the normalized request
(`normal.py`), a stream read by read as it came. Everything else (routes,
tokens, the shield, the tap, the record) is the relay's own, so a replayed
call is recorded as any call is, with `replayed` naming the call it replays.

The first call whose request matches no recorded one is a divergence: its
record says `diverged` (its index on the route, the recorded call it was
compared with, the fields that differ). Without `live`, it and the route's
later calls are answered 409 `replay_diverged` and the unit ends there
(`ReplayDiverged`, run/unit_end.py); with `live`, they go to the run's real
provider.
"""

from __future__ import annotations

import contextvars
from pathlib import Path
from typing import Any

import attrs
from aiohttp import web

from nullius_core import jsonfast
from nullius_core.fsutil import read_json_lines
from nullius_core.relay.normal import differences, digest, normalized, places_of
from nullius_core.relay.seal import SEALED
from nullius_core.relay.server import Relay, Route

DIVERGED_STATUS = 409


@attrs.define
class Recorded:
    """One recorded call of a route: its digest, and what replay answers with."""

    id: str
    index: int
    digest: str
    status: int
    stream: bool
    request: Any
    response: Any
    chunks: list[int] | None
    folder: Path


def record_folder(source: Path, route: str) -> Path:
    """Where a route of the source job recorded: `<trial>/.work/relay`, or `relay-judge` / `relay-simulator` for a voice's route."""
    for role in ("judge", "simulator"):
        if route.endswith(f"-{role}"):
            return source / route.removesuffix(f"-{role}") / ".work" / f"relay-{role}"
    return source / route / ".work" / "relay"


def read_route(folder: Path) -> list[Recorded]:
    """A route's recorded calls in the order they started; FileNotFoundError when the record replay needs is not there."""
    sealed = read_json_lines(folder / SEALED) if (folder / SEALED).is_file() else None
    if sealed is None:
        raise FileNotFoundError(folder / SEALED)
    calls = {c.get("id"): c for c in read_json_lines(folder / "calls.jsonl")}
    bodies = {b.get("id"): b for b in read_json_lines(folder / "bodies.jsonl")}
    out = []
    for line in sealed:
        call, body = calls.get(line["id"]) or {}, bodies.get(line["id"]) or {}
        out.append(Recorded(id=line["id"], index=line["index"], digest=line["digest"], status=int(call.get("status") or 502),
                            stream=bool(line.get("stream")), request=body.get("request"), response=body.get("response"),
                            chunks=body.get("chunks"), folder=folder))
    return out


@attrs.define
class RouteBook:
    """One route's recorded calls not yet answered, and how far its replay went."""

    left: list[Recorded]
    taken: int = 0
    diverged: bool = False


class Book:
    """The source job's record, read route by route as each route makes its first call."""

    def __init__(self, source: Path):
        self.source = source
        self.routes: dict[str, RouteBook] = {}

    def route(self, name: str) -> RouteBook:
        if name not in self.routes:
            folder = record_folder(self.source, name)
            try:
                calls = read_route(folder)
            except FileNotFoundError:
                calls = []
            self.routes[name] = RouteBook(left=calls)
        return self.routes[name]


@attrs.define
class _Pending:
    route: Route
    raw: bytes
    record: dict[str, Any] | None = None


_CALL: contextvars.ContextVar[_Pending] = contextvars.ContextVar("nullius_replay_call")


class ReplayRelay(Relay):
    """The relay, its upstream the source job's record (and, with `live`, the run's provider after a divergence)."""

    def __init__(self, *args: Any, source: Path, live: bool, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.book = Book(source)
        self.live = live
        self.real: Any = None  # the run's own client session: a live call's way to the provider
        if self.meter is not None:
            self.meter = _Meter(self.meter)  # type: ignore[assignment]

    async def start(self, host: str = "127.0.0.1", port: int = 0) -> str:
        url = await super().start(host, port)
        self.real, self._session = self._session, Replayer(self)  # type: ignore[assignment]
        return url

    async def stop(self) -> None:
        self._session = self.real
        await super().stop()

    async def _call(self, request: web.Request, route: Route, match: Any, body: dict[str, Any], raw: bytes, started: Any,
                    t0: float) -> web.StreamResponse:
        token = _CALL.set(_Pending(route=route, raw=raw))
        try:
            return await super()._call(request, route, match, body, raw, started, t0)
        finally:
            _CALL.reset(token)

    def _record(self, request: web.Request, route: Route, match: Any, body: dict[str, Any], started: Any) -> Any:
        record, model = super()._record(request, route, match, body, started)
        _CALL.get().record = record
        return record, model


class _Meter:
    """The run's meter: a replayed call cost nothing (no provider answered it); a live one is priced as any call."""

    def __init__(self, meter: Any):
        self._meter = meter

    def charge(self, record: dict[str, Any]) -> dict[str, Any]:
        if "replayed" in record or ("diverged" in record and not record.get("live")):
            return {"as_served_usd": 0.0, "first_run_usd": 0.0, "why": "replayed from the job's record: no provider answered it"}
        return self._meter.charge(record)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._meter, name)


class Replayer:
    """In place of the relay's client session: `post()` answers from the book."""

    def __init__(self, relay: ReplayRelay):
        self.relay = relay

    def post(self, url: str, data: bytes, headers: dict[str, str], timeout: Any) -> Any:
        pending = _CALL.get()
        record = pending.record
        assert record is not None
        book = self.relay.book.route(pending.route.unit)
        if book.diverged:
            return self._diverged(url, data, headers, timeout, record, None)
        request = jsonfast.loads("".join(self.relay.cleaner.raw(pending.raw, is_json=True)))  # as the record keeps it: cleaned
        normal = normalized(request, places_of(pending.route.recorder.folder))
        wanted = digest(normal)
        match = next((c for c in book.left if c.digest == wanted), None)  # the next in order, else one made beside it
        if match is not None:
            book.left.remove(match)
            book.taken += 1
            record["replayed"] = match.id
            return _recorded(match)
        book.diverged = True
        return self._diverged(url, data, headers, timeout, record, _divergence(book, normal))

    def _diverged(self, url: str, data: bytes, headers: dict[str, str], timeout: Any, record: dict[str, Any],
                  divergence: dict[str, Any] | None) -> Any:
        if divergence is not None:
            record["diverged"] = divergence
        if self.relay.live:
            record["live"] = True
            return self.relay.real.post(url, data=data, headers=headers, timeout=timeout)
        return _refusal(divergence)


def _divergence(book: RouteBook, normal: Any) -> dict[str, Any]:
    """Which call diverged (its index on the route), the recorded call it was held to, and the fields that differ."""
    index = book.taken
    if not book.left:
        return {"index": index, "source_call": None, "diff": [], "differing": 0,
                "why": f"the recorded route made {index} call(s); this replay made another"}
    expected = book.left[0]
    old = normalized(expected.request, places_of(expected.folder))
    found, count = differences(old, normal)
    return {"index": index, "source_call": expected.id, "diff": [attrs.asdict(d) for d in found], "differing": count,
            "why": "the request differs from the recorded one"}


class _Content:
    def __init__(self, pieces: list[bytes]):
        self._pieces = pieces

    async def iter_chunked(self, _size: int) -> Any:
        for piece in self._pieces:
            yield piece


class _Reply:
    """A reply as the relay's forward() reads a provider's: status, headers, a body whole or read by read."""

    reason = None

    def __init__(self, status: int, data: bytes, pieces: list[bytes], stream: bool):
        self.status = status
        self.headers = {"Content-Type": "text/event-stream" if stream else "application/json"}
        self.content_length = None if stream else len(data)
        self.content = _Content(pieces)
        self._data = data

    async def read(self) -> bytes:
        return self._data

    async def __aenter__(self) -> _Reply:
        return self

    async def __aexit__(self, *exc: Any) -> None:
        return None


def _recorded(call: Recorded) -> _Reply:
    """The recorded reply: its status, its body, a stream in the reads it came in (one read for a whole body)."""
    response = call.response
    data = b"" if response is None else response.encode() if isinstance(response, str) else jsonfast.dumps(response)
    sizes = call.chunks or []
    if sizes and sum(sizes) == len(data):
        pieces, at = [], 0
        for size in sizes:
            pieces.append(data[at:at + size])
            at += size
    elif call.stream:  # cleaning changed the stream's length (a key it removed): its events, one by one
        pieces = [event + b"\n\n" for event in data.split(b"\n\n") if event]
    else:
        pieces = [data] if data else []
    return _Reply(call.status, data, pieces, call.stream)


def _refusal(divergence: dict[str, Any] | None) -> _Reply:
    """A diverged call's answer without --live-after-divergence: 409, replay_diverged."""
    what = f"call {divergence['index']} of this route differs from the recorded one" if divergence else "this route diverged earlier"
    data = jsonfast.dumps({"error": {"type": "replay_diverged", "message": f"replay: {what}; the unit ends here"}})
    return _Reply(DIVERGED_STATUS, data, [data], stream=False)


def unreplayable(source: Path, trials: list[str]) -> str | None:
    """Why the job in `source` cannot be replayed (its trials' records lack what replay needs), or None when it can."""
    lacking = []
    for name in trials:
        folder = record_folder(source, name)
        if (folder / "calls.jsonl").is_file() and not ((folder / SEALED).is_file() and (folder / "bodies.jsonl").is_file()):
            lacking.append(name)
    if not lacking:
        return None
    return (f"{source} was recorded without what replay needs: {len(lacking)} trial(s) lack .work/relay/{SEALED} "
            f"(each call's request digest and reply's tool-call ids) or bodies.jsonl, first {lacking[0]}; "
            "a job recorded before Nullius kept them cannot be replayed: run it again to record them")
