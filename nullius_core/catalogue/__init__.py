"""The catalogue: plugin-shipped definitions with the user's laid over them."""

from nullius_core.catalogue.catalogue import Catalogue, CatalogueConflict, Entry, split_ref
from nullius_core.catalogue.scaffold import writable_dir

__all__ = ["Catalogue", "CatalogueConflict", "Entry", "split_ref", "writable_dir"]
