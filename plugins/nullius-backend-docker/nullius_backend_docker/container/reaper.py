"""Stop processes in a unit's box, from a helper container that shares the box's process namespace.

Run as `python3 reaper.py all` or `python3 reaper.py exec ARGV_JSON` with
`--pid container:<box>` and CAP_KILL alone. From outside, a process of the
box can only be killed by whoever owns it (often root); from inside, the
task's image may have no `kill`, `ps` or shell. This helper needs neither:
it reads /proc and signals. The standard library only: it runs in the base
image.

- `all`: every process but the box's init (pid 1) and its keep-alive (the
  first child of init running `sleep infinity`) and this helper: the
  agent's leftovers before the check.
- `exec ARGV_JSON`: the processes started by `docker exec` (parent 0, not
  init) whose command line is ARGV: an agent or a check that has to end.

Each is sent TERM; what is still there after the grace period gets KILL.
One JSON line on stdout: {"stopped": [{pid, command, signal}], "survivors": [...]}.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time

GRACE = 3.0
KEEP_ALIVE = ["sleep", "infinity"]


def processes() -> dict[int, tuple[int, list[str]]]:
    """pid -> (parent pid, command line) of every process in sight; those that end while read are left out."""
    out = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                stat = f.read().decode(errors="replace")
            with open(f"/proc/{name}/cmdline", "rb") as f:
                argv = [a.decode(errors="replace") for a in f.read().split(b"\0") if a]
        except OSError:
            continue
        # the command name in stat may hold spaces and parentheses: the fields after the last ")" are the ones
        fields = stat[stat.rfind(")") + 2:].split()
        if fields and fields[0] == "Z":
            continue  # a zombie is already gone; its parent has not waited for it
        out[int(name)] = (int(fields[1]) if len(fields) > 1 else 0, argv or [stat[stat.find("(") + 1:stat.rfind(")")]])
    return out


def targets(mode: str, argv: list[str]) -> dict[int, list[str]]:
    found = processes()
    me = os.getpid()
    if mode == "exec":
        return {pid: cmd for pid, (ppid, cmd) in found.items() if pid not in (1, me) and ppid == 0 and cmd == argv}
    keep = min((pid for pid, (ppid, cmd) in found.items() if ppid == 1 and cmd == KEEP_ALIVE), default=None)
    return {pid: cmd for pid, (_, cmd) in found.items() if pid not in (1, me, keep)}


def main() -> int:
    mode = sys.argv[1] if len(sys.argv) > 1 else ""
    if mode not in ("all", "exec"):
        print("usage: reaper.py all | exec ARGV_JSON", file=sys.stderr)
        return 2
    argv = json.loads(sys.argv[2]) if mode == "exec" else []
    first = targets(mode, argv)
    stopped = []
    for pid, cmd in sorted(first.items()):
        try:
            os.kill(pid, signal.SIGTERM)
            stopped.append({"pid": pid, "command": " ".join(cmd), "signal": "TERM"})
        except ProcessLookupError:
            pass
    deadline = time.monotonic() + GRACE
    left = set(first)
    while left and time.monotonic() < deadline:
        time.sleep(0.05)
        left &= set(processes())
    by_pid = {s["pid"]: s for s in stopped}
    for pid in sorted(left):
        try:
            os.kill(pid, signal.SIGKILL)
            if pid in by_pid:
                by_pid[pid]["signal"] = "KILL"
        except ProcessLookupError:
            pass
    deadline = time.monotonic() + 2.0
    still = left & set(processes())
    while still and time.monotonic() < deadline:
        time.sleep(0.05)
        still &= set(processes())
    survivors = [{"pid": pid, "command": " ".join(first[pid])} for pid in sorted(left & still)]
    print(json.dumps({"stopped": stopped, "survivors": survivors}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
