"""`nullius secrets`: set, list and unset a benchmark's licences (its environments' needs_secrets).

A value is read from stdin (or a file with --file), never from the command
line, and never shown back.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from nullius_core.catalogue.listing import resolve_benchmark
from nullius_core.cli.base import Refused, refusals, session_for
from nullius_core.licences import SecretStore, declared_secrets


def _store(ctx: click.Context, bench_ref: str):  # type: ignore[no-untyped-def]
    session = session_for(ctx)
    entry, bench = resolve_benchmark(session.catalogue, bench_ref)
    return SecretStore(session.paths.secrets_dir, entry.key), declared_secrets(bench), entry.key


@click.group("secrets")
def secrets_group() -> None:
    """A benchmark's licences: kept under SECRETS_DIR, handed to a unit in memory."""


@secrets_group.command("set")
@click.argument("benchmark")
@click.argument("name")
@click.option("--file", "from_file", type=click.Path(path_type=Path, dir_okay=False, exists=True), help="Read the value (a licence file) from this file.")
@click.option("--expires", metavar="YYYY-MM-DD", help="After this day the licence counts as not set.")
@click.pass_context
@refusals
def set_cmd(ctx: click.Context, benchmark: str, name: str, from_file: Path | None, expires: str | None) -> None:
    """Set NAME for BENCHMARK; the value comes from stdin, or --file."""
    store, declared, key = _store(ctx, benchmark)
    if name not in declared:
        raise Refused(f"{key} declares no secret {name!r} (it declares: {', '.join(sorted(declared)) or 'none'})")
    if expires is not None and not (len(expires) == 10 and expires[4] == "-" and expires[7] == "-"):
        raise Refused(f"--expires: expected YYYY-MM-DD, found {expires!r}")
    if from_file is not None:
        value = from_file.read_bytes()
    elif sys.stdin.isatty():
        value = click.prompt(f"{name}", hide_input=True).encode()
    else:
        value = sys.stdin.buffer.read()
        if declared[name].kind != "file":
            value = value.rstrip(b"\r\n")  # `echo VALUE |` adds a newline a key does not have
    if not value:
        raise Refused(f"{name}: the value is empty")
    store.set(name, value, expires)
    click.echo(f"{key}: {name} set ({declared[name].kind}, to {declared[name].to})")


@secrets_group.command("unset")
@click.argument("benchmark")
@click.argument("name")
@click.pass_context
@refusals
def unset_cmd(ctx: click.Context, benchmark: str, name: str) -> None:
    """Forget NAME for BENCHMARK."""
    store, _, key = _store(ctx, benchmark)
    click.echo(f"{key}: {name} " + ("unset" if store.unset(name) else "was not set"))


@secrets_group.command("list")
@click.argument("benchmark")
@click.option("--json", "as_json", is_flag=True)
@click.pass_context
@refusals
def list_cmd(ctx: click.Context, benchmark: str, as_json: bool) -> None:
    """The licences BENCHMARK declares, and which are set (never a value)."""
    store, declared, key = _store(ctx, benchmark)
    index = store.index()
    rows = [
        {"name": name, "kind": s.kind, "to": s.to, "summary": s.summary, "set": store.get(name) is not None,
         "set_at": (index.get(name) or {}).get("set_at"), "expires": (index.get(name) or {}).get("expires"),
         "expired": store.expired(name)}
        for name, s in sorted(declared.items())
    ]
    if as_json:
        click.echo(json.dumps(rows, indent=2))
        return
    if not rows:
        click.echo(f"{key} declares no secrets")
    for row in rows:
        state = f"set {row['set_at']}" + (f", expires {row['expires']}" if row["expires"] else "") if row["set"] else "not set"
        if row["expired"]:
            state = f"not set (expired {row['expires']})"
        click.echo(f"{row['name']:24} {row['kind']:6} to {row['to']:7} {state}")
