"""What the docker backend adds per unit, side by side with the local backend on the same runs.

    .venv/bin/python benchmarks/docker_speed.py [--runs 3] [--units 16] [-j 4] [--json]

Measured in one run, alternating local and docker, on this machine:

* `nullius run humaneval oracle`: the oracle's answers checked by the
  upstream's check_correctness, under bubblewrap (local) or in a throwaway
  network-less container per unit (docker);
* `nullius run gsm8k reference`: the reference agent answering through the
  fake model (one call per unit), unsandboxed on local; on docker each unit
  has its door (a loopback-only namespace, the run's relay behind a Unix
  socket) and its agent's container in the door's namespace.

Printed per case and backend: the medians of the run's wall time and of the
trials' own durations (result.json's started_at to finished_at), and what
docker adds per unit: the median trial's difference, and the wall time's
difference times -j over the units; and the whole machine's CPU seconds per
unit (docker's daemon and shims are not the run's children, so the run's own
rusage would miss them). The machine is noisy: read the medians.
Harbor's docker trial is not measured: it drives `docker compose` v2, which
nothing reachable here provides, and pulls its tasks' images from registries.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
from datetime import datetime
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

from measure import measure  # noqa: E402

from nullius_core.testing import isolated_env  # noqa: E402
from nullius_core.testing.fake_model import running_fake_model  # noqa: E402

from nullius_bench_gsm8k.plugin import TEST_SPLIT as SEED  # noqa: E402 - the test split the plugin ships
NULLIUS = [sys.executable, "-m", "nullius_core"]


def machine_cpu() -> float:
    """CPU seconds the whole machine has spent (docker's daemon and shims are not the run's children)."""
    fields = open("/proc/stat").readline().split()[1:]
    return (sum(map(int, fields)) - int(fields[3]) - int(fields[4])) / os.sysconf("SC_CLK_TCK")


def trial_seconds(job: Path) -> list[float]:
    out = []
    for result in job.glob("*/result.json"):
        data = json.loads(result.read_text())
        started, finished = (datetime.fromisoformat(data[k].replace("Z", "+00:00")) for k in ("started_at", "finished_at"))
        out.append((finished - started).total_seconds())
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--units", type=int, default=16)
    parser.add_argument("-j", type=int, default=4)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="nullius-docker-speed-"))
    env = {**isolated_env(root), "OPENAI_COMPATIBLE_API_KEY": "sk-benchmark-key-0123456789"}
    rows: dict[tuple[str, str], dict[str, list[float]]] = {}
    with running_fake_model({"default": {"text": "#### 18"}}) as fake:
        model = ["--model", "fake-model", "--provider", "openai-compatible", "--base-url", fake.openai_base_url]
        cases = {
            "humaneval oracle": ["run", "humaneval", "oracle"],
            "gsm8k reference": ["run", "gsm8k", "reference", *model],
        }
        backends = {"local": ["--backend", "local", "--unsandboxed"], "docker": ["--backend", "docker"]}
        measure([*NULLIUS, "data", "add", "gsm8k", str(SEED)], root, env)
        for case, argv in cases.items():  # a first run of each installs what it needs; not counted
            for backend, extra in backends.items():
                extra = [a for a in extra if a != "--unsandboxed" or "reference" in argv]
                measure([*NULLIUS, *argv, *extra, "--limit", "2", "--job-name", f"warm-{case}-{backend}".replace(" ", "-")], root, env)
        for run in range(args.runs):
            for case, argv in cases.items():
                for backend, extra in backends.items():
                    extra = [a for a in extra if a != "--unsandboxed" or "reference" in argv]
                    name = f"{case}-{backend}-{run}".replace(" ", "-")
                    cpu0 = machine_cpu()
                    got = measure([*NULLIUS, *argv, *extra, "--limit", str(args.units), "-j", str(args.j), "--job-name", name], root, env)
                    cpu = machine_cpu() - cpu0
                    job = Path(env["NULLIUS_JOBS_DIR"]) / name
                    errors = [r for r in job.glob("*/result.json") if json.loads(r.read_text()).get("exception_info")]
                    if got["returncode"] != 0 or len(list(job.glob("*/result.json"))) != args.units or errors:
                        raise SystemExit(f"{name} failed ({len(errors)} trials with errors, kept in {root}): {got['stderr'][-2000:]}")
                    row = rows.setdefault((case, backend), {"wall": [], "trial": [], "cpu": []})
                    row["cpu"].append(cpu / args.units)
                    row["wall"].append(got["wall_s"])
                    row["trial"].append(statistics.median(trial_seconds(job)))
    report = {}
    for case in cases:
        local, docker = rows[(case, "local")], rows[(case, "docker")]
        wall_l, wall_d = statistics.median(local["wall"]), statistics.median(docker["wall"])
        trial_l, trial_d = statistics.median(local["trial"]), statistics.median(docker["trial"])
        report[case] = {
            "local": {"wall_s": round(wall_l, 2), "trial_median_s": round(trial_l, 3)},
            "docker": {"wall_s": round(wall_d, 2), "trial_median_s": round(trial_d, 3)},
            "added_per_trial_s": round(trial_d - trial_l, 3),
            "added_per_unit_wall_s": round((wall_d - wall_l) * args.j / args.units, 3),
            "wall_ratio": round(wall_d / wall_l, 2),
            "machine_cpu_per_unit_s": {"local": round(statistics.median(local["cpu"]), 3), "docker": round(statistics.median(docker["cpu"]), 3)},
        }
    if args.json:
        print(json.dumps(report, indent=2))
        return
    print(f"{args.units} units at -j {args.j}, medians of {args.runs} runs, local and docker alternating")
    for case, r in report.items():
        print(f"{case:18} local {r['local']['wall_s']:6.2f} s (trial {r['local']['trial_median_s']:.3f} s)  "
              f"docker {r['docker']['wall_s']:6.2f} s (trial {r['docker']['trial_median_s']:.3f} s)  "
              f"docker/local {r['wall_ratio']:.2f}x  added per unit: {r['added_per_trial_s']:.3f} s (trial), "
              f"{r['added_per_unit_wall_s']:.3f} s (wall x j / units); machine CPU per unit "
              f"{r['machine_cpu_per_unit_s']['local']:.2f} s local, {r['machine_cpu_per_unit_s']['docker']:.2f} s docker")
    os.system(f"rm -rf {root}")


if __name__ == "__main__":
    main()
