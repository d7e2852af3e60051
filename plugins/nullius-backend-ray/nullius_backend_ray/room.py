"""One unit's room on a Ray node, seen from the driver: its route on the node's relay, its files there and back, its agent.

The room asks the unit's node for a route (the token made here) and two
connections' tickets on the node's channel, opens `ctl`, and reads it until
the unit is closed: record lines into the trial's `.work/relay/` as they
come (each call priced and told to the run's watchers, as the run's own
relay does), the agent's stderr into `agent/stderr.txt`, its exit, its
folders at the end. A `ctl` that ends before `closed` is a lost node: the
unit is `NodeLostError`, run again by `--resume`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nullius_backend_ray import files, wire
from nullius_backend_ray.pathmap import PathMap
from nullius_backend_ray.process import RayAgentProcess
from nullius_core.contracts.agent import AgentLaunch, McpServerEntry
from nullius_core.contracts.backend import RouteOptions, UnitPlace
from nullius_core.contracts.lost import UnitLost
from nullius_core.node_relay import new_token

if TYPE_CHECKING:
    from nullius_backend_ray.cluster import Node

CLOSE_SECONDS = 300
AGENT_LINE_LIMIT = 64 * 1024 * 1024
STOP_EVERY = 0.5  # the node's last records and the unit's folders, back


class RayRoom:
    def __init__(self, node: Node, relay: Any, unit: str, record: Path, place: UnitPlace, route: RouteOptions):
        self.node = node
        self.relay = relay  # the run's: its meter prices each call, its watchers are told of each
        self.unit = unit
        self.record = record
        self.place = place
        self.route = route
        self.token = new_token()
        self.url = ""
        self.paths = PathMap([])
        self.process: RayAgentProcess | None = None
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None
        self._tickets: dict[str, str] = {}
        self._files: asyncio.Future[bytes] = asyncio.get_running_loop().create_future()
        self._replies: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self._reading: asyncio.Future[None] | None = None
        self._lost: str | None = None
        self._sinks: dict[str, Any] = {}
        self._stops: asyncio.Future[None] | None = None
        self._stop_sent = 0

    # --- opening ---------------------------------------------------------------

    async def open(self) -> None:
        route = {"kind": self.route.kind, "model": self.route.model, "side_models": sorted(self.route.side_models),
                 "call_seconds": self.route.call_seconds}
        try:
            reply = await self.node.request({"t": "unit", "unit": self.unit, "token": self.token, "route": route})
            self._reader, self._writer = await wire.connect(self.node.host, self.node.port, reply["ctl"])
        except (wire.Lost, OSError, asyncio.TimeoutError) as exc:
            raise self.node.lost_unit(f"{exc}") from None
        self.url = reply["url"]
        self._tickets = {"io": reply["io"]}
        self.paths = PathMap([(str(self.place.workspace), reply["workspace"]), (str(self.place.home), reply["home"])])
        self.record.mkdir(parents=True, exist_ok=True)
        self._reading = asyncio.ensure_future(self._read())
        self._stops = asyncio.ensure_future(self._forward_stops())

    async def _forward_stops(self) -> None:
        """A benchmark guard's lines in the trial's stop file, to the node's relay (which then refuses the unit's later calls).

        Looked at every STOP_EVERY seconds: the guard writes here, on the driver's machine, and nothing tells the room when.
        """
        while self._lost is None:
            await asyncio.sleep(STOP_EVERY)
            with contextlib.suppress(UnitLost):
                await self._send_stops()

    async def _send_stops(self) -> None:
        """The stop file's guard lines not sent yet (its `relay:` notes are the node relay's own)."""
        try:
            data = (self.record / "stop").read_bytes()
        except FileNotFoundError:
            return
        whole = data[: data.rfind(b"\n") + 1]
        lines = b"".join(line for line in whole[self._stop_sent:].splitlines(keepends=True) if not line.startswith(b"relay:"))
        self._stop_sent = len(whole)
        if lines:
            await self._say({"t": "stop"}, lines)

    def mcp_servers(self, entries: Sequence[McpServerEntry]) -> list[McpServerEntry]:
        """The agent's own commands as they are; a benchmark's own servers would run here, which its node cannot reach."""
        mine = [e.name for e in entries if e.on_machine]
        if mine:
            raise ValueError(f"the benchmark's own MCP servers ({', '.join(mine)}) run where the driver does, which the ray "
                             "backend's nodes cannot reach yet: run this benchmark on the local or docker backend")
        return list(entries)

    # --- the agent ---------------------------------------------------------------

    async def start_agent(self, launch: AgentLaunch) -> RayAgentProcess:
        folders = {"workspace": self.place.workspace, "home": self.place.home}
        data = await asyncio.to_thread(files.pack, folders)
        self.process = RayAgentProcess(self, launch.stderr)
        await self._say({"t": "files"}, data)
        await self._send_stops()  # a guard's line from setup holds from the agent's first call
        await self._say({"t": "launch", "argv": [self.paths.text(a) for a in launch.argv], "env": self.paths.env(launch.env),
                         "cwd": self.paths.text(str(launch.cwd)), "paths": self.paths.pairs(), "reads": [str(p) for p in launch.reads]})
        reply = await self._reply({"started", "failed"})
        if reply["t"] == "failed":
            raise ValueError(f"the agent cannot start on {self.node.name}: {reply.get('error')}")
        try:
            # the agent's ACP lines: as long as the local backend takes them
            reader, writer = await wire.connect(self.node.host, self.node.port, self._tickets["io"], limit=AGENT_LINE_LIMIT)
        except (OSError, asyncio.TimeoutError) as exc:
            raise self.node.lost_unit(f"{exc}") from None
        self.process.attach(reader, writer, int(reply.get("pid") or 0), self.node.runtime())
        return self.process

    async def end_agent(self) -> list[str]:
        """The agent's processes on the node ended (TERM, then KILL); those that had to be killed."""
        if self._lost is not None:
            return []
        with contextlib.suppress(UnitLost):
            await self._say({"t": "end"})
            reply = await self._reply({"ended"})
            return list(reply.get("killed") or [])
        return []

    # --- what the node sends ---------------------------------------------------------------

    async def _read(self) -> None:
        assert self._reader is not None
        try:
            while True:
                message, data = await wire.receive(self._reader)
                kind = message.get("t")
                if kind == "rec":
                    self._write_record(str(message.get("file")), data)
                elif kind == "err":
                    if self.process is not None:
                        self.process.stderr_data(data)
                elif kind == "exit":
                    if self.process is not None:
                        self.process.exited(int(message.get("code", -1)))
                elif kind == "files":
                    self._files.set_result(data)
                else:
                    self._replies.put_nowait(message)
                if kind == "closed":
                    return
        except wire.Lost as exc:
            self._lose(str(exc))

    def _lose(self, why: str) -> None:
        self._lost = self.node.why_lost(why)
        if self.process is not None:
            self.process.lost()
        if not self._files.done():
            self._files.set_exception(self.node.lost_unit(why))
        self._replies.put_nowait({"t": "lost"})

    def _write_record(self, name: str, data: bytes) -> None:
        if name not in ("calls.jsonl", "bodies.jsonl", "gateway.log", "stop"):
            return
        if name == "calls.jsonl" and (self.relay.meter is not None or self.relay.watchers):
            data = b"".join(self._priced(line) for line in data.splitlines(keepends=True))
        if name == "stop":  # the node relay's own notes (a refused context window), beside a guard's lines here
            data = b"".join(line for line in data.splitlines(keepends=True) if line.startswith(b"relay:"))
        sink = self._sinks.get(name)
        if sink is None:
            # 0600, as the run's own relay writes its records
            fd = os.open(self.record / name, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            sink = self._sinks[name] = os.fdopen(fd, "ab")
        sink.write(data)
        sink.flush()

    def _priced(self, line: bytes) -> bytes:
        """A call's line as the run's relay would write it: priced by the run's meter, told to its watchers."""
        record = json.loads(line)
        if self.relay.meter is not None:
            record["cost"] = self.relay.meter.charge(record)
        for watch in self.relay.watchers:
            watch(record)
        return json.dumps(record, ensure_ascii=False).encode() + b"\n"

    async def _say(self, message: dict[str, Any], data: bytes = b"") -> None:
        if self._lost is not None or self._writer is None:
            raise self.node.lost_unit(self._lost or "the unit's connection is closed")
        try:
            await wire.send(self._writer, message, data)
        except (ConnectionError, OSError, RuntimeError) as exc:
            self._lose(f"{type(exc).__name__}: {exc}")
            raise self.node.lost_unit(str(exc)) from None

    async def _reply(self, kinds: set[str]) -> dict[str, Any]:
        while True:
            reply = await self._replies.get()
            if reply["t"] == "lost":
                self._replies.put_nowait(reply)  # whoever waits next is told too
                raise self.node.lost_unit(self._lost or "")
            if reply["t"] in kinds:
                return reply

    def abort(self) -> None:
        """Its node is dead: its connections are cut (a machine gone may never close them)."""
        for writer in (self._writer, self.process.stdin if self.process is not None else None):
            if writer is not None:
                writer.transport.abort()

    # --- closing ---------------------------------------------------------------

    async def close(self) -> None:
        """The unit's last records and its folders back from the node (before the checks read them); a lost node said so."""
        if self._stops is not None:
            self._stops.cancel()
        try:
            if self._lost is None and self._writer is not None:
                with contextlib.suppress(UnitLost):
                    await self._say({"t": "close"})
                    data = await asyncio.wait_for(self._files, CLOSE_SECONDS)
                    await asyncio.to_thread(files.unpack, data, {"workspace": self.place.workspace, "home": self.place.home})
                    await asyncio.wait_for(self._reply({"closed"}), CLOSE_SECONDS)
        finally:
            if self._reading is not None:
                if self._lost is None:
                    with contextlib.suppress(asyncio.TimeoutError):
                        await asyncio.wait_for(asyncio.shield(self._reading), 5)
                self._reading.cancel()
            if self._writer is not None:
                wire.close(self._writer)
            for sink in self._sinks.values():
                sink.close()
            if self.process is not None:
                await self.process.closed()
            self.node.done(self)
        if self._lost is not None:
            raise self.node.lost_unit(self._lost)
