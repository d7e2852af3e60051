"""`nullius app`: the app's server on 127.0.0.1, until SIGINT or SIGTERM.

When it listens it prints one JSON line on stdout, `{"url": "http://127.0.0.1:PORT/"}`,
and says it on stderr for a person. Runs it started get SIGINT when it stops,
as Ctrl-C would give them: each ends cancelled, its records whole, resumable.
"""

from __future__ import annotations

import json
import signal
import sys

import click

# asyncio and the app's state (its runs, its client) are imported when the
# app is served: registering the command, which every command that loads
# plugins does, needs neither.


@click.command("app")
@click.option("--port", type=click.IntRange(0, 65535), default=8765, show_default=True, help="The port on 127.0.0.1 (0: a free one).")
@click.option("--host", default="127.0.0.1", show_default=True,
              help="The address to listen on. Only a loopback address is taken: the app runs commands as you.")
def app_command(port: int, host: str) -> None:
    """Serve the app (catalogue, builder, runs, viewer) in the browser, on this machine."""
    if host not in ("127.0.0.1", "::1", "localhost"):
        _refuse(f"nullius app listens on a loopback address alone (127.0.0.1, ::1, localhost), not {host!r}: it runs commands as you")
    import asyncio

    try:
        asyncio.run(_serve(host, port))
    except OSError as exc:
        _refuse(f"cannot listen on {host}:{port}: {exc.strerror or exc}")


def _refuse(why: str) -> None:
    """One line and exit status 2, as every nullius command refuses."""
    click.echo(f"nullius: {why}", err=True)
    sys.exit(2)


async def _serve(host: str, port: int) -> None:
    import asyncio

    from aiohttp import web

    from nullius_app.server import make_app
    from nullius_app.state import AppState

    state = AppState.for_this_machine()
    runner = web.AppRunner(make_app(state), access_log=None, handle_signals=False)
    await runner.setup()
    site = web.TCPSite(runner, host, port)
    await site.start()
    bound = runner.addresses[0][1]
    shown = f"[{host}]" if ":" in host else host
    state.origin = f"http://{shown}:{bound}"
    print(json.dumps({"url": state.origin + "/"}), flush=True)
    print(f"nullius app: {state.origin}/ (Ctrl-C stops it)", file=sys.stderr, flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    try:
        await stop.wait()
    finally:
        await state.runs.stop_all()
        await runner.cleanup()
