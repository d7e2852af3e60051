"""The plugin: hands Nullius the catalogue folder this package ships (benchmarks/gsm8k)."""

from pathlib import Path

from nullius_core import hookimpl
from nullius_core.plugins import CatalogueRegistry

CATALOGUE = Path(__file__).parent / "catalogue"


@hookimpl
def nullius_register_catalogue(registry: CatalogueRegistry) -> None:
    registry.add_root(CATALOGUE)
TEST_SPLIT = CATALOGUE / "benchmarks" / "gsm8k" / "data" / "test.jsonl"  # shipped with the plugin (MIT, see data/SOURCE.md)
