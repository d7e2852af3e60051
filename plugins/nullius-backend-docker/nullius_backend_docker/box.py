"""A unit's box: its task's own image, running for the whole unit, with the agent added and the check run inside.

    box      the task's image as its own user: default capabilities, no new privileges,
             `--init` and `sleep infinity` keeping it up, a network namespace of its own
             (--network none: a loopback alone); the agent joins it with `docker exec`
    door     for an agent's unit, or a check with verify.network: the door's addresses
             (relay:61080, door:61090, egress:61128, a licence server's) listening on the
             box's loopback, made there by this process (nsdoor.py) or by a door container
             joined to the box (door.py); the names in the box's /etc/hosts
    egress   egress.py, for the check alone, when verify.network is true and the check
             connects: on the default bridge, its socket joined to the door's (boxegress.py)

The check (boxcheck.py): the agent's processes stopped (reaper.py, from a helper sharing
the box's process namespace: the image may have no `kill`), the check's
files put in as one archive, its command run in the working directory, its
`collect` folder copied out. Removal happens off the unit's path, after the
room's own. The box's steps are requests to the daemon's API (asyncapi.py),
each timed in the trial's `.work/docker-calls.tsv`; `docker` commands remain
for what is attached (the agent's `exec -i`, a door container, the egress
proxy) and the helpers whose answer is their stdout.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import os
import tarfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nullius_backend_docker import boxfiles, boxpatch, dockercli, overlaydiff
from nullius_backend_docker.boxcheck import CheckSteps
from nullius_backend_docker.boxegress import CheckEgress
from nullius_backend_docker.calls import CallLog
from nullius_backend_docker.compose import Sidecars
from nullius_backend_docker.dockercli import DockerError
from nullius_backend_docker.door import EGRESS_PORT, LicenceServer, local
from nullius_backend_docker.ownimage import ImageFacts
from nullius_backend_docker.process import ExecProcess
from nullius_core.contracts.own_image import Artifact, Healthcheck, NotReady, NotRun, OwnUnit, Steps, Verified, Verify

if TYPE_CHECKING:
    from nullius_backend_docker.backend import DockerBackend

CONTAINER_FILES = Path(__file__).resolve().parent / "container"
DOCKER_INIT = "/usr/sbin/docker-init"
OUTPUT_LIMIT = 256 * 1024  # the end of the check's output that `score` is sent; the whole is test-stdout.txt
KINDS = {0: "C", 1: "A", 2: "D"}  # the daemon's change kinds, as `docker diff` prints them


class DockerBox(CheckSteps):
    def __init__(self, backend: DockerBackend, unit: str, tag: str, own: OwnUnit, workdir: str, image: ImageFacts, home: Path):
        self.backend = backend
        self.unit = unit
        self.tag = tag
        self.own = own
        self.workdir = workdir
        self.home = home
        self.image = image
        self.name = f"{backend.prefix}-{unit}-box"
        self.labels = backend.labels(unit)
        self.api = backend.api
        self.calls = CallLog(self.name)  # every docker call of the unit: its .work/docker-calls.tsv
        self.door = backend.new_door(unit, home.parent / "door.log")  # opened in the box as it starts: an agent, a way out, services
        self.door.calls = self.calls
        self.path = next((e.split("=", 1)[1] for e in image.env if e.startswith("PATH=")), "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")
        self._created = False
        self._started = False
        self.sidecars: Sidecars | None = None  # the task's other services (compose.py), reached through the door
        self._env = dict(own.env)
        self._changes: str | None = None
        self._patch: str | None = None
        self._patch_taken = False
        self._inspect: dict[str, Any] = {}
        self._points: list[str] = []  # where the agent's mounts are: their folders are docker's change, not the task's
        self._lock = asyncio.Lock()

    # --- starting ---------------------------------------------------------------

    async def start(self, volumes: Sequence[str] = (), door: bool = False) -> None:
        """The image, running until the unit ends; `volumes` as `docker run` takes them (the agent's, when it has one).

        Its own network namespace, a loopback alone: with a door (`door`, an
        agent's unit, or a check with a way out) the door's listeners are
        made in it before anything runs there; a control's box without one
        has no network at all and no door.
        """
        door = door or (self.own.verify is not None and self.own.verify.network) or self.sidecars is not None
        async with self._lock:
            if self._started:
                return
            for volume in volumes:
                self._points.append(volume.split(":")[1])
            await self.api.call(self.calls, "start", "POST", "/containers/create", query={"name": self.name},
                                body=self._config(volumes, door), timeout=120)
            self._created = True
            await self.api.call(self.calls, "start", "POST", "/containers/{}/start", self.name, timeout=120)
            self._started = True
            # where it runs (its init's pid) and its folders (GraphDriver), for its door, its processes and its changes
            self._inspect = await self.api.call(self.calls, "start", "GET", "/containers/{}/json", self.name)
            if door:
                await self.door.open_in(self.name, int((self._inspect.get("State") or {}).get("Pid") or 0), self._inspect.get("Id", ""))
            if self.own.healthcheck is not None:
                await self.healthy(self.own.healthcheck)

    def _config(self, volumes: Sequence[str], door: bool) -> dict[str, Any]:
        """What `docker run -d --init --network none [--add-host NAME:ADDRESS...] --security-opt no-new-privileges --log-driver none
        -e NAME... --entrypoint sleep IMAGE infinity` asks for (the task's variables in the request, never on an argument list)."""
        host: dict[str, Any] = {"Init": True, "NetworkMode": "none", "ExtraHosts": self.door.hosts() if door else None,
                                "SecurityOpt": ["no-new-privileges"], "LogConfig": {"Type": "none", "Config": {}}, "Binds": list(volumes),
                                "RestartPolicy": {"Name": "no"}}
        if self.own.image.memory_mb:
            host["Memory"] = self.own.image.memory_mb * 1024 * 1024
        if self.own.image.cpus:
            host["NanoCpus"] = round(self.own.image.cpus * 1e9)
        entrypoint, cmd = self._keep_alive()
        return {"Image": self.tag, "Entrypoint": entrypoint, "Cmd": cmd, "WorkingDir": self.workdir, "HostConfig": host,
                "Env": [f"{k}={v}" for k, v in sorted(self._env.items())], "Labels": self.backend.label_map(self.unit)}

    def _keep_alive(self) -> tuple[list[str], list[str]]:
        """`sleep infinity` keeps the box up; with `dirs`, a shell makes them first and becomes it (no docker call more)."""
        if not self.own.dirs:
            return ["sleep"], ["infinity"]
        return ["sh"], ["-c", 'mkdir -p "$@" && chmod 777 "$@"; exec sleep infinity', "sh", *self.own.dirs]

    async def healthy(self, check: Healthcheck) -> None:
        """Docker's HEALTHCHECK rules: tries until one passes; `retries` failures in a row after the start period fail it."""
        began = asyncio.get_running_loop().time()
        failures = 0
        while True:
            said = io.BytesIO()
            code, timed_out = await self.api.exec(self.calls, "start", self.name, check.run, said, check.timeout, workdir=self.workdir, grace=0)
            code = 124 if timed_out else code  # as `timeout` says it: a try that did not end in time failed
            if code == 0:
                return
            starting = asyncio.get_running_loop().time() - began < check.start_period
            failures = 0 if starting else failures + 1
            if failures >= check.retries:
                text = said.getvalue().decode(errors="replace").strip()[-300:]
                raise NotReady(f"the task's healthcheck failed {failures} times in a row (exit {code}): {text or 'it said nothing'}")
            await asyncio.sleep(check.start_interval if starting else check.interval)  # the task's own pace, as Docker's

    async def start_services(self) -> None:
        """The task's other services, up before the box: each port they declare served on the door under the service's name."""
        if self.own.compose is None:
            return
        self.sidecars = Sidecars(self.name.lower(), (self.own.source / self.own.compose).resolve(), self.backend.label_map(self.unit),
                                 self.backend.image, self.home.parent / "compose.log", self.own.source)
        with self.calls.timed("start", "docker compose up (the task's other services)") as result:
            for service in await self.sidecars.up():
                for port in service.ports:
                    self.door.licence(LicenceServer(alias=service.name, port=port, target=(service.address, port)))
            result[0] = f"{len(self.sidecars.services)} services"
        self._env = {**self.sidecars.main_env, **self.own.env}

    async def put_files(self, folder: Path) -> None:
        """The files under `folder` into the working directory, over what is there: a variant's, before its agent starts."""
        data = await asyncio.to_thread(boxfiles.folder_archive, folder, self.workdir)
        await self.api.call(self.calls, "agent", "PUT", "/containers/{}/archive", self.name, query={"path": "/"}, data=data, timeout=300)

    async def exec_agent(self, argv: Sequence[str], env: Mapping[str, str], stderr: Path) -> ExecProcess:
        await self._lend_home()
        await self.check_runtime(argv[0])
        flags, cli_env = dockercli.by_name(env)
        with self.calls.timed("agent", "docker exec -i (attached: its start)") as result:
            process = await ExecProcess.start(self, ["exec", "-i", "-w", self.workdir, *flags, self.name, *argv], cli_env, stderr, list(argv))
            result[0] = "started"
        return process

    async def _lend_home(self) -> None:
        """An image whose own user is not root: its user gets the mounted HOME (made by you) as its own for the unit.

        Only the owner changes, to the uid the box runs as (its init's, read in
        a helper sharing its process namespace: the image's user may be a name
        in its own /etc/passwd, or no user of this machine); the group and
        every mode stay. Given back to you when the box goes (`_give_home_back`).
        """
        if self.image.root or not self.home.exists():
            return
        try:
            await dockercli.arun(
                ["run", "--rm", "--user", "0", "--cap-drop", "ALL", "--cap-add", "CHOWN", "--cap-add", "DAC_READ_SEARCH",
                 "--security-opt", "no-new-privileges", "--pid", f"container:{self.name}", "--network", "none", "--log-driver", "none",
                 *self.labels, "--volume", f"{self.home}:/home-lent", self.backend.image,
                 "sh", "-c", 'chown -R -h "$(stat -c %u /proc/1)" /home-lent'], timeout=300, calls=self.calls, step="agent")
        except DockerError as exc:
            raise NotRun(f"not run: the agent's HOME could not be lent to this task's image's user ({self.image.user}): {exc}") from None

    async def check_runtime(self, runtime: str) -> None:
        """The agent's runtime, tried once in the image: one that cannot start is the unit's setup error, saying why."""
        for ask in ("--version", "--help"):  # a native CLI may refuse --version (codex-acp exits 2) and answer --help
            said = io.BytesIO()
            code, _ = await self.api.exec(self.calls, "agent", self.name, [runtime, ask], said, 60)
            if code == 0:
                return
        kind = "node" if "node" in Path(runtime).name else "python" if "python" in Path(runtime).name else Path(runtime).name
        if await self._musl():
            raise NotRun(f"not run: the agent's runtime ({kind}) needs glibc; this task's image is musl-based")
        raise NotRun(f"not run: the agent's runtime ({kind}, {runtime}) cannot start in this task's image: "
                     f"{said.getvalue().decode(errors='replace').strip()[-300:]}")

    async def _musl(self) -> bool:
        for folder in ("/lib", "/usr/lib"):
            status, data = await self.api.raw(self.calls, "agent", "GET", "/containers/{}/archive", self.name, query={"path": folder})
            if status == 200:
                with contextlib.suppress(tarfile.TarError), tarfile.open(fileobj=io.BytesIO(data)) as tar:
                    if any("ld-musl" in m.name for m in tar.getmembers()):
                        return True
        return False

    # --- the oracle, the changes, the check ---------------------------------------------------------------

    async def solve(self, steps: Steps, out: Path) -> int | None:
        await self.start()
        await self._put(steps, "solve")
        if steps.run is None:
            return 0
        code, _ = await self._run(steps.run, steps.seconds, out, {}, "solve")
        return code

    async def changes(self) -> str:
        """What the agent (or the oracle) changed, taken once, before the check's files go in; a folder before what is in it."""
        if not self._created:
            return ""
        if self._changes is None:
            lines = boxfiles.without_ours(await self._diff(), [DOCKER_INIT, *self._points])
            self._changes = "".join(line + "\n" for line in boxfiles.by_path(lines))
        return self._changes

    async def workdir_patch(self) -> str | None:
        """The working directory's patch as the agent left it (boxpatch.py), taken once, with the agent stopped and before
        the check's files go in; None where the directory is no git repository (or the image has no git)."""
        if not self._created:
            return None
        if not self._patch_taken:
            self._patch_taken = True
            said = io.BytesIO()
            with self.calls.timed("changes", "the working directory's patch, made in the box") as result:
                code, _ = await self.api.exec(self.calls, "changes", self.name, boxpatch.argv(self.workdir), said, 120, user="root")
                self._patch = boxpatch.reading(code, said.getvalue())
                result[0] = "no repository" if self._patch is None else f"{len(self._patch)} bytes"
        return self._patch

    async def collect_artifacts(self, artifacts: list[Artifact], folder: Path) -> list[dict[str, Any]]:
        await self.start()
        folder.mkdir(parents=True, exist_ok=True)
        entries = []
        for artifact in artifacts:
            container = self.name
            if artifact.service not in (None, "main"):  # one of the task's other services
                service = self.sidecars.services.get(artifact.service) if self.sidecars else None
                container = service.container if service is not None else ""
            if container == self.name and await self._empty_folder(artifact.source):  # made at the start (dirs), left empty
                (folder / artifact.destination).mkdir(parents=True, exist_ok=True)
                kind, state = "directory", "empty"
            else:
                kind, state = await self._copy_artifact(container, artifact, folder)
            entries.append({"source": artifact.source, "destination": artifact.destination, "type": kind, "status": state,
                            "service": artifact.service, "exclude": list(artifact.exclude) if kind == "directory" else []})
        return entries

    async def _copy_artifact(self, container: str, artifact: Artifact, folder: Path) -> tuple[str, str]:
        status, data = (await self.api.raw(self.calls, "artifacts", "GET", "/containers/{}/archive", container,
                                           query={"path": artifact.source}, timeout=300)) if container else (404, b"")
        if status != 200:
            return ("directory" if not Path(artifact.source).suffix else "file"), "failed"
        return await asyncio.to_thread(boxfiles.extract_artifact, data, folder / artifact.destination, artifact.exclude)

    async def _empty_folder(self, source: str) -> bool:
        """A folder the image did not have, with nothing in it: its changes say `A` and nothing beneath (every entry of a folder
        the image lacks is a change), the upper folder that it is a folder. Only where both are read here; else the daemon copies."""
        where = overlaydiff.folders(self._inspect.get("GraphDriver") or {}) if local() else None
        if where is None:
            return False
        path = os.path.normpath("/" + source.lstrip("/"))
        with self.calls.timed("artifacts", "an empty folder? the changes, read here") as result:
            lines = (await self.changes()).splitlines()
            inside = where[0] / path.lstrip("/")
            empty = f"A {path}" in lines and not any(line[2:].startswith(path + "/") for line in lines) \
                and inside.is_dir() and not inside.is_symlink()
            result[0] = "empty" if empty else "copied"
        return empty

    async def _diff(self) -> list[str]:
        """`docker diff`: from the box's upper folder where this machine reads it as the daemon would (a few ms), else the
        daemon's own (which walks the whole image: 0.4 s of its CPU here)."""
        if local():
            where = overlaydiff.folders(self._inspect.get("GraphDriver") or {})
            if where is not None:
                with self.calls.timed("changes", "the upper folder, read here") as result:
                    try:
                        lines = await asyncio.to_thread(overlaydiff.changes, *where)
                        result[0] = f"{len(lines)} changes"
                        return lines
                    except (overlaydiff.Unsupported, OSError) as exc:  # a feature it does not read, a file gone mid-walk
                        result[0] = f"asked the daemon: {str(exc)[:120]}"
        listed = await self.api.call(self.calls, "changes", "GET", "/containers/{}/changes", self.name, timeout=120)
        return [f"{KINDS[c['Kind']]} {c['Path']}" for c in listed or []]

    async def verify(self, verify: Verify, verifier_dir: Path) -> Verified:
        await self.start()
        verifier_dir.mkdir(parents=True, exist_ok=True)
        # `docker diff` is slow on some daemons (0.4 s here): taken while the processes are stopped, before the files go in
        changes = asyncio.ensure_future(self.changes())
        try:
            await self._stop_the_agent(verify, verifier_dir)
        finally:
            await changes
        await self.workdir_patch()  # the agent stopped, the check's files not in yet
        if verify.clear:  # as root: what the agent planted where the check's files go (its own /tests, a reward file) never counts
            await self._clear(verify.clear)
        await self._put(verify, "check")
        env: dict[str, str] = {}
        egress = CheckEgress(self, verifier_dir / "egress.log", verify.allow) if verify.network else None
        if egress is not None:
            await egress.open()  # the proxy's container starts only if the check connects
            proxy = f"http://egress:{EGRESS_PORT}"
            # the box's own loopback and the task's services are reached directly, never through the proxy (which refuses them)
            direct = ",".join(["localhost", "127.0.0.1", "::1", *(self.sidecars.services if self.sidecars else ())])
            env = {"HTTP_PROXY": proxy, "HTTPS_PROXY": proxy, "http_proxy": proxy, "https_proxy": proxy, "NO_PROXY": direct, "no_proxy": direct}
        try:
            out = verifier_dir / "test-stdout.txt"
            code, timed_out = (0, False)
            if verify.run is not None:
                code, timed_out = await self._run(verify.run, verify.seconds, out, env, "check")
            else:
                out.write_text("")
        finally:
            if egress is not None:
                await egress.close()
        collected = await self._collect(verify.collect, verifier_dir) if verify.collect else []
        text = out.read_bytes()[-OUTPUT_LIMIT:].decode(errors="replace")
        return Verified(exit=code, timed_out=timed_out, output=text, dir=str(verifier_dir), collected=collected)

    # --- closing ---------------------------------------------------------------

    async def close(self) -> None:
        """Off the unit's path: the box goes, then its door; the agent's HOME is given back to you."""
        self.backend.later(self._remove())

    async def _remove(self) -> None:
        try:
            if self._created:
                with contextlib.suppress(DockerError):
                    await self.api.raw(self.calls, "remove", "DELETE", "/containers/{}", self.name, query={"force": "1"})
                await self._give_home_back()
            if self.sidecars is not None:  # up before the box, and so even when the box was never made
                with self.calls.timed("remove", "docker compose down (the task's other services)") as result, contextlib.suppress(DockerError):
                    await self.sidecars.down()
                    result[0] = "down"
            await self.door.close()
        finally:
            self.calls.write(self.home.parent / "docker-calls.tsv")

    async def _give_home_back(self) -> None:
        """What the image's user (often root) wrote in the mounted HOME, and a HOME lent to it, become yours again."""
        if not self.home.exists() or all(boxfiles.yours(p) for p in [self.home, *self.home.rglob("*")]):
            return
        await dockercli.arun(
            ["run", "--rm", "--user", "0", "--cap-drop", "ALL", "--cap-add", "CHOWN", "--cap-add", "DAC_READ_SEARCH",
             "--network", "none", "--log-driver", "none", *self.labels, "--volume", f"{self.home}:/home-to-give-back",
             self.backend.image, "chown", "-R", "-h", self.backend.user, "/home-to-give-back"], timeout=300, check=False,
            calls=self.calls, step="remove")
