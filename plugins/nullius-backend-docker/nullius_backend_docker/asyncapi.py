"""The Engine API in the run's event loop (aiohttp over the daemon's Unix socket, connections kept): what a unit's box asks.

Every request is timed in the caller's CallLog, as `step` and the endpoint's
shape (`POST /containers/{id}/start`). A command run in a container (`exec`)
streams its stdout and stderr, multiplexed as docker frames them, into a file
of this machine, and is waited for with its own time limit.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import IO, Any

import aiohttp

from nullius_backend_docker import engine
from nullius_backend_docker.calls import CallLog, timed

OK = (200, 201, 204, 304)
EXIT_SECONDS = 10.0  # the exec's output has ended: its exit is the daemon's to record, which it does within moments


class Engine:
    def __init__(self, path: str, prefix: str):
        self.path = path
        self.prefix = prefix
        self._session: aiohttp.ClientSession | None = None

    def _client(self) -> aiohttp.ClientSession:
        # made in the run's loop, at its first request (the backend itself is made before the loop runs)
        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession(connector=aiohttp.UnixConnector(path=self.path), timeout=aiohttp.ClientTimeout(total=None))
        return self._session

    def _url(self, path: str, idents: Sequence[str], query: Mapping[str, Any] | None) -> str:
        return "http://docker" + self.prefix + engine.quoted(path, *idents) + engine.query_string(query)

    async def raw(self, log: CallLog | None, step: str, method: str, path: str, *idents: str, query: Mapping[str, Any] | None = None,
                  body: Any = None, data: bytes | None = None, timeout: float = 60) -> tuple[int, bytes]:
        """(status, reply) of one request; only a daemon that cannot be reached is an error here."""
        headers = {"Content-Type": "application/x-tar"} if data is not None else None
        with timed(log, step, f"{method} {path.replace('{}', '{id}')}") as result:
            try:
                async with self._client().request(method, self._url(path, idents, query), json=body, data=data, headers=headers,
                                                  timeout=aiohttp.ClientTimeout(total=timeout)) as reply:
                    content = await reply.read()
            except (aiohttp.ClientError, OSError) as exc:
                raise engine.unreachable(self.path, exc) from None
            except asyncio.TimeoutError:
                raise engine.DockerError(f"docker {method} {path.replace('{}', '{id}')} did not answer in {timeout:g} s") from None
            result[0] = str(reply.status)
        return reply.status, content

    async def call(self, log: CallLog | None, step: str, method: str, path: str, *idents: str, query: Mapping[str, Any] | None = None,
                   body: Any = None, data: bytes | None = None, timeout: float = 60) -> Any:
        """One request; its JSON reply (None when empty); a DockerError with the daemon's message when refused."""
        status, content = await self.raw(log, step, method, path, *idents, query=query, body=body, data=data, timeout=timeout)
        if status not in OK:
            raise engine.failure(f"{method} {path.replace('{}', '{id}')}", status, content)
        return json.loads(content) if content.strip() else None

    async def exec(self, log: CallLog | None, step: str, container: str, argv: Sequence[str], sink: IO[bytes], seconds: float, *,
                   workdir: str | None = None, env: Mapping[str, str] | None = None, user: str | None = None,
                   on_timeout: Callable[[], Awaitable[Any]] | None = None, grace: float = 10) -> tuple[int | None, bool]:
        """`argv` run in `container` (as `docker exec` runs it), its output into `sink`. (exit, timed out): past `seconds`,
        `on_timeout` stops it, its output is copied `grace` s more, and the exit is None."""
        config: dict[str, Any] = {"Cmd": list(argv), "AttachStdout": True, "AttachStderr": True,
                                  "Env": [f"{k}={v}" for k, v in sorted((env or {}).items())]}
        if workdir:
            config["WorkingDir"] = workdir
        if user:
            config["User"] = user
        ident = (await self.call(log, step, "POST", "/containers/{}/exec", container, body=config))["Id"]
        with timed(log, step, "POST /exec/{id}/start") as result:
            try:
                reply = await self._client().post(self._url("/exec/{}/start", [ident], None), json={"Detach": False, "Tty": False})
            except (aiohttp.ClientError, OSError) as exc:
                raise engine.unreachable(self.path, exc) from None
            async with reply:
                if reply.status != 200:
                    raise engine.failure("POST /exec/{id}/start", reply.status, await reply.read())
                result[0] = "200"
                if not await _stream(reply.content, sink, seconds, on_timeout, grace):
                    result[0] = "timed out"
                    return None, True
        return await self._exit(log, step, ident), False

    async def _exit(self, log: CallLog | None, step: str, ident: str) -> int:
        """The exec's exit status; asked again while the daemon has not yet seen the process end (its output ends first)."""
        loop = asyncio.get_running_loop()
        deadline, pause = loop.time() + EXIT_SECONDS, 0.005
        while True:
            found = await self.call(log, step, "GET", "/exec/{}/json", ident)
            if not found.get("Running") or loop.time() > deadline:
                code = found.get("ExitCode")
                return int(code) if code is not None else -1
            await asyncio.sleep(pause)
            pause = min(pause * 2, 0.2)

    async def close(self) -> None:
        if self._session is not None and not self._session.closed:
            await self._session.close()


async def _stream(content: aiohttp.StreamReader, sink: IO[bytes], seconds: float, on_timeout: Callable[[], Awaitable[Any]] | None,
                  grace: float) -> bool:
    """The exec's output copied until it ends (True), or for `seconds` (False: it was stopped, and what it said last is copied too)."""
    copy = asyncio.ensure_future(demux(content, sink))
    try:
        await asyncio.wait_for(asyncio.shield(copy), seconds)
        return True
    except asyncio.TimeoutError:
        if on_timeout is not None:
            await on_timeout()
        if grace > 0:
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(asyncio.shield(copy), grace)
        return False
    finally:
        copy.cancel()


async def demux(content: aiohttp.StreamReader, sink: IO[bytes]) -> None:
    """docker's frames (a byte for the stream, three zeros, the length in four bytes big-endian, the bytes) into one sink."""
    while True:
        try:
            header = await content.readexactly(8)
        except asyncio.IncompleteReadError:  # the end
            return
        try:
            payload = await content.readexactly(int.from_bytes(header[4:8], "big"))
        except asyncio.IncompleteReadError as exc:  # a frame cut short: written as far as it came
            payload = exc.partial
        if header[0] in (1, 2):  # stdout, stderr; docker's own error (an executable not found) comes on stdout
            sink.write(payload)
