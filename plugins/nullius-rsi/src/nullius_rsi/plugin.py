"""The plugin: the command `nullius improve` (the front door, `rollout` and `judge`)."""

from nullius_core import hookimpl
from nullius_core.plugins import CommandRegistry

from nullius_rsi.cli import improve


@hookimpl
def nullius_register_commands(registry: CommandRegistry) -> None:
    registry.add(improve)
