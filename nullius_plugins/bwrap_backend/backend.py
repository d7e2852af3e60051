"""The bwrap backend itself: a run's sandboxes, their rooms and the listener maker (imported when a run uses it)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import attrs

from nullius_core.contracts.backend import RouteOptions, RunContext, UnitPlace, place_here, opened
from nullius_core.contracts.driver import DriverLaunch
from nullius_core.contracts.refused import RunRefused
from nullius_plugins.bwrap_backend import kernel, sandbox
from nullius_plugins.bwrap_backend.maker import ListenerMaker
from nullius_plugins.bwrap_backend.room import BwrapRoom

ISOLATION = ("each unit's agent in a bubblewrap sandbox: its own user, pid, IPC, UTS and network namespaces (a loopback alone), "
             "no capabilities, no new privileges, a fresh /proc; the system and its install read-only, its workspace and HOME "
             "writable; the run's relay (the key in Nullius's process only) and MCP servers through listeners on its loopback "
             "served from outside the sandbox")


class BwrapBackend:
    name = "bwrap"

    def __init__(self) -> None:
        self.bwrap = ""
        self.version = ""
        self.maker = ListenerMaker()  # the run's helper that makes each sandbox's door listeners in its namespace

    async def start(self, context: RunContext) -> None:
        why = await asyncio.to_thread(kernel.missing)
        if why is not None:
            raise RunRefused(why)
        self.bwrap = sandbox.bwrap_program() or "bwrap"
        done = await asyncio.create_subprocess_exec(self.bwrap, "--version", stdout=asyncio.subprocess.PIPE, env=sandbox.probe_env())
        out, _ = await done.communicate()
        self.version = out.decode().strip()
        await self.maker.start(str(context.job_dir))

    def record(self) -> dict[str, Any]:
        return {"name": self.name, "bwrap": self.version, "isolation": ISOLATION}

    async def prepare_unit(self, workspace: Path, home: Path) -> UnitPlace:
        return place_here(workspace, home)

    async def use_environment(self, place: UnitPlace, environment: Any, participant: str, handout: Any) -> UnitPlace:
        # the machine's system is the base, as on the local backend: another environment only where the benchmark allows it
        if environment is not None and participant != "control" and not environment.definition.local_ok:
            raise ValueError(
                f"the environment {environment.name!r} runs only on a backend with images (its local_ok is false): use --backend docker"
            )
        if handout is not None and handout.servers and participant != "control":
            names = ", ".join(s.name for s in handout.servers)
            raise ValueError(f"a licence server ({names}) is reached from a sandbox on the docker backend only: use --backend docker")
        return attrs.evolve(place, environment=environment)

    async def open_room(self, relay: Any, unit: str, record: Path, place: UnitPlace, route: RouteOptions) -> BwrapRoom:
        room = BwrapRoom(self.bwrap, relay, unit, record, place, route, self.maker)
        return await opened(room)

    def capability_launch(self, launch: DriverLaunch, reads: Sequence[Path], unit: str) -> DriverLaunch:
        """The capability's process in a sandbox of its own: no network, its install read-only, its folder its own."""
        folders = [Path(p) for p in reads]
        argv = list(launch.argv)
        _, prefix = sandbox.python_home()
        env = {k: v for k, v in launch.env.items() if k not in ("PATH", "HOME", "TMPDIR")}
        env.update({"PATH": sandbox.visible_path(launch.env.get("PATH", ""), folders), "HOME": str(launch.cwd)})
        inner = sandbox.argv(self.bwrap or "bwrap", argv, cwd=launch.cwd, writes=[launch.cwd], reads=[*folders, prefix, *_program_folder(argv)])
        return DriverLaunch(argv=inner, env=env, cwd=launch.cwd, label=f"{launch.label} in bwrap")

    async def close(self) -> None:
        await self.maker.close()


def _program_folder(argv: list[str]) -> list[Path]:
    """An interpreter of this machine named by its path (Nullius's own, a virtual environment's), shown read-only."""
    if argv and Path(argv[0]).is_absolute():
        program = Path(argv[0])
        return [program.parent.parent] if program.parent.name == "bin" else [program.parent]
    return []
