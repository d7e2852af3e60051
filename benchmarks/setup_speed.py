"""`./dev setup` on a fresh clone, pip against uv, with cold and with warm package caches, side by side in one run.

"pip" is the set-up as it was before uv (`./dev` of commit b7cf0c5: one
`pip install --quiet` of the core and every plugin distribution, each editable
one built in an isolated environment of its own); "uv" is today's `./dev setup`.
Each round clones this repository afresh into a scratch folder, outside any
workspace, and runs the set-up there. "cold" gives the installer a new, empty
cache (PIP_CACHE_DIR, UV_CACHE_DIR) for that round alone; "warm" a cache both
earlier rounds of that installer filled. The machine's packages (bubblewrap,
git) must be there already: apt is not what is measured. Also recorded: the
longest time the set-up went without printing a line.

    .venv/bin/python benchmarks/setup_speed.py --rounds 3
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PIP_DEV = "b7cf0c5"  # the last ./dev that set up with pip


def clone(into: Path, dev_from: str | None) -> Path:
    subprocess.run(["git", "clone", "-q", str(ROOT), str(into)], check=True)
    if dev_from is not None:
        dev = subprocess.run(["git", "show", f"{dev_from}:dev"], cwd=ROOT, check=True, capture_output=True).stdout
        (into / "dev").write_bytes(dev)
    return into


def timed(argv: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, float, int]:
    """Wall seconds, the longest silence between two printed lines, and the exit code."""
    started = time.monotonic()
    last = [started]
    longest = [0.0]
    proc = subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)

    def read() -> None:
        assert proc.stdout is not None
        for _ in proc.stdout:
            now = time.monotonic()
            longest[0] = max(longest[0], now - last[0])
            last[0] = now

    reader = threading.Thread(target=read)
    reader.start()
    code = proc.wait()
    reader.join()
    ended = time.monotonic()
    return ended - started, max(longest[0], ended - last[0]), code


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=3, help="warm rounds per installer (one cold round each)")
    args = parser.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="nullius-setup-speed-"))
    caches = {"pip": scratch / "pip-cache", "uv": scratch / "uv-cache"}
    results: dict[tuple[str, str], list[tuple[float, float]]] = {}
    plan = [("pip", "cold"), ("uv", "cold")] + [(way, "warm") for _ in range(args.rounds) for way in ("pip", "uv")]
    try:
        for i, (way, cache) in enumerate(plan):
            folder = clone(scratch / f"{i}-{way}-{cache}", PIP_DEV if way == "pip" else None)
            # the installer's own cache: empty for its cold round (its first), which fills it for the warm ones
            env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PIP_CACHE_DIR", "UV_CACHE_DIR")}
            env.update(PIP_CACHE_DIR=str(caches[way]), UV_CACHE_DIR=str(caches[way]))
            wall, silence, code = timed(["./dev", "setup"], folder, env)
            if code != 0:
                sys.exit(f"{way} {cache}: ./dev setup failed (exit {code}) in {folder}")
            results.setdefault((way, cache), []).append((wall, silence))
            print(f"{way:4} {cache}: {wall:7.1f} s, longest silence {silence:5.1f} s", flush=True)
            shutil.rmtree(folder, ignore_errors=True)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    print("\nmedians                      wall     longest silence")
    for (way, cache), rows in results.items():
        print(f"{way:4} {cache:5} ({len(rows)} rounds)  {statistics.median(r[0] for r in rows):7.1f} s  {statistics.median(r[1] for r in rows):7.1f} s")
    for cache in ("cold", "warm"):
        if ("pip", cache) in results and ("uv", cache) in results:
            pip = statistics.median(r[0] for r in results[("pip", cache)])
            uv = statistics.median(r[0] for r in results[("uv", cache)])
            print(f"{cache}: uv takes {uv / pip:.2f}x pip's time")


if __name__ == "__main__":
    main()
