"""The relay server: per-unit routes, the provider's key, every call recorded.

`/<unit>/v1/<path>` is a unit's route (`<unit>-judge` and `<unit>-simulator`
are routes of their own). A caller shows its route's token (Bearer,
x-api-key or x-goog-api-key) and never sees the provider's key, which the relay puts in the
header the provider expects, and takes out of whatever comes back
(`shield.py`). Streams pass through event by event, in order, unknown events
included (`forward.py`). A 429 reaches the caller as it came, never retried;
an upstream error passes with its status; a connection failure is a 502; a
call past its limit is cut; a call the relay itself cannot serve is a JSON
503 or 500. Each call is one line of the route's calls.jsonl. A path that
names the model (Gemini's `/v1beta/models/{model}:generateContent`) is sent
with the run's model in its place, as a body's `model` is for the others.
"""

from __future__ import annotations

import asyncio
import re
import secrets
import time
import uuid
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, Literal

import aiohttp
import attrs
from aiohttp import web

from nullius_core import jsonfast
from nullius_core.contracts.model_api import ModelApi
from nullius_core.jobs.records import iso, utcnow
from nullius_core.limits import out_of_files, raise_open_files
from nullius_core.relay.cleaning import Cleaner, credential_name
from nullius_core.relay.forward import HOP, Passage, error_reply, forward, ms_since
from nullius_core.relay.meter import CostMeter
from nullius_core.relay.pins import reads
from nullius_core.relay.window import refused_for_window
from nullius_core.relay.records import Recorder, Writer
from nullius_core.relay.upstream import Upstream

MAX_BODY = 32 * 1024 * 1024
Kind = Literal["agent", "judge", "simulator", "benchmark"]  # benchmark: the run's own relay for a driver that embeds


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


def _caller_token(request: web.Request) -> str | None:
    auth = request.headers.get("Authorization", "")
    if auth[:7].lower() == "bearer ":
        return auth[7:].strip()
    return request.headers.get("x-api-key") or request.headers.get("x-goog-api-key")


@attrs.frozen
class PathMatch:
    """The API a caller's path is for, and the model named in the path (Gemini's `/models/{model}:...`), if any."""

    api: ModelApi
    template: str
    model: str | None = None

    def sent_path(self, model: str | None) -> str:
        """The path the provider gets: the run's model in place of the caller's."""
        return self.template.replace("{model}", model or self.model or "")


def _template(path: str) -> re.Pattern[str]:
    """`/v1beta/models/{model}:generateContent` as a pattern: the model is one segment, without `/` or `:`."""
    head, _, tail = path.partition("{model}")
    return re.compile(re.escape(head) + r"(?P<model>[^/:]+)" + re.escape(tail) + r"\Z")


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
    if isinstance(thinking, dict):
        return thinking.get("budget_tokens")
    config = body.get("generationConfig")  # Gemini's: a level, or a budget of thinking tokens
    thinking = config.get("thinkingConfig") if isinstance(config, dict) else None
    if isinstance(thinking, dict):
        return thinking.get("thinkingLevel", thinking.get("thinkingBudget"))
    return None


class Relay:
    def __init__(self, upstream: Upstream, apis: Iterable[tuple[tuple[str, ...], ModelApi]], keep_bodies: bool = True,
                 meter: CostMeter | None = None, pins: dict[str, list[str]] | None = None):
        self.upstream = upstream
        self.pins = dict(pins or {})  # model sent -> serving providers, on every route (a route's own win: relay serve's)
        self.meter = meter  # prices each call as it is recorded (meter.py)
        self.by_path: dict[str, ModelApi] = {}
        self.by_template: list[tuple[re.Pattern[str], str, ModelApi]] = []  # paths naming the model
        for paths, api in apis:
            for path in paths:
                if path in self.by_path:
                    raise ValueError(f"model APIs {self.by_path[path].name!r} and {api.name!r} both serve {path}")
                self.by_path[path] = api
                if "{model}" in path:
                    self.by_template.append((_template(path), path, api))
        self.routes: dict[str, Route] = {}
        self._tokens: dict[str, str] = {}
        self.cleaner = Cleaner(hidden=[upstream.key] if upstream.key else [])  # recorded nowhere, handed back to no caller
        self.keep_bodies = keep_bodies
        self.writer = Writer()
        self.base_url = ""
        self._runner: web.AppRunner | None = None
        self._session: aiohttp.ClientSession | None = None
        # told each call's finished record, on the relay's loop: they must be quick and never raise
        self.watchers: list[Callable[[dict[str, Any]], None]] = []

    # --- life ----------------------------------------------------------------

    async def start(self, host: str = "127.0.0.1", port: int = 0) -> str:
        raise_open_files()  # two descriptors a stream: the usual soft limit of 1,024 is spent long before the hard one
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
        await self.writer.drained()
        self.writer.close()

    def add_route(self, unit: str, folder: Path, token: str | None = None, **options: Any) -> Route:
        token = token or new_token()
        self.cleaner.add(token)
        route = Route(unit=unit, token=token, recorder=Recorder(folder, self.cleaner, self.writer, self.keep_bodies), **options)
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
        if route is not None:
            await asyncio.wait_for(self._quiet(route), timeout)

    async def _quiet(self, route: Route) -> None:
        if route.in_flight:
            await route.idle.wait()
        await route.recorder.written()

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
        return error_reply(404, "not_found", "no route here: a unit's routes are /<unit>/v1/...")

    # --- one call ------------------------------------------------------------

    async def handle(self, request: web.Request) -> web.StreamResponse:
        started, t0 = utcnow(), time.monotonic()
        route = self.routes.get(request.match_info["unit"])
        if route is None:
            return error_reply(404, "not_found", "no such route")
        token = _caller_token(request)
        if token != route.token:
            if token in self._tokens:
                return error_reply(403, "forbidden", "this token is another route's")
            return error_reply(401, "unauthorized", "this route's token is required (Bearer, x-api-key or x-goog-api-key)")
        path = "/" + request.match_info["tail"]
        match = self._match(path)
        if request.method != "POST" or match is None:
            return error_reply(404, "not_found", f"the relay passes POST {', '.join(sorted(self.by_path))}; not {request.method} {path}")
        try:
            raw = await request.read()
            body = jsonfast.loads(raw)
        except web.HTTPRequestEntityTooLarge:
            return error_reply(413, "too_large", f"a request body is at most {MAX_BODY} bytes")
        except (ValueError, UnicodeDecodeError):
            return error_reply(400, "invalid_request", "the body is not JSON")
        if not isinstance(body, dict):
            return error_reply(400, "invalid_request", "the body is not a JSON object")
        route.in_flight += 1
        route.idle.clear()
        try:
            return await self._call(request, route, match, body, raw, started, t0)
        finally:
            route.in_flight -= 1
            if route.in_flight == 0:
                route.idle.set()

    def _match(self, path: str) -> PathMatch | None:
        api = self.by_path.get(path)
        if api is not None and "{model}" not in path:
            return PathMatch(api=api, template=path)
        for pattern, template, api in self.by_template:
            found = pattern.match(path)
            if found:
                return PathMatch(api=api, template=template, model=found["model"])
        return None

    async def _call(
        self, request: web.Request, route: Route, match: PathMatch, body: dict[str, Any], raw: bytes, started: Any, t0: float
    ) -> web.StreamResponse:
        api = match.api
        record, model = self._record(request, route, match, body, started)
        passage = Passage()
        try:
            guard = route.recorder.stopped() if route.kind == "agent" and not record["side"] else None
            if guard is not None:
                record.update(status=403, refused=f"stopped: {guard}", ms_total=ms_since(t0))
                route.recorder.call(record)
                return error_reply(403, "stopped", f"the benchmark stopped this unit's calls: {guard}")
            routing = self._routing(route, record, body, model)
            sent = api.send(body, model, routing)
            assert self._session is not None
            url = self._url(match.sent_path(model), request)
            response = await forward(self._session, request, url, self._headers(request, routing is not None and api), api, sent,
                                     record, t0, route.call_seconds, self.cleaner.shield, passage)
        except asyncio.CancelledError:  # the relay is stopping (the end of a run): the call is cut, and recorded so
            record["cut"] = "the relay stopped before the reply ended"
            record.setdefault("status", 504)
            self._recorded(route, api, record, raw, passage, t0)
            raise
        except Exception as exc:  # noqa: BLE001 - the relay's own failure is answered and recorded, never a bare 500
            response = self._failed(request, record, passage, exc)
        self._recorded(route, api, record, raw, passage, t0)
        if (record.get("broken") or (record.get("cut") and response.prepared)) and request.transport is not None:
            # the provider's reply broke (or was cut) half-way: the caller's breaks too, rather than seem to end well
            request.transport.abort()
        return response

    def _record(self, request: web.Request, route: Route, match: PathMatch, body: dict[str, Any], started: Any) -> tuple[dict[str, Any], str | None]:
        """The call's record as far as the request tells it, and the model to send (None: as asked)."""
        api = match.api
        asked = match.model if match.model is not None else body.get("model")
        side = isinstance(asked, str) and asked in route.side_models
        model = None if side or route.model is None else route.model
        return {
            "id": uuid.uuid4().hex[:16],
            "route": route.unit,
            "kind": route.kind,
            "api": api.name,
            "path": "/" + request.match_info["tail"],
            "started": iso(started),
            "model_asked": asked,
            "model_sent": model or asked,
            "side": side,
            # Gemini asks for a stream in its path and query (`:streamGenerateContent?alt=sse`), not its body
            "stream": body.get("stream") is True or request.query.get("alt") == "sse",
            "key_headers": sorted({k.lower() for k in request.headers if credential_name(k)}),
            "request": {"reasoning_effort": _effort(body)},
        }, model

    def _routing(self, route: Route, record: dict[str, Any], body: dict[str, Any], model: str | None) -> dict[str, Any] | None:
        sent = model or record["model_asked"] or ""
        pin = route.pins.get(sent) or self.pins.get(sent)
        if not pin:
            return None
        routing = {"order": list(pin), "allow_fallbacks": False}
        record["routing_sent"] = routing
        if "provider" in body:
            record["routing_caller"] = body["provider"]
        return routing

    def _recorded(self, route: Route, api: ModelApi, record: dict[str, Any], raw: bytes, passage: Passage, t0: float) -> None:
        """What the reply said of itself, how much of it came and was kept; then the call's lines handed to the recorder."""
        facts = passage.current_facts()
        if "ms_first_byte" in record:
            record["reply_bytes"] = passage.kept.total
        if passage.kept.total > passage.kept.kept:
            record["reply_cut"] = passage.kept.kept
        if passage.unread:
            record["unread"] = passage.unread
        record["usage"] = facts.usage.as_dict()
        record["served_by"] = facts.served_by
        if "routing_sent" in record:  # whether the provider that answered is one the pin allows (pins.py)
            record["held"] = reads(facts.served_by, record["routing_sent"]["order"]) if record.get("status") == 200 else None
        record["model_served"] = facts.model
        record["end"] = facts.end
        if facts.error is not None:
            record["error"] = facts.error
        if record.get("status") == 200 and facts.end is not None and facts.error is None and not facts.content and not passage.unread:
            record["empty"] = True  # neither text nor a tool call: a reply its output limit cut before it said anything
        if refused_for_window(record.get("status"), facts.error):
            record["context_window"] = True
            if route.kind == "agent" and not record["side"]:  # the benchmark (and the unit's end) read it there
                route.recorder.note_stop(f"context window: the model's context window refused call {record['id']}")
        record["ms_total"] = ms_since(t0)
        if self.meter is not None:
            record["cost"] = self.meter.charge(record)
        for watch in self.watchers:
            watch(record)
        route.recorder.finish(record, raw, passage.reply(), (
            f"{record['started']} {route.unit} {api.name} {record.get('status')} {record['model_sent']} "
            f"{record['ms_total']}ms {jsonfast.dumps_text(record['usage'])}"
        ))

    def _failed(self, request: web.Request, record: dict[str, Any], passage: Passage, exc: Exception) -> web.StreamResponse:
        cause = self.cleaner.shield.text(f"{type(exc).__name__}: {exc}")
        record["cause"] = cause
        if passage.out is not None:  # the caller has its headers: its reply breaks
            record["broken"] = True
            return passage.out
        if out_of_files(exc):
            record["status"] = 503
            return error_reply(503, "overloaded", f"the relay is out of file descriptors: {cause}")
        record["status"] = 500
        return error_reply(500, "relay_error", f"the relay failed this call: {cause}")

    def _url(self, path: str, request: web.Request) -> str:
        url = self.upstream.base_url.rstrip("/") + path
        # a key in the query (Google's `?key=`) is the caller's token: never sent on
        query = "&".join(part for part in request.query_string.split("&") if part and part.split("=", 1)[0] != "key")
        return url + "?" + query if query else url

    def _headers(self, request: web.Request, pinned: ModelApi | Literal[False] = False) -> dict[str, str]:
        """The caller's headers but its credentials and hop-by-hop ones; the relay's own key in the provider's header.

        A pinned call of an API whose replies can say who served them asks the
        provider for its routing facts (OpenRouter's), whatever the caller sent.
        """
        facts = dict(self.upstream.provider.routing_facts) if pinned and getattr(pinned, "routing_facts", False) else {}
        asked = {k.lower() for k in facts}
        headers = {k: v for k, v in request.headers.items() if k.lower() not in HOP and not credential_name(k) and k.lower() not in asked}
        headers.update(facts)
        headers["Accept-Encoding"] = "identity"
        headers["Content-Type"] = "application/json"
        key = self.upstream.key
        if key:
            if self.upstream.provider.key_header == "authorization":
                headers["Authorization"] = f"Bearer {key}"
            else:
                headers[self.upstream.provider.key_header] = key
        return headers
