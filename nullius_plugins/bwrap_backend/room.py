"""One unit's room under bubblewrap: its door folder, its route on the run's relay, its MCP servers, its agent's sandbox.

    door folder   nullius-unit-* in the system's temporary folder (0700, yours), bound read-only at /run/nullius:
                    relay.sock      -> the run's relay (in Nullius's own process, the key with it): the unit's route
                    mcp-<name>.sock -> a benchmark's MCP server, started here for each connection
    sandbox       its own network namespace, a loopback alone: inside/door.py listens there
                    127.0.0.1:61080 -> relay.sock   (the agent's base URL)
                    127.0.0.1:61090 -> mcp-*.sock   (the MCP bridge's door)
                  then starts the agent, whose end is the sandbox's

The agent gets its route's token, never the key. A benchmark's MCP servers
stay on this machine (they write the check's records, such as the tools
kit's call log, where the agent cannot), reached through the bridge.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import tempfile
import urllib.parse
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import attrs

from nullius_core.contracts.agent import AgentLaunch, McpServerEntry
from nullius_core.contracts.backend import RelayRoom, RouteOptions, UnitPlace
from nullius_core.processes import GroupProcess, current
from nullius_core.sandbox.door import BRIDGE, McpListeners, tcp_behind
from nullius_plugins.bwrap_backend import sandbox

DOOR = Path(__file__).resolve().parent / "inside" / "door.py"
INSIDE = "/run/nullius"  # the door folder, as the sandbox sees it
RELAY_PORT = 61080
MCP_PORT = 61090


class BwrapRoom:
    def __init__(self, bwrap: str, relay: Any, unit: str, record: Path, place: UnitPlace, route: RouteOptions):
        self.bwrap = bwrap
        self.relay = relay
        self.record = record
        self.place = place
        self._route = RelayRoom(relay, unit, record, route, self._start)  # the unit's route and token on the run's relay
        self.token = self._route.token
        self.url = f"http://127.0.0.1:{RELAY_PORT}/{unit}/v1"
        self.folder = Path(tempfile.mkdtemp(prefix="nullius-unit-"))
        os.chmod(self.folder, 0o700)
        current().scratch(self.folder)  # its sockets: a killed run's watcher removes the folder
        self._servers: list[asyncio.AbstractServer] = []
        self._mcp: McpListeners | None = None

    async def open(self) -> None:
        relay = urllib.parse.urlsplit(self.relay.base_url)
        self._servers.append(await tcp_behind(self.folder / "relay.sock", (relay.hostname or "127.0.0.1", relay.port or 80)))

    def mcp_servers(self, entries: Sequence[McpServerEntry]) -> list[McpServerEntry]:
        """A benchmark's own servers through the door, on this machine; the agent's own commands run in its sandbox."""
        machine = [e for e in entries if e.on_machine]
        if machine:
            env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(self.place.home), "LANG": "C.UTF-8"}
            self._mcp = McpListeners(machine, env, self.record.parent / "mcp-servers.log", self.folder)
        python, _ = sandbox.python_home()
        return [McpServerEntry(name=e.name, command=str(python), args=["-I", "-S", str(BRIDGE)],
                               env={"NULLIUS_MCP_AT": f"127.0.0.1:{MCP_PORT}", "NULLIUS_MCP_SERVER": e.name})
                if e.on_machine else e for e in entries]

    async def start_agent(self, launch: AgentLaunch) -> GroupProcess:
        return await self._route.start_agent(launch)

    async def _start(self, launch: AgentLaunch) -> GroupProcess:
        if self._mcp is not None:
            await self._mcp.start()
        python, prefix = sandbox.python_home()
        env = dict(launch.env)
        env["PATH"] = sandbox.visible_path(env.get("PATH", ""), launch.reads)
        for host, inside in launch.licence_files:  # a licence file, read-only at its path; its variable points there
            for key, value in list(env.items()):
                if value == str(host):
                    env[key] = inside or str(host)
        door = [str(python), "-I", "-S", str(DOOR), INSIDE, f"127.0.0.1:{RELAY_PORT}=relay", f"127.0.0.1:{MCP_PORT}=mcp-*", "--", *launch.argv]
        argv = sandbox.argv(
            self.bwrap, door, cwd=launch.cwd, writes=[launch.cwd, launch.home],
            reads=[*launch.reads, prefix, DOOR.parent, BRIDGE.parent],
            files=[(self.folder, INSIDE), *((host, inside or str(host)) for host, inside in launch.licence_files)],
        )
        return await GroupProcess.start(attrs.evolve(launch, argv=argv, env=env, cwd=self.folder))

    async def close(self) -> None:
        # when this returns, the unit's calls are recorded: it is scored from them
        await self._route.close()
        for server in self._servers:
            server.close()
        if self._mcp is not None:
            await self._mcp.close()
        await asyncio.to_thread(shutil.rmtree, self.folder, True)
