"""The README's `./dev test` on a fresh clone of this repository, under busy loops, as CI's machine runs it: each phase's time.

The clone is made outside this checkout (in the temporary folder), so the run
sees nothing beside the repository. `--busy N` runs N CPU-bound loops for the
whole run (the brief's "two busy loops"). `--cold` gives the run a new HOME,
so the install step, uv's and npm's caches and the tests' shared installs
start empty (docker's images stay in the daemon: the base image is found).
Printed: set-up, the install step, pytest's own total, the whole, pytest's
30 slowest tests (its --durations) and the 15 units that took the most CPU
(the suite records each unit's, its processes' included: conftest.py), and
the machine's CPU during the run by kind of process (process_cpu.py): how
much is Nullius's own, how much the agents', upstreams', docker's.

    .venv/bin/python benchmarks/suite_time.py --busy 2            # warm caches
    .venv/bin/python benchmarks/suite_time.py --busy 2 --cold
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from process_cpu import Sampler, report

ROOT = Path(__file__).resolve().parent.parent
PHASES = {
    "set-up": re.compile(r"^\./dev: set up in (\d+) s"),
    "installs": re.compile(r"^\./dev installs: \d+ installs here in (\d+) s"),
    "pytest": re.compile(r" in ([\d.]+)s(?: \([\d:]+\))? =+$"),
}


def busy(n: int) -> list[subprocess.Popen[bytes]]:
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]


def run(clone: Path, env: dict[str, str], log: Path, args: list[str]) -> tuple[int, float, dict[str, float]]:
    """./dev test ARGS in the clone, its output to the log and echoed; its exit code, wall seconds and phases."""
    phases: dict[str, float] = {}
    started = time.monotonic()
    with log.open("w") as out:
        proc = subprocess.Popen(["./dev", "test", *args], cwd=clone, env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True)
        assert proc.stdout is not None
        for line in proc.stdout:
            out.write(line)
            print(line, end="", flush=True)
            for phase, pattern in PHASES.items():
                found = pattern.search(line.rstrip())
                if found:
                    phases[phase] = float(found.group(1))
        code = proc.wait()
    return code, time.monotonic() - started, phases


def slowest(log: Path) -> list[str]:
    lines = log.read_text().splitlines()
    at = next((i for i, line in enumerate(lines) if "slowest 30 durations" in line), None)
    return [] if at is None else [line for line in lines[at + 1:at + 31] if re.match(r"^[\d.]+s ", line)]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--busy", type=int, default=2, help="CPU-bound loops beside the run")
    parser.add_argument("--cold", action="store_true", help="a new HOME: every cache and shared install empty")
    parser.add_argument("pytest_args", nargs="*", help="passed to ./dev test (to pytest)")
    args = parser.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="nullius-suite-time-"))
    clone = scratch / "clone"
    subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True)
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV",)}
    if args.cold:
        env["HOME"] = str(scratch / "home")
        Path(env["HOME"]).mkdir()
    home = Path(env.get("HOME", str(Path.home())))
    loops = busy(args.busy)
    sampler = Sampler(skip={loop.pid for loop in loops})
    sampler.start()
    try:
        code, wall, phases = run(clone, env, scratch / "dev-test.log", args.pytest_args)
    finally:
        sampler.stop()
        for loop in loops:
            loop.kill()
    print(f"\n./dev test on a fresh clone, {args.busy} busy loops, {'cold' if args.cold else 'warm'} caches: exit {code}")
    for phase in ("set-up", "installs", "pytest"):
        print(f"  {phase:9} {phases.get(phase, float('nan')):8.0f} s")
    print(f"  {'whole':9} {wall:8.0f} s")
    print("pytest's 30 slowest:")
    print("\n".join(f"  {line}" for line in slowest(scratch / "dev-test.log")))
    try:
        cpu = json.loads((home / ".cache" / "nullius-tests" / "cpu.json").read_text())
        print("the 15 units that took the most CPU (s):")
        for unit in sorted(cpu, key=lambda u: -cpu[u])[:15]:
            print(f"  {cpu[unit]:7.0f}  {unit}")
    except (OSError, ValueError):
        pass
    print("the machine's CPU during the run, by kind of process (the busy loops left out):")
    print("\n".join(report(sampler)))
    shutil.rmtree(clone, ignore_errors=True)
    print(f"(the log: {scratch / 'dev-test.log'})")


if __name__ == "__main__":
    main()
