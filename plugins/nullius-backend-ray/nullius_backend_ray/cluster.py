"""The driver's view of the Ray cluster: joining it, one NodeSide actor per node, each node's channel, where a unit goes.

A unit goes to the live node with the fewest units in flight for its CPUs
(ties to the one that has had the fewest). A node whose channel ends, or
that Ray says is dead, takes no more units; its units in flight are lost.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import signal
import socket
from typing import TYPE_CHECKING, Any

from nullius_backend_ray import wire
from nullius_core.contracts.lost import UnitLost

if TYPE_CHECKING:
    from nullius_backend_ray.room import RayRoom

OPEN_SECONDS = 180  # a node's actor started (a worker process and its imports, on a busy node)
PROBE_SECONDS = 10
WATCH_EVERY = 2.0  # seconds between looks at which nodes Ray says are alive


class NoCluster(Exception):
    """No Ray cluster at the address, or none with a node to run units on: says which and how to get one."""


def join(address: str) -> dict[str, Any]:
    """`ray.init` at an existing cluster (never a new one); the cluster's facts."""
    probe(address)  # before Ray's import, which takes seconds
    import ray

    handlers = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        ray.init(address=address, log_to_driver=False, logging_level=logging.WARNING, configure_logging=False,
                 include_dashboard=False, namespace="nullius")
    except (ConnectionError, RuntimeError, ValueError) as exc:
        raise NoCluster(f"no Ray cluster reachable at {address!r}: {exc}. Start one (ray start --head) or name it: "
                        "NULLIUS_RAY_ADDRESS=HOST:PORT (the head's GCS address)") from None
    finally:
        for sig, handler in handlers.items():  # the run's own Ctrl-C and SIGTERM stay the run's
            if signal.getsignal(sig) is not handler and handler is not None:
                signal.signal(sig, handler)
    return {"ray": ray.__version__, "address": address, "gcs": ray.get_runtime_context().gcs_address}


def probe(address: str) -> None:
    """A HOST:PORT that takes no connection refuses the run at once (Ray's own join would wait minutes for it)."""
    host, _, port = address.rpartition(":")
    if "://" in address or not host or not port.isdigit():
        return  # `auto`, or a Ray client's ray://: Ray says itself when there is none
    try:
        socket.create_connection((host, int(port)), timeout=PROBE_SECONDS).close()
    except OSError as exc:
        raise NoCluster(f"no Ray cluster reachable at {address!r} ({exc.strerror or exc}). Start one (ray start --head) or name "
                        "its head: NULLIUS_RAY_ADDRESS=HOST:PORT (the head's GCS address)") from None


def live_nodes(resource: str | None) -> list[dict[str, Any]]:
    """Ray's alive nodes that have CPUs (and the resource asked for, if any)."""
    import ray

    nodes = [n for n in ray.nodes() if n.get("Alive") and n.get("Resources", {}).get("CPU", 0) > 0]
    if resource:
        nodes = [n for n in nodes if n.get("Resources", {}).get(resource, 0) > 0]
    return nodes


class Node:
    """One node's actor and its channel, as the driver holds them."""

    def __init__(self, facts: dict[str, Any], actor: Any, opened: dict[str, Any]):
        self.node_id: str = facts["NodeID"]
        self.ip: str = facts.get("NodeManagerAddress", "")
        self.hostname: str = facts.get("NodeManagerHostname", "")
        self.cpus = float(facts.get("Resources", {}).get("CPU", 1)) or 1.0
        self.resources = {k: v for k, v in facts.get("Resources", {}).items() if not k.startswith("node:")}
        self.actor = actor
        self.host, self.port, self.folder = opened["host"], int(opened["port"]), opened["folder"]
        self.name = f"node {self.ip} ({self.node_id[:12]})"
        self.in_flight: set[RayRoom] = set()
        self.ran = 0
        self.dead: str | None = None
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None
        self._ids = itertools.count(1)
        self._waiting: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self._lock = asyncio.Lock()
        self._reading: asyncio.Future[None] | None = None
        self._relay_started = False

    async def connect(self, ticket: str) -> None:
        self._reader, self._writer = await wire.connect(self.host, self.port, ticket)
        self._reading = asyncio.ensure_future(self._read())

    async def _read(self) -> None:
        assert self._reader is not None
        try:
            while True:
                message, _ = await wire.receive(self._reader)
                waiter = self._waiting.pop(message.get("id"), None)
                if waiter is not None and not waiter.done():
                    waiter.set_result(message)
        except wire.Lost as exc:
            self.die(f"its channel ended ({exc})")

    def die(self, why: str) -> None:
        """No more units here; those in flight are lost (their connections cut, if Ray saw it first)."""
        if self.dead is not None:
            return
        self.dead = why
        for waiter in self._waiting.values():
            if not waiter.done():
                waiter.set_exception(self.lost_unit(why))
        for room in list(self.in_flight):
            room.abort()

    async def request(self, message: dict[str, Any]) -> dict[str, Any]:
        if self.dead is not None or self._writer is None:
            raise self.lost_unit(self.dead or "not connected")
        n = next(self._ids)
        waiter: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._waiting[n] = waiter
        try:
            await wire.send(self._writer, {**message, "id": n})
        except (ConnectionError, OSError, RuntimeError) as exc:
            self.die(f"its channel broke ({exc})")
        reply = await waiter
        if "error" in reply:
            raise ValueError(f"{self.name}: {reply['error']}")
        return reply

    async def start_relay(self, relay: Any) -> None:
        """The node's relay, once: the provider, its base URL and its key, sent on the channel alone."""
        async with self._lock:
            if self._relay_started:
                return
            upstream = relay.upstream
            await self.request({"t": "relay", "provider": upstream.provider.name, "base_url": upstream.base_url, "key": upstream.key,
                                "pins": relay.pins, "keep_bodies": relay.keep_bodies})
            self._relay_started = True

    def why_lost(self, why: str) -> str:
        return f"the Ray {self.name} was lost while the unit ran ({self.dead or why})"

    def lost_unit(self, why: str) -> UnitLost:
        return UnitLost(self.why_lost(why))

    def runtime(self) -> dict[str, Any]:
        return {"ray": {"node_id": self.node_id, "ip": self.ip, "hostname": self.hostname}}

    def record(self) -> dict[str, Any]:
        return {"node_id": self.node_id, "ip": self.ip, "hostname": self.hostname, "resources": self.resources}

    def done(self, room: RayRoom) -> None:
        self.in_flight.discard(room)

    def load(self) -> tuple[float, int]:
        return len(self.in_flight) / self.cpus, self.ran

    async def close(self) -> None:
        if self._writer is not None:
            wire.close(self._writer)
        if self._reading is not None:
            self._reading.cancel()


def place(nodes: list[Node]) -> Node:
    """The live node with the least to do; `UnitLost` when none is left."""
    alive = [n for n in nodes if n.dead is None]
    if not alive:
        raise UnitLost("no node of the Ray cluster is alive: " + "; ".join(f"{n.name}: {n.dead}" for n in nodes))
    node = min(alive, key=Node.load)
    node.ran += 1
    return node
