"""The ray backend: each unit's agent, and the relay that records its calls, on a node of an existing Ray cluster.

The driver, its checks and the job stay where `nullius run` runs. At the
start the run joins the cluster (`NULLIUS_RAY_ADDRESS`, else `RAY_ADDRESS`,
else Ray's `auto`: never a new cluster) and starts one `NodeSide` actor on
every live node with CPUs (node.py). A unit's room goes to the least busy
live node (cluster.py, room.py). It is not a sandbox: an agent runs as the
node's Ray worker does.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import os
import secrets
from pathlib import Path
from typing import Any

import attrs

from nullius_backend_ray import cluster
from nullius_backend_ray.room import RayRoom
from nullius_core.contracts.backend import RouteOptions, RunContext, UnitPlace, place_here, opened

SHUT_SECONDS = 60


class RayBackend:
    name = "ray"

    def __init__(self) -> None:
        self.address = os.environ.get("NULLIUS_RAY_ADDRESS") or os.environ.get("RAY_ADDRESS") or "auto"
        self.resource = os.environ.get("NULLIUS_RAY_RESOURCE") or None  # only the nodes that have it
        self.facts: dict[str, Any] = {}
        self.nodes: list[cluster.Node] = []
        self._watch: asyncio.Future[None] | None = None
        self._joined = False

    async def start(self, context: RunContext) -> None:
        import ray

        from nullius_backend_ray.node import NodeSide
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        self.facts = cluster.join(self.address)  # in the run's thread: ray.init keeps to the main thread's signals
        self._joined = True
        found = cluster.live_nodes(self.resource)
        if not found:
            asked = f" with the resource {self.resource!r}" if self.resource else ""
            raise cluster.NoCluster(f"the Ray cluster at {self.address!r} has no live node with CPUs{asked} to run units on")
        token = hashlib.sha256(str(context.job_dir.resolve()).encode()).hexdigest()[:10] + secrets.token_hex(3)
        actors = [NodeSide.options(scheduling_strategy=NodeAffinitySchedulingStrategy(n["NodeID"], soft=False)).remote(token)
                  for n in found]
        context.progress.stage("install", ray=self.facts["gcs"], nodes=len(found), state="starting")
        # each node on its own: one Ray still lists but has just lost (its heartbeats not yet missed) is left out, said so
        opened = await asyncio.gather(*(asyncio.to_thread(ray.get, a.open.remote(), timeout=cluster.OPEN_SECONDS) for a in actors),
                                      return_exceptions=True)
        failed = []
        for facts, actor, reply in zip(found, actors, opened):
            if isinstance(reply, BaseException):
                failed.append(f"{facts.get('NodeManagerAddress')} ({facts['NodeID'][:12]}): {type(reply).__name__}: {str(reply).splitlines()[0]}")
                continue
            node = cluster.Node(facts, actor, reply)
            await node.connect(reply["ticket"])
            self.nodes.append(node)
        if not self.nodes:
            raise cluster.NoCluster("no node of the Ray cluster started the run's actor: " + "; ".join(failed))
        context.progress.stage("install", ray=self.facts["gcs"], nodes=len(self.nodes), state="ready",
                               left_out="; ".join(failed) or None)
        self._watch = asyncio.ensure_future(self._watch_nodes())

    async def _watch_nodes(self) -> None:
        """A node Ray says is dead takes no more units, and its units in flight are lost at once."""
        while True:
            await asyncio.sleep(cluster.WATCH_EVERY)
            try:
                alive = {n["NodeID"] for n in await asyncio.to_thread(cluster.live_nodes, None)}
            except Exception:  # noqa: BLE001 - Ray's answer missed once: asked again next time
                continue
            for node in self.nodes:
                if node.node_id not in alive:
                    node.die("Ray says the node is dead")

    def record(self) -> dict[str, Any]:
        return {
            "name": self.name,
            **self.facts,
            "nodes": [n.record() for n in self.nodes],
            "isolation": "none: each unit's agent runs on a node of the Ray cluster as its Ray worker does; the provider's "
            "key only in the memory of each node's relay",
        }

    async def prepare_unit(self, workspace: Path, home: Path) -> UnitPlace:
        return place_here(workspace, home)

    async def use_environment(self, place: UnitPlace, environment: Any, participant: str, handout: Any) -> UnitPlace:
        if environment is not None and participant != "control" and not environment.definition.local_ok:
            raise ValueError(f"the environment {environment.name!r} runs only on a backend with images (its local_ok is false): "
                             "use --backend docker")
        if handout is not None and (handout.files or handout.servers):  # a value goes in the agent's environment, as on local
            raise ValueError("the unit's environment hands its agent licence files or servers, which the ray backend does not "
                             "carry to a node yet")
        return attrs.evolve(place, environment=environment)

    def capability_launch(self, launch: Any, reads: Any, unit: str) -> Any:
        return launch  # a capability runs where the driver does, as on the local backend

    async def open_room(self, relay: Any, unit: str, record: Path, place: UnitPlace, route: RouteOptions) -> RayRoom:
        node = cluster.place(self.nodes)
        await node.start_relay(relay)
        room = RayRoom(node, relay, unit, record, place, route)
        node.in_flight.add(room)
        return await opened(room)

    async def close(self) -> None:
        if not self._joined:
            return  # no cluster was joined: nothing of it to end
        import ray

        if self._watch is not None:
            self._watch.cancel()
        for node in self.nodes:
            await node.close()  # the node's side ends its units and its relay, and removes its folder
        with contextlib.suppress(Exception):
            await asyncio.to_thread(ray.get, [n.actor.shut.remote() for n in self.nodes if n.dead is None], timeout=SHUT_SECONDS)
        for node in self.nodes:
            with contextlib.suppress(Exception):
                ray.kill(node.actor)
        ray.shutdown()
