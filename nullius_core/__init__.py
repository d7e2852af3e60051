"""Nullius core: the hook specifications, the plugin manager, definitions, ports and fit, the CLI.

The public API a plugin may import is one list, ``nullius_core.contracts.PUBLIC_API``
(docs/plugins.md shows it; tests/test_boundary.py holds every plugin to it).

Anything else (a module or name starting with ``_``, the CLI's internals) may
change without notice. The core imports no plugin.
"""

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from nullius_core.markers import ENTRY_POINT_GROUP, hookimpl, hookspec
else:

    def __getattr__(name: str) -> Any:
        # The markers import pluggy, which `nullius --version` and `paths` never need.
        if name in ("ENTRY_POINT_GROUP", "hookimpl", "hookspec"):
            from nullius_core import markers

            return getattr(markers, name)
        raise AttributeError(f"module 'nullius_core' has no attribute {name!r}")


__version__ = "0.1.0"

__all__ = ["ENTRY_POINT_GROUP", "__version__", "hookimpl", "hookspec"]
