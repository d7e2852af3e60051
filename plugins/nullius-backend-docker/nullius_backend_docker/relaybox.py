"""The run's relay container: `nullius relay serve --routes-on-stdin`, joined to each unit's network as `relay`.

Each unit gets a route, a token and a record of its own on it (as on the
local backend, where the run's relay is in Nullius's own process); the
relay is on the default bridge too, its way to the provider, and holds the
key: passed by name (-e NULLIUS_RELAY_UPSTREAM_KEY), in this container only.
One container for the run rather than one per unit: a relay's start costs
0.7 s of CPU, which at -j 4 on a small machine was most of what docker added
to a unit. Units stay apart: each network reaches only the relay's address
on it, and each token opens its own route alone.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import sys
from pathlib import Path
from typing import IO, Any

from nullius_backend_docker import dockercli, mounts
from nullius_backend_docker.dockercli import DockerError

RELAY_PORT = 8080
READY_SECONDS = 60
KEY_VARIABLE = "NULLIUS_RELAY_UPSTREAM_KEY"


class RelayBox:
    def __init__(self, name: str, labels: list[str], options: list[str], image: str, job_dir: Path):
        self.name = name
        self.labels = labels
        self.options = options  # the backend's hardening
        self.image = image
        self.job_dir = job_dir
        self.address = ""  # on the default bridge: the forwarders answer it
        self._proc: asyncio.subprocess.Process | None = None
        self._log: IO[bytes] | None = None
        self._ids = itertools.count(1)
        self._waiting: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self._reader: asyncio.Task[None] | None = None

    async def start(self, upstream: Any, base_url: str) -> None:
        self.job_dir.mkdir(parents=True, exist_ok=True)
        argv = [
            "run", "-i", "--rm", "--name", self.name, *self.labels, *self.options, "--read-only", "--tmpfs", "/tmp",
            "--add-host", "host.docker.internal:host-gateway",
            "-e", "HOME=/tmp", "-e", "PYTHONDONTWRITEBYTECODE=1", "-e", "NULLIUS_PLUGINS=model-apis,providers",
        ]
        env: dict[str, str] = {}
        if upstream.key:
            argv += ["-e", KEY_VARIABLE]  # by name: the value is in the CLI's environment, never on an argument list
            env[KEY_VARIABLE] = upstream.key
        for folder in mounts.nullius_python():
            argv += ["--volume", f"{folder}:{folder}:ro"]
        # the units' records: each route writes into its trial's .work/relay
        argv += ["--volume", f"{self.job_dir}:{self.job_dir}", self.image]
        argv += [sys.executable, "-m", "nullius_core", "relay", "serve", "--provider", upstream.provider.name,
                 "--base-url", base_url, "--host", "0.0.0.0", "--port", str(RELAY_PORT), "--routes-on-stdin"]
        (self.job_dir / ".work").mkdir(parents=True, exist_ok=True)
        self._log = open(self.job_dir / ".work" / "relay-container.log", "ab")  # noqa: SIM115 - closed in stop()
        self._proc = await asyncio.create_subprocess_exec(
            dockercli.docker_binary(), *argv, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            stderr=self._log, env=dockercli.client_env(env), start_new_session=True,
        )
        assert self._proc.stdout is not None
        try:
            line = await asyncio.wait_for(self._proc.stdout.readline(), READY_SECONDS)
            ready = json.loads(line) if line else None
        except (asyncio.TimeoutError, ValueError):
            ready = None
        if not isinstance(ready, dict) or not ready.get("ready"):
            raise DockerError(f"the run's relay container did not start; see {self.job_dir / '.work' / 'relay-container.log'}")
        self._reader = asyncio.ensure_future(self._read())
        # started on the default bridge: its way to the provider
        inspected = await dockercli.arun(["inspect", "--format", "{{.NetworkSettings.Networks.bridge.IPAddress}}", self.name], timeout=60)
        self.address = inspected.strip()

    async def _read(self) -> None:
        assert self._proc is not None and self._proc.stdout is not None
        while line := await self._proc.stdout.readline():
            with contextlib.suppress(ValueError):
                message = json.loads(line)
                waiting = self._waiting.pop(message.get("id"), None)
                if waiting is not None and not waiting.done():
                    waiting.set_result(message)
        for waiting in self._waiting.values():  # the relay is gone: nobody will answer
            if not waiting.done():
                waiting.set_exception(DockerError("the run's relay container ended"))

    async def _ask(self, request: dict[str, Any], seconds: float = 30) -> None:
        if self._proc is None or self._proc.stdin is None or self._proc.returncode is not None:
            raise DockerError("the run's relay container is not running")
        ident = next(self._ids)
        answer: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._waiting[ident] = answer
        self._proc.stdin.write((json.dumps({"id": ident, **request}) + "\n").encode())
        await self._proc.stdin.drain()
        reply = await asyncio.wait_for(answer, seconds)
        if not reply.get("ok"):
            raise DockerError(f"the run's relay refused {request.get('op')} {request.get('unit')}: {reply.get('error')}")

    async def add(self, unit: str, record: Path, token: str, route: Any) -> None:
        record.mkdir(parents=True, exist_ok=True)
        await self._ask({"op": "add", "unit": unit, "record": str(record), "token": token, "kind": route.kind, "model": route.model,
                         "side_models": sorted(route.side_models), "call_seconds": route.call_seconds})

    async def remove(self, unit: str) -> None:
        """When it returns, the unit's calls are recorded (5 s at most for one still in flight)."""
        await self._ask({"op": "remove", "unit": unit}, seconds=30)

    async def join(self, network: str) -> None:
        await dockercli.arun(["network", "connect", "--alias", "relay", network, self.name], timeout=60)

    async def leave(self, network: str) -> None:
        await dockercli.arun(["network", "disconnect", "--force", network, self.name], timeout=60, check=False)

    async def stop(self) -> None:
        """EOF on its stdin: the relay closes its records and ends; its container goes with it (--rm)."""
        if self._proc is None:
            return
        if self._proc.stdin is not None:
            with contextlib.suppress(Exception):
                self._proc.stdin.close()
        try:
            await asyncio.wait_for(self._proc.wait(), 15)
        except asyncio.TimeoutError:
            await dockercli.arun(["rm", "-f", self.name], timeout=60, check=False)
            await self._proc.wait()
        if self._reader is not None:
            self._reader.cancel()
        if self._log is not None:
            self._log.close()
