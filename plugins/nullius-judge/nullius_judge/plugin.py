"""The plugin: the internal benchmark `judge` (its catalogue folder) and the command `nullius assess`."""

from pathlib import Path

from nullius_core import hookimpl
from nullius_core.plugins import CatalogueRegistry, CommandRegistry

from nullius_judge.command import assess_command

CATALOGUE = Path(__file__).parent / "catalogue"


@hookimpl
def nullius_register_catalogue(registry: CatalogueRegistry) -> None:
    registry.add_root(CATALOGUE)


@hookimpl
def nullius_register_commands(registry: CommandRegistry) -> None:
    registry.add(assess_command)
