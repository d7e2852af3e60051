"""The Docker Engine API over the daemon's Unix socket: a box's work without a `docker` process for each step.

Each `docker` command is a process start (a Go binary, 20-40 ms of CPU here)
and, from the run's own process, a fork of a large interpreter (8-15 ms of
the run's loop, which every unit shares); the API is the same requests the
CLI sends, without either. `docker` commands stay where a process is what is
wanted: containers attached to this machine's stdio (the door, the agent's
`exec -i`, the egress proxy, a driver's sandbox), builds and pulls (their
output is the build's log), and the helper containers whose answer is their
stdout (reaper.py).

The daemon is the one the `docker` command would reach: `DOCKER_HOST`
(`unix://` only: the backend mounts this machine's folders, so its daemon is
on this machine), else the current context's, else /var/run/docker.sock.
`Sync` serves threads and commands (a connection a request); `Engine`, one
run's event loop (aiohttp, connections kept).
"""

from __future__ import annotations

import functools
import http.client
import json
import os
import socket
import subprocess
import urllib.parse
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from nullius_backend_docker.calls import CallLog, timed
from nullius_backend_docker.dockercli import INSTALL_HINT, DockerError, client_env, docker_binary

DEFAULT_SOCKET = "/var/run/docker.sock"
_PREFIXES: dict[str, str] = {}  # a socket -> `/v<its daemon's API version>`, asked once a process


def socket_path() -> str:
    """Where the daemon listens, as the `docker` command would find it."""
    return _resolve(os.environ.get("DOCKER_HOST", ""), os.environ.get("DOCKER_CONTEXT", ""), os.environ.get("DOCKER_CONFIG", ""))


@functools.lru_cache(maxsize=8)
def _resolve(host: str, context: str, config: str) -> str:
    if not host and _named_context(context, config):
        host = _context_host()
    if not host:
        return DEFAULT_SOCKET
    if host.startswith("unix://"):
        return host[len("unix://"):]
    raise DockerError(f"the docker backend reaches its daemon through a Unix socket on this machine (it mounts this machine's "
                      f"folders into containers); the daemon here is {host!r}: set DOCKER_HOST=unix:///path/to/docker.sock")


def _named_context(context: str, config: str) -> bool:
    if context:
        return context != "default"
    path = Path(config or Path(os.environ.get("HOME", "/root")) / ".docker") / "config.json"
    try:
        current = json.loads(path.read_text()).get("currentContext", "")
    except (OSError, ValueError, AttributeError):
        return False
    return bool(current) and current != "default"


def _context_host() -> str:
    """The current context's endpoint, asked of the `docker` command once (contexts are its own files)."""
    done = subprocess.run([docker_binary(), "context", "inspect", "--format", "{{.Endpoints.docker.Host}}"], capture_output=True,
                          text=True, timeout=30, env=client_env(None))
    if done.returncode != 0:
        raise DockerError(f"the current docker context cannot be read ({done.stderr.strip()[-300:]}): " + INSTALL_HINT)
    return done.stdout.strip()


def quoted(path: str, *idents: str) -> str:
    """`/containers/{}/start` with its names quoted in."""
    return path.format(*(urllib.parse.quote(i, safe="") for i in idents))


def query_string(query: Mapping[str, Any] | None) -> str:
    if not query:
        return ""
    return "?" + urllib.parse.urlencode({k: json.dumps(v) if isinstance(v, (dict, list)) else v for k, v in query.items()})


class Refused(DockerError):
    """The daemon answered, and refused: `message` is what it said (`No such container: ...`)."""

    def __init__(self, text: str, status: int, message: str):
        super().__init__(text)
        self.status = status
        self.message = message


def message_of(body: bytes) -> str:
    """The daemon's own words in a refusal's reply ({"message": ...}), as the `docker` command prints them."""
    try:
        message = json.loads(body).get("message", "")
    except (ValueError, AttributeError):
        message = body.decode(errors="replace")
    return str(message).strip()


def failure(what: str, status: int, body: bytes) -> Refused:
    message = message_of(body)
    return Refused(f"docker {what} failed ({status}): {message[-600:]}", status, message)


def unreachable(path: str, exc: BaseException) -> DockerError:
    return DockerError(f"the docker daemon does not answer at {path} ({exc}): " + INSTALL_HINT)


class _UnixConnection(http.client.HTTPConnection):
    def __init__(self, path: str, timeout: float):
        super().__init__("localhost", timeout=timeout)
        self._path = path

    def connect(self) -> None:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(self.timeout)
        sock.connect(self._path)
        self.sock = sock


class Sync:
    """Requests waited for, one connection each: the daemon's check, the sweep, the images looked up (threads, commands)."""

    def __init__(self, log: CallLog | None = None, step: str = "run"):
        self.path = socket_path()
        self.log = log
        self.step = step

    def version(self) -> dict[str, Any]:
        found = self.call("GET", "/version", versioned=False) or {}
        if found.get("ApiVersion"):
            _PREFIXES[self.path] = f"/v{found['ApiVersion']}"
        return found

    def call(self, method: str, path: str, *idents: str, query: Mapping[str, Any] | None = None, body: Any = None,
             timeout: float = 60, ok: tuple[int, ...] = (200, 201, 204, 304), versioned: bool = True) -> Any:
        """One request; its JSON reply (None when empty); a DockerError names what the daemon said, or that it is not there."""
        status, data = self.raw(method, path, *idents, query=query, body=body, timeout=timeout, versioned=versioned)
        if status not in ok:
            raise failure(f"{method} {path.replace('{}', '{id}')}", status, data)
        return json.loads(data) if data.strip() else None

    def raw(self, method: str, path: str, *idents: str, query: Mapping[str, Any] | None = None, body: Any = None,
            timeout: float = 60, versioned: bool = True) -> tuple[int, bytes]:
        prefix = self.prefix() if versioned else ""
        target = prefix + quoted(path, *idents) + query_string(query)
        payload = json.dumps(body).encode() if body is not None else None
        with timed(self.log, self.step, f"{method} {path.replace('{}', '{id}')}") as result:
            connection = _UnixConnection(self.path, timeout)
            try:
                connection.request(method, target, body=payload, headers={"Content-Type": "application/json"} if payload else {})
                reply = connection.getresponse()
                data = reply.read()
            except OSError as exc:  # no socket, refused, timed out
                raise unreachable(self.path, exc) from None
            finally:
                connection.close()
            result[0] = str(reply.status)
        return reply.status, data

    def prefix(self) -> str:
        """`/v<the daemon's API version>`: requests in the version the daemon speaks, asked once."""
        if self.path not in _PREFIXES:
            _PREFIXES[self.path] = f"/v{self.version()['ApiVersion']}"
        return _PREFIXES[self.path]
