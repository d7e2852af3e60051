"""Harbor's own trial against Nullius's harbor benchmark, the same Harbor tasks, their oracles, side by side in one run.

    .venv/bin/python benchmarks/harbor_speed.py [--tasks 20] [--runs 2] [-j 1 4] [--json]

The tasks are $NULLIUS_PEERS/harbor/make_tasks.py's (GSM8K-shaped: a
Dockerfile FROM this machine's base image, solve.sh writes the answer,
test.sh compares it and writes reward.txt). Three ways run each task's
oracle, alternating within each run, at each -j:

    harbor-compose  Harbor 0.25's stock docker environment (docker compose v2, a project a trial), -n J
    harbor-plain    Harbor with $NULLIUS_PEERS/harbor/plain_docker_env.py (docker build/run/exec/cp/rm), -n J
    nullius         nullius run harbor oracle --dataset TASKS --backend docker -j J (the whole command, its start included)

Printed per way and -j: the median over the runs of the seconds per trial
(the job's wall time over its trials) and of the whole machine's CPU
seconds per trial, the ratios of Nullius to each Harbor way, and where each
trial's time goes (the median of each phase as the trial's result.json
times it). A warm-up of each way first builds every image, so that no run
pays for a build. The machine is shared and noisy: read the medians and
the ratios.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
from peers.where import peers  # noqa: E402

PEERS = peers("harbor")
sys.path.insert(0, str(ROOT / "tests"))

from harbor.trials import remove_leftovers, run_harbor  # noqa: E402  (tests/harbor: Harbor's trial, run in its own venv)

from nullius_core.testing import isolated_env  # noqa: E402

NULLIUS = [sys.executable, "-m", "nullius_core"]
PHASES = ("environment_setup", "agent_setup", "agent_execution", "verifier")
WAYS = ("harbor-compose", "harbor-plain", "nullius")


def machine_cpu() -> float:
    fields = open("/proc/stat").readline().split()[1:]
    return (sum(map(int, fields)) - int(fields[3]) - int(fields[4])) / os.sysconf("SC_CLK_TCK")


def span(timing: dict | None) -> float | None:
    if not timing or not timing.get("started_at") or not timing.get("finished_at"):
        return None
    start, end = (datetime.fromisoformat(timing[k].replace("Z", "+00:00")) for k in ("started_at", "finished_at"))
    return (end - start).total_seconds()


def phases(job: Path) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {p: [] for p in PHASES}
    for result in job.glob("*/result.json"):
        data = json.loads(result.read_text())
        for phase in PHASES:
            seconds = span(data.get(phase))
            if seconds is not None:
                out[phase].append(seconds)
    return out


def check(job: Path, n: int, way: str) -> None:
    rewards = [(json.loads(r.read_text()).get("verifier_result") or {}).get("rewards", {}).get("reward") for r in job.glob("*/result.json")]
    if len(rewards) != n or any(r != 1 for r in rewards):
        raise SystemExit(f"{way}: {len(rewards)} trials of {n}, rewards {rewards} (kept in {job})")


def run_way(way: str, tasks: Path, n: int, j: int, jobs: Path, name: str, env: dict[str, str]) -> tuple[float, Path]:
    """One job of `way`: its wall seconds and its folder."""
    if way == "nullius":
        started = time.monotonic()
        done = subprocess.run([*NULLIUS, "run", "harbor", "oracle", "--dataset", str(tasks), "--backend", "docker", "-j", str(j),
                               "--jobs-dir", str(jobs), "--job-name", name], env=env, capture_output=True, text=True, timeout=7200)
        wall = time.monotonic() - started
        if done.returncode != 0:
            raise SystemExit(f"nullius failed: {done.stderr[-2000:]}")
        return wall, jobs / name
    kind = {"harbor-compose": ("docker", None), "harbor-plain": ("plain_docker_env:PlainDockerEnvironment", PEERS)}[way]
    job = run_harbor(tasks, "oracle", jobs_dir=jobs, job_name=name, n_concurrent=j, env=kind[0], pythonpath=kind[1], timeout=7200)
    remove_leftovers(job)
    if job.returncode != 0:
        raise SystemExit(f"{way} failed ({job.returncode}): {job.stderr[-2000:]}")
    return job.wall_seconds, job.folder


def median(values: list[float]) -> float | None:
    return round(statistics.median(values), 3) if values else None


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tasks", type=int, default=20)
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("-j", type=int, nargs="+", default=[1, 4])
    parser.add_argument("--ways", nargs="+", default=list(WAYS), choices=WAYS)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="nullius-harbor-speed-"))
    env = isolated_env(root / "home")
    base = subprocess.run([*NULLIUS, "docker", "base"], env=env, capture_output=True, text=True, check=True, timeout=3600).stdout.strip()
    tasks = root / "tasks"
    subprocess.run([sys.executable, str(PEERS / "make_tasks.py"), str(tasks), str(args.tasks), base], check=True, capture_output=True)
    jobs = root / "jobs"
    for way in args.ways:  # every image built, the driver installed: no run pays for them
        run_way(way, tasks, args.tasks, 4, jobs, f"warm-{way}", env)
    rows: dict[str, dict[str, list[float]]] = {f"{w}@{j}": {"trial": [], "cpu": []} for w in args.ways for j in args.j}
    spans: dict[str, dict[str, list[float]]] = {key: {p: [] for p in PHASES} for key in rows}
    for run in range(args.runs):
        for j in args.j:
            for way in args.ways:
                key = f"{way}@{j}"
                cpu0 = machine_cpu()
                wall, job = run_way(way, tasks, args.tasks, j, jobs, f"{way}-j{j}-r{run}", env)
                rows[key]["cpu"].append((machine_cpu() - cpu0) / args.tasks)
                rows[key]["trial"].append(wall / args.tasks)
                check(job, args.tasks, way)
                for phase, values in phases(job).items():
                    spans[key][phase].extend(values)
    report: dict[str, dict] = {key: {"seconds_per_trial": median(r["trial"]), "machine_cpu_per_trial_s": median(r["cpu"]),
                                     "phase_medians_s": {p: median(v) for p, v in spans[key].items()}} for key, r in rows.items()}
    for j in args.j:
        mine = report.get(f"nullius@{j}", {}).get("seconds_per_trial")
        for way in ("harbor-compose", "harbor-plain"):
            theirs = report.get(f"{way}@{j}", {}).get("seconds_per_trial")
            if mine and theirs:
                report[f"ratio nullius/{way}@{j}"] = {"seconds_per_trial": round(mine / theirs, 2)}
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        for key, row in report.items():
            print(f"{key:34} {json.dumps(row)}")
    shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
