"""What a unit in a task's own image costs in Nullius, side by side with the direct docker path for the same work.

    .venv/bin/python benchmarks/own_image_speed.py [--runs 3] [--repeat 4] [-j 1] [--compare PYTHON] [--json]

The fixture benchmark `ownbench` (plugins/nullius-backend-docker/tests/fixtures),
its units `answer` and `kept`, run by the oracle on the docker backend:
per unit, the box (the task's image, `--init`, no network), the oracle's
solve put in and run, `docker diff`, the box's processes looked at (and
stopped by a helper container in its process namespace when the oracle left
any; not for `kept`), the check's files put in, the check run, its folder
collected, the box removed; plus the driver's ops and the records.

The direct path is the least a hand-written harness does for the same
result, with the docker CLI and nothing else: run the image, `docker cp`
the solution, exec it, `docker cp` the tests, exec them, `docker cp` the
logs out, remove the container. Both are measured in one run, alternating,
-j units at once; printed: the medians of the wall time over the units (the
run's whole command for Nullius, its start included) and their ratio, the
whole machine's CPU seconds per unit (docker's daemon is not the run's
child) and the Nullius process tree's own, and where a unit's time went:
each docker call's median seconds, read from the trials'
`.work/docker-calls.tsv`. `--compare PYTHON` runs the same command with
another checkout's interpreter (its `.venv/bin/python`: the commit before a
change, say) in the same alternation. The machine is noisy: read the medians
and the ratios.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
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


def children_cpu() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def docker(*argv: str, data: bytes | None = None) -> str:
    return subprocess.run(["docker", *argv], input=data, capture_output=True, check=True, timeout=300).stdout.decode()


def direct_unit(image: str, task: Path, i: int, out: Path, shell: str = "sh") -> None:
    """The same work by hand: the image running, solution in and run, tests in and run, logs out, removed."""
    name = f"nullius-speed-direct-{os.getpid()}-{i}"
    docker("run", "-d", "--init", "--name", name, "--label", "nullius.job=own-image-speed", "--network", "none",
           "--workdir", "/app", "--entrypoint", "sleep", image, "infinity")
    try:
        docker("cp", str(task / "solution"), f"{name}:/solution")
        docker("exec", "-w", "/app", name, shell, "/solution/solve.sh")
        docker("cp", str(task / "tests"), f"{name}:/tests")
        docker("exec", name, "sh", "-c", "echo 42 > /tests/expected.txt; mkdir -p /logs/verifier")
        (out / f"{i}.txt").write_text(docker("exec", "-w", "/app", name, shell, "/tests/test.sh"))
        docker("cp", f"{name}:/logs/verifier", str(out / f"logs-{i}"))
    finally:
        docker("rm", "-f", name)


HARBOR_TEST = """#!/bin/bash
mkdir -p /logs/verifier
if [ "$(cat /app/answer.txt 2>/dev/null)" = "{answer}" ]; then echo 1; else echo 0; fi > /logs/verifier/reward.txt
"""


def harbor_tasks(folder: Path, n: int, network: str = "public") -> list[Path]:
    """n GSM8K-shaped Harbor tasks (schema 1.4), each with an image folder of its own: a number to write into /app/answer.txt.

    network: Harbor's `environment.network_mode`, `public` by default (the check's egress proxy behind the unit's door)."""
    tasks = []
    for i in range(n):
        task = folder / f"sum-{i:02d}"
        for sub in ("environment", "tests", "solution"):
            (task / sub).mkdir(parents=True, exist_ok=True)
        (task / "task.toml").write_text(f'schema_version = "1.4"\n[task]\nname = "speed/sum-{i:02d}"\n'
                                        f'[environment]\nnetwork_mode = "{network}"\n')
        (task / "instruction.md").write_text(f"What is {i} + {i}? Write the number into /app/answer.txt.\n")
        (task / "environment" / "Dockerfile").write_text(f"ARG NULLIUS_BASE\nFROM ${{NULLIUS_BASE}}\nWORKDIR /app\nRUN echo {i} > /app/.task\n")
        (task / "tests" / "test.sh").write_text(HARBOR_TEST.format(answer=2 * i))
        (task / "solution" / "solve.sh").write_text(f"#!/bin/bash\necho {2 * i} > /app/answer.txt\n")
        tasks.append(task)
    return tasks


def nullius_run(python: str, base: list[str], name: str, root: Path, env: dict[str, str], units: int) -> dict[str, float]:
    """One `nullius run` of the units: wall and machine CPU per unit, the process tree's CPU; its job checked whole."""
    cpu0 = machine_cpu()
    got = measure([python, "-m", "nullius_core", *base, "--job-name", name], root, env)
    cpu = machine_cpu() - cpu0
    job = Path(env["NULLIUS_JOBS_DIR"]) / name
    results = [json.loads(r.read_text()) for r in job.glob("*/result.json")]
    if got["returncode"] != 0 or len(results) != units or any(r["standard"]["outcome"] not in ("passed", "scored") for r in results) \
            or any((r.get("verifier_result") or {}).get("rewards", {}).get("reward", 1.0) != 1.0 for r in results):
        raise SystemExit(f"{name} failed (kept in {root}): {got['stderr'][-2000:]}")
    return {"unit": got["wall_s"] / units, "cpu": cpu / units, "tree_cpu": got["cpu_s"] / units}


def direct_run(units: list[tuple[str, Path]], out: Path, j: int, shell: str) -> dict[str, float]:
    """Each unit's (image, task folder) by hand, j at once: wall and machine CPU per unit, its docker commands' CPU."""
    out.mkdir()
    cpu0, tree0 = machine_cpu(), children_cpu()
    started = time.monotonic()
    with ThreadPoolExecutor(j) as pool:
        list(pool.map(lambda i: direct_unit(units[i][0], units[i][1], i, out, shell), range(len(units))))
    wall = time.monotonic() - started
    cpu = machine_cpu() - cpu0
    if sum((p / "reward.txt").read_text().strip() == "1" for p in out.glob("logs-*")) != len(units):
        raise SystemExit(f"the direct path's checks did not all pass (kept in {out})")
    n = len(units)
    return {"unit": wall / n, "cpu": cpu / n, "tree_cpu": (children_cpu() - tree0) / n}  # its docker commands


def where_the_time_goes(jobs: list[Path]) -> list[dict[str, object]]:
    """Each docker call of the units (the trials' .work/docker-calls.tsv): its median seconds and how many a unit makes."""
    seconds: dict[tuple[str, str], list[float]] = {}
    trials = 0
    for job in jobs:
        for record in job.glob("*/.work/docker-calls.tsv"):
            trials += 1
            for line in record.read_text().splitlines()[2:]:
                _, took, step, call, _ = line.split("\t")
                seconds.setdefault((step, call), []).append(float(took))
    rows = [{"step": step, "call": call, "median_s": round(statistics.median(v), 4), "per_unit": round(len(v) / max(trials, 1), 2)}
            for (step, call), v in seconds.items()]
    return sorted(rows, key=lambda r: -float(r["median_s"]) * float(r["per_unit"]))


def plan(args: argparse.Namespace, root: Path) -> tuple[list[str], int, dict[str, str]]:
    """The run's arguments, its number of units, and what its environment adds: ownbench's two units, or --harbor N tasks."""
    base = ["--backend", "docker", "-j", str(args.j)]
    if args.harbor:
        folder = root / "harbor-tasks"
        harbor_tasks(folder, args.harbor, args.network)
        return ["run", "harbor", "oracle", "--dataset", str(folder), *base], args.harbor, {}
    return (["run", "ownbench", "oracle", "--limit", "2", "--repeat", str(args.repeat), *base], 2 * args.repeat,
            {"NULLIUS_CATALOGUE": str(CATALOGUE)})


def direct_units(job: Path, args: argparse.Namespace, root: Path) -> list[tuple[str, Path]]:
    """What the direct path runs: each unit's image (as the warm run found it) and its task's folder."""
    if not args.harbor:
        image = json.loads(next(job.glob("*/result.json")).read_text())["standard"]["image"]
        return [(image, TASK)] * (2 * args.repeat)
    images = {json.loads(r.read_text())["task_name"].split("/")[-1]: json.loads(r.read_text())["standard"]["image"] for r in job.glob("*/result.json")}
    return [(images[t.name], t) for t in sorted((root / "harbor-tasks").iterdir())]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--repeat", type=int, default=4, help="each of the two units this many times: 2 x repeat units a run")
    parser.add_argument("-j", type=int, default=1)
    parser.add_argument("--harbor", type=int, metavar="N", help="instead: N GSM8K-shaped Harbor tasks, each its own image (the benchmark harbor)")
    parser.add_argument("--network", default="public", choices=["public", "no-network"], help="the Harbor tasks' network_mode")
    parser.add_argument("--compare", metavar="PYTHON", help="also run another checkout's interpreter (its .venv/bin/python), alternating")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="nullius-own-speed-"))
    # the Harbor driver's environment (harbor 0.25 and its pins) is installed once, in a STANDARD_DIR kept between runs
    standard = Path.home() / ".cache" / "nullius-bench" / "standard" if args.harbor else None
    base, units, extra = plan(args, root)
    env = {**isolated_env(root, standard_dir=standard), **extra}
    sides = {"nullius": sys.executable, **({"compare": args.compare} if args.compare else {})}
    for side, python in sides.items():  # the images built, the driver installed: not what is measured
        warm = measure([python, "-m", "nullius_core", *base, "--job-name", f"warm-{side}"], root, env)
        if warm["returncode"] != 0:
            raise SystemExit(f"the warm-up run ({side}) failed: {warm['stderr'][-2000:]}")
    direct = direct_units(Path(env["NULLIUS_JOBS_DIR"]) / "warm-nullius", args, root)
    rows: dict[str, list[dict[str, float]]] = {side: [] for side in [*sides, "direct"]}
    for run in range(args.runs):
        for side, python in sides.items():
            rows[side].append(nullius_run(python, base, f"own-{side}-{run}", root, env, units))
        rows["direct"].append(direct_run(direct, root / f"direct-{run}", args.j, "bash" if args.harbor else "sh"))
    report: dict[str, object] = {
        side: {"seconds_per_unit": round(statistics.median(r["unit"] for r in got), 3),
               "machine_cpu_per_unit_s": round(statistics.median(r["cpu"] for r in got), 3),
               "process_tree_cpu_per_unit_s": round(statistics.median(r["tree_cpu"] for r in got), 3)}
        for side, got in rows.items()
    }
    for side in sides:
        report[f"{side}/direct"] = round(report[side]["seconds_per_unit"] / report["direct"]["seconds_per_unit"], 2)  # type: ignore[index]
    report["calls"] = where_the_time_goes([Path(env["NULLIUS_JOBS_DIR"]) / f"own-nullius-{run}" for run in range(args.runs)])
    print(json.dumps(report, indent=2) if args.json else text_report(report, sides, units, args))
    subprocess.run(["rm", "-rf", str(root)], check=False)


def text_report(report: dict, sides: dict[str, str], units: int, args: argparse.Namespace) -> str:
    what = f"{units} GSM8K-shaped Harbor tasks (each its own image)" if args.harbor else f"{units} ownbench units"
    lines = [f"{what}, by the oracle at -j {args.j}, medians of {args.runs} runs, alternating"]
    for side in [*sides, "direct"]:
        r = report[side]
        ratio = f"  {side}/direct {report[side + '/direct']:.2f}x" if side in sides else ""
        lines.append(f"{side:8s} {r['seconds_per_unit']:.3f} s wall/unit  machine CPU {r['machine_cpu_per_unit_s']:.2f} s/unit  "
                     f"its process tree {r['process_tree_cpu_per_unit_s']:.2f} s/unit{ratio}")
    lines.append("where a unit's time goes (nullius, each docker call: median s, calls a unit):")
    lines += [f"  {c['median_s']:7.3f} s  x{c['per_unit']:<4g} {c['step']:8s} {c['call']}" for c in report["calls"]]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
