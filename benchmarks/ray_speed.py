"""What the ray backend adds per unit, side by side with the local backend on the same GSM8K reference run.

    .venv/bin/python benchmarks/ray_speed.py [--runs 3] [--units 24] [-j 4] [--json]

A three-node Ray cluster is started on this machine for the measurement (the
test suite's, plugins/nullius-backend-ray/tests/ray_world.py: a head and two
more raylets, 2 CPUs each) and ended after it. Then, alternating local and
ray, `nullius run gsm8k reference` over the same units, at `-j`, the fake
model answering each unit's one call at once. Printed per backend: the
medians of the units' phase (progress.jsonl's `stage=units` to `stage=done`)
per unit, of the trials' own durations (result.json), and of the backend's
start (ray: joining the cluster and each node's actor); then what ray adds
per unit (the difference of the units' phase over the units, and of the
median trials) and the ratio. The machine is noisy: read the medians.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT / "plugins" / "nullius-backend-ray" / "tests"))

from ray_world import Cluster  # noqa: E402

from nullius_core.testing import isolated_env, run_cli  # noqa: E402
from nullius_core.testing.fake_model import running_fake_model  # noqa: E402
from nullius_bench_gsm8k.plugin import TEST_SPLIT  # noqa: E402


def at(line: dict) -> datetime:
    return datetime.fromisoformat(line["at"].replace("Z", "+00:00"))


def phases(job: Path) -> dict[str, float]:
    lines = [json.loads(x) for x in (job / "progress.jsonl").read_text().splitlines() if x.strip()]
    units = next(at(x) for x in lines if x.get("stage") == "units")
    done = next(at(x) for x in lines if x.get("stage") == "done")
    trials = []
    for result in job.glob("*/result.json"):
        data = json.loads(result.read_text())
        started, finished = (datetime.fromisoformat(data[k].replace("Z", "+00:00")) for k in ("started_at", "finished_at"))
        trials.append((finished - started).total_seconds())
    return {"units_s": (done - units).total_seconds(), "trial_s": statistics.median(trials), "n": len(trials)}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--units", type=int, default=24)
    parser.add_argument("-j", type=int, default=4)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    cluster = Cluster()
    root = Path(tempfile.mkdtemp(prefix="nullius-ray-speed-"))
    try:
        started = time.monotonic()
        cluster.start()
        cluster_s = time.monotonic() - started
        installs = Path.home() / ".cache" / "nullius-tests" / "standard"  # the tests' installs, when they are there
        env = {**isolated_env(root, standard_dir=installs if installs.is_dir() else None), "OPENAI_COMPATIBLE_API_KEY": "sk-bench", "NULLIUS_RAY_ADDRESS": cluster.address}
        assert run_cli(["data", "add", "gsm8k", str(TEST_SPLIT)], env).code == 0
        rows: dict[str, list[dict[str, float]]] = {"local": [], "ray": []}
        with running_fake_model({"default": {"text": "#### 18"}}) as fake:
            for i in range(args.runs + 1):  # the first round warms the installs and the caches: not counted
                for backend in ("local", "ray"):
                    name = f"{backend}-{i}"
                    t0 = time.monotonic()
                    done = run_cli(["run", "gsm8k", "reference", "--model", "fake-model", "--provider", "openai-compatible",
                                    "--base-url", fake.openai_base_url, "--unsandboxed", "--backend", backend, "--limit", str(args.units),
                                    "-j", str(args.j), "--job-name", name], env, timeout=1800)
                    assert done.code == 0, done.stderr[-3000:]
                    row = {**phases(Path(env["NULLIUS_JOBS_DIR"]) / name), "wall_s": time.monotonic() - t0}
                    if i:
                        rows[backend].append(row)
        med = {b: {k: statistics.median(r[k] for r in rs) for k in ("units_s", "trial_s", "wall_s")} for b, rs in rows.items()}
        per_unit = {b: m["units_s"] / args.units for b, m in med.items()}
        report = {
            "units": args.units, "j": args.j, "runs": args.runs, "cluster_start_s": round(cluster_s, 1),
            "medians": {b: {k: round(v, 3) for k, v in m.items()} for b, m in med.items()},
            "units_phase_per_unit_ms": {b: round(v * 1000, 1) for b, v in per_unit.items()},
            "ray_adds_per_unit_ms": round((per_unit["ray"] - per_unit["local"]) * 1000, 1),
            "ray_adds_per_trial_ms": round((med["ray"]["trial_s"] - med["local"]["trial_s"]) * 1000, 1),
            "ratio_units_phase": round(per_unit["ray"] / per_unit["local"], 2),
            "ratio_trial": round(med["ray"]["trial_s"] / med["local"]["trial_s"], 2),
            "ray_run_start_s": round(med["ray"]["wall_s"] - med["ray"]["units_s"] - (med["local"]["wall_s"] - med["local"]["units_s"]), 2),
        }
    finally:
        cluster.stop()
        cluster.remove()
        shutil.rmtree(root, ignore_errors=True)
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
