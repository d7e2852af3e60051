"""One unit's room under bubblewrap: its route on the run's relay, its MCP servers, its agent's sandbox and its door.

    sandbox   its own network namespace, a loopback alone; its door (door.py) listens there, served by this process:
                127.0.0.1:61080 -> the run's relay (in Nullius's own process, the key with it): the unit's route
                127.0.0.1:61090 -> a benchmark's MCP server, started here for each connection (the MCP bridge's door)
              the agent is the sandbox's command: its end is the sandbox's

The agent gets its route's token, never the key. A benchmark's MCP servers
stay on this machine (they write the check's records, such as the tools
kit's call log, where the agent cannot), reached through the bridge.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import attrs

from nullius_core.contracts.agent import AgentLaunch, McpServerEntry
from nullius_core.contracts.backend import RelayRoom, RouteOptions, UnitPlace
from nullius_core.processes import GroupProcess
from nullius_core.sandbox.door import BRIDGE, McpListeners
from nullius_plugins.bwrap_backend import sandbox
from nullius_plugins.bwrap_backend.door import MCP_PORT, RELAY_PORT, open_door
from nullius_plugins.bwrap_backend.maker import ListenerMaker


class BwrapRoom:
    def __init__(self, bwrap: str, relay: Any, unit: str, record: Path, place: UnitPlace, route: RouteOptions, maker: ListenerMaker):
        self.bwrap = bwrap
        self.relay = relay
        self.record = record
        self.place = place
        self.maker = maker
        self._route = RelayRoom(relay, unit, record, route, self._start)  # the unit's route and token on the run's relay
        self.token = self._route.token
        self.url = f"http://127.0.0.1:{RELAY_PORT}/{unit}/v1"
        self._servers: list[asyncio.AbstractServer] = []
        self._mcp: McpListeners | None = None

    async def open(self) -> None:
        return None  # its door is made with its sandbox, in start_agent

    def mcp_servers(self, entries: Sequence[McpServerEntry]) -> list[McpServerEntry]:
        """A benchmark's own servers through the door, on this machine; the agent's own commands run in its sandbox."""
        machine = [e for e in entries if e.on_machine]
        if machine:
            env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(self.place.home), "LANG": "C.UTF-8"}
            self._mcp = McpListeners(machine, env, self.record.parent / "mcp-servers.log")
        python, _ = sandbox.python_home()
        return [McpServerEntry(name=e.name, command=str(python), args=["-I", "-S", str(BRIDGE)],
                               env={"NULLIUS_MCP_AT": f"127.0.0.1:{MCP_PORT}", "NULLIUS_MCP_SERVER": e.name})
                if e.on_machine else e for e in entries]

    async def start_agent(self, launch: AgentLaunch) -> GroupProcess:
        return await self._route.start_agent(launch)

    async def _start(self, launch: AgentLaunch) -> GroupProcess:
        info, block = os.pipe(), os.pipe()  # bwrap tells the sandbox's pid on one, and waits on the other before the agent runs
        try:
            process = await GroupProcess.start(self._sandboxed(launch, info[1], block[0]), pass_fds=(info[1], block[0]))
        except BaseException:
            os.close(info[0])
            os.close(block[1])
            raise
        finally:
            os.close(info[1])
            os.close(block[0])
        try:
            self._servers = await open_door(self.maker, info[0], block[1], self.relay.base_url, self._mcp)
        except OSError:
            if await _ended(process):  # bwrap failed making its sandbox: its status and stderr say why, as an agent's would
                return process
            await asyncio.shield(process.end())  # never an agent without its door: bwrap would run it on the block's end
            raise
        except BaseException:
            await asyncio.shield(process.end())
            raise
        finally:
            os.close(block[1])
        return process

    def _sandboxed(self, launch: AgentLaunch, info: int, block: int) -> AgentLaunch:
        """The launch as bwrap's: the agent itself is the sandbox's command."""
        _, prefix = sandbox.python_home()  # the MCP bridge's interpreter
        env = dict(launch.env)
        env["PATH"] = sandbox.visible_path(env.get("PATH", ""), launch.reads)
        for host, inside in launch.licence_files:  # a licence file, read-only at its path; its variable points there
            for key, value in list(env.items()):
                if value == str(host):
                    env[key] = inside or str(host)
        argv = sandbox.argv(
            self.bwrap, list(launch.argv), cwd=launch.cwd, writes=[launch.cwd, launch.home], reads=[*launch.reads, prefix, BRIDGE.parent],
            files=[(host, inside or str(host)) for host, inside in launch.licence_files],
            options=["--info-fd", str(info), "--block-fd", str(block)],
        )
        return attrs.evolve(launch, argv=argv, env=env)

    async def close(self) -> None:
        # when this returns, the unit's calls are recorded: it is scored from them
        await self._route.close()
        for server in self._servers:
            server.close()
        if self._mcp is not None:
            await self._mcp.close()


async def _ended(process: GroupProcess, within: float = 0.5) -> bool:
    """The process ends by itself within `within` seconds (a bwrap that failed does at once; a held sandbox never does)."""
    try:
        await asyncio.wait_for(asyncio.shield(process.wait()), within)
    except asyncio.TimeoutError:
        return False
    return True
