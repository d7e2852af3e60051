"""The relay server: per-unit routes, the provider's key, every call recorded.

`/<unit>/v1/<path>` is a unit's route (`<unit>-judge` and `<unit>-simulator`
are routes of their own). A caller shows its route's token (Bearer or
x-api-key) and never sees the provider's key, which the relay puts in the
header the provider expects. Streams pass through event by event, in order,
unknown events included. A 429 reaches the caller as it came, never retried;
an upstream error passes with its status; a connection failure is a 502; a
call past its limit is cut. Each call is one line of the route's calls.jsonl.
"""

from __future__ import annotations

import asyncio
import secrets
import time
import uuid
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Literal

import aiohttp
import attrs
from aiohttp import web

from nullius_core import jsonfast
from nullius_core.jobs.records import iso, utcnow
from nullius_core.plugins.registries import ProviderSpec
from nullius_core.relay.api import Facts, ModelApi
from nullius_core.relay.records import Cleaner, Recorder, credential_name
from nullius_core.relay.sse import Splitter

HOP = frozenset(
    {"host", "content-length", "transfer-encoding", "connection", "keep-alive", "proxy-authorization",
     "proxy-authenticate", "te", "trailer", "upgrade", "accept-encoding", "content-encoding"}
)
# A reply's headers pass back but for hop-by-hop ones; a body compressed
# despite Accept-Encoding: identity keeps its Content-Encoding, so the caller can read it.
HOP_BACK = HOP - {"content-encoding"}
MAX_BODY = 32 * 1024 * 1024
Kind = Literal["agent", "judge", "simulator"]


@attrs.frozen(kw_only=True)
class Upstream:
    """Where the relay forwards: a provider, its base URL, its key (held here and nowhere else)."""

    provider: ProviderSpec
    base_url: str
    key: str | None


@attrs.define(kw_only=True)
class Route:
    unit: str
    token: str
    recorder: Recorder
    kind: Kind = "agent"
    model: str | None = None  # every call goes as this model, but side models
    side_models: frozenset[str] = frozenset()
    pins: dict[str, list[str]] = attrs.field(factory=dict)  # model sent -> serving providers, in order
    call_seconds: float | None = None
    in_flight: int = 0
    idle: asyncio.Event = attrs.field(factory=asyncio.Event)


def new_token() -> str:
    """A route's token: it opens that route alone."""
    return "nlr-" + secrets.token_urlsafe(24)


def _error(status: int, kind: str, message: str) -> web.Response:
    return web.json_response({"error": {"type": kind, "message": message}}, status=status)


def _caller_token(request: web.Request) -> str | None:
    auth = request.headers.get("Authorization", "")
    if auth[:7].lower() == "bearer ":
        return auth[7:].strip()
    return request.headers.get("x-api-key")


def _effort(body: dict[str, Any]) -> Any:
    reasoning = body.get("reasoning")
    if isinstance(reasoning, dict) and "effort" in reasoning:
        return reasoning["effort"]
    if "reasoning_effort" in body:
        return body["reasoning_effort"]
    output = body.get("output_config")
    if isinstance(output, dict) and "effort" in output:  # Anthropic's effort
        return output["effort"]
    thinking = body.get("thinking")
    return thinking.get("budget_tokens") if isinstance(thinking, dict) else None


class Relay:
    def __init__(self, upstream: Upstream, apis: Iterable[tuple[tuple[str, ...], ModelApi]], keep_bodies: bool = True):
        self.upstream = upstream
        self.by_path: dict[str, ModelApi] = {}
        for paths, api in apis:
            for path in paths:
                if path in self.by_path:
                    raise ValueError(f"model APIs {self.by_path[path].name!r} and {api.name!r} both serve {path}")
                self.by_path[path] = api
        self.routes: dict[str, Route] = {}
        self._tokens: dict[str, str] = {}
        self.cleaner = Cleaner([upstream.key] if upstream.key else [])
        self.keep_bodies = keep_bodies
        self.base_url = ""
        self._runner: web.AppRunner | None = None
        self._session: aiohttp.ClientSession | None = None

    # --- life ----------------------------------------------------------------

    async def start(self, host: str = "127.0.0.1", port: int = 0) -> str:
        app = web.Application(client_max_size=MAX_BODY)
        app.router.add_route("*", "/{unit}/v1/{tail:.*}", self.handle)
        app.router.add_route("*", "/{tail:.*}", self._outside)
        self._session = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=0, ttl_dns_cache=300),
            auto_decompress=False,
            skip_auto_headers=("User-Agent", "Accept-Encoding"),
        )
        # at the end of a run, calls still waiting on the provider are cut, not waited for
        self._runner = web.AppRunner(app, access_log=None, handle_signals=False, shutdown_timeout=1.0)
        await self._runner.setup()
        site = web.TCPSite(self._runner, host, port, backlog=4096)
        await site.start()
        sockets = site._server.sockets  # type: ignore[union-attr]
        self.base_url = f"http://{host}:{sockets[0].getsockname()[1]}"
        return self.base_url

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
        if self._session is not None:
            await self._session.close()
        for route in self.routes.values():
            route.recorder.close()

    def add_route(self, unit: str, folder: Path, token: str | None = None, **options: Any) -> Route:
        token = token or new_token()
        self.cleaner.add(token)
        route = Route(unit=unit, token=token, recorder=Recorder(folder, self.cleaner, self.keep_bodies), **options)
        self.routes[unit] = route
        self._tokens[token] = unit
        return route

    def remove_route(self, unit: str) -> None:
        route = self.routes.pop(unit, None)
        if route is not None:
            self._tokens.pop(route.token, None)
            route.recorder.close()

    async def quiet(self, unit: str, timeout: float = 30) -> None:
        """Until the route's calls in flight are recorded: a caller can see its reply end before its record lands."""
        route = self.routes.get(unit)
        if route is not None and route.in_flight:
            await asyncio.wait_for(route.idle.wait(), timeout)

    async def retire(self, unit: str, timeout: float = 5) -> None:
        """End a route: its calls in flight recorded (waiting `timeout` at most), then removed.

        A call still waiting on the provider after that is the relay's to
        finish recording; the route takes no new call.
        """
        try:
            await self.quiet(unit, timeout=timeout)
        except asyncio.TimeoutError:
            pass
        self.remove_route(unit)

    def url(self, unit: str) -> str:
        return f"{self.base_url}/{unit}/v1"

    async def _outside(self, request: web.Request) -> web.Response:
        return _error(404, "not_found", "no route here: a unit's routes are /<unit>/v1/...")

    # --- one call ------------------------------------------------------------

    async def handle(self, request: web.Request) -> web.StreamResponse:
        started, t0 = utcnow(), time.monotonic()
        route = self.routes.get(request.match_info["unit"])
        if route is None:
            return _error(404, "not_found", "no such route")
        token = _caller_token(request)
        if token != route.token:
            if token in self._tokens:
                return _error(403, "forbidden", "this token is another route's")
            return _error(401, "unauthorized", "this route's token is required (Bearer or x-api-key)")
        path = "/" + request.match_info["tail"]
        api = self.by_path.get(path)
        if request.method != "POST" or api is None:
            return _error(404, "not_found", f"the relay passes POST {', '.join(sorted(self.by_path))}; not {request.method} {path}")
        try:
            raw = await request.read()
            body = jsonfast.loads(raw)
        except web.HTTPRequestEntityTooLarge:
            return _error(413, "too_large", f"a request body is at most {MAX_BODY} bytes")
        except (ValueError, UnicodeDecodeError):
            return _error(400, "invalid_request", "the body is not JSON")
        if not isinstance(body, dict):
            return _error(400, "invalid_request", "the body is not a JSON object")
        route.in_flight += 1
        route.idle.clear()
        try:
            return await self._call(request, route, api, body, raw, started, t0)
        finally:
            route.in_flight -= 1
            if route.in_flight == 0:
                route.idle.set()

    async def _call(
        self, request: web.Request, route: Route, api: ModelApi, body: dict[str, Any], raw: bytes, started: Any, t0: float
    ) -> web.StreamResponse:
        path = "/" + request.match_info["tail"]
        call_id = uuid.uuid4().hex[:16]
        asked = body.get("model")
        side = isinstance(asked, str) and asked in route.side_models
        model = None if side or route.model is None else route.model
        record: dict[str, Any] = {
            "id": call_id,
            "route": route.unit,
            "kind": route.kind,
            "api": api.name,
            "path": path,
            "started": iso(started),
            "model_asked": asked,
            "model_sent": model or asked,
            "side": side,
            "stream": body.get("stream") is True,
            "key_headers": sorted({k.lower() for k in request.headers if credential_name(k)}),
            "request": {"reasoning_effort": _effort(body)},
        }
        guard = route.recorder.stopped() if route.kind == "agent" and not side else None
        if guard is not None:
            record.update(status=403, refused=f"stopped: {guard}", ms_total=_ms(t0))
            route.recorder.call(record)
            return _error(403, "stopped", f"the benchmark stopped this unit's calls: {guard}")
        pin = route.pins.get(model or asked or "")
        routing = {"order": list(pin), "allow_fallbacks": False} if pin else None
        if routing is not None:
            record["routing_sent"] = routing
            if "provider" in body:
                record["routing_caller"] = body["provider"]
        sent = api.send(body, model, routing)
        response, facts, reply_body = await self._forward(request, route, api, sent, record, t0)
        record["usage"] = facts.usage.as_dict()
        record["served_by"] = facts.served_by
        record["model_served"] = facts.model
        record["end"] = facts.end
        if facts.error is not None:
            record["error"] = facts.error
        record["ms_total"] = _ms(t0)
        route.recorder.call(record)
        route.recorder.body(call_id, raw, reply_body)
        route.recorder.log(
            f"{record['started']} {route.unit} {api.name} {record.get('status')} {record['model_sent']} "
            f"{record['ms_total']}ms {jsonfast.dumps_text(record['usage'])}"
        )
        if (record.get("broken") or (record.get("cut") and isinstance(response, web.StreamResponse) and response.prepared)) and request.transport is not None:
            # the provider's stream broke: the caller's breaks too, rather than seem to end well
            request.transport.abort()
        return response

    async def _forward(
        self, request: web.Request, route: Route, api: ModelApi, sent: Any, record: dict[str, Any], t0: float
    ) -> tuple[web.StreamResponse, Facts, Any]:
        headers = {k: v for k, v in request.headers.items() if k.lower() not in HOP and not credential_name(k)}
        headers["Accept-Encoding"] = "identity"
        headers["Content-Type"] = "application/json"
        key = self.upstream.key
        if key:
            if self.upstream.provider.key_header == "x-api-key":
                headers["x-api-key"] = key
            else:
                headers["Authorization"] = f"Bearer {key}"
        url = self.upstream.base_url.rstrip("/") + str(record["path"])
        if request.query_string:
            url += "?" + request.query_string
        timeout = aiohttp.ClientTimeout(total=route.call_seconds) if route.call_seconds else aiohttp.ClientTimeout(total=None)
        assert self._session is not None
        out: web.StreamResponse | None = None
        tap: Any = None
        chunks: list[bytes] = []
        facts = Facts()
        try:
            async with self._session.post(url, data=jsonfast.dumps(sent.body), headers=headers, timeout=timeout) as up:
                record["status"] = up.status
                record["ms_first_byte"] = _ms(t0)
                passed = {k: v for k, v in up.headers.items() if k.lower() not in HOP_BACK}
                if up.headers.get("Content-Type", "").startswith("text/event-stream"):
                    out = web.StreamResponse(status=up.status, reason=up.reason, headers=passed)
                    await out.prepare(request)
                    tap = api.tap(sent)
                    splitter = Splitter()
                    caller = _Caller(out)
                    async for chunk in up.content.iter_any():
                        for event in splitter.feed(chunk):
                            chunks.append(event.raw)
                            if _tap(tap, event, record):
                                await caller.write(event.raw)
                    rest = splitter.rest()
                    if rest:
                        chunks.append(rest)
                        await caller.write(rest)
                    await caller.write_eof()
                    if caller.gone:
                        # an SDK may hang up once it has the terminal event: the call is still recorded whole
                        record["caller_gone"] = caller.gone
                    facts = tap.facts
                    record["ms_last_byte"] = _ms(t0)
                    return out, facts, b"".join(chunks).decode("utf-8", "replace")
                data = await up.read()
                record["ms_last_byte"] = _ms(t0)
                try:
                    facts = api.reply(data)
                except Exception as exc:  # noqa: BLE001 - an adapter's bug never costs the caller its reply
                    record["adapter_error"] = f"{type(exc).__name__}: {exc}"
                reply = web.Response(body=data, status=up.status, reason=up.reason, headers=passed)
                return reply, facts, data
        except asyncio.TimeoutError:
            record["cut"] = f"past the call limit of {route.call_seconds:g} s"
            record.setdefault("status", 504)
            facts = tap.facts if tap is not None else facts  # what the stream said before it was cut
            return await self._fail(request, out, 504, "timeout", record["cut"]), facts, _partial(chunks)
        except (aiohttp.ClientError, ConnectionResetError, OSError) as exc:
            cause = f"{type(exc).__name__}: {exc}"
            if out is not None:
                # the stream broke half-way: the caller's breaks too
                record["cause"] = cause
                record["broken"] = True
                return out, (tap.facts if tap is not None else facts), _partial(chunks)
            record["cause"] = cause
            record["status"] = 502
            return await self._fail(request, None, 502, "upstream_unreachable", cause), facts, None

    async def _fail(self, request: web.Request, out: web.StreamResponse | None, status: int, kind: str, message: str) -> web.StreamResponse:
        if out is not None:
            return out  # headers are sent: the cut stream simply ends
        return _error(status, kind, message)


class _Caller:
    """The caller's side of a stream: once it hangs up, the upstream is still read to its end and recorded."""

    def __init__(self, out: web.StreamResponse):
        self.out = out
        self.gone: str | None = None

    async def write(self, data: bytes) -> None:
        if self.gone is None:
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


def _ms(t0: float) -> float:
    return round((time.monotonic() - t0) * 1000, 3)


def _partial(chunks: list[bytes]) -> str | None:
    return b"".join(chunks).decode("utf-8", "replace") if chunks else None
