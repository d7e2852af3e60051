"""Speed of the run engine with the oracle control, side by side with its peer and its floor.

    .venv/bin/python benchmarks/controls_speed.py [--runs 3] [--json]

Measured in one run, alternating, on this machine:

* `nullius run gsm8k oracle` over all 1,319 units, every trial's full record written;
* Inspect AI over the same 1,319 items with its mock model answering correctly,
  with its per-sample log and without (`$NULLIUS_PEERS/inspect_gsm8k.py`, in a
  venv of its own: benchmarks/peers/inspect_env.py);
* the direct path: GSM8K's driver alone answering `oracle` and `score` for
  every unit over one pipe, which is what the upstream's own code costs;
* `nullius run humaneval oracle` over all 164 units.

Printed: medians of wall time, CPU, peak RSS of the whole process tree, the
per-unit overhead over the direct path, and the ratios. The machine is noisy:
read the medians and the ratios, not one time.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

from measure import measure  # noqa: E402
from peers.inspect_env import run_inspect_gsm8k  # noqa: E402

from nullius_bench_gsm8k.plugin import TEST_SPLIT as SEED  # noqa: E402 - the test split the plugin ships
NULLIUS = [sys.executable, "-m", "nullius_core"]

DIRECT = r"""
import json, subprocess, sys, time
driver = subprocess.Popen(sys.argv[1:], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)
def call(request):
    driver.stdin.write(json.dumps(request) + "\n"); driver.stdin.flush()
    return json.loads(driver.stdout.readline())
units = call({"op": "units", "dataset": "test"})["units"]
passed = 0
for unit in units:
    prompt = call({"op": "setup", "unit": unit, "dir": "/tmp", "dataset": "test"})["prompt"]
    answer = call({"op": "oracle", "unit": unit, "dir": "/tmp", "dataset": "test"})["answer"]
    score = call({"op": "score", "unit": unit, "dir": "/tmp", "dataset": "test", "answer": answer,
                  "transcript": [{"role": "user", "text": prompt}, {"role": "agent", "text": answer}]})
    passed += bool(score.get("passed"))
driver.stdin.close(); driver.wait()
print(json.dumps({"units": len(units), "passed": passed}))
"""


def _env(root: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NULLIUS_", "STANDARD_", "SECRETS_DIR"))}
    env.update(
        HOME=str(root / "home"),
        XDG_CONFIG_HOME=str(root / "config"),
        XDG_DATA_HOME=str(root / "data"),
        NULLIUS_JOBS_DIR=str(root / "jobs"),
    )
    return env


def _summary(stderr: str) -> dict:
    for line in reversed(stderr.splitlines()):
        if "stage=done" in line:
            return dict(part.split("=", 1) for part in line.split()[1:] if "=" in part)
    raise RuntimeError("no stage=done line:\n" + stderr[-2000:])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="nullius-bench-") as scratch:
        root = Path(scratch)
        env = _env(root)
        cwd = root / "cwd"
        cwd.mkdir()
        seed = measure([*NULLIUS, "data", "add", "gsm8k", str(SEED)], cwd, env)
        assert seed["returncode"] == 0, seed["stderr"]
        warm = measure([*NULLIUS, "run", "humaneval", "oracle", "--limit", "1"], cwd, env)  # installs its driver
        assert warm["returncode"] == 0, warm["stderr"]
        gsm8k_driver = _driver_argv()
        rows: dict[str, list[dict]] = {k: [] for k in ("nullius_gsm8k", "direct_gsm8k", "inspect_log", "inspect_nolog", "nullius_humaneval")}
        for _ in range(args.runs):
            run = measure([*NULLIUS, "run", "gsm8k", "oracle", "-j", "4"], cwd, env)
            assert run["returncode"] == 0, run["stderr"][-2000:]
            run["summary"] = _summary(run["stderr"])
            rows["nullius_gsm8k"].append(run)
            direct = measure([sys.executable, "-c", DIRECT, *gsm8k_driver], cwd, {**env, "NULLIUS_DATASET": _dataset(root)})
            assert direct["returncode"] == 0, direct["stderr"]
            rows["direct_gsm8k"].append(direct)
            rows["inspect_log"].append(run_inspect_gsm8k(log=True))
            rows["inspect_nolog"].append(run_inspect_gsm8k(log=False))
            he = measure([*NULLIUS, "run", "humaneval", "oracle", "-j", "4"], cwd, env)
            assert he["returncode"] == 0, he["stderr"][-2000:]
            he["summary"] = _summary(he["stderr"])
            rows["nullius_humaneval"].append(he)
    report = _report(rows)
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        _print(report)


def _driver_argv() -> list[str]:
    folder = ROOT / "plugins" / "nullius-bench-gsm8k" / "nullius_bench_gsm8k" / "catalogue" / "benchmarks" / "gsm8k"
    return ["python3", str(folder / "driver.py")]


def _dataset(root: Path) -> str:
    return str(next((root / "data" / "nullius" / "standard" / "datasets" / "gsm8k" / "test").rglob("test.jsonl")))


def _median(rows: list[dict], key: str) -> float:
    return round(statistics.median(r[key] for r in rows), 3)


def _report(rows: dict[str, list[dict]]) -> dict:
    out: dict = {}
    for name, runs in rows.items():
        out[name] = {
            "runs": len(runs),
            "wall_s": _median(runs, "wall_s"),
            "peak_rss_mb": _median(runs, "peak_rss_mb"),
            **({"cpu_s": _median(runs, "cpu_s")} if all("cpu_s" in r for r in runs) else {}),
        }
        if "summary" in runs[0]:
            out[name]["trials"] = runs[0]["summary"].get("trials")
            out[name]["passed"] = runs[0]["summary"].get("passed")
        if "samples" in runs[0]:
            out[name]["samples"] = runs[0]["samples"]
            out[name]["accuracy"] = runs[0]["accuracy"]
    units = 1319
    n, d, i = out["nullius_gsm8k"], out["direct_gsm8k"], out["inspect_log"]
    out["ratios"] = {
        "nullius_gsm8k_wall_over_inspect_with_log": round(n["wall_s"] / i["wall_s"], 3),
        "nullius_gsm8k_wall_over_inspect_without_log": round(n["wall_s"] / out["inspect_nolog"]["wall_s"], 3),
        "nullius_gsm8k_peak_rss_over_inspect": round(n["peak_rss_mb"] / i["peak_rss_mb"], 3),
        "nullius_gsm8k_ms_per_unit": round(1000 * n["wall_s"] / units, 2),
        "nullius_overhead_ms_per_unit_over_direct": round(1000 * (n["wall_s"] - d["wall_s"]) / units, 2),
        "inspect_with_log_ms_per_sample": round(1000 * i["wall_s"] / units, 2),
        "humaneval_wall_s": out["nullius_humaneval"]["wall_s"],
    }
    return out


def _print(report: dict) -> None:
    print(f"{'run':<22}{'wall s':>9}{'cpu s':>9}{'peak MB':>10}  result")
    for name, row in report.items():
        if name == "ratios":
            continue
        result = f"{row.get('passed')}/{row.get('trials')}" if "trials" in row else (f"acc {row.get('accuracy')}" if "accuracy" in row else "")
        print(f"{name:<22}{row['wall_s']:>9}{row.get('cpu_s', ''):>9}{row['peak_rss_mb']:>10}  {result}")
    print()
    for key, value in report["ratios"].items():
        print(f"{key}: {value}")


if __name__ == "__main__":
    main()
