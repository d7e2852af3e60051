"""`nullius fake-model serve`: the scripted fake model server, run by hand.

When it is listening it prints one JSON line on stdout,
`{"base_url": ..., "openai_base_url": ..., "anthropic_base_url": ...}`,
and serves until SIGINT or SIGTERM, then exits 0.
Also runnable as `python -m nullius_core.cli.fake_model_command serve ...`.
"""

from __future__ import annotations

import asyncio
import json
import signal
import sys
from pathlib import Path

import click

from nullius_core.aio import run
from nullius_core.cli.base import Refused


@click.group("fake-model", context_settings={"help_option_names": ["-h", "--help"]})
def fake_model() -> None:
    """A scripted fake model server (OpenAI Chat Completions and Responses, Anthropic Messages)."""


@fake_model.command("serve")
@click.option(
    "--script",
    "script_spec",
    metavar="FILE",
    help="Rules as JSON or TOML, or a callable as file.py:function or module:function. "
    "Without it every call gets the built-in short text.",
)
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", default=0, show_default=True, type=click.IntRange(0, 65535), help="0: a free port.")
@click.option("--record", "record", type=click.Path(dir_okay=False, path_type=Path), help="Append each request to this JSONL file.")
@click.option(
    "--max-requests",
    default=10_000,
    show_default=True,
    type=click.IntRange(0),
    help="How many requests to keep in memory (0: none).",
)
def serve(script_spec: str | None, host: str, port: int, record: Path | None, max_requests: int) -> None:
    """Serve a script on HOST:PORT until SIGINT or SIGTERM."""
    from nullius_core.testing.fake_model import FakeModelServer, ScriptError, load_script

    try:
        script = load_script(script_spec) if script_spec else None
    except ScriptError as exc:
        raise Refused(f"the script is not valid:\n{exc}") from None
    server = FakeModelServer(script, record_path=record, max_requests=max_requests)
    try:
        run(_serve(server, host, port))  # on uvloop where installed
    except OSError as exc:
        raise Refused(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None


async def _serve(server: object, host: str, port: int) -> None:
    from nullius_core.testing.fake_model import FakeModelServer

    assert isinstance(server, FakeModelServer)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    await server.start(host, port)
    try:
        sys.stdout.write(json.dumps(server.urls()) + "\n")
        sys.stdout.flush()
        await stop.wait()
    finally:
        await server.stop()


if __name__ == "__main__":
    fake_model(prog_name="nullius fake-model")
