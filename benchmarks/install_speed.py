"""Installing one real environment with pip (the installer before uv) and with uv, each from a cold cache and a warm one.

The environments: τ²-bench's driver (`driver.install`: 132 pins, Python
3.11) and the reference agent's (`install`: 29 pins). "pip" is
run/install.py as it was before uv (`git show BEFORE:nullius_core/run/install.py`,
loaded beside today's modules): `python -m venv`, then `pip install`, pip's
settings files not read (PIP_CONFIG_FILE=/dev/null: PyPI alone, as uv).
"uv" is today's install.py: `uv venv`, then `uv pip install
--compile-bytecode`. Cold: a new, empty cache (PIP_CACHE_DIR, UV_CACHE_DIR);
warm: the same cache, right after the cold install filled it. Each install
goes into a new STANDARD_DIR, so each makes its environment whole. --runs
rounds, each installer in turn; medians.

    .venv/bin/python benchmarks/install_speed.py --runs 3 [--before 746d150] [--only tau2]
"""

from __future__ import annotations

import argparse
import importlib.util
import io
import json
import os
import statistics
import subprocess
import tempfile
import time
from pathlib import Path
from types import ModuleType
from typing import Any

from nullius_core.definitions import Install, structure
from nullius_core.paths import Paths
from nullius_core.run import install as today
from nullius_core.run.progress import Progress

ROOT = Path(__file__).resolve().parents[1]
CASES = {  # name -> (key, kind, the definition file, where its install block is)
    "tau2": ("tau2", "drivers", ROOT / "plugins/nullius-bench-tau2/nullius_bench_tau2/catalogue/benchmarks/tau2/standard.json", ("driver", "install")),
    "reference": ("reference/0.1.0", "agents",
                  ROOT / "plugins/nullius-agent-reference/nullius_agent_reference/catalogue/agents/reference/agent.json", ("install",)),
}


def before(rev: str, folder: Path) -> ModuleType:
    """install.py as it was at `rev`, a module of its own (its imports are today's modules, which it shares)."""
    source = subprocess.run(["git", "show", f"{rev}:nullius_core/run/install.py"], cwd=ROOT, check=True, capture_output=True, text=True).stdout
    path = folder / "install_before.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location("install_before", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def block(case: str) -> Install:
    _, _, file, where = CASES[case]
    found: Any = json.loads(file.read_text())
    for key in where:
        found = found[key]
    return structure(found, Install)


def timed(installer: ModuleType, case: str, standard_dir: Path, env: dict[str, str]) -> tuple[float, int]:
    """Seconds to install `case` into a new STANDARD_DIR with these variables; and the environment's bytes on disk."""
    key, kind, _, _ = CASES[case]
    saved = dict(os.environ)
    os.environ.update(env)
    try:
        started = time.perf_counter()
        folder = installer.ensure(Paths.from_env({"STANDARD_DIR": str(standard_dir), "HOME": str(standard_dir)}), key, block(case),
                                  Progress(io.StringIO(), bar=False), kind=kind, label=kind)
        seconds = time.perf_counter() - started
    finally:
        os.environ.clear()
        os.environ.update(saved)
    size = int(subprocess.run(["du", "-sb", str(folder)], check=True, capture_output=True, text=True).stdout.split()[0])
    return seconds, size


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--before", default="746d150", help="the commit whose install.py installed with pip")
    parser.add_argument("--only", choices=sorted(CASES))
    args = parser.parse_args()
    cases = [args.only] if args.only else list(CASES)
    times: dict[tuple[str, str, str], list[float]] = {}
    sizes: dict[tuple[str, str], int] = {}
    with tempfile.TemporaryDirectory(prefix="install-speed-") as scratch:
        root = Path(scratch)
        installers = {"pip": before(args.before, root), "uv": today}
        for run in range(args.runs):
            for case in cases:
                for name, installer in installers.items():
                    cache = root / f"cache-{case}-{name}-{run}"
                    env = {"PIP_CACHE_DIR": str(cache), "PIP_CONFIG_FILE": os.devnull} if name == "pip" else {"UV_CACHE_DIR": str(cache)}
                    for state in ("cold", "warm"):  # warm: the cache the cold install just filled
                        seconds, size = timed(installer, case, root / f"standard-{case}-{name}-{state}-{run}", env)
                        times.setdefault((case, name, state), []).append(seconds)
                        sizes[(case, name)] = size
                        print(f"run {run + 1}: {case} {name} {state} {seconds:.1f} s", flush=True)
        print("\n| environment | installer | cache | median s | runs | environment MB |\n|---|---|---|---:|---|---:|", flush=True)
        for (case, name, state), got in times.items():
            print(f"| {case} | {name} | {state} | {statistics.median(got):.1f} | {', '.join(f'{s:.1f}' for s in got)} | {sizes[(case, name)] / 1e6:.0f} |")
        print("(removing the scratch folder: every environment made, GBs of small files)", flush=True)


if __name__ == "__main__":
    main()
