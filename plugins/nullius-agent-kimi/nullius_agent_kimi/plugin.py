"""The plugin: hands Nullius the catalogue folder this package ships (agents/kimi)."""

from pathlib import Path

from nullius_core import hookimpl
from nullius_core.plugins import CatalogueRegistry

CATALOGUE = Path(__file__).parent / "catalogue"


@hookimpl
def nullius_register_catalogue(registry: CatalogueRegistry) -> None:
    registry.add_root(CATALOGUE)
