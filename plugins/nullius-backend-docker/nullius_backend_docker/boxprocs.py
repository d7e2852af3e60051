"""The box's processes as `docker top` lists them, read from this machine's /proc and cgroup files when the daemon is here.

`docker top` has the daemon start `ps` (40 ms of CPU here, every unit, for
what is nearly always init and the keep-alive). The box's cgroup lists the
same processes: its `cgroup.procs`, found through the init's own
/proc/<pid>/cgroup, and each process's parent and command line from /proc.
Read only when that cgroup is the container's own (its path names the
container's id); else None, and the daemon is asked.
"""

from __future__ import annotations

from pathlib import Path

CGROUP = Path("/sys/fs/cgroup")


def listed(init_pid: int, container_id: str) -> list[list[str]] | None:
    """[pid, ppid, args] of each process in the box (as `docker top -eo pid,ppid,args` gives them), or None."""
    if init_pid <= 0 or not container_id:
        return None
    procs = _cgroup_procs(init_pid, container_id)
    if procs is None:
        return None
    rows = []
    for pid in procs:
        row = _row(pid)
        if row is not None:  # one that ended since the list was read is not running
            rows.append(row)
    return rows


def _cgroup_procs(init_pid: int, container_id: str) -> list[int] | None:
    try:
        lines = Path(f"/proc/{init_pid}/cgroup").read_text().splitlines()
    except OSError:
        return None  # not in this machine's process namespace
    for line in lines:
        _, controllers, path = line.split(":", 2)
        if container_id not in path:
            continue
        if controllers == "" and (CGROUP / "cgroup.controllers").exists():
            folder = CGROUP / path.lstrip("/")  # cgroup v2: one hierarchy
        elif "pids" in controllers.split(",") or "memory" in controllers.split(","):
            folder = CGROUP / next(c for c in controllers.split(",") if c in ("pids", "memory")) / path.lstrip("/")
        else:
            continue
        try:
            return [int(p) for p in (folder / "cgroup.procs").read_text().split()]
        except (OSError, ValueError):
            return None
    return None


def _row(pid: int) -> list[str] | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
        args = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return None
    ppid = stat[stat.rindex(b")") + 2:].split()[1].decode()  # the command may hold spaces and parentheses
    return [str(pid), ppid, " ".join(a.decode(errors="replace") for a in args.split(b"\0") if a)]
