"""What making every process die with its run costs, beside the direct path.

Three measures, side by side in one run, alternating, medians:

1. A launch and its end: `lifetime.start_process` + `end_process` (the
   run's marker, the watcher told, the end found in /proc by group, marker
   and descent) against the direct path the local backend had before
   (`asyncio.create_subprocess_exec(start_new_session=True)`, TERM to the
   group polled every 50 ms, then KILL), for a process that exits at once,
   one that leaves a TERM-deaf child in its group, and one that ends on TERM.
2. The watcher's CPU while a run lives with K processes (its look at
   /proc every 0.5 s), as a share of one core: the direct path has none.
3. The sweep: from the run's end of the pipe closing (what a SIGKILL does)
   to every one of K processes gone.

.venv/bin/python benchmarks/lifetime_speed.py --launches 100 --processes 50 --seconds 10
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import statistics
import tempfile
import time
from pathlib import Path

from nullius_core.run import lifetime, proctable

DEAF_CHILD = ["sh", "-c", "trap '' TERM; sleep 600 & exec true"]  # the child outlives its parent


def group_alive(pgid: int) -> bool:
    return any(p.pgid == pgid and not p.dead for p in proctable.snapshot().values())


async def direct(argv: list[str], grace: float) -> float:
    """The local backend's end before: TERM to the group, its members polled every 50 ms, then KILL."""
    started = time.perf_counter()
    proc = await asyncio.create_subprocess_exec(*argv, start_new_session=True)
    os.killpg(proc.pid, signal.SIGTERM) if grace else None
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline and group_alive(proc.pid):
        await asyncio.sleep(0.05)
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    await proc.wait()
    while group_alive(proc.pid):
        await asyncio.sleep(0.001)
    return time.perf_counter() - started


async def through_lifetime(argv: list[str], grace: float) -> float:
    started = time.perf_counter()
    proc = await lifetime.start_process(*argv)
    await lifetime.end_process(proc, grace=grace)
    return time.perf_counter() - started


CASES = (
    ("killed at once", ["true"], 0.0),
    ("leaves a TERM-deaf child, killed at once", DEAF_CHILD, 0.0),
    ("alive, ends on TERM (an ACP agent at its end)", ["sleep", "600"], 3.0),
)


async def launches(n: int) -> dict[str, dict[str, float]]:
    out = {}
    for label, argv, grace in CASES:
        times: dict[str, list[float]] = {"direct": [], "lifetime": []}
        for _ in range(n):
            times["direct"].append(await direct(argv, grace))
            times["lifetime"].append(await through_lifetime(argv, grace))
        out[label] = {k: statistics.median(v) * 1000 for k, v in times.items()}
    return out


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def watcher_and_sweep(k: int, seconds: float) -> tuple[float, float]:
    with tempfile.TemporaryDirectory() as job:
        life = lifetime.Lifetime.begin_run(Path(job))
        with life:
            procs = [await lifetime.start_process("sleep", "600") for _ in range(k)]
            await asyncio.sleep(1.0)  # the watcher's own start (an interpreter) is not its watching
            before = cpu_seconds(life.watcher.pid)
            await asyncio.sleep(seconds)
            share = (cpu_seconds(life.watcher.pid) - before) / seconds
            known = {p.pid: proctable.start_of(p.pid) for p in procs}
            started = time.perf_counter()
            os.close(life._pipe)  # what a SIGKILL of the run does to the pipe
            life._pipe = None
            while any(proctable.alive(pid, start) for pid, start in known.items()):
                await asyncio.sleep(0.001)
            sweep = time.perf_counter() - started
            for p in procs:
                await p.wait()
        return share, sweep


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--launches", type=int, default=100)
    parser.add_argument("--processes", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    print(f"machine: {os.cpu_count()} CPUs, {len(proctable.snapshot())} processes")
    for label, ms in asyncio.run(launches(args.launches)).items():
        print(f"launch+end ({label}), median of {args.launches}: direct {ms['direct']:.2f} ms, lifetime {ms['lifetime']:.2f} ms,"
              f" ratio {ms['lifetime'] / ms['direct']:.2f}x (+{ms['lifetime'] - ms['direct']:.2f} ms)")
    results = [asyncio.run(watcher_and_sweep(args.processes, args.seconds)) for _ in range(args.runs)]
    share = statistics.median(r[0] for r in results)
    sweep = statistics.median(r[1] for r in results)
    print(f"watcher CPU with {args.processes} processes, median of {args.runs} runs of {args.seconds:g} s: {share * 100:.2f}% of one core (direct path: none)")
    print(f"sweep of {args.processes} processes after the run's end, median of {args.runs}: {sweep * 1000:.0f} ms")


if __name__ == "__main__":
    main()
