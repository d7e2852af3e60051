"""What the bwrap backend adds per unit, side by side with the local and the docker backends on the same runs.

    .venv/bin/python benchmarks/bwrap_speed.py [--runs 5] [--units 16] [-j 4] [--backends local,bwrap,docker] [--json]

Measured in one run, the backends alternating within each round, on this machine:

* `nullius run gsm8k reference`: the reference agent answering through the
  fake model (one call per unit): unsandboxed on local; on bwrap each unit's
  agent in its sandbox behind its door (a Python door on its own loopback,
  the run's relay behind a Unix socket); on docker its door's and agent's
  containers;
* `nullius run gsm8k oracle`: a control, no agent: what the backend costs a
  unit that has no sandbox to make (its workspace and HOME).

Printed per case and backend: the medians of the run's wall time and of the
trials' own durations (result.json's started_at to finished_at); per unit,
what each backend adds over local (the median trial's difference, and the
wall time's difference times -j over the units), and the ratio of wall
times. Target: bwrap under 50 ms a unit over local. The machine is noisy
(2 shared cores): read the medians, taken in the same run.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from docker_speed import NULLIUS, SEED, machine_cpu, trial_seconds  # noqa: E402
from measure import measure  # noqa: E402

from nullius_core.testing import isolated_env  # noqa: E402
from nullius_core.testing.fake_model import running_fake_model  # noqa: E402

FLAGS = {"local": ["--backend", "local", "--unsandboxed"], "bwrap": ["--backend", "bwrap"], "docker": ["--backend", "docker"]}


def _run(name: str, argv: list[str], backend: str, units: int, j: int, root: Path, env: dict[str, str]) -> dict[str, float]:
    extra = [a for a in FLAGS[backend] if a != "--unsandboxed" or "reference" in argv]
    cpu0 = machine_cpu()
    got = measure([*NULLIUS, *argv, *extra, "--limit", str(units), "-j", str(j), "--job-name", name], root, env)
    cpu = machine_cpu() - cpu0
    job = Path(env["NULLIUS_JOBS_DIR"]) / name
    errors = [r for r in job.glob("*/result.json") if json.loads(r.read_text()).get("exception_info")]
    if got["returncode"] != 0 or len(list(job.glob("*/result.json"))) != units or errors:
        raise SystemExit(f"{name} failed ({len(errors)} trials with errors, kept in {root}): {got['stderr'][-2000:]}")
    return {"wall": got["wall_s"], "trial": statistics.median(trial_seconds(job)), "cpu": cpu / units}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--units", type=int, default=16)
    parser.add_argument("-j", type=int, default=4)
    parser.add_argument("--backends", default="local,bwrap,docker")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    backends = args.backends.split(",")
    root = Path(tempfile.mkdtemp(prefix="nullius-bwrap-speed-"))
    env = {**isolated_env(root), "OPENAI_COMPATIBLE_API_KEY": "sk-benchmark-key-0123456789"}
    rows: dict[tuple[str, str], dict[str, list[float]]] = {}
    with running_fake_model({"default": {"text": "#### 18"}}) as fake:
        model = ["--model", "fake-model", "--provider", "openai-compatible", "--base-url", fake.openai_base_url]
        cases = {"gsm8k reference": ["run", "gsm8k", "reference", *model], "gsm8k oracle": ["run", "gsm8k", "oracle"]}
        measure([*NULLIUS, "data", "add", "gsm8k", str(SEED)], root, env)
        for case, argv in cases.items():  # a first run of each installs what it needs; not counted
            for backend in backends:
                _run(f"warm-{case}-{backend}".replace(" ", "-"), argv, backend, 2, 1, root, env)
        for run in range(args.runs):
            for case, argv in cases.items():
                for backend in (backends if run % 2 == 0 else backends[::-1]):  # alternating: neither goes first every time
                    got = _run(f"{case}-{backend}-{run}".replace(" ", "-"), argv, backend, args.units, args.j, root, env)
                    row = rows.setdefault((case, backend), {"wall": [], "trial": [], "cpu": []})
                    for key, value in got.items():
                        row[key].append(value)
    report: dict[str, dict[str, object]] = {}
    for case in cases:
        med = {b: {k: statistics.median(v) for k, v in rows[(case, b)].items()} for b in backends}
        local = med["local"]
        report[case] = {b: {"wall_s": round(m["wall"], 3), "trial_median_s": round(m["trial"], 4), "machine_cpu_per_unit_s": round(m["cpu"], 4),
                            "added_per_trial_ms": round((m["trial"] - local["trial"]) * 1000, 1),
                            "added_per_unit_wall_ms": round((m["wall"] - local["wall"]) * args.j / args.units * 1000, 1),
                            "wall_ratio_to_local": round(m["wall"] / local["wall"], 2)} for b, m in med.items()}
    shutil.rmtree(root, ignore_errors=True)
    if args.json:
        print(json.dumps(report, indent=2))
        return
    print(f"{args.units} units at -j {args.j}, medians of {args.runs} runs, {', '.join(backends)} alternating")
    for case, by in report.items():
        for backend, r in by.items():
            print(f"{case:16} {backend:6} wall {r['wall_s']:6.2f} s  trial {r['trial_median_s']:.3f} s  "
                  f"added per unit: {r['added_per_trial_ms']:7.1f} ms (trial), {r['added_per_unit_wall_ms']:7.1f} ms (wall x j / units)  "
                  f"{r['wall_ratio_to_local']:.2f}x local  machine CPU per unit {r['machine_cpu_per_unit_s']:.3f} s")


if __name__ == "__main__":
    main()
