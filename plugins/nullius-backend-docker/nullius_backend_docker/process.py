"""An agent in a container, seen as a process.

`ContainerProcess`: the agent's own container, the attached `docker start
-ai`'s stdio; ending it names what was still running inside (`docker top`),
then removes the container: every process of the agent goes with it,
grandchildren too.

`ExecProcess`: the agent added to a task's box with `docker exec -i`;
ending it stops the agent's own process, and leaves what it started in the
box for the check to see (and stop, unless verify.keep_processes).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from nullius_backend_docker import dockercli
from nullius_backend_docker.dockercli import DockerError
from nullius_core.processes import CappedCopy, GroupProcess

LINE_LIMIT = 64 * 1024 * 1024  # an ACP line may be as long as on this machine (boxegress reads it too)
GRACE = 3.0


class _Attached(GroupProcess):
    """A docker client attached to what runs inside: its stdio is the agent's, its stderr the trial's agent/stderr.txt (capped).

    A process of the run: a SIGKILLed run's watcher ends the client, and the container's stdin closes.
    """

    @staticmethod
    async def _attach(argv: Sequence[str], env: Mapping[str, str], stderr_path: Path) -> tuple[asyncio.subprocess.Process, CappedCopy]:
        return await GroupProcess.spawn([dockercli.docker_binary(), *argv], env, stderr_path)

    async def _settle(self) -> None:
        """The client's own end, once what it was attached to is gone (killed if it lingers)."""
        try:
            await asyncio.wait_for(self._proc.wait(), 10)
        except asyncio.TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                self._proc.kill()
            await self._proc.wait()
        with contextlib.suppress(Exception):
            self.stdin.close()
        await self._stderr.close()


class ContainerProcess(_Attached):
    """The agent's own container (`docker start -ai`)."""

    def __init__(self, proc: asyncio.subprocess.Process, name: str, stderr: CappedCopy):
        super().__init__(proc, stderr)
        self.name = name

    @classmethod
    async def start(cls, name: str, argv: Sequence[str], env: Mapping[str, str], stderr_path: Path) -> ContainerProcess:
        proc, stderr = await cls._attach(argv, env, stderr_path)
        return cls(proc, name, stderr)

    async def end(self) -> list[str]:
        """TERM to the container's processes, then what still runs after the grace period is named and killed."""
        killed: list[str] = []
        if self._proc.returncode is None:
            await dockercli.arun(["kill", "--signal", "TERM", self.name], timeout=30, check=False)
            try:
                await asyncio.wait_for(self._proc.wait(), GRACE)
            except asyncio.TimeoutError:
                with contextlib.suppress(dockercli.DockerError):
                    listing = await dockercli.arun(["top", self.name, "-o", "pid,comm"], timeout=15)
                    for line in listing.splitlines()[1:]:
                        parts = line.split(None, 1)
                        if len(parts) == 2 and parts[1].strip() not in ("docker-init", "tini"):
                            killed.append(f"{parts[0]} {parts[1].strip()}")
        await dockercli.arun(["rm", "-f", self.name], timeout=60, check=False)
        await self._settle()
        return killed


class ExecProcess(_Attached):
    """The agent added to a task's box (`docker exec -i`); ending it stops what exec started."""

    def __init__(self, proc: asyncio.subprocess.Process, box: Any, argv: list[str], stderr: CappedCopy):
        super().__init__(proc, stderr)
        self._box = box
        self._argv = argv
        self.runtime: dict[str, Any] | None = None  # what the room started it on (the trial's standard.agent.runtime)

    @classmethod
    async def start(cls, box: Any, argv: Sequence[str], env: Mapping[str, str], stderr_path: Path, inside: list[str]) -> ExecProcess:
        proc, stderr = await cls._attach(argv, env, stderr_path)
        return cls(proc, box, inside, stderr)

    async def end(self) -> list[str]:
        """Its stdin closed; after the grace period, the agent's process (started by exec) is stopped in the box.

        What it left running in the box stays until the check stops it
        (unless verify.keep_processes): that is the check's to see.
        """
        killed: list[str] = []
        with contextlib.suppress(Exception):
            self.stdin.close()
        if self._proc.returncode is None:
            try:
                await asyncio.wait_for(self._proc.wait(), GRACE)
            except asyncio.TimeoutError:
                with contextlib.suppress(DockerError, ValueError):
                    reaped = await self._box.reap("exec", self._argv)
                    killed = [f"{p['pid']} {p['command']}" for p in reaped["stopped"]]
        await self._settle()
        return killed
