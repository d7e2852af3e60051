"""The command's start, this checkout's `nullius` beside another's (--vs, say a clone of an earlier commit), side by side in one run.

Each command is run --runs times by both, alternating, over the same
isolated home; medians of wall time and of CPU (user + system, the
children's rusage), and this one's over the other's.

    .venv/bin/python benchmarks/cli_start.py --runs 15 --vs /elsewhere/.venv/bin/nullius
    .venv/bin/python benchmarks/cli_start.py --vs /elsewhere/.venv/bin/nullius --no-check
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from nullius_core.testing import isolated_env

HERE = str(Path(sys.executable).with_name("nullius"))
COMMANDS = [["--version"], ["paths"], ["list", "--json"], ["check", "--json"]]


def timed(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Wall seconds and CPU seconds (user + system) of one run of argv."""
    before = os.times()
    started = time.perf_counter()
    subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    wall = time.perf_counter() - started
    after = os.times()
    return wall, (after.children_user - before.children_user) + (after.children_system - before.children_system)


def measure(programs: dict[str, str], commands: list[list[str]], runs: int, env: dict[str, str]) -> dict[tuple[str, str], list[tuple[float, float]]]:
    times: dict[tuple[str, str], list[tuple[float, float]]] = {}
    for _ in range(runs):
        for args in commands:
            for who, program in programs.items():  # alternating, so a burst of load falls on both
                times.setdefault((" ".join(args), who), []).append(timed([program, *args], env))
    return times


def report(times: dict[tuple[str, str], list[tuple[float, float]]], commands: list[list[str]]) -> None:
    print(f"{'command':22} {'this wall s':>11} {'other wall s':>12} {'ratio':>6} {'this cpu s':>10} {'other cpu s':>11} {'ratio':>6}")
    for args in commands:
        name = " ".join(args)
        this, other = times[(name, "this")], times[(name, "other")]
        wall = statistics.median(t[0] for t in this), statistics.median(t[0] for t in other)
        cpu = statistics.median(t[1] for t in this), statistics.median(t[1] for t in other)
        print(f"nullius {name:14} {wall[0]:11.3f} {wall[1]:12.3f} {wall[0] / wall[1]:6.2f} "
              f"{cpu[0]:10.3f} {cpu[1]:11.3f} {cpu[0] / cpu[1]:6.2f}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--vs", required=True, help="the other `nullius` (another checkout's .venv/bin/nullius)")
    parser.add_argument("--no-check", action="store_true", help="leave `check --json` out (it reads every definition)")
    options = parser.parse_args()
    commands = COMMANDS[:-1] if options.no_check else COMMANDS
    with tempfile.TemporaryDirectory() as root:
        env = isolated_env(Path(root))
        print(f"this: {HERE}\nother: {options.vs}\nload average before: {os.getloadavg()[0]:.1f}, runs: {options.runs}")
        times = measure({"this": HERE, "other": options.vs}, commands, options.runs, env)
        report(times, commands)
        print(f"load average after: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
