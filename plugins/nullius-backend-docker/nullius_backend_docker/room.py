"""One unit's room on docker: its internal network, its relay sidecar, its MCP door, its agent's container.

    unit network (--internal: no route out)
      ├── relay   (also on the default bridge: the agent's one way out; the key is here only)
      ├── door    (forward.py; only when setup asked for a benchmark's MCP server)
      └── agent   (--user you, no capabilities, no new privileges)

Everything is labelled `nullius.job=<job>` and `nullius.unit=<unit>`, and
removed by `close`, whatever happened before.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import secrets
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nullius_core.run.agent import AgentLaunch, McpServerEntry
from nullius_core.run.backend import RouteOptions, UnitPlace

from nullius_backend_docker import dockercli, mounts
from nullius_backend_docker.addresses import MACHINE, licence_server
from nullius_backend_docker.dockercli import DockerError
from nullius_backend_docker.image import IMAGE_PATH
from nullius_backend_docker.listeners import McpListeners
from nullius_backend_docker.process import ContainerProcess

if TYPE_CHECKING:
    from nullius_backend_docker.backend import DockerBackend

CONTAINER_FILES = Path(__file__).resolve().parent / "container"
RELAY_PORT = 8080
DOOR_PORT = 9000
READY_SECONDS = 60
KEY_VARIABLE = "NULLIUS_RELAY_UPSTREAM_KEY"
TOKEN_VARIABLE = "NULLIUS_RELAY_TOKEN"


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
        self.network = self.prefix
        self.labels = backend.labels(unit)
        self.url = f"http://relay:{RELAY_PORT}/{unit}/v1"
        self.token = ""
        self._relay_proc: asyncio.subprocess.Process | None = None
        self._relay_err: Any = None
        self._mcp: McpListeners | None = None
        self._door = False
        self._agent: ContainerProcess | None = None
        self._relay_address = ""
        self._ready: asyncio.Future[None] | None = None
        self._licences: list[str] = []
        self._licence_addresses: list[str] = []

    # --- opening ---------------------------------------------------------------

    async def open(self) -> None:
        """The network, then the relay starting: the agent's container is made while the relay boots."""
        await dockercli.arun(["network", "create", "--internal", *self.labels, self.network], timeout=60)
        await self._spawn_relay()
        self._ready = asyncio.ensure_future(self._relay_ready())

    async def _spawn_relay(self) -> None:
        upstream = self.relay.upstream
        self.record.mkdir(parents=True, exist_ok=True)
        base_url = await self.backend.upstream_url(upstream.base_url)
        name = f"{self.prefix}-relay"
        self.token = "nlr-" + secrets.token_urlsafe(24)  # made here, so the agent's container is made while the relay boots
        argv = [
            "run", "--rm", "--name", name, *self.labels, "--network", self.network, "--network-alias", "relay",
            *hardened(self.backend.user), "--read-only", "--tmpfs", "/tmp",
            "--add-host", "host.docker.internal:host-gateway",
            "-e", "HOME=/tmp", "-e", "PYTHONDONTWRITEBYTECODE=1", "-e", "NULLIUS_PLUGINS=model-apis,providers",
            "-e", TOKEN_VARIABLE,
        ]
        env: dict[str, str] = {TOKEN_VARIABLE: self.token}
        if upstream.key:
            argv += ["-e", KEY_VARIABLE]  # by name: the value is in the CLI's environment, never on an argument list
            env[KEY_VARIABLE] = upstream.key
        for folder in mounts.nullius_python():
            argv += ["--volume", f"{folder}:{folder}:ro"]
        argv += ["--volume", f"{self.record}:{self.record}", self.backend.image]
        argv += [sys.executable, "-m", "nullius_core", "relay", "serve", "--provider", upstream.provider.name,
                 "--base-url", base_url, "--unit", self.unit, "--host", "0.0.0.0", "--port", str(RELAY_PORT),
                 "--record", str(self.record), "--token-env", TOKEN_VARIABLE]
        if self.route.model:
            argv += ["--model", self.route.model]
        for side in sorted(self.route.side_models):
            argv += ["--side-model", side]
        if self.route.call_seconds:
            argv += ["--timeout", str(self.route.call_seconds)]
        self._relay_err = open(self.record / "relay-container.log", "ab")  # noqa: SIM115 - closed in close()
        self._relay_proc = await asyncio.create_subprocess_exec(
            dockercli.docker_binary(), *argv, stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE,
            stderr=self._relay_err, env=dockercli._env(env), start_new_session=True,
        )

    async def _relay_ready(self) -> None:
        assert self._relay_proc is not None and self._relay_proc.stdout is not None
        name = f"{self.prefix}-relay"
        try:
            line = await asyncio.wait_for(self._relay_proc.stdout.readline(), READY_SECONDS)
            ready = json.loads(line) if line else None
        except (asyncio.TimeoutError, ValueError):
            ready = None
        if not isinstance(ready, dict) or ready.get("token") != self.token:
            tail = (self.record / "relay-container.log").read_text(errors="replace")[-600:]
            raise DockerError(f"the unit's relay sidecar did not start: {tail or 'no output'}")
        # on the default bridge too: the relay's way to the provider; the unit's network has none
        await dockercli.arun(["network", "connect", "bridge", name], timeout=60)
        address = await dockercli.arun(["inspect", "--format", "{{.NetworkSettings.Networks.bridge.IPAddress}}", name], timeout=60)
        self._relay_address = address.strip()
        self.backend.allow(self._relay_address)

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

    async def start_agent(self, launch: AgentLaunch) -> ContainerProcess:
        name = f"{self.prefix}-agent"
        reads = mounts.outermost(launch.reads)
        path = [str(p / sub) for p in reads for sub in ("node_modules/.bin", ".venv/bin") if (p / sub).is_dir()]
        env = {**launch.env, "PATH": ":".join([*path, IMAGE_PATH])}
        for host, inside in launch.licence_files:
            for key, value in list(env.items()):
                if value == str(host):
                    env[key] = inside
        servers = self._licence_servers()
        for name, (alias, port, _) in servers.items():
            env[name] = f"{alias}:{port}"  # the forwarder beside the relay, under the server's own name
        argv = ["create", "-i", "--init", "--name", name, *self.labels, "--network", self.network,
                *hardened(self.backend.user), "--workdir", str(launch.cwd)]
        for folder in mounts.outermost([launch.cwd, launch.home]):
            argv += ["--volume", f"{folder}:{folder}"]
        for folder in mounts.outermost([*reads, *mounts.interpreters_of(reads)]):
            argv += ["--volume", f"{folder}:{folder}:ro"]
        if self._mcp is not None:
            argv += ["--volume", f"{CONTAINER_FILES}:{CONTAINER_FILES}:ro"]
        for host, inside in launch.licence_files:  # a licence file, read-only at its path; its variable points there
            argv += ["--volume", f"{host}:{inside}:ro"]
        for key in sorted(env):
            argv += ["-e", key]  # by name: values stay off the argument list
        argv += [self.place.image or self.backend.image, *launch.argv]
        cli_env = {**env, **{k: v for k, v in dockercli._env(None).items() if k.startswith("DOCKER_")}}
        cli_env.setdefault("DOCKER_CONFIG", str(Path(os.environ.get("HOME", "/root")) / ".docker"))
        # made and started while the relay boots (and the door starts): the agent calls its model only once
        # it has its prompt, which it gets after this returns, when the relay answers
        async def agent() -> None:
            await dockercli.arun(argv, env=cli_env, timeout=120)
            self._agent = await ContainerProcess.start(name, ["start", "-ai", name], cli_env, launch.stderr)

        steps = [agent(), self._ready, *(self._start_licence(i, alias, port, target) for i, (alias, port, target) in enumerate(servers.values()))]
        if self._mcp is not None and not self._door:
            steps.append(self._start_door())
        await asyncio.gather(*steps)
        assert self._agent is not None
        return self._agent

    # --- closing ---------------------------------------------------------------

    async def close(self) -> None:
        if self._ready is not None and not self._ready.done():
            self._ready.cancel()
        for address in [self._relay_address, *self._licence_addresses]:
            if address:
                self.backend.disallow(address)
        if self._relay_proc is not None:
            # TERM first: the relay records its calls in flight before it stops
            await dockercli.arun(["stop", "--time", "5", f"{self.prefix}-relay"], timeout=60, check=False)
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._relay_proc.wait(), 15)
            if self._relay_err is not None:
                self._relay_err.close()
        if self._mcp is not None:
            await self._mcp.close()
        # the unit's record is complete; what is left is removed off the unit's path, before the run ends
        self.backend.later(self._remove())

    async def _remove(self) -> None:
        names = [f"{self.prefix}-{part}" for part in ("agent", "door", "relay")] + self._licences
        await dockercli.arun(["rm", "-f", *names], timeout=60, check=False)
        await dockercli.arun(["network", "rm", self.network], timeout=60, check=False)
