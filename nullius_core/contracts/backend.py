"""What the run engine needs of a backend: a place for each unit, a room for its agent, a sandbox for its checks.

A backend is started once per run (`start`, with the job's name to label
what it makes), gives each unit its workspace and HOME (`prepare_unit`),
opens a room for each agent's unit (`open_room`: the relay's URL and token
as the agent reaches them, its MCP servers, its process) and ends everything
it started (`close`), after an error or Ctrl-C too.

A backend that runs tasks' own images also has `open_box(place, own, unit)`
returning the unit's `Box` (nullius_core.contracts.own_image), and registers with
`BackendSpec(boxes=True)`.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import attrs

from nullius_core.contracts.agent import AgentLaunch, AgentProcess, McpServerEntry
from nullius_core.contracts.driver import DriverLaunch
from nullius_core.contracts.environment import UnitEnvironment
from nullius_core.contracts.licences import Handout

if TYPE_CHECKING:
    from nullius_core.contracts.own_image import Box
    from nullius_core.paths import Paths


class Stages(Protocol):
    """The run's progress, as a backend says what it is doing (`stage("install", image=..., state="building")`)."""

    def stage(self, stage: str, **fields: Any) -> None: ...


class MadeRoute(Protocol):
    token: str  # opens the route alone


class RelayRoutes(Protocol):
    """What a backend's room uses of the run's relay: a route per unit, its URL, its end."""

    base_url: str  # http://127.0.0.1:PORT, on this machine

    def add_route(self, unit: str, folder: Path, token: str | None = None, **options: Any) -> MadeRoute: ...

    def url(self, unit: str) -> str: ...

    async def retire(self, unit: str, timeout: float = 5) -> None: ...


@attrs.frozen
class UnitPlace:
    """A unit's own workspace (a git repository of its own) and HOME.

    `sandbox`, when the backend has one, goes to the driver with every op of
    the unit: how to run what the agent left in a throwaway container (see
    docs/drivers.md, "Checks in a sandbox"). None: the driver uses its own.
    """

    workspace: Path
    home: Path
    sandbox: dict[str, Any] | None = None
    environment: UnitEnvironment | None = None  # None: the base
    image: str | None = None  # the image the unit's parts run in, where the backend has images
    licences: Handout | None = None  # the agent's, when the backend passes some of it itself (licence servers)
    box: Box | None = None  # the unit's box, when it runs in its task's own image

    @property
    def agent_dir(self) -> Path:
        """Where the agent works: the workspace, or in a task's own image the box's working directory."""
        return Path(self.box.workdir) if self.box is not None else self.workspace


@attrs.frozen(kw_only=True)
class RunContext:
    """What a backend is told when a run starts."""

    job: str  # the job's name: everything the backend starts is labelled with it
    job_dir: Path
    paths: Paths
    progress: Stages


@attrs.frozen(kw_only=True)
class RouteOptions:
    """How the unit's relay route treats calls (as `Relay.add_route` takes them)."""

    model: str | None
    side_models: frozenset[str] = frozenset()
    call_seconds: float | None = None
    kind: str = "agent"


class AgentRoom(Protocol):
    """Where one unit's agent runs: its way to the model, its MCP servers, its process."""

    url: str  # the unit's relay URL, ending at /v1, as the agent reaches it
    token: str  # opens that unit's route alone

    def mcp_servers(self, entries: Sequence[McpServerEntry]) -> list[McpServerEntry]:
        """The session's MCP servers as the agent reaches them (a benchmark's own stay on this machine)."""

    async def start_agent(self, launch: AgentLaunch) -> AgentProcess:
        """Start the agent as an `AgentProcess` whose processes can be ended whole."""

    async def close(self) -> None:
        """End what the room started; the route's calls are recorded when it returns."""


class Backend(Protocol):
    name: str

    async def start(self, context: RunContext) -> None:
        """Before the first unit: make what every unit needs (an image); raise to refuse the run, saying why."""

    def record(self) -> dict[str, Any]:
        """What config.json records of the backend (its name, its image)."""

    async def prepare_unit(self, workspace: Path, home: Path) -> UnitPlace: ...

    async def use_environment(self, place: UnitPlace, environment: UnitEnvironment | None, participant: str, handout: Handout | None) -> UnitPlace:
        """After setup: the unit's place in its environment (None: the base); raise ValueError to refuse the unit.

        `participant` is "control", "agent" or "capability"; `handout` the
        agent's licences (values by name, files), for the room to pass on.
        """

    async def open_room(self, relay: RelayRoutes, unit: str, record: Path, place: UnitPlace, route: RouteOptions) -> AgentRoom:
        """A room for the unit's agent; `record` is where its relay route's calls go."""

    def capability_launch(self, launch: DriverLaunch, reads: Sequence[Path], unit: str) -> DriverLaunch:
        """How the unit's capability process starts here (`reads`: its install and definition folder)."""

    async def close(self) -> None: ...


# What the engine calls of every backend (Backend above): one that lacks any is refused before the first unit.
BACKEND_METHODS = ("start", "record", "prepare_unit", "use_environment", "open_room", "capability_launch", "close")


def missing_methods(backend: object) -> list[str]:
    """The Backend methods a backend does not have (an empty list: it has them all)."""
    return [name for name in BACKEND_METHODS if not callable(getattr(backend, name, None))]


class RelayRoom:
    """A room on this machine: a route on the run's own relay, the agent started by `starter`.

    The local backend's room, and a base for a backend whose agent reaches the
    run's relay directly.
    """

    def __init__(self, relay: RelayRoutes, unit: str, record: Path, route: RouteOptions, starter: Callable[[AgentLaunch], Awaitable[AgentProcess]]):
        self._relay = relay
        self._unit = unit
        self._starter = starter
        made = relay.add_route(
            unit, record, kind=route.kind, model=route.model, side_models=route.side_models, call_seconds=route.call_seconds
        )
        self.url = relay.url(unit)
        self.token = made.token

    def mcp_servers(self, entries: Sequence[McpServerEntry]) -> list[McpServerEntry]:
        return list(entries)

    async def start_agent(self, launch: AgentLaunch) -> AgentProcess:
        return await self._starter(launch)

    async def close(self) -> None:
        await self._relay.retire(self._unit)


async def opened(room: Any) -> Any:
    """`room.open()` awaited; a room that fails to open is closed (shielded) before the error goes on."""
    try:
        await room.open()
    except BaseException:
        await asyncio.shield(room.close())
        raise
    return room


def place_here(workspace: Path, home: Path) -> UnitPlace:
    """A unit's place on this machine: its workspace a repository of its own, its HOME (the local, bwrap and ray backends')."""
    workspace.mkdir(parents=True, exist_ok=True)
    home.mkdir(parents=True, exist_ok=True)
    init_repository(workspace)
    return UnitPlace(workspace=workspace, home=home)


def init_repository(folder: Path) -> None:
    """An empty git repository, written directly: `git init` costs a process per unit."""
    git = folder / ".git"
    for sub in ("objects/info", "objects/pack", "refs/heads", "refs/tags", "info"):
        (git / sub).mkdir(parents=True, exist_ok=True)
    (git / "HEAD").write_text("ref: refs/heads/main\n")
    (git / "config").write_text(
        "[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = false\n\tlogallrefupdates = true\n"
    )
    (git / "description").write_text("A Nullius unit's workspace.\n")


def commit_setup(folder: Path) -> str | None:
    """Commit what setup wrote, so the agent's changes stand out; None when setup wrote nothing."""
    if not any(p.name != ".git" for p in folder.iterdir()):
        return None
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(folder),
        "GIT_AUTHOR_NAME": "nullius",
        "GIT_AUTHOR_EMAIL": "setup@nullius.invalid",
        "GIT_COMMITTER_NAME": "nullius",
        "GIT_COMMITTER_EMAIL": "setup@nullius.invalid",
        "GIT_CONFIG_NOSYSTEM": "1",
    }
    for argv in (["git", "add", "-A"], ["git", "commit", "-q", "--no-verify", "-m", "setup"]):
        subprocess.run(argv, cwd=folder, env=env, check=True, capture_output=True)
    done = subprocess.run(["git", "rev-parse", "HEAD"], cwd=folder, env=env, check=True, capture_output=True, text=True)
    return done.stdout.strip()
