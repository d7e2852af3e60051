"""The bwrap backend: each unit's agent (and its capability process) in a bubblewrap sandbox of its own, no docker needed.

The sandbox has its own user, pid, IPC, UTS and network namespaces (a
loopback alone), sees the system's folders and the agent's install
read-only and writes only the unit's workspace and HOME (sandbox.py). The
agent reaches its route on the run's relay through a door on its own
loopback, whose listeners this process makes in the sandbox's network
namespace and serves (room.py, door.py, maker.py); the key stays in
Nullius's process. It is a
sandbox: an agent run needs no `--unsandboxed`. A machine whose kernel
refuses a namespace it needs refuses the run, saying which (kernel.py).
"""

from __future__ import annotations

from typing import Any

from nullius_core import hookimpl
from nullius_core.plugins import BackendRegistry, BackendSpec
from nullius_plugins.bwrap_backend import kernel

# The backend (backend.py) brings in asyncio, the engine's contracts and the
# process lifetime: only a run needs it, and every command that loads plugins
# loads this one. kernel.py (its check) is small.


def _backend() -> Any:
    from nullius_plugins.bwrap_backend.backend import BwrapBackend

    return BwrapBackend()


def __getattr__(name: str) -> Any:
    # `from nullius_plugins.bwrap_backend import BwrapBackend`, as before backend.py held it.
    if name in ("BwrapBackend", "ISOLATION"):
        from nullius_plugins.bwrap_backend import backend

        return getattr(backend, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@hookimpl
def nullius_register_backends(registry: BackendRegistry) -> None:
    registry.add(
        BackendSpec(
            name="bwrap",
            summary="Each unit's agent in a bubblewrap sandbox (own namespaces, no network but its relay's door, read-only system); needs no docker.",
            factory=_backend,
            isolates=True,
            check=kernel.missing,  # bwrap on PATH and the namespaces it needs: a few ms, before the run installs anything
        )
    )
