"""The check's way out (verify.network): the egress proxy's container, started when the check first connects.

The unit's door forwards egress:61128 to its folder's `egress.sock`. This
machine listens there while the check runs and, at the check's first
connection, starts container/egress.py (on the default bridge; global
addresses only) listening on `egress-proxy.sock` beside it, then joins each
connection to it. A check that never goes out, as most do, starts no
container (0.3-0.5 s of docker's CPU a unit). `verifier/egress.log` is what
the proxy let through and refused, empty when the check asked nothing; a
proxy that could not start is the unit's VerifierError, as before the check.
"""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path
from typing import TYPE_CHECKING

from nullius_backend_docker import dockercli
from nullius_backend_docker.dockercli import DockerError
from nullius_core.sandbox.door import pipe_both
from nullius_backend_docker.process import LINE_LIMIT
from nullius_core.processes import start_process

if TYPE_CHECKING:
    from nullius_backend_docker.box import DockerBox

CONTAINER_FILES = Path(__file__).resolve().parent / "container"
READY_SECONDS = 60


class CheckEgress:
    def __init__(self, box: DockerBox, log: Path, allow: list[str] | None):
        self.box = box
        self.log = log
        self.allow = allow  # verify.allow: only these hosts (the proxy's EGRESS_ALLOW)
        self._server: asyncio.AbstractServer | None = None
        self._proc: asyncio.subprocess.Process | None = None
        self._failed: BaseException | None = None
        self._lock = asyncio.Lock()

    async def open(self) -> None:
        """Listening on the door's egress socket, before the check's command starts."""
        self.log.touch()  # the box opened its door when it started
        self._server = await asyncio.start_unix_server(self._joined, path=str(self.box.door.socket("egress")))

    async def close(self) -> None:
        """After the check: no more connections, the proxy stopped; its failure to start, raised now."""
        if self._server is not None:
            self._server.close()
        async with self._lock:  # a start under way finishes first, then is stopped
            if self._proc is not None:
                await _stop(self._proc)
                self._proc = None
        if self._failed is not None:
            raise DockerError(f"the check's egress proxy did not start: {self._failed}")

    async def _joined(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """One connection of the check, joined to the proxy (started first, once)."""
        try:
            async with self._lock:
                if self._proc is None and self._failed is None:
                    await self._start()
            if self._failed is not None:
                raise self._failed
            up_reader, up_writer = await asyncio.open_unix_connection(str(self.box.door.socket("egress-proxy")))
        except (OSError, DockerError):
            writer.close()
            return
        await pipe_both(reader, writer, up_reader, up_writer)

    async def _start(self) -> None:
        with self.box.calls.timed("check", "docker run -i (the egress proxy, at the check's first connection)") as result:
            try:
                self._proc = await self._run()
                result[0] = "listening"
            except (OSError, DockerError, asyncio.TimeoutError) as exc:
                self._failed = DockerError(str(exc) or type(exc).__name__)

    async def _run(self) -> asyncio.subprocess.Process:
        """egress.py in its container, on the default bridge, listening on the door's folder; ready when it says so."""
        box = self.box
        proc = await start_process(
            dockercli.docker_binary(), "run", "-i", "--rm", "--init", "--name", f"{box.name}-egress", *box.labels, "--network", "bridge",
            "--user", box.backend.user, "--cap-drop", "ALL", "--security-opt", "no-new-privileges", "--log-driver", "none",
            "--read-only", *(["-e", "EGRESS_ALLOW=" + ",".join(self.allow)] if self.allow is not None else []),
            "--volume", f"{CONTAINER_FILES}:/opt/nullius-door:ro", "--volume", f"{self.log.parent}:/log",
            "--volume", f"{box.door.folder}:/sockets", box.backend.image,
            "python3", "/opt/nullius-door/egress.py", "unix:/sockets/egress-proxy.sock", f"/log/{self.log.name}",
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL,
            env=dockercli.client_env(None), limit=LINE_LIMIT,
        )
        assert proc.stdout is not None
        try:
            line = await asyncio.wait_for(proc.stdout.readline(), READY_SECONDS)
            if not line.startswith(b"listening"):
                raise DockerError(f"it said {line[:200]!r}")
        except BaseException:
            await _stop(proc)
            raise
        return proc


async def _stop(proc: asyncio.subprocess.Process) -> None:
    if proc.stdin is not None:
        with contextlib.suppress(Exception):
            proc.stdin.close()
    with contextlib.suppress(ProcessLookupError):
        proc.terminate()  # the attached client: --rm removes the container when its process ends
    try:
        await asyncio.wait_for(proc.wait(), 15)
    except asyncio.TimeoutError:
        proc.kill()
        await proc.wait()
