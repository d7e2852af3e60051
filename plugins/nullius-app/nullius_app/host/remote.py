"""The program a run on a host runs there, on the host's own python3, with the standard library alone.

It comes in the snapshot (`~/.nullius/app/<id>/code/nullius_app/host/remote.py`)
and is started over SSH by `nullius host run` on the user's machine:

    python3 remote.py setup ID UV_VERSION   the snapshot's environment, once (a lock: two runs set up once):
                                            uv (on PATH, else its wheel from PyPI, its sha256 checked, into
                                            ~/.nullius/app/bin), a venv on this python3, the pinned requirements,
                                            the snapshot's code/ on its path; prints what it did and how long it took
    python3 remote.py launch ID RUN         stdin: {recipe, job, licences, env}, read whole and kept in memory;
                                            starts `nullius run --from-run ... --licences-stdin` detached, so that it
                                            outlives the connection, hands it the licences on its stdin and the key in
                                            its environment; prints {"run", "pid"}
    python3 remote.py mirror RUN            stdin: {"have": {path: [size, mtime_ns]}, "log": offset}; stdout: a tar
                                            stream, `.nullius-mirror.json` first (the run's state, the job's every
                                            entry, the launcher log's new lines), then each file that changed
    python3 remote.py cancel RUN            SIGINT to the run, as Ctrl-C gives it

A run's place is `~/.nullius/app/runs/<RUN>/`: recipe.json (no value in it),
run.json (its state), launcher.log (the run's output), jobs/<job>/.
"""

from __future__ import annotations

import fcntl
import hashlib
import io
import json
import os
import platform
import re
import shutil
import signal
import subprocess
import sys
import tarfile
import time
import urllib.request
import zipfile
from pathlib import Path

APP = Path.home() / ".nullius" / "app"
MIRROR_FILE = ".nullius-mirror.json"
LOG_CHUNK = 1 << 20  # at most this much of the launcher's log a mirror
ARCH = {"x86_64": "x86_64", "amd64": "x86_64", "aarch64": "aarch64", "arm64": "aarch64"}


def fail(message: str, code: int = 3) -> None:
    print(message, file=sys.stderr, flush=True)
    sys.exit(code)


# ---- setup -------------------------------------------------------------------------------------------------------

def _index() -> str:
    for name in ("UV_DEFAULT_INDEX", "UV_INDEX_URL", "PIP_INDEX_URL"):
        if os.environ.get(name):
            return os.environ[name].rstrip("/")
    return "https://pypi.org/simple"


def _uv_files(version: str) -> list[tuple[str, str, str]]:
    """(filename, url, sha256) of uv's wheels of that version on the index (its JSON API, else its HTML page)."""
    url = f"{_index()}/uv/"
    request = urllib.request.Request(url, headers={"Accept": "application/vnd.pypi.simple.v1+json, text/html;q=0.1"})
    with urllib.request.urlopen(request, timeout=120) as reply:
        kind, body = reply.headers.get("Content-Type", ""), reply.read()
    out = []
    if "json" in kind:
        for file in json.loads(body)["files"]:
            out.append((file["filename"], urllib.request.urljoin(url, file["url"]), (file.get("hashes") or {}).get("sha256", "")))
    else:
        for href, name in re.findall(r'href="([^"]+)"[^>]*>([^<]+)<', body.decode(errors="replace")):
            link, _, fragment = href.partition("#sha256=")
            out.append((name.strip(), urllib.request.urljoin(url, link), fragment))
    return [f for f in out if f[0].startswith(f"uv-{version}-") and f[0].endswith(".whl")]


def install_uv(version: str) -> Path:
    """uv's wheel for this machine from PyPI, its sha256 checked against the index's, its binary into ~/.nullius/app/bin."""
    arch = ARCH.get(platform.machine().lower())
    libc = "manylinux" if platform.libc_ver()[0] == "glibc" else "musllinux"
    if arch is None:
        fail(f"uv: no wheel is known for this machine's architecture ({platform.machine()}): install uv yourself")
    try:
        files = _uv_files(version)
    except OSError as exc:
        fail(f"uv is not here, and its index {_index()} cannot be reached: {exc} (install uv yourself, or give the host a way to PyPI)")
    wanted = [f for f in files if f"{libc}" in f[0] and f"_{arch}" in f[0] and f[2]]
    if not wanted:
        fail(f"uv=={version}: the index {_index()} has no {libc} {arch} wheel with a sha256")
    name, url, sha256 = wanted[0]
    with urllib.request.urlopen(url, timeout=600) as reply:
        data = reply.read()
    if hashlib.sha256(data).hexdigest() != sha256:
        fail(f"uv: {name} does not match the sha256 its index gives: refused")
    target = APP / "bin" / "uv"
    target.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(io.BytesIO(data)) as wheel:
        binary = wheel.read(f"uv-{version}.data/scripts/uv")
    part = target.with_suffix(".part")
    part.write_bytes(binary)
    part.chmod(0o755)
    part.replace(target)
    return target


def _step(argv: list[str], log: Path) -> None:
    with open(log, "ab") as out:
        out.write(("$ " + " ".join(argv) + "\n").encode())
        out.flush()
        done = subprocess.run(argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    if done.returncode != 0:
        fail(f"`{' '.join(argv[:3])} ...` failed ({done.returncode}) on this host; {log} ends:\n{log.read_text(errors='replace')[-1500:]}")


def setup(snapshot_id: str, uv_version: str) -> None:
    root = APP / snapshot_id
    venv, ready = root / ".venv", root / ".venv" / ".nullius-ready"
    if not (root / "snapshot.json").is_file():
        fail(f"no snapshot {snapshot_id} here")
    with open(APP / f"{snapshot_id}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # two runs of one snapshot set it up once
        if ready.is_file():
            print(json.dumps({"venv": "ready", **json.loads(ready.read_text())}))
            return
        started = time.monotonic()
        found = shutil.which("uv") or (str(APP / "bin" / "uv") if os.access(APP / "bin" / "uv", os.X_OK) else None)
        uv = Path(found) if found else install_uv(uv_version)
        uv_seconds = time.monotonic() - started
        log = root / "setup.log"
        shutil.rmtree(venv, ignore_errors=True)  # what a killed setup left
        _step([str(uv), "venv", "--python", sys.executable, str(venv)], log)
        _step([str(uv), "pip", "install", "--python", str(venv / "bin" / "python"), "-r", str(root / "requirements.txt"),
               "-c", str(root / "constraints.txt")], log)
        site = subprocess.run([str(venv / "bin" / "python"), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                              capture_output=True, text=True, check=True).stdout.strip()
        Path(site, "nullius-snapshot.pth").write_text(str(root / "code") + "\n")
        _step([str(venv / "bin" / "python"), "-m", "nullius_core", "--version"], log)
        facts = {"uv": "found" if found else "installed", "uv_path": str(uv), "uv_seconds": round(uv_seconds, 2),
                 "venv_seconds": round(time.monotonic() - started - uv_seconds, 2), "python": platform.python_version()}
        ready.write_text(json.dumps(facts))
        print(json.dumps({"venv": "made", **facts}))


# ---- launch ------------------------------------------------------------------------------------------------------

def _place(run: str) -> Path:
    if not re.match(r"^[A-Za-z0-9][A-Za-z0-9._-]*$", run):
        fail(f"not a run's name: {run!r}", 2)
    return APP / "runs" / run


def _write_state(place: Path, state: dict) -> None:
    part = place / "run.json.part"
    part.write_text(json.dumps(state))
    part.replace(place / "run.json")


def _run_env(root: Path, given: dict) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "NULLIUS_JOBS_DIR")}
    env["NULLIUS_CATALOGUE"] = str(root / "catalogue")
    env.update(given)
    return env


def launch(snapshot_id: str, run: str) -> None:
    message = json.loads(sys.stdin.buffer.read())
    root, place = APP / snapshot_id, _place(run)
    if not (root / ".venv" / ".nullius-ready").is_file():
        fail(f"snapshot {snapshot_id} has no environment here yet (setup first)")
    place.mkdir(mode=0o700, parents=True)
    (place / "jobs").mkdir()
    (place / "recipe.json").write_text(json.dumps(message["recipe"], indent=2))
    argv = [str(root / ".venv" / "bin" / "python"), "-m", "nullius_core", "run", "--from-run", str(place / "recipe.json"),
            "--job-name", message["job"], "--jobs-dir", str(place / "jobs"), "--licences-stdin"]
    said, told = os.pipe()
    first = os.fork()
    if first:
        os.close(told)
        os.waitpid(first, 0)
        pid = os.read(said, 64).decode().strip()
        if not pid:
            fail(f"the run did not start; {place / 'launcher.log'} ends:\n{(place / 'launcher.log').read_text(errors='replace')[-1500:]}")
        print(json.dumps({"run": run, "pid": int(pid), "place": str(place)}))
        return
    os.close(said)
    os.setsid()  # a session of its own: the connection's end is not its end
    if os.fork():
        os._exit(0)
    _supervise(root, place, argv, message, told)


def _supervise(root: Path, place: Path, argv: list[str], message: dict, told: int) -> None:
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    log = os.open(place / "launcher.log", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.dup2(log, 1)
    os.dup2(log, 2)
    code = 1
    try:
        env = _run_env(root, message.get("env") or {})
        proc = subprocess.Popen(argv, stdin=subprocess.PIPE, env=env, cwd=place)
        _write_state(place, {"state": "running", "pid": proc.pid, "supervisor": os.getpid(), "started": time.time(), "job": message["job"]})
        os.write(told, str(proc.pid).encode())
        os.close(told)
        assert proc.stdin is not None
        try:
            proc.stdin.write(json.dumps(message.get("licences") or {}).encode())
            proc.stdin.close()
        except BrokenPipeError:
            pass  # it ended first: its log says why
        message.clear()  # nothing of the values stays with the supervisor
        del env
        code = proc.wait()
    except BaseException:  # noqa: BLE001 - said in its log, whatever it was
        import traceback

        traceback.print_exc()
    finally:
        state = json.loads((place / "run.json").read_text()) if (place / "run.json").exists() else {"job": message.get("job")}
        _write_state(place, {**state, "state": "ended", "code": code, "ended": time.time()})
        os._exit(0)


# ---- mirror ------------------------------------------------------------------------------------------------------

def _state(place: Path) -> dict:
    try:
        state = json.loads((place / "run.json").read_text())
    except (OSError, ValueError):
        return {"state": "unknown"}
    if state.get("state") == "running" and not _alive(state.get("pid"), b"nullius_core"):
        # the run's process is gone; its supervisor, while alive, is about to record how it ended: still running
        if not _alive(state.get("supervisor"), b"python"):
            state = json.loads((place / "run.json").read_text())  # it may have ended since
            if state.get("state") == "running":
                state = {**state, "state": "lost", "why": "its process is gone and it recorded no end (the host restarted, or it was killed)"}
    return state


def _alive(pid: object, program: bytes) -> bool:
    """Whether `pid` is a live process running `program` (a zombie's command line is empty: not alive)."""
    try:
        os.kill(int(pid), 0)  # type: ignore[arg-type]
        return program in Path(f"/proc/{pid}/cmdline").read_bytes()
    except (OSError, ValueError, TypeError):
        return False


def _listing(job: Path) -> dict[str, list]:
    """Every entry of the job: [kind, size, mtime_ns, mode, link target]."""
    out: dict[str, list] = {}
    if not job.is_dir():
        return out
    for folder, dirs, files in os.walk(job):
        for name in dirs + files:
            path = Path(folder) / name
            rel = path.relative_to(job).as_posix()
            try:
                st = path.lstat()
            except OSError:
                continue
            if path.is_symlink():
                out[rel] = ["link", 0, st.st_mtime_ns, 0o777, os.readlink(path)]
            elif path.is_dir():
                out[rel] = ["dir", 0, st.st_mtime_ns, st.st_mode & 0o7777, None]
            elif path.is_file():
                out[rel] = ["file", st.st_size, st.st_mtime_ns, st.st_mode & 0o7777, None]
    return out


def mirror(run: str) -> None:
    asked = json.loads(sys.stdin.buffer.read() or b"{}")
    have, offset = asked.get("have") or {}, int(asked.get("log") or 0)
    place = _place(run)
    state = _state(place)  # before the files: an ended run's files are all there
    job = place / "jobs" / str(state.get("job") or "")
    listing = _listing(job) if state.get("job") else {}
    log, log_size = b"", 0
    if (place / "launcher.log").exists():
        with open(place / "launcher.log", "rb") as handle:
            handle.seek(offset)
            log = handle.read(LOG_CHUNK)
        log_size = offset + len(log)
    changed = [p for p, e in listing.items() if e[0] == "file" and have.get(p) != [e[1], e[2]]]
    head = json.dumps({"state": state, "listing": listing, "log": log.decode(errors="replace"), "log_offset": log_size}).encode()
    with tarfile.open(fileobj=sys.stdout.buffer, mode="w|") as archive:
        info = tarfile.TarInfo(MIRROR_FILE)
        info.size = len(head)
        archive.addfile(info, io.BytesIO(head))
        for rel in changed:
            try:
                data = (job / rel).read_bytes()  # read whole, then sent: what is still being written is sent again next time
            except OSError:
                continue
            info = tarfile.TarInfo(rel)
            info.size, info.mode, info.mtime = len(data), listing[rel][3], listing[rel][2] // 10**9
            archive.addfile(info, io.BytesIO(data))


def cancel(run: str) -> None:
    place = _place(run)
    state = _state(place)
    if state.get("state") != "running":
        print(json.dumps({"sent": False, "state": state.get("state")}))
        return
    os.kill(int(state["pid"]), signal.SIGINT)
    print(json.dumps({"sent": True, "pid": state["pid"]}))


def main() -> None:
    args = sys.argv[1:]
    commands = {"setup": (setup, 2), "launch": (launch, 2), "mirror": (mirror, 1), "cancel": (cancel, 1)}
    if not args or args[0] not in commands or len(args) - 1 != commands[args[0]][1]:
        fail("usage: remote.py setup ID UV_VERSION | launch ID RUN | mirror RUN | cancel RUN", 2)
    commands[args[0]][0](*args[1:])


if __name__ == "__main__":
    main()
