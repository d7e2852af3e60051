"""The ray backend's hook: the backend `ray` (Ray itself is imported only when a run uses it)."""

from __future__ import annotations

from nullius_core import hookimpl
from nullius_core.plugins import BackendRegistry, BackendSpec


def _factory():  # type: ignore[no-untyped-def]
    from nullius_backend_ray.backend import RayBackend

    return RayBackend()


@hookimpl
def nullius_register_backends(registry: BackendRegistry) -> None:
    registry.add(
        BackendSpec(
            name="ray",
            summary="Each unit's agent and its relay on a node of an existing Ray cluster (NULLIUS_RAY_ADDRESS); not a sandbox "
            "(agent runs need --unsandboxed).",
            factory=_factory,
            isolates=False,
        )
    )
