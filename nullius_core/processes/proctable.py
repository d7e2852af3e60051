"""This machine's processes, read from /proc: who is whose child, in which group, carrying which marker.

Shared by the run's watcher, the end of a unit's processes and `--resume`'s
check. Only processes of this user can be read whole; the rest are skipped
(a run's own processes are always this user's).
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable, Iterable
from pathlib import Path

import attrs

MARKER = "NULLIUS_RUN"  # the variable every launch of a run carries (nullius_core.processes.lifetime)
FREEZE_PASSES = 50  # a fork bomb gets this many rounds of being frozen before the kill
QUIET = 1  # looks that confirm one that found nothing new, before the kill (without: 2 in 500 escapees missed here)
PAUSE = 0.005  # seconds before each confirming look


@attrs.frozen
class Proc:
    pid: int
    ppid: int
    pgid: int
    start: int  # clock ticks after boot: with the pid, one process for good (pids are reused)
    state: str
    name: str

    @property
    def dead(self) -> bool:
        return self.state in ("Z", "X")  # a zombie has exited already; only its parent's wait is left

    def label(self) -> str:
        return f"{self.pid} {self.name}"


Table = dict[int, Proc]


def read(pid: int) -> Proc | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            raw = handle.read().decode(errors="replace")
        head, rest = raw.rsplit(")", 1)
        fields = rest.split()
        return Proc(pid=pid, ppid=int(fields[1]), pgid=int(fields[2]), start=int(fields[19]), state=fields[0],
                    name=head[head.index("(") + 1 :])
    except (OSError, ValueError, IndexError):
        return None


def snapshot() -> Table:
    table: Table = {}
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            proc = read(int(entry.name))
            if proc is not None:
                table[proc.pid] = proc
    return table


def alive(pid: int, start: int) -> bool:
    proc = read(pid)
    return proc is not None and proc.start == start and not proc.dead


def start_of(pid: int) -> int | None:
    proc = read(pid)
    return None if proc is None else proc.start


def environ_value(pid: int, name: str) -> str | None:
    """The value of variable `name` in the process's environment (as it started), None when unset or unreadable."""
    try:
        with open(f"/proc/{pid}/environ", "rb") as handle:
            raw = handle.read()
    except OSError:
        return None
    entry = name.encode() + b"="
    for item in raw.split(b"\0"):
        if item.startswith(entry):
            return item[len(entry) :].decode(errors="replace")
    return None


def closure(table: Table, roots: Iterable[int]) -> set[int]:
    """The roots and every descendant of theirs, living."""
    children: dict[int, list[int]] = {}
    for proc in table.values():
        children.setdefault(proc.ppid, []).append(proc.pid)
    found = {r for r in roots if r in table and not table[r].dead}
    todo = list(found)
    while todo:
        for child in children.get(todo.pop(), ()):
            if child not in found and not table[child].dead:
                found.add(child)
                todo.append(child)
    return found


DELETED = " (deleted)"  # how /proc names a folder or file removed since it was opened


def working_folder(pid: int) -> Path | None:
    try:
        target = os.readlink(f"/proc/{pid}/cwd")
    except OSError:
        return None
    return None if target.endswith(DELETED) else Path(target)


def open_files(pid: int) -> list[Path]:
    out = []
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return out
    for fd in fds:
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if target.startswith("/") and not target.endswith(DELETED):
            out.append(Path(target))
    return out


def held_group(pgid: int, start: int, ours: Callable[[int], bool], table: Table) -> bool:
    """Whether a launch's process group id is surely still the launch's, for a whole-group signal.

    A group's id is held while its leader (a zombie too) or any member
    lives; an emptied group's id may be reused by another's group, which a
    killpg would hit. `start` is the leader's start time; `ours(pid)` tells
    a member carrying the launch's marker.
    """
    leader = read(pgid)
    if leader is not None and leader.start == start:
        return True
    return any(p.pgid == pgid and not p.dead and p.start >= start and ours(p.pid) for p in table.values())


def signal_each(pids: Iterable[int], sig: int) -> None:
    for pid in pids:
        try:
            os.kill(pid, sig)
        except (ProcessLookupError, PermissionError):
            pass


def signal_groups(pgids: Iterable[int], sig: int) -> None:
    for pgid in pgids:
        try:
            os.killpg(pgid, sig)
        except (ProcessLookupError, PermissionError):
            pass


def freeze_and_kill(find: Callable[[Table], set[int]], table: Table | None = None, groups: Iterable[int] = ()) -> list[str]:
    """Stop every process `find` names (again, until no new one appears), then kill them all; their labels.

    Stopped first, a process can start no child between the look and the
    kill; a child it started just before is found in the next look, still
    under its stopped parent. A listing of /proc can miss a process being
    born or reparented for a moment (seen here: a few ms), so a look that
    finds none new is confirmed by `QUIET` more, `PAUSE` s apart.
    `groups`, process groups known to be the caller's (each id held by a
    living member), are stopped and killed whole at each step, as the kernel
    does it, listed or not. `table` is a look just taken, for the first pass.
    """
    groups = tuple(groups)
    stopped: dict[int, str] = {}
    look, quiet = table, 0
    for _ in range(FREEZE_PASSES):
        signal_groups(groups, signal.SIGSTOP)
        look = snapshot() if look is None else look
        new = {pid for pid in find(look) if pid not in stopped}
        look = None
        if new:
            signal_each(new, signal.SIGSTOP)
            stopped.update({pid: table_label(pid) for pid in new})
            quiet = 0
            continue
        quiet += 1
        if quiet > QUIET:
            break
        time.sleep(PAUSE)
    signal_groups(groups, signal.SIGKILL)
    signal_each(stopped, signal.SIGKILL)
    return [stopped[pid] for pid in sorted(stopped)]


def table_label(pid: int) -> str:
    proc = read(pid)
    return proc.label() if proc is not None else f"{pid} ?"


def gone(pids: Iterable[int], table: Table | None = None) -> bool:
    table = snapshot() if table is None else table
    return all(pid not in table or table[pid].dead for pid in pids)
