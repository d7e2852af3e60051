"""A node's side of a run: one Ray actor per node, holding the node's relay and the agents of the units placed there.

    driver --channel----> NodeSide (its ticket the actor's reply: the one that passes through Ray)
             {"t": "relay", provider, base_url, key, pins}   the key: this process's memory, nowhere else
             {"t": "unit", id, unit, token, route}      -> {"id", url, workspace, home, ctl, io}  (tickets)
    driver --ctl--------> the unit (node_unit.py): its files, its launch, its records back, its end
    driver --io---------> the agent's stdin and stdout

The node's folders are its own: `<TMPDIR>/nullius-ray-<job>-<node>/<unit>/`
(workspace, home, relay), each unit's removed when it ends and the whole
when the run does. Every agent is started as a process of the node's own
lifetime (nullius_core.processes): when the actor's process dies (its
raylet killed, the driver gone), its watcher ends them.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import socket
import tempfile
from pathlib import Path
from typing import Any

import ray

from nullius_backend_ray import wire
from nullius_backend_ray.node_unit import NodeUnit

LISTEN_LIMIT = 64 * 1024 * 1024  # an ACP line may be long (a file's whole text): as long as the local backend takes


@ray.remote(num_cpus=0, max_restarts=0, max_task_retries=0)
class NodeSide:
    def __init__(self, job_token: str) -> None:
        self.job_token = job_token
        self.tickets = wire.Tickets()
        self.units: dict[str, NodeUnit] = {}
        self.relay: Any = None
        self.folder = Path()
        self.life: Any = None
        self._server: asyncio.AbstractServer | None = None

    async def open(self) -> dict[str, Any]:
        """The node's folder, its listener and its lifetime; the channel's ticket, for the driver alone."""
        from nullius_core.processes import Lifetime

        context = ray.get_runtime_context()
        node_id = context.get_node_id()
        self.folder = Path(tempfile.gettempdir()) / f"nullius-ray-{self.job_token}-{node_id[:12]}"
        self.folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        self.life = Lifetime.begin_run(self.folder)
        self.life.scratch(self.folder)  # this process killed: its watcher removes the folder
        host = ray.util.get_node_ip_address()
        self._server = await asyncio.start_server(self._connection, host, 0, limit=LISTEN_LIMIT)
        port = self._server.sockets[0].getsockname()[1]
        return {"host": host, "port": port, "ticket": self.tickets.issue("channel"), "node_id": node_id,
                "hostname": socket.gethostname(), "folder": str(self.folder), "pid": os.getpid()}

    async def ping(self) -> bool:
        return True

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        purpose = self.tickets.spend(await wire.hello(reader))
        if purpose is None:  # no ticket, a wrong one, or one spent already: nothing is said back
            wire.close(writer)
            return
        if purpose == "channel":
            await self._channel(reader, writer)
            return
        role, unit = purpose
        await unit.attach(role, reader, writer)

    async def _channel(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                message, _ = await wire.receive(reader)
                try:
                    reply = await self._answer(message)
                except Exception as exc:  # noqa: BLE001 - said back to the driver, which records it as the unit's
                    reply = {"error": f"{type(exc).__name__}: {self._clean(str(exc))}"}
                await wire.send(writer, {"id": message.get("id"), **reply})
        except wire.Lost:
            pass  # the driver is gone or done: everything of the run here ends
        finally:
            wire.close(writer)
            await self.shut()

    async def _answer(self, message: dict[str, Any]) -> dict[str, Any]:
        if message.get("t") == "relay":
            await self._start_relay(message)
            return {"relay": self.relay.base_url}
        if message.get("t") == "unit":
            return self._new_unit(message)
        raise ValueError(f"no such request: {message.get('t')!r}")

    async def _start_relay(self, message: dict[str, Any]) -> None:
        """The node's relay, the provider's key in it (received on the channel, kept in memory alone)."""
        if self.relay is not None:
            return
        from nullius_core.node_relay import start_node_relay

        # the node's loopback: its own agents reach it, nothing else
        relay = await start_node_relay(message["provider"], message["base_url"], message.get("key"), pins=message.get("pins"),
                                       keep_bodies=bool(message.get("keep_bodies", True)))
        relay.watchers.append(self._recorded)
        self.relay = relay

    def _recorded(self, record: dict[str, Any]) -> None:
        unit = self.units.get(record.get("route", ""))
        if unit is not None:
            unit.recorded()

    def _new_unit(self, message: dict[str, Any]) -> dict[str, Any]:
        if self.relay is None:
            raise ValueError("the node's relay is not started")
        name = message["unit"]
        unit = NodeUnit(self, name, self.folder / name, message["token"], message.get("route") or {})
        self.units[name] = unit
        return {"url": self.relay.url(name), "workspace": str(unit.workspace), "home": str(unit.home),
                "ctl": self.tickets.issue(("ctl", unit)), "io": self.tickets.issue(("io", unit))}

    def forget(self, unit: NodeUnit) -> None:
        if self.units.get(unit.name) is unit:
            del self.units[unit.name]

    def _clean(self, text: str) -> str:
        return self.relay.cleaner.text(text) if self.relay is not None else text

    async def shut(self) -> None:
        """Every unit ended, the relay stopped, the folder removed, the watcher's sweep waited for.

        The folder goes and the sweep is waited for even when a unit's end or the relay's stop fails: the run's side
        suppresses what shut raises and kills the actor, and the node's files must not outlive the run.
        """
        try:
            for unit in list(self.units.values()):
                await unit.abandon()
            if self._server is not None:
                self._server.close()
            if self.relay is not None:
                relay, self.relay = self.relay, None
                await relay.stop()
        finally:
            shutil.rmtree(self.folder, ignore_errors=True)
            if self.life is not None:
                life, self.life = self.life, None
                await asyncio.to_thread(life.end)
