"""`nullius relay serve`: one relay by hand, recording as a unit's relay would."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from datetime import datetime, timezone
from pathlib import Path

import click

from nullius_core import aio
from nullius_core.cli.base import Refused, refusals, session_for
from nullius_core.relay import upstreams
from nullius_core.relay.server import Relay

UPSTREAM_KEY = "NULLIUS_RELAY_UPSTREAM_KEY"


@click.group("relay")
def relay() -> None:
    """The recording relay between an agent and its model provider."""


@relay.command("serve")
@click.option("--provider", help="openai, anthropic, openrouter, openai-compatible (default: the user settings').")
@click.option("--base-url", help="The provider's base URL, ending at its /v1 (default: the provider's variable, such as OPENAI_BASE_URL, else its own).")
@click.option("--model", help="Every call goes as this model (default: as asked).")
@click.option("--side-model", "side_models", multiple=True, help="A model sent as asked, recorded as side. Repeatable.")
@click.option("--served-by", "served_by", multiple=True, metavar="[MODEL=]SLUG[,SLUG...]", help="OpenRouter: the providers that may answer a model, in order.")
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", type=click.IntRange(0, 65535), default=0, help="0: a free port.")
@click.option("--timeout", "call_seconds", type=float, help="Cut a call past this many seconds.")
@click.option("--record", "record_dir", type=click.Path(path_type=Path, file_okay=False), help="Where calls.jsonl and the rest go.")
@click.option("--unit", default="main", show_default=True, help="The route's name: /<unit>/v1/...")
@click.option("--routes-on-stdin", is_flag=True, help="No route at start: add and remove routes by JSON lines on stdin (see docs/relay.md).")
@refusals
def serve(provider, base_url, model, side_models, served_by, host, port, call_seconds, record_dir, unit, routes_on_stdin) -> None:  # type: ignore[no-untyped-def]
    """Serve one relay; print {"base_url", "token"} as one JSON line when ready.

    The provider's key comes from its variable (such as OPENAI_API_KEY), or
    from NULLIUS_RELAY_UPSTREAM_KEY whatever the provider: how a relay
    container is handed it, by name.
    """
    session = session_for(click.get_current_context())
    env = dict(os.environ)
    handed = env.pop(UPSTREAM_KEY, None)
    spec = session.providers.get(provider) if provider else None
    if handed and spec is not None and spec.key_env:
        env[spec.key_env] = handed
    try:
        upstream = upstreams.resolve(session, provider, base_url, env)
        pins = upstreams.parse_served_by(tuple(served_by), model, upstream, frozenset(side_models))
    except upstreams.RelayRefused as exc:
        raise Refused(f"relay refused: {exc}") from None
    folder = record_dir or session.paths.jobs_dir / datetime.now(timezone.utc).strftime("relay-%Y-%m-%d__%H-%M-%S")
    if routes_on_stdin:
        aio.run(_serve_routes(session, upstream, host, port))
        return
    aio.run(_serve(session, upstream, pins, model, frozenset(side_models), host, port, call_seconds, folder, unit))


async def _started(session, upstream, host, port) -> Relay:  # type: ignore[no-untyped-def]
    """The relay listening, or exit status 2 saying why it cannot."""
    relay_server = Relay(upstream, upstreams.apis(session, upstream))
    try:
        await relay_server.start(host, port)
    except OSError as exc:
        await relay_server.stop()
        sys.stderr.write(f"nullius: relay refused: cannot listen on {host}:{port}: {exc.strerror or exc}\n")
        sys.exit(2)
    return relay_server


def _stop_on_signals() -> asyncio.Event:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    return stop


async def _serve(session, upstream, pins, model, side_models, host, port, call_seconds, folder, unit) -> None:  # type: ignore[no-untyped-def]
    relay_server = await _started(session, upstream, host, port)
    route = relay_server.add_route(unit, folder, model=model, side_models=side_models, pins=pins, call_seconds=call_seconds)
    sys.stdout.write(json.dumps({"base_url": relay_server.url(unit), "token": route.token, "record": str(folder)}) + "\n")
    sys.stdout.flush()
    await _stop_on_signals().wait()
    await relay_server.stop()


async def _serve_routes(session, upstream, host, port) -> None:  # type: ignore[no-untyped-def]
    """One relay, many routes: each JSON line on stdin adds or removes one, answered by its id; EOF stops it.

    {"id": 1, "op": "add", "unit": U, "record": DIR, "token": T, "model": M, "side_models": [...], "call_seconds": S}
    {"id": 2, "op": "remove", "unit": U}   (answered once the route's calls in flight are recorded, 5 s at most)
    """
    relay_server = await _started(session, upstream, host, port)
    out = sys.stdout

    def reply(message: dict) -> None:
        out.write(json.dumps(message) + "\n")
        out.flush()

    async def handle(request: dict) -> None:
        ident = request.get("id")
        try:
            unit = str(request["unit"])
            if request.get("op") == "add":
                relay_server.add_route(
                    unit, Path(request["record"]), token=request.get("token") or None, kind=request.get("kind", "agent"),
                    model=request.get("model"), side_models=frozenset(request.get("side_models") or ()),
                    call_seconds=request.get("call_seconds"),
                )
            elif request.get("op") == "remove":
                await relay_server.retire(unit)
            else:
                raise ValueError(f"unknown op {request.get('op')!r}")
            reply({"id": ident, "ok": True})
        except Exception as exc:  # noqa: BLE001 - a bad request is answered, never the end of the relay
            reply({"id": ident, "ok": False, "error": f"{type(exc).__name__}: {exc}"})

    reply({"base_url": relay_server.base_url, "ready": True})
    loop = asyncio.get_running_loop()
    stop = _stop_on_signals()
    reader = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    tasks: set[asyncio.Task[None]] = set()

    async def read() -> None:
        while line := await reader.readline():
            try:
                request = json.loads(line)
            except ValueError:
                reply({"ok": False, "error": "not a JSON line"})
                continue
            task = asyncio.ensure_future(handle(request))
            tasks.add(task)
            task.add_done_callback(tasks.discard)
        stop.set()

    reading = asyncio.ensure_future(read())
    await stop.wait()
    reading.cancel()
    if tasks:
        await asyncio.gather(*tasks, return_exceptions=True)
    await relay_server.stop()
