"""Process lifetime: every process a run starts carries the run's marker, and none outlives the run.

A run (`Lifetime.begin_run`, in `Engine.run`) starts a watcher (`watcher.py`),
a small process of its own that notices the run's end (a pipe's EOF: a
SIGKILLed run cannot clean up after itself) and then ends every process of
the run. Why a watcher: `PR_SET_PDEATHSIG` fires when the thread that forked
exits (asyncio's and `to_thread`'s workers) and reaches direct children only;
a subreaper keeps orphans only while the run lives; a cgroup per run needs
delegation, often root.

`start_process()` is how a process of the run starts (drivers, agents,
capabilities, a backend's docker clients): asyncio's
`create_subprocess_exec`, in a session and process group of its own,
carrying `NULLIUS_RUN=<run token>/<n>` in its environment, its group told
to the watcher. `end_process()` ends what one launch started: its group,
what left the group still carrying its marker, and their descendants.

`in_use()` is `--resume`'s check: no process of an earlier run of the job
may still be alive, nor anything working or holding a file inside the job's
folders.
"""

from __future__ import annotations

import asyncio
import contextvars
import hashlib
import itertools
import json
import os
import secrets
import signal
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs

from nullius_core.fsutil import append_line, read_json_lines
from nullius_core.jobs.records import iso, utcnow
from nullius_core.logs import get_logger
from nullius_core.processes import proctable
from nullius_core.secret_names import without_secrets

MARKER = proctable.MARKER
RUNS = Path(".work") / "runs.jsonl"  # in the job: each run of it (pid, watcher, marker), and what a watcher swept
GRACE = 3.0  # seconds between TERM and KILL at a launch's end
WATCHER_WAIT = 30.0  # seconds a run's end waits for its watcher's sweep (and --resume for an earlier run's)

log = get_logger("nullius.run")


def job_token(job_dir: Path) -> str:
    """What every run of one job has in its marker: a digest of the job's folder."""
    return "j" + hashlib.sha256(str(job_dir.resolve()).encode()).hexdigest()[:16]


def now_ticks() -> int:
    """Now, in the clock ticks after boot that /proc's start times count."""
    with open("/proc/uptime") as handle:
        return int(float(handle.read().split()[0]) * os.sysconf("SC_CLK_TCK"))


@attrs.define(eq=False)
class Lifetime:
    """One run's processes: the markers they carry, the watcher that ends them with the run."""

    token: str
    begin: int  # clock ticks after boot: no process older than this is the run's
    watcher: subprocess.Popen[bytes] | None = None
    _pipe: int | None = None
    _count: Any = attrs.field(factory=lambda: itertools.count(1))
    _launches: dict[int, tuple[str, int]] = attrs.field(factory=dict)  # pid -> (its marker, its start)
    _context: Any = None

    @classmethod
    def begin_run(cls, job_dir: Path) -> Lifetime:
        """A run's lifetime, its watcher started: use it as a context manager around the whole run."""
        if not os.path.exists("/proc/self/stat"):
            from nullius_core.contracts.refused import RunRefused  # here: a refusal is rare, the runners import this module

            raise RunRefused("a run needs /proc (Linux) to end every process it starts with it; this machine has none")
        life = cls(token=f"{job_token(job_dir)}.{secrets.token_hex(4)}", begin=now_ticks() - 1)
        read, write = os.pipe()  # neither end is inherited by anything else the run starts
        try:
            life.watcher = subprocess.Popen(
                [sys.executable, "-m", "nullius_core.processes.watcher", str(os.getpid()), life.token, str(life.begin)],
                stdin=read, stdout=subprocess.DEVNULL, cwd="/", env=without_secrets(os.environ), start_new_session=True,
            )
        except OSError:
            os.close(write)
            raise
        finally:
            os.close(read)
        life._pipe = write
        return life

    def __enter__(self) -> Lifetime:
        self._context = _CURRENT.set(self)
        return self

    def __exit__(self, *exc: object) -> None:
        _CURRENT.reset(self._context)
        if exc[0] is None:  # it ended well: what it asked to run after a kill (after_kill) is not needed
            self._tell({"clean": True})
        self.end()

    def marker(self) -> str:
        return f"{self.token}/{next(self._count)}"

    def launched(self, pid: int, marker: str, floor: int) -> None:
        """`floor`: a time before the launch, for one already gone (and reaped) before its start could be read."""
        start = proctable.start_of(pid) or floor
        self._launches[pid] = (marker, start)
        self._tell({"group": pid, "start": start})

    def identity(self, pid: int) -> tuple[str | None, int]:
        """A launch's marker and its start time; no marker for a process not started here."""
        return self._launches.get(pid, (None, self.begin))

    def scratch(self, folder: Path) -> None:
        """A scratch folder of the run's (a driver's, a unit's sockets) outside the job: removed by the watcher if the run
        is killed before it removes it itself. Only a folder in the system's temporary folder named `nullius-*`."""
        self._tell({"scratch": str(folder)})

    def after_kill(self, argv: list[str]) -> None:
        """A command the watcher runs once the run is gone without ending well (a SIGKILL, a crash), after its sweep: for
        what lives outside the run's processes, such as the docker daemon's containers (the backend's own sweep)."""
        self._tell({"after_kill": [str(part) for part in argv]})

    def forget(self, pid: int) -> None:
        self._launches.pop(pid, None)

    def record(self, job_dir: Path) -> None:
        """Say in the job who runs it, for a later --resume; the watcher says there what it swept."""
        path = job_dir / RUNS
        path.parent.mkdir(parents=True, exist_ok=True)
        entry: dict[str, Any] = {"pid": os.getpid(), "pid_start": proctable.start_of(os.getpid()), "marker": self.token, "at": iso(utcnow())}
        if self.watcher is not None:
            entry.update(watcher=self.watcher.pid, watcher_start=proctable.start_of(self.watcher.pid))
        append_line(path, entry)
        self._tell({"record": str(path)})

    def end(self, wait: float = WATCHER_WAIT) -> None:
        """Close the watcher's pipe and wait for its sweep: what the run left is gone when this returns."""
        if self._pipe is not None:
            os.close(self._pipe)
            self._pipe = None
        if self.watcher is None:
            return
        try:
            code = self.watcher.wait(wait)
        except subprocess.TimeoutExpired:
            log.warning("the run's watcher has not ended its sweep yet; it goes on alone", pid=self.watcher.pid, seconds=wait)
            return
        if code != 0:
            log.warning("the run's watcher failed: what the run left may still run", status=code)

    def _tell(self, message: dict[str, Any]) -> None:
        if self._pipe is None:
            return
        try:
            os.write(self._pipe, (json.dumps(message) + "\n").encode())
        except OSError as exc:  # the watcher is gone: the run goes on, said once
            log.warning("the run's watcher is gone: a kill of this run would leave its processes running", error=str(exc))
            os.close(self._pipe)
            self._pipe = None


# Outside a run (relay serve, a plugin's tests): markers all the same, no watcher.
_PROCESS = Lifetime(token=f"p{secrets.token_hex(4)}", begin=0)
_CURRENT: contextvars.ContextVar[Lifetime] = contextvars.ContextVar("nullius_lifetime", default=_PROCESS)


def current() -> Lifetime:
    return _CURRENT.get()


async def start_process(*argv: str, env: Mapping[str, str] | None = None, **options: Any) -> asyncio.subprocess.Process:
    """`asyncio.create_subprocess_exec` for a process of the run: its own session, the run's marker, its group watched.

    `env` is the whole environment (None: this process's); `options` are
    create_subprocess_exec's (stdin, stdout, stderr, cwd, limit, ...).
    """
    life = current()
    marker = life.marker()
    options.pop("start_new_session", None)
    full = {**(os.environ if env is None else env), MARKER: marker}
    floor = now_ticks() - 1
    proc = await asyncio.create_subprocess_exec(*argv, env=full, start_new_session=True, **options)
    life.launched(proc.pid, marker, floor)
    return proc


def _members(table: proctable.Table, pid: int, marker: str | None, start: int) -> set[int]:
    """One launch's processes: what carries its marker, its group (but what carries another's), and their descendants.

    Another's marker in the group means the group's id was reused after the
    launch's group emptied: that group is another launch's, not this one's.
    """
    roots = set()
    for proc in table.values():
        if proc.start < start or proc.dead:
            continue
        carried = proctable.environ_value(proc.pid, MARKER)
        if (marker is not None and carried == marker) or (proc.pgid == pid and carried in (None, marker)):
            roots.add(proc.pid)
    return proctable.closure(table, roots)


def _groups(proc: asyncio.subprocess.Process, marker: str | None, start: int, table: proctable.Table) -> tuple[int, ...]:
    if marker is None:
        return ()
    return (proc.pid,) if proctable.held_group(proc.pid, start, lambda pid: proctable.environ_value(pid, MARKER) == marker, table) else ()


def kill_process(proc: asyncio.subprocess.Process, table: proctable.Table | None = None) -> list[str]:
    """Kill at once every process of the launch (frozen first, so none starts another); their labels.

    It blocks for a few ms (/proc read, looked at again): from a loop, call it through `asyncio.to_thread`.
    """
    marker, start = current().identity(proc.pid)
    table = proctable.snapshot() if table is None else table
    return proctable.freeze_and_kill(lambda t: _members(t, proc.pid, marker, start), table, _groups(proc, marker, start, table))


async def end_process(proc: asyncio.subprocess.Process, grace: float = GRACE) -> list[str]:
    """Close its stdin, TERM every process of the launch, KILL what is left after `grace` s; name what had to be killed."""
    life = current()
    marker, start = life.identity(proc.pid)
    if proc.stdin is not None and not proc.stdin.is_closing():
        proc.stdin.close()
    table = proctable.snapshot()
    members = _members(table, proc.pid, marker, start)
    proctable.signal_groups(_groups(proc, marker, start, table), signal.SIGTERM)
    proctable.signal_each(members, signal.SIGTERM)  # those that left the group too
    loop = asyncio.get_running_loop()
    deadline = loop.time() + grace
    pause = 0.005
    while members and loop.time() < deadline:
        await asyncio.sleep(pause)
        pause = min(pause * 2, 0.05)
        table = proctable.snapshot()
        members = _members(table, proc.pid, marker, start)
    # it looks again until sure (a listing of /proc can miss a process for a moment): off the loop, which the relay shares
    killed = await asyncio.to_thread(kill_process, proc, table)
    pids = [int(label.split()[0]) for label in killed]
    deadline = loop.time() + 5  # the killed gone (a zombie at most) before the unit goes on
    while pids and not proctable.gone(pids) and loop.time() < deadline:
        await asyncio.sleep(0.01)
    try:
        await asyncio.wait_for(proc.wait(), 5)
    except asyncio.TimeoutError:
        pass
    life.forget(proc.pid)
    return killed


def in_use(job_dir: Path, wait: float = WATCHER_WAIT, folders: bool = True) -> str | None:
    """Why the job cannot be resumed yet (its earlier run's processes, named), or None.

    An earlier run still going refuses at once. A killed one's watcher gets
    `wait` s to finish its sweep; then (with `folders`) any process carrying
    the job's marker, or working or holding a file inside one of the job's
    folders, refuses. A run asks twice: without `folders` before it starts
    anything, and with them once its backend has removed what it knows the
    killed run left (a docker backend's containers work in the job's folders).
    """
    runs = [r for r in read_json_lines(job_dir / RUNS) if isinstance(r.get("pid"), int)]
    for run in runs:
        if run.get("pid_start") is not None and proctable.alive(run["pid"], run["pid_start"]):
            return f"{job_dir} is being run by pid {run['pid']}: let it finish, or end it, then resume"
    deadline = time.monotonic() + wait
    for run in runs:
        while run.get("watcher_start") is not None and proctable.alive(run["watcher"], run["watcher_start"]) and time.monotonic() < deadline:
            time.sleep(0.05)
    users = _users(job_dir) if folders else []
    if not users:
        return None
    pids = " ".join(u.split()[0] for u in users)
    return f"{job_dir} is still in use: {', '.join(users)}; end them (kill {pids}) and resume again"


def _users(job_dir: Path) -> list[str]:
    token = job_token(job_dir) + "."
    root = job_dir.resolve()

    def inside(path: Path | None, depth: int) -> str | None:  # in a folder of the job (a trial's, .work), not at its top
        if path is None or not path.is_relative_to(root) or len(path.relative_to(root).parts) < depth:
            return None
        return str(path.relative_to(root))

    found = []
    for proc in proctable.snapshot().values():
        if proc.dead or proc.pid == os.getpid():
            continue
        why = []
        if (proctable.environ_value(proc.pid, MARKER) or "").startswith(token):
            why.append(f"carries the job's {MARKER}")
        where = inside(proctable.working_folder(proc.pid), 1)  # a folder of the job, or deeper
        if where:
            why.append(f"works in {where}")
        held = next((w for w in (inside(f, 2) for f in proctable.open_files(proc.pid)) if w), None)  # a file in one
        if held:
            why.append(f"has {held} open")
        if why:
            found.append(f"{proc.label()} ({', '.join(why)})")
    return found
