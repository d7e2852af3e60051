"""The app's commands: `nullius app [--port N]`, and `nullius host ...` (a run on a host over SSH)."""

from __future__ import annotations

from nullius_core import hookimpl
from nullius_core.plugins import CommandRegistry

from nullius_app.command import app_command
from nullius_app.host.command import host_group


@hookimpl
def nullius_register_commands(registry: CommandRegistry) -> None:
    registry.add(app_command)
    registry.add(host_group)
