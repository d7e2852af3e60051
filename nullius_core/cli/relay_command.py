"""`nullius relay serve`: one relay by hand, recording as a unit's relay would."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from datetime import datetime, timezone
from pathlib import Path

import attrs
import click

from nullius_core import aio
from nullius_core.cli.base import Refused, refusals, session_for
from nullius_core.relay.meter import CostMeter
from nullius_core.relay.prices import PriceBook, PriceError
from nullius_core.plugins.registries import ProviderRefused, ServeContext
from nullius_core.relay import upstreams
from nullius_core.relay.server import Relay

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
@refusals
def serve(provider, base_url, model, side_models, served_by, host, port, call_seconds, record_dir, unit) -> None:  # type: ignore[no-untyped-def]
    """Serve one relay; print {"base_url", "token"} as one JSON line when ready.

    The provider's key comes from its variable (such as OPENAI_API_KEY).
    """
    session = session_for(click.get_current_context())
    try:
        upstream = upstreams.resolve(session, provider, base_url, dict(os.environ))
        pins = upstreams.parse_served_by(tuple(served_by), model, upstream, frozenset(side_models))
    except upstreams.RelayRefused as exc:
        raise Refused(f"relay refused: {exc}") from None
    model = model or upstream.provider.default_model
    served = _served(session, upstream, model)
    folder = record_dir or session.paths.jobs_dir / datetime.now(timezone.utc).strftime("relay-%Y-%m-%d__%H-%M-%S")
    aio.run(_serve(session, upstream, pins, model, frozenset(side_models), host, port, call_seconds, folder, unit, served))


def _served(session, upstream, model):  # type: ignore[no-untyped-def]
    """A provider that serves its own model (embedded): its server, prepared; None for the others."""
    if upstream.provider.serve is None:
        return None
    from nullius_core.run.progress import Progress

    try:
        served = upstream.provider.serve(ServeContext(paths=session.paths, model=model, concurrency=1, progress=Progress()))
        served.prepare()
    except ProviderRefused as exc:
        raise Refused(f"relay refused: {exc}") from None
    return served


async def _started(session, upstream, host, port) -> Relay:  # type: ignore[no-untyped-def]
    """The relay listening, or exit status 2 saying why it cannot."""
    try:  # each call is priced as it is recorded, as in a run
        meter = CostMeter(PriceBook.load(session.paths.prices), upstream.provider.name)
    except PriceError as exc:
        raise Refused(f"relay refused: the price catalogue cannot be read:\n{exc}") from None
    relay_server = Relay(upstream, upstreams.apis(session, upstream), meter=meter)
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


async def _serve(session, upstream, pins, model, side_models, host, port, call_seconds, folder, unit, served) -> None:  # type: ignore[no-untyped-def]
    if served is not None:
        try:
            upstream = attrs.evolve(upstream, base_url=await served.start())
        except ProviderRefused as exc:
            await served.stop()
            sys.stderr.write(f"nullius: relay refused: {exc}\n")
            sys.exit(2)
    try:
        await _relay(session, upstream, pins, model, side_models, host, port, call_seconds, folder, unit)
    finally:
        if served is not None:
            await served.stop()


async def _relay(session, upstream, pins, model, side_models, host, port, call_seconds, folder, unit) -> None:  # type: ignore[no-untyped-def]
    relay_server = await _started(session, upstream, host, port)
    route = relay_server.add_route(unit, folder, model=model, side_models=side_models, pins=pins, call_seconds=call_seconds)
    sys.stdout.write(json.dumps({"base_url": relay_server.url(unit), "token": route.token, "record": str(folder)}) + "\n")
    sys.stdout.flush()
    await _stop_on_signals().wait()
    await relay_server.stop()
