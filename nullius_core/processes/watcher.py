"""The run's watcher: a small process that ends every process of the run once the run is gone, however it went.

`python -m nullius_core.processes.watcher RUN_PID TOKEN BEGIN`, started by the
run (`lifetime.Lifetime.begin_run`) in a session of its own, its stdin a pipe
whose other end only the run holds. A SIGKILLed run cannot clean up after
itself; the pipe's end (EOF) is how its death is noticed, and a run that
ends well closes the pipe too. Then every process of the run is stopped,
then killed:

- every process in a group the run announced (`{"group": PGID, "start":
  TICKS}` lines), the group also signalled whole while its id is surely
  the run's (its leader, or a member carrying the marker, still there);
- every process whose environment carries the run's marker
  (`NULLIUS_RUN=TOKEN/...`, set on each launch);
- every process seen in the run's tree while it lived (looked at every
  `LOOK` seconds), though its parent has died since;
- and every descendant of those, started since the run began (`BEGIN`, in
  clock ticks after boot: an older process is never the run's).

Then, unless the run said it ended well, each command it asked for
(`{"after_kill": ARGV}`: a backend's sweep of what lives outside the run's
processes, the docker daemon's containers) is run once, bounded.

What escapes: a process that leaves the run's tree and its groups and
drops the marker from its environment, all before the next look. A listing
of /proc can miss a process for a moment; `freeze_and_kill` looks again.
"""

from __future__ import annotations

import json
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import attrs

from nullius_core.fsutil import append_line
from nullius_core.processes.proctable import MARKER, Table, closure, environ_value, freeze_and_kill, gone, held_group, snapshot

LOOK = 0.5  # seconds between looks at the run's tree while it lives
GONE_WAIT = 5.0  # seconds the killed get to be gone before the watcher ends
AFTER_SECONDS = 120  # an after_kill command's bound (a backend's sweep of its containers)


@attrs.define
class Watch:
    run_pid: int
    prefix: str  # "TOKEN/": how every launch's marker (NULLIUS_RUN) starts
    begin: int
    me: int = attrs.field(factory=os.getpid)
    groups: dict[int, int] = attrs.field(factory=dict)  # pgid -> its leader's start time
    seen: dict[int, int] = attrs.field(factory=dict)  # pid -> start time
    record: Path | None = None
    scratch: set[Path] = attrs.field(factory=set)  # folders the run made outside its job, gone with it
    after_kill: list[list[str]] = attrs.field(factory=list)  # commands the run asked for should it die without ending well
    clean: bool = False  # the run said it ended well

    def hear(self, message: dict[str, object]) -> None:
        if isinstance(message.get("group"), int) and isinstance(message.get("start"), int):
            self.groups[message["group"]] = message["start"]  # type: ignore[index]
        if isinstance(message.get("record"), str):
            self.record = Path(message["record"])  # type: ignore[arg-type]
        if isinstance(message.get("scratch"), str) and is_scratch(Path(message["scratch"])):  # type: ignore[arg-type]
            self.scratch.add(Path(message["scratch"]))  # type: ignore[arg-type]
        command = message.get("after_kill")
        if isinstance(command, list) and command and all(isinstance(part, str) for part in command):
            self.after_kill.append(command)
        if message.get("clean") is True:
            self.clean = True

    def members(self, table: Table, environ: bool) -> set[int]:
        """The run's processes in `table`; with `environ`, those carrying its marker too (a read per process).

        A process in an announced group that carries another run's marker is
        not the run's: the group's id was reused after the run's group emptied.
        """
        young = {p.pid for p in table.values() if p.start >= self.begin and not p.dead}
        roots = {self.run_pid} | {pid for pid, start in self.seen.items() if pid in young and table[pid].start == start}
        for pid in young:
            if table[pid].pgid in self.groups or environ:
                carried = environ_value(pid, MARKER)
                if (carried is not None and carried.startswith(self.prefix)) or (carried is None and table[pid].pgid in self.groups):
                    roots.add(pid)
        return {pid for pid in closure(table, roots) if pid in young and pid not in (self.me, self.run_pid)}

    def ours(self, pid: int) -> bool:
        marker = environ_value(pid, MARKER)
        return marker is not None and marker.startswith(self.prefix)

    def look(self) -> None:
        table = snapshot()
        self.seen = {pid: table[pid].start for pid in self.members(table, environ=False)}
        self.groups = {g: start for g, start in self.groups.items() if held_group(g, start, self.ours, table)}

    def sweep(self) -> list[str]:
        table = snapshot()
        held = [g for g, start in self.groups.items() if held_group(g, start, self.ours, table)]
        killed = freeze_and_kill(lambda t: self.members(t, environ=True), table, held)
        pids = [int(label.split()[0]) for label in killed]
        deadline = time.monotonic() + GONE_WAIT
        while not gone(pids) and time.monotonic() < deadline:
            time.sleep(0.02)
        for folder in self.scratch:  # after the processes: none of them writes there any more
            shutil.rmtree(folder, ignore_errors=True)
        if killed and self.record is not None:
            try:
                append_line(self.record, {"watcher": self.me, "swept": killed, "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())})
            except OSError:
                pass  # the job's folder is gone: nothing to tell
        return killed

    def afterwards(self) -> None:
        """The run's after_kill commands, when it did not say it ended well: each once, bounded, its status recorded."""
        if self.clean:
            return
        for command in self.after_kill:
            try:
                status: int | str = subprocess.run(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                                   stderr=subprocess.DEVNULL, cwd="/", timeout=AFTER_SECONDS).returncode
            except (OSError, subprocess.SubprocessError) as exc:
                status = str(exc)[:200]
            if self.record is not None:
                try:
                    append_line(self.record, {"watcher": self.me, "after_kill": command[-3:], "status": status,
                                              "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())})
                except OSError:
                    pass


def is_scratch(folder: Path) -> bool:
    """A folder the watcher may remove: `nullius-*` right in the system's temporary folder, nothing else it could be told."""
    return folder.parent == Path(tempfile.gettempdir()) and folder.name.startswith("nullius-") and not folder.is_symlink()


def watch(state: Watch, stdin: int = 0) -> list[str]:
    """Until the run's end of the pipe closes: hear what it says, look at its tree; then sweep."""
    pending = b""
    last = 0.0
    while True:
        ready, _, _ = select.select([stdin], [], [], LOOK)
        if ready:
            data = os.read(stdin, 65536)
            if not data:
                break
            pending += data
            *lines, pending = pending.split(b"\n")
            for line in lines:
                try:
                    state.hear(json.loads(line))
                except (ValueError, AttributeError):
                    continue
        if time.monotonic() - last >= LOOK:
            state.look()
            last = time.monotonic()
    swept = state.sweep()
    state.afterwards()
    return swept


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    run_pid, token, begin = int(args[0]), args[1], int(args[2])
    for sig in (signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, signal.SIG_IGN)  # the terminal's Ctrl-C or hang-up is the run's to take, not the watcher's
    watch(Watch(run_pid=run_pid, prefix=f"{token}/", begin=begin))
    return 0


if __name__ == "__main__":
    sys.exit(main())
