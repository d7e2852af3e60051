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
@click.option("--token-env", metavar="NAME", help="Take the route's token from this variable (default: a new one).")
@refusals
def serve(provider, base_url, model, side_models, served_by, host, port, call_seconds, record_dir, unit, token_env) -> None:  # type: ignore[no-untyped-def]
    """Serve one relay; print {"base_url", "token"} as one JSON line when ready.

    The provider's key comes from its variable (such as OPENAI_API_KEY), or
    from NULLIUS_RELAY_UPSTREAM_KEY whatever the provider: how a relay
    sidecar is handed it, by name.
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
    token = os.environ.get(token_env) if token_env else None
    if token_env and not token:
        raise Refused(f"--token-env {token_env}: the variable is not set")
    aio.run(_serve(session, upstream, pins, model, frozenset(side_models), host, port, call_seconds, folder, unit, token))


async def _serve(session, upstream, pins, model, side_models, host, port, call_seconds, folder, unit, token=None) -> None:  # type: ignore[no-untyped-def]
    relay_server = Relay(upstream, upstreams.apis(session, upstream))
    try:
        await relay_server.start(host, port)
    except OSError as exc:
        await relay_server.stop()
        sys.stderr.write(f"nullius: relay refused: cannot listen on {host}:{port}: {exc.strerror or exc}\n")
        sys.exit(2)
    route = relay_server.add_route(unit, folder, token=token, model=model, side_models=side_models, pins=pins, call_seconds=call_seconds)
    sys.stdout.write(json.dumps({"base_url": relay_server.url(unit), "token": route.token, "record": str(folder)}) + "\n")
    sys.stdout.flush()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    await relay_server.stop()
