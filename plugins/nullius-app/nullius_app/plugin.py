"""The app's command: `nullius app [--port N]`."""

from __future__ import annotations

from nullius_core import hookimpl
from nullius_core.plugins import CommandRegistry

from nullius_app.command import app_command


@hookimpl
def nullius_register_commands(registry: CommandRegistry) -> None:
    registry.add(app_command)
