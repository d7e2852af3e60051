"""The fake model server: an aiohttp app on loopback answering the three API shapes from a script.

Routes (query strings are accepted and ignored):
  POST /v1/chat/completions        OpenAI Chat Completions
  POST /v1/responses               OpenAI Responses
  POST /v1/messages                Anthropic Messages
  POST /v1/messages/count_tokens   Anthropic token count -> {"input_tokens": n}
  POST /v1/embeddings              OpenAI Embeddings: a vector of 8 per input, from its sha256 (no script)
  POST /v1beta/models/{model}:generateContent, :streamGenerateContent (alt=sse), :countTokens
                                   the Gemini API, the model in the path (countTokens -> {"totalTokens": n})
Anything else (GET /v1/models included) is a 404 in the provider's error shape.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
import socket
import struct
import time
from collections import deque
from pathlib import Path
from typing import IO, Any

from aiohttp import web

from nullius_core.testing.fake_model import chat, gemini, messages, responses
from nullius_core.testing.fake_model.loading import ScriptLike, as_script
from nullius_core.testing.fake_model.openrouter import Served, asks_facts, no_endpoint_body
from nullius_core.testing.fake_model.request import RecordedRequest, read_request
from nullius_core.testing.fake_model.runner import RespondError, ScriptRunner, counts_for
from nullius_core.testing.fake_model.script import Fault, Script
from nullius_core.testing.fake_model.wire import Ctx, dumps, error_body

ROUTES = {
    "/v1/chat/completions": "chat",
    "/v1/responses": "responses",
    "/v1/messages": "messages",
    "/v1/messages/count_tokens": "count_tokens",
    "/v1/embeddings": "embeddings",
}
GEMINI_ROUTE = re.compile(r"/v1beta/models/(?P<model>[^/:]+):(?P<method>generateContent|streamGenerateContent|countTokens)\Z")
GEMINI_METHODS = {"generateContent": "gemini", "streamGenerateContent": "gemini", "countTokens": "gemini_count_tokens"}
SHAPES: dict[str, Any] = {"chat": chat, "responses": responses, "messages": messages, "gemini": gemini}
SSE_HEADERS = {"Content-Type": "text/event-stream; charset=utf-8", "Cache-Control": "no-cache"}
DEFAULT_MAX_REQUESTS = 10_000
_LINGER_RESET = struct.pack("ii", 1, 0)


def _json_response(status: int, body: Any, headers: dict[str, str]) -> web.Response:
    data = body.encode() if isinstance(body, str) else dumps(body).encode()
    content_type = "text/plain" if isinstance(body, str) else "application/json"
    return web.Response(status=status, body=data, content_type=content_type, headers=headers)


def _api_of(method: str, path: str) -> str | None:
    if method != "POST":
        return None
    found = GEMINI_ROUTE.match(path)
    return GEMINI_METHODS[found["method"]] if found else ROUTES.get(path)


def _error_body(api: str | None, path: str, status: int, message: str | None = None, request_id: str | None = None) -> Any:
    if api in ("gemini", "gemini_count_tokens") or path.startswith("/v1beta/"):
        return gemini.error_of(status, message)
    return error_body(api, status, message, request_id)


def _retry_after(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)


async def _reset(request: web.BaseRequest) -> None:
    """Reset the connection (RST), once what was written has left."""
    transport = request.transport
    if transport is None:
        return
    for _ in range(100):
        if not transport.get_write_buffer_size():
            break
        await asyncio.sleep(0.001)
    sock = transport.get_extra_info("socket")
    if sock is not None:
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, _LINGER_RESET)
        except OSError:
            pass
    transport.abort()


def embeddings(body: dict[str, Any]) -> dict[str, Any]:
    """OpenAI's embeddings reply: each input's vector made from its sha256, the same input the same vector."""
    given = body.get("input")
    inputs = given if isinstance(given, list) else [given]
    data = []
    for i, text in enumerate(inputs):
        digest = hashlib.sha256(json.dumps(text).encode()).digest()
        data.append({"object": "embedding", "index": i, "embedding": [round(b / 255 - 0.5, 6) for b in digest[:8]]})
    tokens = sum(max(1, len(json.dumps(text)) // 4) for text in inputs)
    return {"object": "list", "data": data, "model": body.get("model") or "fake-embedding",
            "usage": {"prompt_tokens": tokens, "total_tokens": tokens}}


class FakeModelServer:
    """`FakeModelServer(script)`; `await start()`; point clients at `openai_base_url` or
    `anthropic_base_url`; read `requests`; `await stop()`. Also an async context manager."""

    def __init__(
        self,
        script: ScriptLike = None,
        *,
        record_path: str | Path | None = None,
        max_requests: int = DEFAULT_MAX_REQUESTS,
    ):
        self._runner = ScriptRunner(as_script(script))
        self._requests: deque[RecordedRequest] = deque(maxlen=max_requests)
        self._seq = 0
        self.record_path = Path(record_path) if record_path else None
        self._record_file: IO[str] | None = None
        self._web_runner: web.AppRunner | None = None
        self.host = "127.0.0.1"
        self.port = 0

    # --- the script ---------------------------------------------------------

    @property
    def script(self) -> Script:
        return self._runner.script

    @script.setter
    def script(self, value: ScriptLike) -> None:
        self._runner = ScriptRunner(as_script(value))

    def use(self, value: ScriptLike) -> None:
        """Set the script (a Script, dict, callable or path); the call count starts again."""
        self.script = value

    @property
    def requests(self) -> list[RecordedRequest]:
        """The last `max_requests` requests received, oldest first."""
        return list(self._requests)

    def clear(self) -> None:
        self._requests.clear()

    # --- life -----------------------------------------------------------------

    async def start(self, host: str = "127.0.0.1", port: int = 0) -> FakeModelServer:
        app = web.Application(client_max_size=256 * 1024 * 1024)
        app.router.add_route("*", "/{tail:.*}", self._handle)
        runner = web.AppRunner(app, access_log=None, handle_signals=False, shutdown_timeout=0.5)
        await runner.setup()
        site = web.TCPSite(runner, host, port, backlog=4096)
        try:
            await site.start()
        except BaseException:
            await runner.cleanup()
            raise
        self._web_runner = runner
        self.host, self.port = host, runner.addresses[0][1]
        if self.record_path is not None:
            self.record_path.parent.mkdir(parents=True, exist_ok=True)
            self._record_file = self.record_path.open("a", encoding="utf-8")
        return self

    async def stop(self) -> None:
        runner, self._web_runner = self._web_runner, None
        if runner is not None:
            await runner.cleanup()
        if self._record_file is not None:
            self._record_file.close()
            self._record_file = None

    async def __aenter__(self) -> FakeModelServer:
        return await self.start() if self._web_runner is None else self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    @property
    def base_url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    @property
    def openai_base_url(self) -> str:
        return self.base_url + "/v1"

    @property
    def anthropic_base_url(self) -> str:
        return self.base_url

    def urls(self) -> dict[str, str]:
        return {
            "base_url": self.base_url,
            "openai_base_url": self.openai_base_url,
            "anthropic_base_url": self.anthropic_base_url,
        }

    # --- the record ---------------------------------------------------------

    def _record(self, request: web.Request, body: Any, api: str | None, rule: str | None, status: int, call: int | None) -> None:
        if self._requests.maxlen == 0 and self._record_file is None:
            return  # nothing kept: a load run's upstream
        entry = RecordedRequest(
            seq=self._seq,
            time=time.time(),
            method=request.method,
            path=request.path,
            query=dict(request.query) if request.query_string else {},
            headers={k.lower(): v for k, v in request.headers.items()},
            body=body,
            api=api,
            rule=rule,
            status=status,
            call=call,
        )
        self._requests.append(entry)
        if self._record_file is not None:
            self._record_file.write(json.dumps(entry.to_json(), default=str) + "\n")
            self._record_file.flush()

    # --- answering ------------------------------------------------------------

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        self._seq += 1
        n = self._seq
        api = _api_of(request.method, request.path)
        raw = await request.read()
        if api is None:
            self._record(request, raw.decode("utf-8", "replace") or None, None, None, 404, None)
            shape = "messages" if request.path.startswith("/v1/messages") else "chat"
            return _json_response(404, _error_body(shape, request.path, 404, f"No route for {request.method} {request.path}"), {})
        try:
            body = json.loads(raw)
            if not isinstance(body, dict):
                raise ValueError("the body is not a JSON object")
        except ValueError as exc:
            self._record(request, raw.decode("utf-8", "replace"), api, None, 400, None)
            return _json_response(400, _error_body(api, request.path, 400, f"We could not parse the JSON body of your request: {exc}"), {})
        if api == "embeddings":
            self._record(request, body, api, None, 200, None)
            return _json_response(200, embeddings(body), {"x-request-id": f"req_fake{n}"})
        runner = self._runner
        call = runner.next_call(api)
        fake = read_request(api, request.method, request.path, request.query, request.headers, body, call)
        try:
            reply, rule = await runner.choose(fake)
        except RespondError as exc:
            self._record(request, body, api, "respond", 500, call)
            return _json_response(500, _error_body(api, request.path, 500, f"the script's respond raised {exc}"), {})
        fault = reply.fault
        id_header = {"request-id" if api in ("messages", "count_tokens") else "x-request-id": f"req_fake{n}"}
        served = None
        openrouter = runner.script.openrouter
        if openrouter is not None and api in ("chat", "responses", "messages"):
            model = fake.model or "fake-model"
            endpoint = openrouter.route(model, body.get("provider"))
            if endpoint is None:  # a pin no endpoint of the model answers, fallbacks forbidden
                self._record(request, body, api, rule, 404, call)
                return _json_response(404, no_endpoint_body(), id_header)
            served = Served(endpoint, openrouter.endpoints(model), model, asks_facts(request.headers))
        self._record(request, body, api, rule, fault.status if fault and fault.status else 200, call)
        ctx = Ctx(n, reply.model or fake.model or "fake-model", reply, counts_for(reply, body), int(time.time()), fake.include_usage)
        try:
            if fault is not None:
                if fault.first_byte_delay:
                    await asyncio.sleep(fault.first_byte_delay)
                if fault.status is not None:
                    return self._status_fault(api, request.path, fault, id_header)
                id_header.update(fault.headers)
            if api == "gemini" and fake.stream and request.query.get("alt") != "sse":
                return _json_response(200, gemini.chunks(ctx), id_header)  # Gemini's stream without SSE: one array
            if not fake.stream:
                return await self._whole(request, api, ctx, fault, id_header, served)
            return await self._stream(request, api, ctx, fault, id_header, served)
        except ConnectionError:
            return web.Response(status=499)  # the client went away; nothing more to send

    def _status_fault(self, api: str, path: str, fault: Fault, headers: dict[str, str]) -> web.Response:
        status = fault.status or 500
        headers = {**headers, **fault.headers}
        if fault.retry_after is not None:
            headers["Retry-After"] = _retry_after(fault.retry_after)
        body = fault.body if fault.body is not None else _error_body(api, path, status, request_id=headers.get("request-id"))
        return _json_response(status, body, headers)

    async def _whole(
        self, request: web.Request, api: str, ctx: Ctx, fault: Fault | None, headers: dict[str, str], served: Served | None = None
    ) -> web.StreamResponse:
        if fault is not None and fault.reset_after is not None:
            await _reset(request)
            return web.Response(status=499)
        if api == "count_tokens":
            return _json_response(200, {"input_tokens": ctx.counts.input}, headers)
        if api == "gemini_count_tokens":
            return _json_response(200, {"totalTokens": ctx.counts.input}, headers)
        shape = SHAPES[api]
        if fault is not None and fault.error is not None:
            return _json_response(200, shape.error_body(ctx, fault.error), headers)
        if fault is not None and fault.malformed is not None:
            line = fault.malformed.line.removeprefix("data: ")
            return web.Response(status=200, body=line.encode(), content_type="application/json", headers=headers)
        reply = shape.body(ctx)
        return _json_response(200, served.body(api, reply) if served is not None else reply, headers)

    async def _stream(
        self, request: web.Request, api: str, ctx: Ctx, fault: Fault | None, headers: dict[str, str], served: Served | None = None
    ) -> web.StreamResponse:
        shape = SHAPES[api]
        events = shape.events(ctx)
        if served is not None:
            events = served.events(api, events)
        resp = web.StreamResponse(status=200, headers={**SSE_HEADERS, **headers})
        await resp.prepare(request)
        pace = ctx.reply.pace
        if fault is None and not pace:
            await resp.write(b"".join(events))  # the hot path: one write
            await resp.write_eof()
            return resp
        total = len(events)

        def at(value: int | None) -> int | None:
            return None if value is None else min(value, total)

        reset_at = at(fault.reset_after) if fault else None
        end_at = at(fault.end_after) if fault else None
        error_at = at(fault.error.after) if fault and fault.error else None
        malformed_at = at(fault.malformed.after) if fault and fault.malformed else None
        for i in range(total + 1):
            if reset_at == i:
                await _reset(request)
                return resp
            if error_at == i:
                assert fault is not None and fault.error is not None
                await resp.write(shape.error_event(ctx, fault.error, i))
                break
            if malformed_at == i:
                assert fault is not None and fault.malformed is not None
                await resp.write(fault.malformed.line.encode() + b"\n\n")
                if fault.malformed.then == "end":
                    break
            if end_at == i or i == total:
                break
            if i and pace:
                await asyncio.sleep(pace)
            await resp.write(events[i])
        await resp.write_eof()
        return resp

