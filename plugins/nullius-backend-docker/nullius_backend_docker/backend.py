"""The docker backend: each unit's agent in a container of its own, with no network but its door's loopback.

The driver and the run's relay stay on this machine; the unit reaches the
relay (and its MCP servers, its licence servers) only through its door
(door.py). What the agent left is checked in a throwaway, network-less
container of the unit's image (the `sandbox` every op of the unit is sent).
At the end of the run, whatever still carries the job's label is swept; so
it is at the start, for what a killed run of the same job left.
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Callable, Sequence
from contextlib import nullcontext
from pathlib import Path
from typing import Any

import attrs

from nullius_backend_docker import dockercli, engine, envimage, image, ownimage, pyruntime, sweep
from nullius_backend_docker.addresses import licence_server
from nullius_backend_docker.asyncapi import Engine
from nullius_backend_docker.box import DockerBox
from nullius_backend_docker.calls import CallLog
from nullius_backend_docker.dockercli import DockerError
from nullius_backend_docker.door import UnitDoor
from nullius_backend_docker.image import IMAGE_PATH
from nullius_backend_docker.room import DockerRoom, hardened
from nullius_core.contracts.backend import RouteOptions, RunContext, UnitPlace, init_repository, opened
from nullius_core.contracts.driver import DriverLaunch
from nullius_core.heartbeat import heartbeat
from nullius_core.processes import current
from nullius_core.sandbox import mounts
from nullius_core.contracts.own_image import BuildFailed

CHECK_MEMORY = "2g"
CHECK_PIDS = "512"


class DockerBackend:
    name = "docker"

    def __init__(self) -> None:
        self.calls = CallLog("the run")  # the run's own docker calls: the job's .work/docker-calls.tsv
        self.version = dockercli.check_daemon(self.calls)  # no daemon: the run is refused, saying how to get one
        daemon = engine.Sync(self.calls)
        self.api = Engine(daemon.path, daemon.prefix())  # a box's steps, in the run's loop
        self.user = f"{os.getuid()}:{os.getgid()}"
        self.job = ""
        self.prefix = ""
        self.folder = ""
        self.image = ""
        self._lock = asyncio.Lock()
        self._env_locks: dict[tuple[str, str], asyncio.Lock] = {}
        self._later: set[asyncio.Future[None]] = set()
        self._env_tags: dict[tuple[str, str], str] = {}
        self._env_failures: dict[tuple[str, str], Exception] = {}  # why an image could not be made, once per run
        self._image_facts: dict[str, ownimage.ImageFacts] = {}  # an own image's working directory, environment and user
        self.job_dir = Path("/tmp")
        self.progress: Any = None
        self.images_dir = Path("/tmp")
        self.runtimes_dir = Path("/tmp")
        self._pythons: dict[str, pyruntime.PythonRuntime | pyruntime.RuntimeUnavailable] = {}  # per minor, tried once a run

    async def start(self, context: RunContext) -> None:
        self.job = context.job
        self.job_dir = context.job_dir
        # names stay short and unique per job folder (one job name may be run in two jobs folders at once);
        # the labels carry the job's whole name and its folder's digest
        self.folder = sweep.folder_label(context.job_dir)
        self.prefix = "nullius-" + self.folder[:10]
        progress = self.progress = context.progress

        def say(state: str, fields: dict[str, Any]) -> None:
            progress.stage("install", base_image=fields.get("image", ""), state=state,
                           **{k: v for k, v in fields.items() if k != "image"})

        self.images_dir = context.paths.standard_dir / "images"
        self.runtimes_dir = context.paths.standard_dir / "runtimes"
        # a resumed job's killed run may have left containers still working: they go before any unit runs again
        await asyncio.to_thread(sweep.sweep, self.job, 0, self.folder, self.calls)
        # should this run be killed (SIGKILL), its watcher sweeps its containers, networks and volumes at once
        current().after_kill([sys.executable, "-m", "nullius_core", "docker", "sweep", str(context.job_dir)])
        self.image = await asyncio.to_thread(image.ensure_base, self.images_dir, say, self.calls)

    def labels(self, unit: str | None = None) -> list[str]:
        return [part for key, value in self.label_map(unit).items() for part in ("--label", f"{key}={value}")]

    def label_map(self, unit: str | None = None) -> dict[str, str]:
        """The labels of everything the run starts (the sweep finds them): as the API takes them; `labels` as the CLI does."""
        out = {"nullius.job": self.job, "nullius.folder": self.folder}
        if unit is not None:
            out["nullius.unit"] = unit
        return out

    def record(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "image": self.image,
            "docker": self.version,
            "isolation": "each unit's agent in its own container (--user, no capabilities) with no network but its door's "
            "loopback: the run's relay (the key in Nullius's process only), its MCP and licence servers, each a Unix socket; "
            "checks in throwaway network-less containers",
        }

    async def prepare_unit(self, workspace: Path, home: Path) -> UnitPlace:
        workspace.mkdir(parents=True, exist_ok=True)
        home.mkdir(parents=True, exist_ok=True)
        init_repository(workspace)
        return UnitPlace(workspace=workspace, home=home, sandbox=self.sandbox(), image=self.image)

    async def use_environment(self, place: UnitPlace, environment: Any, participant: str, handout: Any) -> UnitPlace:
        """The unit's environment's image (built when a unit first asks), for its agent and its checks."""
        if environment is None:
            return place
        definition = environment.definition
        if environment.own is not None:
            return await self._own_image(place, environment, handout)
        for secret in handout.servers if handout is not None else []:
            licence_server(secret.name, handout.values[secret.name])  # a malformed host:port refuses the unit now
        tag = await self._image_once((environment.benchmark, environment.name), environment, lambda say: envimage.ensure(
            environment.benchmark, environment.name, environment.folder, definition.dockerfile or "", list(definition.files or []),
            self.image, environment.log, self.images_dir, say, self.calls))
        return attrs.evolve(place, environment=environment, image=tag, sandbox=self.sandbox(tag), licences=handout)

    async def _own_image(self, place: UnitPlace, environment: Any, handout: Any) -> UnitPlace:
        """The task's own image, built or pulled when a unit first asks; checks run in the box, not in a sandbox."""
        own = environment.own
        log = environment.log.with_name(f"own-{(own.image.build or 'pull').strip('/').replace('/', '-')}.log")

        def make(say: Callable[..., None]) -> str:
            tag = ownimage.ensure(environment.benchmark, own.source, own.image.build, own.image.pull, self.image, log, self.images_dir, say,
                                  self.calls)
            self._image_facts[tag] = ownimage.facts(tag, self.calls)
            return tag

        tag = await self._image_once((environment.benchmark, own.image.pull or f"build:{own.image.build}"), environment, make)
        return attrs.evolve(place, environment=environment, image=tag, sandbox=None, licences=handout)

    async def _image_once(self, key: tuple[str, str], environment: Any, make: Callable[[Callable[..., None]], str]) -> str:
        """The first unit finds or makes the image (in a thread: hashing, the daemon, a build); the others wait, then reuse its tag."""
        progress = self.progress

        def say(state: str, tag: str, **fields: Any) -> None:
            if progress is not None:
                progress.stage("install", environment=f"{environment.benchmark}/{environment.name}", image=tag, state=state, **fields)

        async with self._env_locks.setdefault(key, asyncio.Lock()):
            if key in self._env_failures:  # tried once this run: the others are told why, not built again
                failed = self._env_failures[key]
                raise type(failed)(str(failed))
            if key not in self._env_tags:
                try:
                    self._env_tags[key] = await asyncio.to_thread(make, say)
                except (DockerError, BuildFailed) as exc:
                    self._env_failures[key] = exc
                    raise
        return self._env_tags[key]

    async def open_box(self, place: UnitPlace, own: Any, unit: str) -> DockerBox:
        """The unit's box: started when its agent joins it (with the agent's mounts), or when a control first uses it."""
        facts = self._image_facts[place.image]
        box = DockerBox(self, unit, place.image, own, own.workdir or facts.workdir, facts, place.home)
        try:
            await box.start_services()
        except BaseException:
            await box._remove()  # noqa: SLF001 - what started of its services goes with it
            raise
        return box

    async def node_runtime(self) -> Path:
        """The base image's Node on this machine (its /usr/local/bin/node), copied out once per base image."""
        async with self._lock:
            folder = self.images_dir / "runtimes" / self.image.replace("/", "-").replace(":", "-") / "node"
            if not (folder / "bin" / "node").exists():
                await asyncio.to_thread(image.copy_node, self.image, folder)
            return folder

    async def python_runtime(self, minor: str) -> pyruntime.PythonRuntime:
        """The standalone Python of `minor` (pyruntime.py), installed once; tried once a run, a failure told and kept."""
        async with self._lock:
            known = self._pythons.get(minor)
            if known is None:
                say = self.progress.stage if self.progress is not None else (lambda *a, **k: None)
                try:
                    with heartbeat(self.progress, "install", runtime=f"python-{minor}") if self.progress is not None else nullcontext():
                        known = await asyncio.to_thread(pyruntime.ensure, self.runtimes_dir, minor)
                    say("install", runtime=f"python-{minor}", python=known.version, state="ready")
                except pyruntime.RuntimeUnavailable as exc:
                    known = exc
                    say("install", runtime=f"python-{minor}", state="failed", reason=str(exc)[:300])
                self._pythons[minor] = known
        if isinstance(known, pyruntime.RuntimeUnavailable):
            raise pyruntime.RuntimeUnavailable(str(known))
        return known

    def sandbox(self, image_tag: str | None = None) -> dict[str, Any]:
        """How a driver runs what the agent left: a throwaway container, no network, of the unit's image."""
        argv = [dockercli.docker_binary(), "run", "--rm", "-i", "--network", "none", *hardened(self.user), *self.labels(),
                "--memory", CHECK_MEMORY, "--pids-limit", CHECK_PIDS, "--tmpfs", "/tmp:size=64m", "--read-only"]
        return {"kind": "docker", "argv": argv, "image": image_tag or self.image}

    async def open_room(self, relay: Any, unit: str, record: Path, place: UnitPlace, route: RouteOptions) -> DockerRoom:
        room = DockerRoom(self, relay, unit, record, place, route)
        return await opened(room)

    def capability_launch(self, launch: DriverLaunch, reads: Sequence[Path], unit: str) -> DriverLaunch:
        """The capability's process in a container of its own: no network, its install read-only, its folder its own."""
        folders = mounts.outermost(reads)
        argv = list(launch.argv)
        if argv and not any(Path(argv[0]).is_relative_to(f) for f in folders) and Path(argv[0]).name.startswith("python"):
            argv[0] = "python3"  # this machine's interpreter is not in the container: the image's is
        path = [str(p / ".venv" / "bin") for p in folders if (p / ".venv" / "bin").is_dir()]
        env = {k: v for k, v in launch.env.items() if k not in ("PATH", "HOME", "TMPDIR")}
        env.update({"PATH": ":".join([*path, IMAGE_PATH]), "HOME": str(launch.cwd)})
        docker = [dockercli.docker_binary(), "run", "-i", "--rm", "--init", "--name", f"{self.prefix}-{unit}-capability",
                  *self.labels(unit), "--network", "none", *hardened(self.user), "--workdir", str(launch.cwd),
                  "--volume", f"{launch.cwd}:{launch.cwd}"]
        for folder in mounts.outermost([*folders, *mounts.interpreters_of(folders)]):
            docker += ["--volume", f"{folder}:{folder}:ro"]
        flags, cli_env = dockercli.by_name(env)
        return DriverLaunch(argv=[*docker, *flags, self.image, *argv], env=cli_env, cwd=launch.cwd, label=f"{launch.label} in docker")

    def later(self, work: Any) -> None:
        """Removal off a unit's path: awaited before the run's sweep."""
        task = asyncio.ensure_future(work)
        self._later.add(task)
        task.add_done_callback(self._later.discard)

    def new_door(self, unit: str, log: Path) -> UnitDoor:
        """The unit's door, not started: the room or the box starts it with what the unit needs behind it."""
        return UnitDoor(f"{self.prefix}-{unit}-door", self.labels(unit), hardened(self.user), self.image, log)

    async def close(self) -> None:
        if self._later:
            await asyncio.gather(*self._later, return_exceptions=True)
        try:
            if self.job:
                await asyncio.to_thread(sweep.sweep, self.job, 0, self.folder, self.calls)
        finally:
            await self.api.close()
            if self.job:
                self.calls.write(self.job_dir / ".work" / "docker-calls.tsv")
