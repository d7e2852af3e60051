"""The local backend: a unit's processes run on this machine, as you, in the unit's own folders.

It is not a sandbox. Controls need no consent; an agent run needs
`--unsandboxed` (recorded in the job's config).
"""

from __future__ import annotations

from typing import Any

from nullius_core import hookimpl
from nullius_core.plugins import BackendRegistry, BackendSpec


def _backend() -> Any:
    # backend.py brings in the engine's contracts (attrs classes, asyncio): only a run needs them.
    from nullius_plugins.local_backend.backend import LocalBackend

    return LocalBackend()


def __getattr__(name: str) -> Any:
    # `from nullius_plugins.local_backend import LocalBackend`, as before backend.py held it.
    if name == "LocalBackend":
        from nullius_plugins.local_backend.backend import LocalBackend

        return LocalBackend
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@hookimpl
def nullius_register_backends(registry: BackendRegistry) -> None:
    registry.add(
        BackendSpec(
            name="local",
            summary="Processes on this machine, as you; not a sandbox (agent runs need --unsandboxed).",
            factory=_backend,
            isolates=False,
        )
    )
