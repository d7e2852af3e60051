"""One unit's room on docker: its internal network, its route on the run's relay, its MCP door, its agent's container.

    unit network (--internal: no route out)
      ├── relay    the run's relay container (relaybox.py), joined as `relay`, the unit's own route and
      │            token on it; also on the default bridge: the agent's one way out; the key is there only
      ├── door     forward.py; only when setup asked for a benchmark's MCP server
      ├── licence  forward.py tcp, one per licence server, under the server's own name
      └── agent    --user you, no capabilities, no new privileges

Everything is labelled `nullius.job=<job>` and `nullius.unit=<unit>`, and
removed after `close`, whatever happened before.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import secrets
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nullius_core.run.agent import AgentLaunch, McpServerEntry
from nullius_core.run.backend import RouteOptions, UnitPlace

from nullius_backend_docker import dockercli, mounts, runtime
from nullius_backend_docker.addresses import MACHINE, licence_server
from nullius_backend_docker.dockercli import DockerError
from nullius_backend_docker.image import IMAGE_PATH
from nullius_backend_docker.listeners import McpListeners
from nullius_backend_docker.process import ContainerProcess
from nullius_backend_docker.relaybox import RELAY_PORT, RelayBox

if TYPE_CHECKING:
    from nullius_backend_docker.backend import DockerBackend

CONTAINER_FILES = Path(__file__).resolve().parent / "container"
DOOR_PORT = 9000


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
        self.route = route
        self.prefix = f"{backend.prefix}-{unit}"
        self.box = place.box  # a task's own image: the agent joins that box, on the box's network
        self.network = self.box.network if self.box is not None else self.prefix
        self.labels = backend.labels(unit)
        self.url = f"http://relay:{RELAY_PORT}/{unit}/v1"
        self.token = ""
        self._box: RelayBox | None = None
        self._routed = False
        self._mcp: McpListeners | None = None
        self._door = False
        self._agent: ContainerProcess | None = None
        self._ready: asyncio.Future[None] | None = None
        self._licences: list[str] = []
        self._licence_addresses: list[str] = []

    # --- opening ---------------------------------------------------------------

    async def open(self) -> None:
        """The network, then the run's relay joined to it with the unit's route, while the agent's container is made."""
        if self.box is not None:
            await self.box.ensure_network()
        else:
            await dockercli.arun(["network", "create", "--internal", *self.labels, self.network], timeout=60)
        self._box = await self.backend.relay_box(self.relay)
        self.token = "nlr-" + secrets.token_urlsafe(24)  # made here, so the agent's container is made while the route is added

        async def route() -> None:
            await asyncio.gather(self._box.join(self.network), self._box.add(self.unit, self.record, self.token, self.route))
            self._routed = True

        self._ready = asyncio.ensure_future(route())

    # --- MCP servers ---------------------------------------------------------------

    def mcp_servers(self, entries: Sequence[McpServerEntry]) -> list[McpServerEntry]:
        """A benchmark's own servers through the door; the agent's own commands stay as they are."""
        machine = [e for e in entries if e.on_machine]
        if machine:
            env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(self.place.home), "LANG": "C.UTF-8"}
            self._mcp = McpListeners(machine, env, self.record.parent / "mcp-servers.log")
        bridge = str(CONTAINER_FILES / "mcp_bridge.py")
        out = []
        for entry in entries:
            if entry.on_machine:
                out.append(McpServerEntry(name=entry.name, command="/usr/bin/python3", args=[bridge],
                                          env={"NULLIUS_MCP_AT": f"door:{DOOR_PORT}", "NULLIUS_MCP_SERVER": entry.name}))
            else:
                out.append(entry)
        return out

    async def _start_door(self) -> None:
        assert self._mcp is not None
        await self._mcp.start()
        name = f"{self.prefix}-door"
        await dockercli.arun([
            "run", "-d", "--rm", "--name", name, *self.labels, "--network", self.network, "--network-alias", "door",
            *hardened(self.backend.user), "--read-only",
            "--volume", f"{self._mcp.folder}:/sockets", "--volume", f"{CONTAINER_FILES}:/opt/nullius-door:ro",
            self.backend.image, "python3", "/opt/nullius-door/forward.py", str(DOOR_PORT), "/sockets",
        ], timeout=60)
        self._door = True

    # --- licence servers ---------------------------------------------------------------

    def _licence_servers(self) -> dict[str, tuple[str, int, tuple[str, int]]]:
        """NAME -> (the name the agent reaches it by, port, where the forwarder connects)."""
        handout = self.place.licences
        out = {}
        for i, secret in enumerate(handout.servers if handout is not None else []):
            host, port = licence_server(secret.name, handout.values[secret.name])
            if host in MACHINE:
                alias = "host.docker.internal"  # this machine: through the run's forwarder on the bridge's gateway
            elif re.fullmatch(r"[0-9.]+", host):
                alias = f"licence-server-{i}"
            else:
                alias = host
            out[secret.name] = (alias, port, (host, port))
        return out

    async def _start_licence(self, i: int, alias: str, port: int, target: tuple[str, int]) -> None:
        host, target_port = target
        if host in MACHINE:
            target = ("host.docker.internal", await self.backend.machine_port("127.0.0.1" if host == "host.docker.internal" else host, target_port))
        name = f"{self.prefix}-licence-{i}"
        await dockercli.arun([
            "run", "-d", "--rm", "--name", name, *self.labels, "--network", self.network, "--network-alias", alias,
            *hardened(self.backend.user), "--read-only", "--add-host", "host.docker.internal:host-gateway",
            "--sysctl", "net.ipv4.ip_unprivileged_port_start=0", "--volume", f"{CONTAINER_FILES}:/opt/nullius-door:ro",
            self.backend.image, "python3", "/opt/nullius-door/forward.py", "tcp", str(port), target[0], str(target[1]),
        ], timeout=60)
        self._licences.append(name)
        await dockercli.arun(["network", "connect", "bridge", name], timeout=60)
        address = await dockercli.arun(["inspect", "--format", "{{.NetworkSettings.Networks.bridge.IPAddress}}", name], timeout=60)
        self._licence_addresses.append(address.strip())
        self.backend.allow(address.strip())

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
        servers = self._licence_servers()
        for secret, (alias, port, _) in servers.items():
            env[secret] = f"{alias}:{port}"  # the forwarder beside the relay, under the server's own name
        volumes = [f"{folder}:{folder}" for folder in mounts.outermost([launch.cwd, launch.home] if self.box is None else [launch.home])]
        volumes += [f"{folder}:{folder}:ro" for folder in mounts.outermost([*reads, *mounts.interpreters_of(reads)])]
        if self._mcp is not None:
            volumes.append(f"{CONTAINER_FILES}:{CONTAINER_FILES}:ro")
        # a licence file, read-only at its path; its variable points there
        volumes += [f"{host}:{inside}:ro" for host, inside in launch.licence_files]
        command = list(launch.argv)
        if self.box is not None and runtime.wants_node(command):
            node = await self.backend.node_runtime()  # the base's Node, read-only under /opt/nullius
            volumes.append(f"{node}:{runtime.NODE_DIR}:ro")
            command = runtime.with_node(command)

        # made and started while the route is added (and the door starts): the agent calls its model only
        # once it has its prompt, which it gets after this returns, when the route is there
        async def agent() -> None:
            if self.box is not None:
                await self.box.start(volumes)
                self._agent = await self.box.exec_agent(command, env, launch.stderr)
                return
            flags, cli_env = dockercli.by_name(env)
            await dockercli.arun(["create", "-i", "--init", "--name", name, *self.labels, "--network", self.network,
                                  *hardened(self.backend.user), "--workdir", str(launch.cwd),
                                  *(part for v in volumes for part in ("--volume", v)), *flags, self.place.image or self.backend.image,
                                  *command], env=cli_env, timeout=120)
            self._agent = await ContainerProcess.start(name, ["start", "-ai", name], cli_env, launch.stderr)

        steps = [agent(), self._ready, *(self._start_licence(i, alias, port, target) for i, (alias, port, target) in enumerate(servers.values()))]
        if self._mcp is not None and not self._door:
            steps.append(self._start_door())
        await asyncio.gather(*steps)
        assert self._agent is not None
        return self._agent

    # --- closing ---------------------------------------------------------------

    async def close(self) -> None:
        for address in self._licence_addresses:
            self.backend.disallow(address)
        if self._ready is not None and not self._ready.done():
            self._ready.cancel()
            with contextlib.suppress(BaseException):
                await self._ready
        if self._routed and self._box is not None:
            # when this returns, the unit's calls are recorded: it is scored from them
            with contextlib.suppress(DockerError, asyncio.TimeoutError):
                await self._box.remove(self.unit)
        if self._mcp is not None:
            await self._mcp.close()
        # what is left is removed off the unit's path, before the run ends (a box's network after it)
        removal = asyncio.ensure_future(self._remove())
        self.backend.later(removal)
        if self.box is not None:
            self.box.room_removed = removal

    async def _remove(self) -> None:
        names = [f"{self.prefix}-{part}" for part in ("agent", "door")] + self._licences
        await dockercli.arun(["rm", "-f", *names], timeout=60, check=False)
        if self.box is not None:
            return  # the network is the box's: it goes with the box
        if self._box is not None:
            await self._box.leave(self.network)
        await dockercli.arun(["network", "rm", self.network], timeout=60, check=False)
