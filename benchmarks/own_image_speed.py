"""What a unit in a task's own image costs in Nullius, side by side with the direct docker path for the same work.

    .venv/bin/python benchmarks/own_image_speed.py [--runs 3] [--repeat 4] [-j 1] [--json]

The fixture benchmark `ownbench` (plugins/nullius-backend-docker/tests/fixtures),
its units `answer` and `kept`, run by the oracle on the docker backend:
per unit, the box (the task's image, `--init`, on its own network), the
oracle's solve put in and run, `docker diff`, the agent's processes stopped
(a helper container in the box's process namespace; not for `kept`), the
check's files put in, the check run, its folder collected, the box and the
network removed; plus the driver's ops and the records.

The direct path is the least a hand-written harness does for the same
result, with the docker CLI and nothing else: run the image, `docker cp`
the solution, exec it, `docker cp` the tests, exec them, `docker cp` the
logs out, remove the container. Both are measured in one run, alternating,
-j units at once; printed: the medians of the wall time over the units (the
run's whole command for Nullius, its start included) and their ratio, and
the whole machine's CPU seconds per unit. The machine is noisy: read the
medians and the ratio.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

from measure import measure  # noqa: E402

from nullius_core.testing import isolated_env  # noqa: E402

NULLIUS = [sys.executable, "-m", "nullius_core"]
CATALOGUE = ROOT / "plugins" / "nullius-backend-docker" / "tests" / "fixtures" / "catalogue"
TASK = CATALOGUE / "benchmarks" / "ownbench" / "tasks" / "answer"


def machine_cpu() -> float:
    fields = open("/proc/stat").readline().split()[1:]
    return (sum(map(int, fields)) - int(fields[3]) - int(fields[4])) / os.sysconf("SC_CLK_TCK")


def docker(*argv: str, data: bytes | None = None) -> str:
    return subprocess.run(["docker", *argv], input=data, capture_output=True, check=True, timeout=300).stdout.decode()


def direct_unit(image: str, i: int, out: Path) -> None:
    """The same work by hand: the image running, solution in and run, tests in and run, logs out, removed."""
    name = f"nullius-speed-direct-{os.getpid()}-{i}"
    docker("run", "-d", "--init", "--name", name, "--label", "nullius.job=own-image-speed", "--network", "none",
           "--workdir", "/app", "--entrypoint", "sleep", image, "infinity")
    try:
        docker("cp", str(TASK / "solution"), f"{name}:/solution")
        docker("exec", "-w", "/app", name, "sh", "/solution/solve.sh")
        docker("cp", str(TASK / "tests"), f"{name}:/tests")
        docker("exec", name, "sh", "-c", "echo 42 > /tests/expected.txt")
        (out / f"{i}.txt").write_text(docker("exec", "-w", "/app", name, "sh", "/tests/test.sh"))
        docker("cp", f"{name}:/logs/verifier", str(out / f"logs-{i}"))
    finally:
        docker("rm", "-f", name)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--repeat", type=int, default=4, help="each of the two units this many times: 2 x repeat units a run")
    parser.add_argument("-j", type=int, default=1)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="nullius-own-speed-"))
    env = {**isolated_env(root), "NULLIUS_CATALOGUE": str(CATALOGUE)}
    units = 2 * args.repeat
    base = ["run", "ownbench", "oracle", "--backend", "docker", "--limit", "2", "--repeat", str(args.repeat), "-j", str(args.j)]
    warm = measure([*NULLIUS, "run", "ownbench", "oracle", "--backend", "docker", "--limit", "1", "--job-name", "warm"], root, env)
    if warm["returncode"] != 0:
        raise SystemExit(f"the warm-up run failed: {warm['stderr'][-2000:]}")
    image = json.loads(next((Path(env["NULLIUS_JOBS_DIR"]) / "warm").glob("*/result.json")).read_text())["standard"]["image"]
    rows: dict[str, dict[str, list[float]]] = {"nullius": {"unit": [], "cpu": []}, "direct": {"unit": [], "cpu": []}}
    for run in range(args.runs):
        name = f"own-{run}"
        cpu0 = machine_cpu()
        got = measure([*NULLIUS, *base, "--job-name", name], root, env)
        cpu = machine_cpu() - cpu0
        job = Path(env["NULLIUS_JOBS_DIR"]) / name
        results = [json.loads(r.read_text()) for r in job.glob("*/result.json")]
        if got["returncode"] != 0 or len(results) != units or any(r["standard"]["outcome"] != "passed" for r in results):
            raise SystemExit(f"{name} failed (kept in {root}): {got['stderr'][-2000:]}")
        rows["nullius"]["unit"].append(got["wall_s"] / units)
        rows["nullius"]["cpu"].append(cpu / units)

        out = root / f"direct-{run}"
        out.mkdir()
        cpu0 = machine_cpu()
        started = time.monotonic()
        with ThreadPoolExecutor(args.j) as pool:
            list(pool.map(lambda i: direct_unit(image, i, out), range(units)))
        wall = time.monotonic() - started
        cpu = machine_cpu() - cpu0
        if sum("checked" in p.read_text() for p in out.glob("*.txt")) != units:
            raise SystemExit(f"the direct path's checks did not all run (kept in {out})")
        rows["direct"]["unit"].append(wall / units)
        rows["direct"]["cpu"].append(cpu / units)
    report = {
        side: {"seconds_per_unit": round(statistics.median(r["unit"]), 3), "machine_cpu_per_unit_s": round(statistics.median(r["cpu"]), 3)}
        for side, r in rows.items()
    }
    report["ratio"] = round(report["nullius"]["seconds_per_unit"] / report["direct"]["seconds_per_unit"], 2)
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        n, d = report["nullius"], report["direct"]
        print(f"{units} own-image oracle units at -j {args.j}, medians of {args.runs} runs, alternating")
        print(f"nullius {n['seconds_per_unit']:.3f} s wall/unit (machine CPU {n['machine_cpu_per_unit_s']:.2f} s)  "
              f"direct docker {d['seconds_per_unit']:.3f} s wall/unit (machine CPU {d['machine_cpu_per_unit_s']:.2f} s)  "
              f"nullius/direct {report['ratio']:.2f}x")
    subprocess.run(["rm", "-rf", str(root)], check=False)


if __name__ == "__main__":
    main()
