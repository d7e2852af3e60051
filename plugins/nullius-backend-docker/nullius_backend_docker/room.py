"""One unit's room on docker: its door, its route on the run's relay, its MCP servers, its agent's container.

    door     the unit's network namespace, a loopback and nothing else (door.py):
             relay:61080 the unit's route on the run's relay, door:61090 its MCP servers,
             a licence server under its own name
    agent    --network container:<door>, --user you, no capabilities, no new privileges

The run's relay runs in Nullius's own process, as on the local backend, and
holds the key; the unit reaches its route through a Unix socket of the
door's folder. Everything is labelled `nullius.job=<job>` and
`nullius.unit=<unit>`, and removed after `close`, whatever happened before.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import urllib.parse
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nullius_backend_docker import dockercli, pyruntime, runtime
from nullius_backend_docker.addresses import MACHINE, licence_server
from nullius_backend_docker.door import MCP_PORT, RELAY_PORT, LicenceServer, UnitDoor
from nullius_backend_docker.image import IMAGE_PATH
from nullius_backend_docker.process import ContainerProcess
from nullius_core.contracts.agent import AgentLaunch, McpServerEntry
from nullius_core.contracts.backend import RelayRoom, RouteOptions, UnitPlace
from nullius_core.sandbox import mounts
from nullius_core.sandbox.door import BRIDGE, McpListeners

if TYPE_CHECKING:
    from nullius_backend_docker.backend import DockerBackend

def hardened(user: str) -> list[str]:
    """Every container's options: you, no capabilities, no way to gain any; output only to whoever is attached
    (the daemon's own log of it costs CPU and duplicates the trial's records)."""
    return ["--user", user, "--cap-drop", "ALL", "--security-opt", "no-new-privileges", "--log-driver", "none"]


class DockerRoom:
    def __init__(self, backend: DockerBackend, relay: Any, unit: str, record: Path, place: UnitPlace, route: RouteOptions):
        self.backend = backend
        self.relay = relay
        self.unit = unit
        self.record = record
        self.place = place
        self.prefix = f"{backend.prefix}-{unit}"
        self.box = place.box  # a task's own image: the agent joins that box, and the box's door is the unit's
        self.labels = backend.labels(unit)
        self.door: UnitDoor = self.box.door if self.box is not None else backend.new_door(unit, record.parent / "door.log")
        self._route = RelayRoom(relay, unit, record, route, None)  # the unit's route and token on the run's relay
        self.token = self._route.token
        self.url = f"http://relay:{RELAY_PORT}/{unit}/v1"
        self._licences = self._licence_servers()
        self._mcp: McpListeners | None = None
        self._agent: ContainerProcess | None = None
        self._door: asyncio.Future[None] | None = None

    # --- opening ---------------------------------------------------------------

    async def open(self) -> None:
        """The door, the relay and the licence servers behind it: starting while the agent's container is made."""
        relay = urllib.parse.urlsplit(self.relay.base_url)
        self.door.serve("relay", (relay.hostname or "127.0.0.1", relay.port or 80))
        for alias, port, target in self._licences.values():
            self.door.licence(LicenceServer(alias=alias, port=port, target=target))
        if self.box is None:  # a box opens its door in its own namespace when it starts (box.py)
            self._door = asyncio.ensure_future(self.door.start())

    # --- MCP servers ---------------------------------------------------------------

    def mcp_servers(self, entries: Sequence[McpServerEntry]) -> list[McpServerEntry]:
        """A benchmark's own servers through the door; the agent's own commands stay as they are."""
        machine = [e for e in entries if e.on_machine]
        if machine:
            env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(self.place.home), "LANG": "C.UTF-8"}
            self._mcp = McpListeners(machine, env, self.record.parent / "mcp-servers.log", self.door.folder)
        bridge = str(BRIDGE)
        out = []
        for entry in entries:
            if entry.on_machine:
                out.append(McpServerEntry(name=entry.name, command="/usr/bin/python3", args=[bridge],
                                          env={"NULLIUS_MCP_AT": f"door:{MCP_PORT}", "NULLIUS_MCP_SERVER": entry.name}))
            else:
                out.append(entry)
        return out

    # --- licence servers ---------------------------------------------------------------

    def _licence_servers(self) -> dict[str, tuple[str, int, tuple[str, int]]]:
        """NAME -> (the name the agent reaches it by, port, where this machine connects for it)."""
        handout = self.place.licences
        out = {}
        for i, secret in enumerate(handout.servers if handout is not None else []):
            host, port = licence_server(secret.name, handout.values[secret.name])
            if host in MACHINE:
                alias, host = "host.docker.internal", ("::1" if host == "::1" else "127.0.0.1")  # this machine
            elif re.fullmatch(r"[0-9.]+", host):
                alias = f"licence-server-{i}"
            else:
                alias = host
            out[secret.name] = (alias, port, (host, port))
        return out

    # --- the agent ---------------------------------------------------------------

    async def start_agent(self, launch: AgentLaunch) -> Any:
        name = f"{self.prefix}-agent"
        reads = mounts.outermost(launch.reads)
        path = [str(p / sub) for p in reads for sub in ("node_modules/.bin", ".venv/bin") if (p / sub).is_dir()]
        # in a task's own image, the image's own python3 and node stay first on PATH
        env = {**launch.env, "PATH": ":".join([self.box.path, *path] if self.box is not None else [*path, IMAGE_PATH])}
        for host, inside in launch.licence_files:
            for key, value in list(env.items()):
                if value == str(host):
                    env[key] = inside
        for secret, (alias, port, _) in self._licences.items():
            env[secret] = f"{alias}:{port}"  # on the door's loopback, under the server's own name
        volumes = [f"{folder}:{folder}" for folder in mounts.outermost([launch.cwd, launch.home] if self.box is None else [launch.home])]
        command = list(launch.argv)
        ran_on: dict[str, Any] = {}
        if self.box is None:  # on the base: an environment's interpreter at its path, as its pyvenv.cfg names it
            volumes += [f"{folder}:{folder}:ro" for folder in mounts.outermost([*reads, *mounts.interpreters_of(reads)])]
        else:  # in a task's own image: the standalone Python under /opt/nullius (pyruntime.py)
            volumes += [f"{folder}:{folder}:ro" for folder in reads]
            more, command, ran_on = await self._python(command, reads)
            volumes += more
        if self._mcp is not None:
            volumes.append(f"{BRIDGE.parent}:{BRIDGE.parent}:ro")
            await self._mcp.start()
        # a licence file, read-only at its path; its variable points there
        volumes += [f"{host}:{inside}:ro" for host, inside in launch.licence_files]
        if self.box is not None and runtime.wants_node(command):
            node = await self.backend.node_runtime()  # the base's Node, read-only under /opt/nullius
            volumes.append(f"{node}:{runtime.NODE_DIR}:ro")
            command = runtime.with_node(command)
            ran_on["node"] = {"at": runtime.NODE_DIR, "from": self.backend.image}
        if self.box is not None:
            await self.box.start(volumes, door=True)
            if launch.workdir_files is not None:  # the agent works in the image's folder, not the workspace: a variant's files go there
                await self.box.put_files(launch.workdir_files)
            self._agent = await self.box.exec_agent(command, env, launch.stderr)
            self._agent.runtime = ran_on or None
            return self._agent
        assert self._door is not None
        flags, cli_env = dockercli.by_name(env)
        # made while the door starts (docker takes the door's name before it runs); started once the door listens
        await asyncio.gather(self._door, dockercli.arun(
            ["create", "-i", "--init", "--name", name, *self.labels, "--network", self.door.network, *hardened(self.backend.user),
             "--workdir", str(launch.cwd), *(part for v in volumes for part in ("--volume", v)), *flags,
             self.place.image or self.backend.image, *command], env=cli_env, timeout=120))
        self._agent = await ContainerProcess.start(name, ["start", "-ai", name], cli_env, launch.stderr)
        return self._agent

    async def _python(self, command: list[str], reads: list[Path]) -> tuple[list[str], list[str], dict[str, Any]]:
        """A Python agent in a box: the mounts and command that run it on the standalone Python, and its record.

        Its environments of that minor get a view over their `bin` and
        `pyvenv.cfg`; an agent started as `python3` (no environment) is started by
        the standalone's python. When the standalone cannot be had, the agent runs
        as before it (environments on this machine's interpreter at its path,
        `python3` the image's), and the record says so and why.
        """
        found = pyruntime.venvs(reads)
        minor = next(iter(found.values()), None) or pyruntime.bare_python(command)
        if minor is None:
            return [], command, {}
        try:
            python = await self.backend.python_runtime(minor)
        except pyruntime.RuntimeUnavailable as exc:
            at_path = [f"{f}:{f}:ro" for f in mounts.outermost(mounts.interpreters_of(reads))]
            return at_path, command, {"python": {"standalone": f"not installed: {exc}", "used": "this machine's interpreter at its path"
                                                 if found else "the image's own python3"}}
        volumes = [f"{python.folder}:{pyruntime.PYTHON_DIR}:ro"]
        views = self.backend.runtimes_dir / "python" / "views"
        for venv, its in found.items():
            if its == minor:
                view = await asyncio.to_thread(pyruntime.view, python, venv, minor, views)
                volumes += [f"{view / 'bin'}:{venv / 'bin'}:ro", f"{view / 'pyvenv.cfg'}:{venv / 'pyvenv.cfg'}:ro"]
            else:  # another minor than the runtime's: its own interpreter, at its path, as on the base
                volumes += [f"{f}:{f}:ro" for f in mounts.interpreters_of([venv])]
        if not found:
            command = [python.binary(minor), *command[1:]]
        return volumes, command, {"python": python.record()}

    # --- closing ---------------------------------------------------------------

    async def close(self) -> None:
        if self._door is not None:  # a door still starting is stopped; one that failed has said so already
            self._door.cancel()
            with contextlib.suppress(BaseException):
                await self._door
        # when this returns, the unit's calls are recorded: it is scored from them
        await self._route.close()
        if self._mcp is not None:
            await self._mcp.close()
        if self.box is not None:
            return  # the door is the box's: it goes with the box, after it
        # what is left is removed off the unit's path, before the run ends: the agent's container, then the door
        self.backend.later(self._remove())

    async def _remove(self) -> None:
        await dockercli.arun(["rm", "-f", f"{self.prefix}-agent"], timeout=60, check=False)
        await self.door.close()
