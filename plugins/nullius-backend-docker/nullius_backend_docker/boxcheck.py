"""The check's steps in a unit's box: the agent's processes stopped, the check's files put in, its command run, its folder out.

A part of DockerBox (box.py), kept apart for its size: every step is a
request to the daemon's API, timed in the box's CallLog, but the reaper's
helper container (a `docker run` whose answer is its stdout).
"""

from __future__ import annotations

import asyncio
import io
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs

from nullius_backend_docker import boxfiles, boxprocs, dockercli
from nullius_backend_docker.dockercli import DockerError
from nullius_backend_docker.door import local
from nullius_backend_docker.engine import Refused, message_of
from nullius_core.contracts.own_image import OwnUnit, Steps, Verify, VerifyProblem

if TYPE_CHECKING:
    from nullius_backend_docker.asyncapi import Engine
    from nullius_backend_docker.backend import DockerBackend
    from nullius_backend_docker.calls import CallLog
    from nullius_backend_docker.door import UnitDoor

CONTAINER_FILES = Path(__file__).resolve().parent / "container"


class CheckSteps:
    """What DockerBox has that these steps use."""

    api: Engine
    calls: CallLog
    name: str
    workdir: str
    labels: list[str]
    backend: DockerBackend
    door: UnitDoor
    _inspect: dict[str, Any]
    own: OwnUnit

    async def _stop_the_agent(self, verify: Verify, verifier_dir: Path) -> None:
        """Every process but init and the keep-alive, stopped and named in stopped.txt (unless verify.keep_processes)."""
        if verify.keep_processes:
            (verifier_dir / "stopped.txt").write_text("kept: verify.keep_processes is true, what the agent left ran on during the check\n")
            return
        reaped = await self.reap("all") if await self._anything_running() else {"stopped": [], "survivors": []}
        lines = [f"{p['pid']}\t{p['signal']}\t{p['command']}" for p in reaped["stopped"]]
        (verifier_dir / "stopped.txt").write_text("".join(line + "\n" for line in lines) or "nothing of the agent was running\n")
        if reaped["survivors"]:
            names = ", ".join(f"{p['pid']} {p['command']}" for p in reaped["survivors"])
            raise VerifyProblem(f"the agent's processes could not be stopped before the check: {names}")

    async def _anything_running(self) -> bool:
        """More than init and the keep-alive in the box: its cgroup read here, else the daemon's `top` (no helper container started)."""
        rows = None
        if local():
            with self.calls.timed("stop", "the box's processes, read here") as result:
                rows = boxprocs.listed(int((self._inspect.get("State") or {}).get("Pid") or 0), self._inspect.get("Id", ""))
                result[0] = f"{len(rows)} processes" if rows is not None else "asked the daemon"
        if rows is None:
            listing = await self.api.call(self.calls, "stop", "GET", "/containers/{}/top", self.name, query={"ps_args": "-eo pid,ppid,args"})
            rows = (listing or {}).get("Processes") or []
        rows = [r for r in rows if len(r) == 3]
        init = [r for r in rows if r[2].startswith("/sbin/docker-init")]
        if len(init) != 1:
            return True
        rest = [r for r in rows if r is not init[0]]
        return not (len(rest) == 1 and rest[0][1] == init[0][0] and rest[0][2] == "sleep infinity")

    async def reap(self, mode: str, argv: Sequence[str] = ()) -> dict[str, Any]:
        """reaper.py in a helper container sharing the box's process namespace, with CAP_KILL alone."""
        run = ["run", "--rm", "--pid", f"container:{self.name}", "--network", "none", "--user", "0", "--cap-drop", "ALL",
               "--cap-add", "KILL", "--security-opt", "no-new-privileges", "--log-driver", "none", *self.labels,
               "--volume", f"{CONTAINER_FILES}:/opt/nullius-door:ro", self.backend.image, "python3", "/opt/nullius-door/reaper.py", mode]
        if mode == "exec":
            run.append(json.dumps(list(argv)))
        return json.loads(await dockercli.arun(run, timeout=60, calls=self.calls, step="stop" if mode == "all" else "agent"))

    async def _clear(self, paths: Sequence[str]) -> None:
        said = io.BytesIO()
        code, _ = await self.api.exec(self.calls, "check", self.name, ["rm", "-rf", "--", *paths], said, 120, user="0")
        if code != 0:
            raise DockerError(f"the check's folders could not be emptied first (rm exit {code}): {said.getvalue().decode(errors='replace')[-300:]}")

    async def _put(self, steps: Steps, step: str) -> None:
        """The files of `copy` and `write` as one archive, extracted at the box's root (as `docker cp -` does; '.': the working
        directory)."""
        if not steps.copy and not steps.write:
            return
        steps = attrs.evolve(steps, copy={source: self.workdir if inside == "." else inside for source, inside in steps.copy.items()})
        data = await asyncio.to_thread(boxfiles.archive, self.own.source, steps)
        try:
            await self.api.call(self.calls, step, "PUT", "/containers/{}/archive", self.name, query={"path": "/", "noOverwriteDirNonDir": "true"},
                                data=data, timeout=300)
        except Refused as exc:
            raise VerifyProblem(f"the check's files could not be put in the box: {exc.message[-300:]}") from None

    async def _run(self, argv: Sequence[str], seconds: float, out_path: Path, env: Mapping[str, str], step: str) -> tuple[int | None, bool]:
        """`argv` in the working directory; its stdout and stderr to `out_path`. (exit, timed out): a timed-out one is stopped,
        with its own children too (everything but init and the keep-alive: the check is over)."""
        with open(out_path, "wb") as out:
            try:
                return await self.api.exec(self.calls, step, self.name, argv, out, seconds, workdir=self.workdir, env=env,
                                           on_timeout=lambda: self.reap("all"))
            except Refused as exc:  # the box is not running (its keep-alive killed): as `docker exec` says it, exit 1
                out.write(f"Error response from daemon: {exc.message}\n".encode())
                return 1, False

    async def _collect(self, folder: str, verifier_dir: Path) -> list[str]:
        status, data = await self.api.raw(self.calls, "collect", "GET", "/containers/{}/archive", self.name, query={"path": folder}, timeout=300)
        if status != 200:
            message = message_of(data)
            (verifier_dir / "collect.txt").write_text(f"{folder} could not be collected: {message[-300:]}\n")
            return []
        return await asyncio.to_thread(boxfiles.extract, data, verifier_dir)
