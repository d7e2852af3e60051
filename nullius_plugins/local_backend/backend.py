"""The local backend itself (imported when a run uses it)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import attrs

from nullius_core.contracts.backend import RelayRoom, RouteOptions, RunContext, UnitPlace, place_here
from nullius_plugins.local_backend.process import LocalProcess


class LocalBackend:
    name = "local"

    def record(self) -> dict[str, Any]:
        return {"name": self.name, "isolation": "none: processes run as you on this machine"}

    async def prepare_unit(self, workspace: Path, home: Path) -> UnitPlace:
        return place_here(workspace, home)

    async def prepare_control(self, workspace: Path, home: Path) -> UnitPlace:
        """A control's place: its workspace folder alone, a repository once something is written into it (run/control_place.py)."""
        workspace.mkdir(parents=True, exist_ok=True)
        return UnitPlace(workspace=workspace, home=home)

    async def start(self, context: RunContext) -> None:
        return None

    async def use_environment(self, place: UnitPlace, environment: Any, participant: str, handout: Any) -> UnitPlace:
        # the machine is the base: another environment only where the benchmark says it is fine (local_ok)
        if environment is not None and participant != "control" and not environment.definition.local_ok:
            raise ValueError(
                f"the environment {environment.name!r} runs only on a backend with images (its local_ok is false): use --backend docker"
            )
        return attrs.evolve(place, environment=environment)

    def capability_launch(self, launch: Any, reads: Any, unit: str) -> Any:
        return launch  # a process of this machine, as you

    async def open_room(self, relay: Any, unit: str, record: Path, place: UnitPlace, route: RouteOptions) -> RelayRoom:
        return RelayRoom(relay, unit, record, route, LocalProcess.start)

    async def close(self) -> None:
        return None
