"""Measuring a command the way the speed benchmarks compare them: wall time and the process tree's peak RSS."""

from __future__ import annotations

import os
import socket
import subprocess
import threading
import time
from pathlib import Path

_PAGE = os.sysconf("SC_PAGE_SIZE")


def tree_rss_bytes(root: int) -> int:
    """Summed RSS of `root` and all its live descendants, from /proc."""
    children: dict[int, list[int]] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        # the command name may hold spaces and parentheses: the fields follow the last ')'
        ppid = int(stat[stat.rindex(b")") + 2:].split()[1])
        children.setdefault(ppid, []).append(int(entry.name))
    total, todo = 0, [root]
    while todo:
        pid = todo.pop()
        todo.extend(children.get(pid, ()))
        try:
            with open(f"/proc/{pid}/statm", "rb") as f:
                total += int(f.read().split()[1]) * _PAGE
        except (OSError, IndexError, ValueError):
            pass
    return total


def measure(argv: list[str], cwd: Path, env: dict[str, str], poll_s: float = 0.05) -> dict:
    """Run `argv` to its end: wall seconds, peak RSS of its whole tree, and its output."""
    peak = 0
    stdout_path, stderr_path = cwd / "stdout.txt", cwd / "stderr.txt"
    with open(stdout_path, "wb") as out, open(stderr_path, "wb") as err:
        started = time.perf_counter()
        proc = subprocess.Popen(argv, cwd=cwd, env=env, stdout=out, stderr=err, stdin=subprocess.DEVNULL)
        done = threading.Event()

        def poll() -> None:
            nonlocal peak
            while not done.is_set():
                peak = max(peak, tree_rss_bytes(proc.pid))
                done.wait(poll_s)

        poller = threading.Thread(target=poll, daemon=True)
        poller.start()
        _, status, rusage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - started
        done.set()
        poller.join()
    return {
        "returncode": os.waitstatus_to_exitcode(status),
        "wall_s": round(wall, 3),
        "peak_rss_mb": round(peak / 2**20, 1),
        # ru_maxrss is in KiB on Linux: the largest single process of the tree, as /usr/bin/time -v shows it
        "max_process_rss_mb": round(rusage.ru_maxrss / 1024, 1),
        "cpu_s": round(rusage.ru_utime + rusage.ru_stime, 3),
        "stdout": stdout_path.read_text(errors="replace"),
        "stderr": stderr_path.read_text(errors="replace"),
    }


def free_port() -> int:
    """A port of the loopback nothing listens on (now)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port: int, timeout: float = 30) -> None:
    """Until something listens on the loopback's `port`."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), 0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"nothing listens on {port}")
