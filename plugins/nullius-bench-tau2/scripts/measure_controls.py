"""Measure the controls on every unit of a dataset through the real driver: which units nop and oracle pass.

    python scripts/measure_controls.py PYTHON DATASET [--limit N]

PYTHON is the driver environment's interpreter (an install of standard.json's
driver.install); the dataset file is found inside its tau2 package, as Nullius
finds it. Prints one JSON line per unit and a summary: the figures behind
controls.nop.expect and controls.oracle.expect, and the README's lists.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parents[1] / "nullius_bench_tau2" / "catalogue" / "benchmarks" / "tau2"


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("python")
    parser.add_argument("dataset")
    parser.add_argument("--limit", type=int)
    args = parser.parse_args()
    declared = json.loads((HERE / "standard.json").read_text())["datasets"][args.dataset]
    code = "import importlib.resources as r, sys; print(r.files(sys.argv[1]).joinpath(sys.argv[2]))"
    found = subprocess.run([args.python, "-c", code, declared["package"], declared["path"]],
                           capture_output=True, text=True, check=True).stdout.strip()
    env = {"PATH": os.environ["PATH"], "HOME": tempfile.gettempdir(), "NULLIUS_DATASET": found}
    driver = subprocess.Popen([args.python, str(HERE / "driver.py")], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL, text=True, env=env, cwd=tempfile.gettempdir())

    def call(op: str, **fields) -> dict:
        driver.stdin.write(json.dumps({"op": op, "dataset": args.dataset, "dir": ".", **fields}) + "\n")
        driver.stdin.flush()
        return json.loads(driver.stdout.readline())

    units = call("units")["units"][: args.limit]
    passed = {"nop": [], "oracle": []}
    began = time.monotonic()
    for unit in units:
        row = {"unit": unit}
        for control in ("nop", "oracle"):
            call("setup", unit=unit)
            answer = call("oracle", unit=unit)["answer"] if control == "oracle" else ""
            got = call("score", unit=unit, answer=answer, transcript=[])
            row[control] = got.get("reward", got.get("error"))
            row["task_id"] = got.get("detail", {}).get("task_id")
            if got.get("passed"):
                passed[control].append(unit)
        print(json.dumps(row), flush=True)
    driver.stdin.close()
    driver.wait()
    summary = {"dataset": args.dataset, "units": len(units), "seconds": round(time.monotonic() - began, 1),
               "nop_passed": len(passed["nop"]), "nop_units": passed["nop"],
               "oracle_passed": len(passed["oracle"]),
               "oracle_failed": [u for u in units if u not in passed["oracle"]]}
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
