"""`plugins` and `paths`: what is loaded and where things are kept."""

from __future__ import annotations

import click

from nullius_core.cli.base import console, json_option, print_json, refusals, session_for
from nullius_core.paths import Paths


@click.command("plugins")
@json_option
@refusals
def plugins(as_json: bool) -> None:
    """Every plugin: name, distribution, version, hooks and what it registered."""
    session = session_for(click.get_current_context())
    registries = session.all_registries()
    rows = []
    for info in session.infos:
        plugin = session.pm.get_plugin(info.name)
        registered = {kind: reg.by_plugin(info.name) for kind, reg in registries.items()}
        rows.append(
            {
                "name": info.name,
                "distribution": info.distribution,
                "version": info.version,
                "module": info.module,
                "bundled": info.bundled,
                "status": info.status,
                "error": info.error,
                "detail": info.detail if info.status != "failed" else None,
                "hooks": session.hooks.implemented_by(plugin) if plugin is not None else [],
                "registered": {k: v for k, v in registered.items() if v},
            }
        )
    # a failed registration changes a plugin's status after the rows' registries were read
    status = {i.name: (i.status, i.error) for i in session.infos}
    for row in rows:
        row["status"], row["error"] = status[row["name"]]
    if as_json:
        print_json({"plugins": rows})
        return
    from rich.table import Table  # only for the table: --json and `paths` need no rich

    table = Table(title="Plugins", title_justify="left")
    for col in ("plugin", "distribution", "status", "hooks", "registered"):
        table.add_column(col)
    for row in rows:
        dist = f"{row['distribution']} {row['version']}" if row["distribution"] else "-"
        status_text = row["status"] + (f": {row['error']}" if row["error"] else "")
        hooks = "\n".join(row["hooks"]) or "-"
        registered = "\n".join(f"{k}: {', '.join(v)}" for k, v in row["registered"].items()) or "-"
        table.add_row(row["name"], dist, status_text, hooks, registered)
    console().print(table)


@click.command("paths")
@json_option
@refusals
def paths(as_json: bool) -> None:
    """Every location Nullius reads and writes, and the variable that moves it."""
    data = Paths.from_env().as_dict()  # the session's own paths, without loading a plugin
    if as_json:
        print_json({name: {"path": value, "moved_by": Paths.MOVED_BY[name]} for name, value in data.items()})
        return
    width = max(len(k) for k in data)
    for name, value in data.items():
        click.echo(f"{name.ljust(width)}  {value}\n{' ' * width}  moved by {Paths.MOVED_BY[name]}")
