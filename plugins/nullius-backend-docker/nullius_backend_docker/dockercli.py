"""The docker command line, called without a shell: each call's argv, exit and stderr turned into an error that says what failed.

What stays a command: containers attached to this machine's stdio (the door,
the agent, the egress proxy, a driver's sandbox), builds, pulls, and helper
containers whose answer is their stdout. A box's other steps, the sweep and
the images looked up go to the daemon's API (engine.py, asyncapi.py): a
`docker` process for each costs more CPU than the daemon's own work.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from nullius_backend_docker.calls import CallLog

INSTALL_HINT = (
    "the docker backend needs docker: install it (Debian/Ubuntu: `apt-get install docker.io`, then start "
    "the daemon with `dockerd &` or `systemctl start docker`) and make sure `docker info` works for this user"
)


class DockerError(OSError):
    """A docker command failed, or docker is not there; the message says which and why."""


def docker_binary() -> str:
    found = shutil.which("docker")
    if found is None:
        raise DockerError("no `docker` command on PATH: " + INSTALL_HINT)
    return found


def check_daemon(calls: CallLog | None = None) -> str:
    """The daemon's version, or a DockerError saying that docker is needed and how to get it."""
    from nullius_backend_docker import engine  # engine.py builds on this module's errors

    docker_binary()  # the command is needed too: the door, the agent and the builds are `docker` commands
    found = engine.Sync(calls).version()
    if not found.get("Version"):
        raise DockerError("the docker daemon does not answer (no version in its reply): " + INSTALL_HINT)
    return str(found["Version"])


def run(argv: Sequence[str], *, env: Mapping[str, str] | None = None, input: bytes | None = None, timeout: float = 120) -> str:
    """`docker ARGV...`, waited for; its stdout, or a DockerError with its stderr."""
    full = [docker_binary(), *argv]
    try:
        done = subprocess.run(full, input=input, capture_output=True, timeout=timeout, env=client_env(env))
    except subprocess.TimeoutExpired:
        raise DockerError(f"`docker {' '.join(argv[:3])} ...` did not end in {timeout:g} s") from None
    if done.returncode != 0:
        raise DockerError(f"`docker {' '.join(argv[:3])} ...` failed ({done.returncode}): {done.stderr.decode(errors='replace').strip()[-600:]}")
    return done.stdout.decode(errors="replace")


async def _communicate(argv: Sequence[str], env: Mapping[str, str] | None, timeout: float, what: str) -> tuple[int, bytes, bytes]:
    """A docker client run to its end: (exit, stdout, stderr); killed past `timeout`, a DockerError naming `what`."""
    proc = await asyncio.create_subprocess_exec(
        *argv, stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, env=client_env(env)
    )
    try:
        out, err = await asyncio.wait_for(proc.communicate(), timeout)
    except asyncio.TimeoutError:
        proc.kill()
        await proc.wait()
        raise DockerError(f"`{what} ...` did not end in {timeout:g} s") from None
    assert proc.returncode is not None
    return proc.returncode, out, err


async def arun(argv: Sequence[str], *, env: Mapping[str, str] | None = None, timeout: float = 120, check: bool = True,
               calls: CallLog | None = None, step: str = "") -> str:
    """As `run`, without blocking the run's loop; timed in `calls` as `docker ARGV[0]`."""
    with _timed(calls, step, argv) as result:
        code, out, err = await _communicate([docker_binary(), *argv], env, timeout, f"docker {' '.join(argv[:3])}")
        result[0] = f"exit {code}"
    if check and code != 0:
        raise DockerError(f"`docker {' '.join(argv[:3])} ...` failed ({code}): {err.decode(errors='replace').strip()[-600:]}")
    return out.decode(errors="replace")


async def arun_argv(argv: Sequence[str], *, env: Mapping[str, str] | None = None, timeout: float = 120, log: Path | None = None) -> str:
    """Another docker client (docker compose) with the docker client's environment: its stdout; its stderr to `log`; a DockerError."""
    code, out, err = await _communicate(argv, env, timeout, f"{Path(argv[0]).name} {' '.join(argv[1:4])}")
    if log is not None:
        with open(log, "ab") as out_log:
            out_log.write(err)
    if code != 0:
        said = err.decode(errors="replace").strip()[-600:]
        raise DockerError(f"`{Path(argv[0]).name} {' '.join(a for a in argv[1:] if not a.startswith('/'))[:120]}` failed ({code}): {said}")
    return out.decode(errors="replace")


def client_env(extra: Mapping[str, str] | None) -> dict[str, str]:
    """The docker client's own variables (config, socket), and `extra`."""
    env = {k: v for k, v in os.environ.items() if k.startswith("DOCKER_") or k in ("PATH", "HOME", "XDG_RUNTIME_DIR")}
    env.update(extra or {})
    return env


def image_exists(ref: str, calls: CallLog | None = None) -> bool:
    return image_inspect(ref, calls) is not None


def image_inspect(ref: str, calls: CallLog | None = None) -> dict | None:
    """`docker image inspect REF`'s object, None when no image here has that reference."""
    from nullius_backend_docker import engine

    status, data = engine.Sync(calls, "image").raw("GET", "/images/{}/json", ref)
    if status == 404:
        return None
    if status != 200:
        raise engine.failure("GET /images/{id}/json", status, data)
    return json.loads(data)


def by_name(env: Mapping[str, str]) -> tuple[list[str], dict[str, str]]:
    """A container's environment passed by name: `-e NAME` flags, and the client's environment holding the values.

    The values stay off the argument list (a token, a licence key). The client
    keeps its own config folder, whatever HOME the container is given.
    """
    flags = [part for key in sorted(env) for part in ("-e", key)]
    client = {**env, **{k: v for k, v in client_env(None).items() if k.startswith("DOCKER_")}}
    client.setdefault("DOCKER_CONFIG", str(Path(os.environ.get("HOME", "/root")) / ".docker"))
    return flags, client


def _timed(calls: CallLog | None, step: str, argv: Sequence[str]):  # type: ignore[no-untyped-def]
    from nullius_backend_docker.calls import timed

    return timed(calls, step, f"docker {argv[0]}")
