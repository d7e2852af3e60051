"""A unit's box: its task's own image, running for the whole unit, with the agent added and the check run inside.

    door     the unit's network namespace, a loopback and nothing else (door.py): the
             relay and the licence servers for an agent's unit, egress:61128 for a check
             with verify.network
    box      the task's image as its own user: default capabilities, no new privileges,
             `--init` and `sleep infinity` keeping it up, --network container:<door>
             (none without a door); the agent joins it with `docker exec`
    egress   egress.py, for the check alone, when verify.network is true: on the default
             bridge, listening on the door's egress socket

The check: the agent's processes stopped (reaper.py, from a helper sharing
the box's process namespace: the image may have no `kill`), the check's
files put in with `docker cp`, its command run with `docker exec` in the
working directory, its `collect` folder copied out. Removal happens off the
unit's path, after the room's own.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import tarfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs

from nullius_backend_docker import boxfiles, dockercli
from nullius_backend_docker.dockercli import DockerError
from nullius_backend_docker.compose import Sidecars
from nullius_backend_docker.door import EGRESS_PORT, LicenceServer
from nullius_backend_docker.process import LINE_LIMIT, ExecProcess
from nullius_core.contracts.own_image import Artifact, Healthcheck, NotReady, NotRun, OwnUnit, Steps, Verified, Verify, VerifyProblem
from nullius_core.processes import start_process

if TYPE_CHECKING:
    from nullius_backend_docker.backend import DockerBackend

CONTAINER_FILES = Path(__file__).resolve().parent / "container"
DOCKER_INIT = "/usr/sbin/docker-init"
OUTPUT_LIMIT = 256 * 1024  # the end of the check's output that `score` is sent; the whole is test-stdout.txt


class DockerBox:
    def __init__(self, backend: DockerBackend, unit: str, tag: str, own: OwnUnit, workdir: str, image_env: list[str], home: Path):
        self.backend = backend
        self.unit = unit
        self.tag = tag
        self.own = own
        self.workdir = workdir
        self.home = home
        self.name = f"{backend.prefix}-{unit}-box"
        self.labels = backend.labels(unit)
        self.door = backend.new_door(unit, home.parent / "door.log")  # started by the agent's room, or for a check's way out
        self.path = next((e.split("=", 1)[1] for e in image_env if e.startswith("PATH=")), "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")
        self._started = False
        self.sidecars: Sidecars | None = None  # the task's other services (compose.py), reached through the door
        self._env = dict(own.env)
        self._changes: str | None = None
        self._points: list[str] = []  # where the agent's mounts are: their folders are docker's change, not the task's
        self._lock = asyncio.Lock()

    # --- starting ---------------------------------------------------------------

    async def start(self, volumes: Sequence[str] = ()) -> None:
        """The image, running until the unit ends; `volumes` as `docker run` takes them (the agent's, when it has one).

        In the door's namespace when an agent's room started the door or the
        check has a way out (egress); a control's box without one has no
        network at all (no door started and removed).
        """
        if (self.own.verify is not None and self.own.verify.network) or self.sidecars is not None:
            await self.door.start()
        async with self._lock:
            if self._started:
                return
            limits = []
            if self.own.image.memory_mb:
                limits += ["--memory", f"{self.own.image.memory_mb}m"]
            if self.own.image.cpus:
                limits += ["--cpus", f"{self.own.image.cpus:g}"]
            argv = ["run", "-d", "--init", "--name", self.name, *self.labels, "--network", self.door.network if self.door.started else "none",
                    "--security-opt", "no-new-privileges", "--log-driver", "none", "--workdir", self.workdir, *limits]
            for volume in volumes:
                argv += ["--volume", volume]
                self._points.append(volume.split(":")[1])
            flags, cli_env = dockercli.by_name(self._env)  # the task's variables, by name: their values stay off the argument list
            await dockercli.arun([*argv, *flags, *self._keep_alive()], env=cli_env, timeout=120)
            self._started = True
            if self.own.healthcheck is not None:
                await self.healthy(self.own.healthcheck)

    def _keep_alive(self) -> list[str]:
        """`sleep infinity` keeps the box up; with `dirs`, a shell makes them first and becomes it (no docker call more)."""
        if not self.own.dirs:
            return ["--entrypoint", "sleep", self.tag, "infinity"]
        return ["--entrypoint", "sh", self.tag, "-c", 'mkdir -p "$@" && chmod 777 "$@"; exec sleep infinity', "sh", *self.own.dirs]

    async def healthy(self, check: Healthcheck) -> None:
        """Docker's HEALTHCHECK rules: tries until one passes; `retries` failures in a row after the start period fail it."""
        began = asyncio.get_running_loop().time()
        failures = 0
        while True:
            code, err, out = await dockercli.arun_bytes(["exec", "-w", self.workdir, self.name, *check.run], check.timeout)
            if code == 0:
                return
            starting = asyncio.get_running_loop().time() - began < check.start_period
            failures = 0 if starting else failures + 1
            if failures >= check.retries:
                said = (out.decode(errors="replace") + err).strip()[-300:]
                raise NotReady(f"the task's healthcheck failed {failures} times in a row (exit {code}): {said or 'it said nothing'}")
            await asyncio.sleep(check.start_interval if starting else check.interval)  # the task's own pace, as Docker's

    async def start_services(self) -> None:
        """The task's other services, up before the door starts: each port they declare served on the door under the service's name."""
        if self.own.compose is None:
            return
        labels = dict(item.split("=", 1) for item in self.labels[1::2])  # ["--label", "k=v", ...]
        self.sidecars = Sidecars(self.name.lower(), (self.own.source / self.own.compose).resolve(), labels, self.backend.image,
                                 self.home.parent / "compose.log")
        for service in await self.sidecars.up():
            for port in service.ports:
                self.door.licence(LicenceServer(alias=service.name, port=port, target=(service.address, port)))
        self._env = {**self.sidecars.main_env, **self.own.env}

    async def exec_agent(self, argv: Sequence[str], env: Mapping[str, str], stderr: Path) -> ExecProcess:
        await self.check_runtime(argv[0])
        flags, cli_env = dockercli.by_name(env)
        return await ExecProcess.start(self, ["exec", "-i", "-w", self.workdir, *flags, self.name, *argv], cli_env, stderr, list(argv))

    async def check_runtime(self, runtime: str) -> None:
        """The agent's runtime, tried once in the image: one that cannot start is the unit's setup error, saying why."""
        code, err, out = await dockercli.arun_bytes(["exec", self.name, runtime, "--version"], 60)
        if code == 0:
            return
        kind = "node" if "node" in Path(runtime).name else "python" if "python" in Path(runtime).name else Path(runtime).name
        if await self._musl():
            raise NotRun(f"not run: the agent's runtime ({kind}) needs glibc; this task's image is musl-based")
        raise NotRun(f"not run: the agent's runtime ({kind}, {runtime}) cannot start in this task's image: {(out.decode(errors='replace') + err).strip()[-300:]}")

    async def _musl(self) -> bool:
        for folder in ("/lib", "/usr/lib"):
            code, _, data = await dockercli.arun_bytes(["cp", f"{self.name}:{folder}", "-"], 60)
            if code == 0:
                with contextlib.suppress(tarfile.TarError), tarfile.open(fileobj=io.BytesIO(data)) as tar:
                    if any("ld-musl" in m.name for m in tar.getmembers()):
                        return True
        return False

    # --- the oracle, the changes, the check ---------------------------------------------------------------

    async def solve(self, steps: Steps, out: Path) -> int | None:
        await self.start()
        await self._put(steps)
        if steps.run is None:
            return 0
        code, _ = await self._run(steps.run, steps.seconds, out, {})
        return code

    async def changes(self) -> str:
        """What the agent (or the oracle) changed, taken once, before the check's files go in."""
        if not self._started:
            return ""
        if self._changes is None:
            lines = boxfiles.without_ours((await dockercli.arun(["diff", self.name], timeout=120)).splitlines(), [DOCKER_INIT, *self._points])
            self._changes = "".join(line + "\n" for line in lines)
        return self._changes

    async def collect_artifacts(self, artifacts: list[Artifact], folder: Path) -> list[dict[str, Any]]:
        await self.start()
        folder.mkdir(parents=True, exist_ok=True)
        entries = []
        for artifact in artifacts:
            container = self.name
            if artifact.service not in (None, "main"):  # one of the task's other services
                service = self.sidecars.services.get(artifact.service) if self.sidecars else None
                container = service.container if service is not None else ""
            code, _, data = await dockercli.arun_bytes(["cp", f"{container}:{artifact.source}", "-"], 300) if container else (1, "", b"")
            kind, status = ("directory" if not Path(artifact.source).suffix else "file"), "failed"
            if code == 0:
                kind, status = await asyncio.to_thread(boxfiles.extract_artifact, data, folder / artifact.destination, artifact.exclude)
            entries.append({"source": artifact.source, "destination": artifact.destination, "type": kind, "status": status,
                            "service": artifact.service, "exclude": list(artifact.exclude) if kind == "directory" else []})
        return entries

    async def verify(self, verify: Verify, verifier_dir: Path) -> Verified:
        await self.start()
        verifier_dir.mkdir(parents=True, exist_ok=True)
        # `docker diff` is slow on some daemons (0.4 s here): taken while the processes are stopped, before the files go in
        changes = asyncio.ensure_future(self.changes())
        try:
            await self._stop_the_agent(verify, verifier_dir)
        finally:
            await changes
        if verify.clear:  # as root: what the agent planted where the check's files go (its own /tests, a reward file) never counts
            await dockercli.arun(["exec", "--user", "0", self.name, "rm", "-rf", "--", *verify.clear], timeout=120)
        await self._put(verify)
        env: dict[str, str] = {}
        egress = None
        if verify.network:
            egress = await self._start_egress(verifier_dir / "egress.log", verify.allow)
            proxy = f"http://egress:{EGRESS_PORT}"
            # the box's own loopback and the task's services are reached directly, never through the proxy (which refuses them)
            direct = ",".join(["localhost", "127.0.0.1", "::1", *(self.sidecars.services if self.sidecars else ())])
            env = {"HTTP_PROXY": proxy, "HTTPS_PROXY": proxy, "http_proxy": proxy, "https_proxy": proxy, "NO_PROXY": direct, "no_proxy": direct}
        try:
            out = verifier_dir / "test-stdout.txt"
            code, timed_out = (0, False)
            if verify.run is not None:
                code, timed_out = await self._run(verify.run, verify.seconds, out, env)
            else:
                out.write_text("")
        finally:
            if egress is not None:
                await _stop_egress(egress)
        collected = await self._collect(verify.collect, verifier_dir) if verify.collect else []
        text = out.read_bytes()[-OUTPUT_LIMIT:].decode(errors="replace")
        return Verified(exit=code, timed_out=timed_out, output=text, dir=str(verifier_dir), collected=collected)

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
        """More than init and the keep-alive in the box (`docker top`: no helper container started to see it)."""
        listing = await dockercli.arun(["top", self.name, "-eo", "pid,ppid,args"], timeout=60)
        rows = [line.split(None, 2) for line in listing.splitlines()[1:] if line.strip()]
        init = [r for r in rows if len(r) == 3 and r[2].startswith("/sbin/docker-init")]
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
        return json.loads(await dockercli.arun(run, timeout=60))

    async def _put(self, steps: Steps) -> None:
        """The files of `copy` and `write` as one archive, extracted at the box's root by `docker cp` ('.': the working directory)."""
        if not steps.copy and not steps.write:
            return
        steps = attrs.evolve(steps, copy={source: self.workdir if inside == "." else inside for source, inside in steps.copy.items()})
        data = await asyncio.to_thread(boxfiles.archive, self.own.source, steps)
        code, err, _ = await dockercli.arun_bytes(["cp", "-", f"{self.name}:/"], 300, data)
        if code != 0:
            raise VerifyProblem(f"the check's files could not be put in the box: {err.strip()[-300:]}")

    async def _run(self, argv: Sequence[str], seconds: float, out_path: Path, env: Mapping[str, str]) -> tuple[int | None, bool]:
        """`argv` in the working directory; its stdout and stderr to `out_path`. (exit, timed out): a timed-out one is stopped."""
        flags, cli_env = dockercli.by_name(env)
        with open(out_path, "wb") as out:
            proc = await start_process(
                dockercli.docker_binary(), "exec", "-w", self.workdir, *flags, self.name, *argv,
                stdin=asyncio.subprocess.DEVNULL, stdout=out, stderr=asyncio.subprocess.STDOUT, env=cli_env,
            )
            try:
                return await asyncio.wait_for(proc.wait(), seconds), False
            except asyncio.TimeoutError:
                # everything but init and the keep-alive: the command's own children too (the check is over)
                await self.reap("all")
                try:
                    await asyncio.wait_for(proc.wait(), 10)
                except asyncio.TimeoutError:
                    proc.kill()
                    await proc.wait()
                return None, True

    async def _collect(self, folder: str, verifier_dir: Path) -> list[str]:
        code, err, data = await dockercli.arun_bytes(["cp", f"{self.name}:{folder}", "-"], 300)
        if code != 0:
            (verifier_dir / "collect.txt").write_text(f"{folder} could not be collected: {err.strip()[-300:]}\n")
            return []
        return await asyncio.to_thread(boxfiles.extract, data, verifier_dir)

    async def _start_egress(self, log: Path, allow: list[str] | None) -> asyncio.subprocess.Process:
        """The check's proxy, on the default bridge, listening on the door's egress socket; ready when it says so."""
        log.touch()
        name = f"{self.name}-egress"
        proc = await start_process(
            dockercli.docker_binary(), "run", "-i", "--rm", "--init", "--name", name, *self.labels, "--network", "bridge",
            "--user", self.backend.user, "--cap-drop", "ALL", "--security-opt", "no-new-privileges", "--log-driver", "none",
            "--read-only", *(["-e", "EGRESS_ALLOW=" + ",".join(allow)] if allow is not None else []),
            "--volume", f"{CONTAINER_FILES}:/opt/nullius-door:ro", "--volume", f"{log.parent}:/log",
            "--volume", f"{self.door.folder}:/sockets", self.backend.image,
            "python3", "/opt/nullius-door/egress.py", "unix:/sockets/egress.sock", f"/log/{log.name}",
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL,
            env=dockercli.client_env(None), limit=LINE_LIMIT,
        )
        assert proc.stdout is not None
        try:
            line = await asyncio.wait_for(proc.stdout.readline(), 60)
            if not line.startswith(b"listening"):
                raise DockerError(f"the check's egress proxy did not start: {line[:200]!r}")
        except BaseException:
            await _stop_egress(proc)
            raise
        return proc

    # --- closing ---------------------------------------------------------------

    async def close(self) -> None:
        """Off the unit's path: the box goes, then its door; the agent's HOME is given back to you."""
        self.backend.later(self._remove())

    async def _remove(self) -> None:
        if self._started:
            await dockercli.arun(["rm", "-f", self.name], timeout=60, check=False)
            await self._give_home_back()
        if self.sidecars is not None:
            with contextlib.suppress(DockerError):
                await self.sidecars.down()
        await self.door.close()

    async def _give_home_back(self) -> None:
        """What the image's user (often root) wrote in the mounted HOME becomes yours again."""
        if not self.home.exists() or all(boxfiles.yours(p) for p in [self.home, *self.home.rglob("*")]):
            return
        await dockercli.arun(
            ["run", "--rm", "--user", "0", "--cap-drop", "ALL", "--cap-add", "CHOWN", "--cap-add", "DAC_READ_SEARCH",
             "--network", "none", "--log-driver", "none", *self.labels, "--volume", f"{self.home}:/home-to-give-back",
             self.backend.image, "chown", "-R", "-h", self.backend.user, "/home-to-give-back"], timeout=300, check=False)


async def _stop_egress(proc: asyncio.subprocess.Process) -> None:
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
