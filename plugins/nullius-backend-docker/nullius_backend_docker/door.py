"""A unit's door: a network namespace with a loopback and nothing else, and the Unix sockets behind it on this machine.

    door container   --network none, as you, no capabilities; forward.py on its loopback:
      relay:61080       -> relay.sock        the run's relay (in Nullius's own process): the unit's route
      door:61090        -> mcp-<name>.sock   a benchmark's MCP server, one start per connection (listeners.py)
      egress:61128      -> egress.sock       the check's proxy (box.py), there only while the check runs
      <name>:<port>     -> licence-<i>.sock  a licence server, connected to from this machine
    agent            --network container:<door>: the same loopback, the same /etc/hosts
    box              a namespace of its own (--network none, these names in its /etc/hosts);
                     the door's listeners made in it by this process (nsdoor.py), or a door
                     container joined to it (--network container:<box>)

The namespace has no interface but `lo`: no address of this machine, of the
docker bridge or of the internet can be reached from it, whatever listens
there. The unit's one way to anything is a socket of this folder (0700,
yours), mounted into the door alone. The ports are above the ephemeral
range, so that a task's own server on a usual port never meets them.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import IO

import attrs

from nullius_backend_docker import dockercli, nsdoor
from nullius_backend_docker.calls import CallLog, timed
from nullius_backend_docker.dockercli import DockerError
from nullius_core.processes import current, start_process
from nullius_core.sandbox.door import tcp_behind

CONTAINER_FILES = Path(__file__).resolve().parent / "container"
RELAY_PORT = 61080
MCP_PORT = 61090
EGRESS_PORT = 61128
READY_SECONDS = 60
# The names the unit's processes use, all on the door's loopback.
FIXED = (("relay", "127.0.0.1", RELAY_PORT, "relay"), ("door", "127.0.0.1", MCP_PORT, "mcp-*"), ("egress", "127.0.0.1", EGRESS_PORT, "egress"))


@attrs.frozen
class LicenceServer:
    """A licence server as the unit reaches it (`alias:port`, on the door's loopback) and where this machine connects for it."""

    alias: str
    port: int
    target: tuple[str, int]


def local() -> bool:
    """NULLIUS_DOCKER_LOCAL=0: nothing of a box done or read from this machine's side (its door a container, its changes and
    processes asked of the daemon), as for a daemon that is not on this machine."""
    return os.environ.get("NULLIUS_DOCKER_LOCAL") != "0"


class UnitDoor:
    def __init__(self, name: str, labels: Sequence[str], options: Sequence[str], image: str, log: Path):
        self.name = name
        self.labels = list(labels)
        self.options = list(options)  # the backend's hardening
        self.image = image
        self.log = log
        self.licences: list[LicenceServer] = []
        self._services: list[tuple[str, tuple[str, int]]] = []  # a socket's name, the TCP service of this machine behind it
        self.folder = Path(tempfile.mkdtemp(prefix="nullius-unit-"))
        os.chmod(self.folder, 0o700)
        current().scratch(self.folder)  # its sockets: a killed run's watcher removes the folder
        self._proc: asyncio.subprocess.Process | None = None
        self._log: IO[bytes] | None = None
        self._servers: list[asyncio.AbstractServer] = []
        self._listeners: list[asyncio.AbstractServer] = []  # in a box's namespace, made here (nsdoor.py)
        self._opened = False
        self._lock = asyncio.Lock()
        self.calls: CallLog | None = None  # the unit's box's, when it has one: its start and end timed there

    @property
    def network(self) -> str:
        """What a container of the unit is given as --network: the door's namespace."""
        return f"container:{self.name}"

    def socket(self, name: str) -> Path:
        return self.folder / f"{name}.sock"

    def serve(self, name: str, target: tuple[str, int]) -> None:
        """Before `start`: the socket `name` leads to `target`, a TCP service of this machine (the run's relay)."""
        self._services.append((name, target))

    def licence(self, server: LicenceServer) -> None:
        """Before `start`: a licence server, reached as `alias:port` from the unit."""
        self._services.append((f"licence-{len(self.licences)}", server.target))
        self.licences.append(server)

    async def start(self) -> None:
        """The door in a namespace of its own, listening (it says `ready`); the agent's container joins it. Once, however many ask."""
        async with self._lock:
            if self._proc is not None:
                return
            with timed(self.calls, "door", "docker run -i (the door, until ready)") as result:
                await self._serve_sockets()
                await self._run("none", [part for entry in self.hosts() for part in ("--add-host", entry)])
                result[0] = "ready"

    async def open_in(self, box: str, pid: int, container_id: str) -> None:
        """The door's listeners in a box's own namespace (the box made with `hosts()`): by this process where it may enter it,
        else a door container joined to the box. Once."""
        async with self._lock:
            if self._opened:
                return
            self._opened = True
            await self._serve_sockets()
            if nsdoor.usable(pid, container_id) and local():
                with timed(self.calls, "door", "listening in the box's namespace, from here") as result:
                    try:
                        self._listeners = await nsdoor.listen(pid, self._mappings(), self.folder)
                        result[0] = "ready"
                        return
                    except OSError as exc:  # not allowed here after all: the container, as elsewhere
                        result[0] = f"a container instead: {exc}"[:160]
            with timed(self.calls, "door", "docker run -i (the door, joined to the box)") as result:
                await self._run(f"container:{box}", [])
                result[0] = "ready"

    def hosts(self) -> list[str]:
        """`name:address` of each of the door's addresses: the /etc/hosts lines of its namespace."""
        return [f"{alias}:{address}" for alias, address, _, _ in FIXED] + \
            [f"{licence.alias}:127.0.1.{i + 1}" for i, licence in enumerate(self.licences)]

    def _mappings(self) -> list[tuple[str, int, str]]:
        # a licence server on an address of its own: two servers may share a port
        return [(address, port, name) for _, address, port, name in FIXED] + \
            [(f"127.0.1.{i + 1}", licence.port, f"licence-{i}") for i, licence in enumerate(self.licences)]

    async def _serve_sockets(self) -> None:
        for name, target in self._services:
            self._servers.append(await tcp_behind(self.socket(name), target))

    async def _run(self, network: str, hosts: list[str]) -> None:
        """forward.py in a door container on `network`, ready when it says so; its stderr the unit's door.log."""
        self.log.parent.mkdir(parents=True, exist_ok=True)
        self._log = open(self.log, "ab")  # noqa: SIM115 - closed in close()
        # a process of the run: when the run dies, its watcher ends the client, and the door's stdin closes
        self._proc = await start_process(
            dockercli.docker_binary(), "run", "-i", "--rm", "--name", self.name, *self.labels, "--network", network,
            *self.options, "--read-only", *hosts, "--volume", f"{self.folder}:/sockets:ro",
            "--volume", f"{CONTAINER_FILES}:/opt/nullius-door:ro", self.image,
            "python3", "/opt/nullius-door/forward.py", "/sockets", *(f"{a}:{p}={n}" for a, p, n in self._mappings()),
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=self._log,
            env=dockercli.client_env(None),
        )
        assert self._proc.stdout is not None
        try:
            line = await asyncio.wait_for(self._proc.stdout.readline(), READY_SECONDS)
        except asyncio.TimeoutError:
            line = b""
        if line.strip() != b"ready":
            raise DockerError(f"the unit's door did not start; see {self.log}")

    async def close(self) -> None:
        """Its stdin closed, the door ends and goes (--rm); then the sockets' folder."""
        if self._proc is not None:
            with timed(self.calls, "remove", "the door's end (its stdin closed, --rm)") as result:
                await self._end(self._proc)
                result[0] = "ended"
        for server in [*self._listeners, *self._servers]:
            server.close()
        if self._log is not None:
            self._log.close()
        shutil.rmtree(self.folder, ignore_errors=True)

    async def _end(self, proc: asyncio.subprocess.Process) -> None:
        if proc.stdin is not None:
            with contextlib.suppress(Exception):
                proc.stdin.close()
        try:
            await asyncio.wait_for(proc.wait(), 15)
        except asyncio.TimeoutError:
            await dockercli.arun(["rm", "-f", self.name], timeout=60, check=False, calls=self.calls, step="remove")
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            await proc.wait()

