"""What the relay's tests share: a relay on a thread of its own, and an upstream a test scripts by hand."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Awaitable, Callable
from pathlib import Path

from aiohttp import web

from nullius_core.relay.server import Relay, Upstream
from nullius_core.testing import make_session

KEY = "sk-relay-holds-this-key-0123456789"


class RelayThread:
    """A relay on its own event loop in a thread, with routes for two units."""

    def __init__(self, base_url: str, folder: Path, env: dict, provider: str = "openai-compatible", **route_options):
        session = make_session(env)
        spec = session.providers.get(provider)
        self.upstream = Upstream(provider=spec, base_url=base_url, key=KEY)
        from nullius_core.relay.upstreams import apis

        self.relay = Relay(self.upstream, apis(session, self.upstream))
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.call(self.relay.start())
        self.folder = folder
        self.routes = {u: self.relay.add_route(u, folder / u, **route_options) for u in ("u0000", "u0001")}

    def call(self, coro, timeout: float = 60):
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def url(self, unit: str = "u0000") -> str:
        return self.relay.url(unit)

    def token(self, unit: str = "u0000") -> str:
        return self.routes[unit].token

    def records(self, unit: str = "u0000", timeout: float = 60) -> list[dict]:
        self.call(self.relay.quiet(unit, timeout), timeout + 5)
        path = self.folder / unit / "calls.jsonl"
        return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []

    def record_text(self, unit: str = "u0000") -> str:
        """Everything the route's record holds, its three files together."""
        self.records(unit)
        return "".join((self.folder / unit / name).read_text() for name in ("calls.jsonl", "bodies.jsonl", "gateway.log")
                       if (self.folder / unit / name).exists())

    def close(self):
        self.call(self.relay.stop())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)


Answer = Callable[[web.Request, str], Awaitable[web.StreamResponse]]


class HandUpstream:
    """A provider a test scripts by hand, on a real socket, on a thread of its own.

    `answer(request, key)` replies to each call; `key` is the credential the
    relay sent, so an answer can quote it back, as a provider's 401 does.
    `gate()` makes a gate an answer can wait at until the test opens it.
    """

    def __init__(self) -> None:
        self.answer: Answer | None = None
        self.keys: list[str] = []
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.runner = web.AppRunner(self._app(), access_log=None)
        asyncio.run_coroutine_threadsafe(self.runner.setup(), self.loop).result(30)
        site = web.TCPSite(self.runner, "127.0.0.1", 0)
        asyncio.run_coroutine_threadsafe(site.start(), self.loop).result(30)
        self.base_url = f"http://127.0.0.1:{site._server.sockets[0].getsockname()[1]}/v1"  # type: ignore[union-attr]

    def _app(self) -> web.Application:
        app = web.Application(client_max_size=64 * 2**20)

        async def handle(request: web.Request) -> web.StreamResponse:
            await request.read()
            key = request.headers.get("Authorization", "").removeprefix("Bearer ")
            self.keys.append(key)
            assert self.answer is not None, "the test set no answer"
            return await self.answer(request, key)

        app.router.add_route("*", "/{tail:.*}", handle)
        return app

    def gate(self) -> Gate:
        return Gate(self.loop)

    def close(self) -> None:
        asyncio.run_coroutine_threadsafe(self.runner.cleanup(), self.loop).result(30)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)


class Gate:
    """Opened from the test's thread, waited at on the upstream's loop."""

    def __init__(self, loop: asyncio.AbstractEventLoop):
        self.loop = loop
        self.event = asyncio.Event()
        self.opened = threading.Event()

    def open(self) -> None:
        self.opened.set()
        self.loop.call_soon_threadsafe(self.event.set)

    async def wait(self, timeout: float = 120) -> None:
        await asyncio.wait_for(self.event.wait(), timeout)
