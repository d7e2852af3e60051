"""How long the `nullius` command takes to start: `--version`, `paths` and `run --help`, beside a bare Python and the old eager import.

Each is run --runs times, alternating, in one run of the script; medians.
"the eager import" is what every invocation loaded before the commands were
imported lazily (every command module, hence the engine, the relay and
aiohttp): `import nullius_core.cli.run_commands, nullius_core.cli.relay_command`.

    .venv/bin/python benchmarks/cli_speed.py --runs 15
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from nullius_core.testing import isolated_env

NULLIUS = str(Path(sys.executable).with_name("nullius"))
CASES = {
    "python -c pass": [sys.executable, "-c", "pass"],
    "nullius --version": [NULLIUS, "--version"],
    "nullius paths": [NULLIUS, "paths"],
    "nullius run --help": [NULLIUS, "run", "--help"],
    "the eager import (before)": [sys.executable, "-c", "import nullius_core.cli.run_commands, nullius_core.cli.relay_command, "
                                  "nullius_core.cli.catalogue_commands, nullius_core.logs"],
}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=15)
    runs = parser.parse_args().runs
    times: dict[str, list[float]] = {name: [] for name in CASES}
    with tempfile.TemporaryDirectory() as root:
        env = isolated_env(Path(root))
        for _ in range(runs):
            for name, argv in CASES.items():
                started = time.perf_counter()
                subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
                times[name].append(time.perf_counter() - started)
    bare = statistics.median(times["python -c pass"])
    print(f"{'command':28} {'median s':>9} {'beyond python':>14}")
    for name, values in times.items():
        median = statistics.median(values)
        print(f"{name:28} {median:9.3f} {median - bare:14.3f}")


if __name__ == "__main__":
    main()
