"""What a unit costs as the units grow: the GSM8K oracle over 1,319, 13,190 and 100,000 units.

    .venv/bin/python benchmarks/scale_speed.py [--sizes 1319,13190,100000] [--merge-sizes 13190] [--python PY] [--json]

The bigger datasets are GSM8K's test file repeated, each copy's questions
made distinct (`[copy k] ` before the question; the answers unchanged), in a
user-catalogue benchmark `gsm8k-scale` written into a scratch catalogue: its
driver is GSM8K's own (the upstream's answer rule and the adapter's, loaded
from the plugin's driver.py, unchanged), with one change to how it reads the
file: by line offsets, one row at a time, so that four drivers of 100,000
units do not each hold the whole file (the file, not Nullius, would then be
what the memory measures).

For each size, in one run of this script: `nullius run gsm8k-scale oracle
-j 4` (wall time, CPU, peak RSS of the whole process tree, and of its largest
process), the direct path over the same items (the scale driver alone over
one pipe, as controls_speed.py's), their difference per unit, one passed
trial's folder (inodes, bytes allocated, bytes written) and the whole job's,
the filesystem's own floor (that trial's folders and files written again,
up to 20,000 times, by this process alone: `layout_floor`);
for the merge sizes, two shard jobs (`--shard 1/2`, `2/2`) and `nullius
merge` of them. `--python` runs another checkout's Nullius (a "before"
venv) on the same data. Outputs are deleted after each size.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

from controls_speed import DIRECT, _env, _summary  # noqa: E402
from measure import measure  # noqa: E402

from nullius_bench_gsm8k.plugin import TEST_SPLIT as SEED  # noqa: E402 - the test split the plugin ships
GSM8K = ROOT / "plugins" / "nullius-bench-gsm8k" / "nullius_bench_gsm8k" / "catalogue" / "benchmarks" / "gsm8k"

DRIVER = '''"""gsm8k-scale's driver: GSM8K's own (its answer rule and scorer, unchanged), the dataset read by line offsets."""
import importlib.util
import json
import os
import sys
from array import array

_spec = importlib.util.spec_from_file_location("gsm8k_driver", {gsm8k!r})
gsm8k = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(gsm8k)
_OFFSETS = None


def offsets():
    global _OFFSETS
    if _OFFSETS is None:
        found, at = array("q"), 0
        with open(os.environ["NULLIUS_DATASET"], "rb") as handle:
            for line in handle:
                if line.strip():
                    found.append(at)
                at += len(line)
        _OFFSETS = found
    return _OFFSETS


def units():
    return ["u%04d" % i for i in range(len(offsets()))]


def row_of(request):
    unit = request.get("unit")
    index = int(unit[1:]) if isinstance(unit, str) and unit[1:].isdigit() else -1
    if not (0 <= index < len(offsets())) or unit != "u%04d" % index:
        raise KeyError(f"unknown unit {{unit!r}}")
    with open(os.environ["NULLIUS_DATASET"], "rb") as handle:
        handle.seek(offsets()[index])
        return json.loads(handle.readline())


gsm8k.units = units
gsm8k.row_of = row_of

if __name__ == "__main__":
    gsm8k.main()
'''


def make_dataset(size: int, into: Path) -> tuple[Path, str]:
    rows = [json.loads(line) for line in SEED.read_text(encoding="utf-8").splitlines() if line.strip()]
    path = into / f"x{size}.jsonl"
    digest = hashlib.sha256()
    with open(path, "wb") as out:
        for i in range(size):
            row = rows[i % len(rows)]
            copy = i // len(rows)
            question = row["question"] if copy == 0 else f"[copy {copy}] {row['question']}"
            line = (json.dumps({"question": question, "answer": row["answer"]}) + "\n").encode()
            out.write(line)
            digest.update(line)
    return path, digest.hexdigest()


def make_catalogue(root: Path, sizes: list[int]) -> Path:
    folder = root / "catalogue" / "benchmarks" / "gsm8k-scale"
    folder.mkdir(parents=True)
    datasets = {}
    for size in sizes:
        _, sha = make_dataset(size, folder)
        datasets[f"x{size}"] = {"path": f"{{here}}/x{size}.jsonl", "sha256": sha, "units": size}
    standard = json.loads((GSM8K / "standard.json").read_text())
    standard.update(name="GSM8K at scale (a benchmark of benchmarks/scale_speed.py)", datasets=datasets, dataset=f"x{sizes[0]}",
                    upstream={"pypi": "nullius-scale-benchmark", "version": "0.0.0"})
    standard.pop("proven", None)
    standard["controls"]["oracle"]["source"] = "adapter"
    (folder / "standard.json").write_text(json.dumps(standard, indent=2))
    (folder / "benchmark.json").write_text(json.dumps({"name": "GSM8K at scale", "summary": "GSM8K's test file repeated.", "harness": "standard"}))
    (folder / "driver.py").write_text(DRIVER.format(gsm8k=str(GSM8K / "driver.py")))
    return root / "catalogue"


def trial_disk(trial: Path) -> dict:
    inodes, allocated, written = 1, os.lstat(trial).st_blocks * 512, 0
    for folder, dirs, files in os.walk(trial):
        for name in dirs + files:
            st = os.lstat(os.path.join(folder, name))
            inodes += 1
            allocated += st.st_blocks * 512
            written += st.st_size if name in files else 0
    return {"inodes": inodes, "allocated_bytes": allocated, "written_bytes": written}


def layout_floor(trial: Path, count: int, into: Path) -> dict:
    """The filesystem's own cost of a job's trials: `count` copies of one trial's folders and files (the same names and
    bytes, each file through a temporary file renamed into place, as Nullius writes them), made in this process alone,
    then removed. What no harness writing Harbor's layout here can go below."""
    files = [(os.path.relpath(os.path.join(d, n), trial), Path(d, n).read_bytes()) for d, _, names in os.walk(trial) for n in names]
    folders = sorted({os.path.dirname(rel) for rel, _ in files if os.path.dirname(rel)})
    into.mkdir()
    cpu, wall = time.process_time(), time.perf_counter()
    for i in range(count):
        base = f"{into}/t{i}"
        os.mkdir(base)
        for folder in folders:
            os.mkdir(f"{base}/{folder}")
        for rel, data in files:
            tmp = f"{base}/{rel}.tmp"
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            os.write(fd, data)
            os.close(fd)
            os.replace(tmp, f"{base}/{rel}")
    out = {"cpu_ms_per_unit": round(1000 * (time.process_time() - cpu) / count, 3),
           "wall_ms_per_unit": round(1000 * (time.perf_counter() - wall) / count, 3)}
    shutil.rmtree(into)
    return out


def job_disk(job: Path) -> dict:
    inodes = allocated = 0
    for folder, dirs, files in os.walk(job):
        for name in dirs + files:
            inodes += 1
            allocated += os.lstat(os.path.join(folder, name)).st_blocks * 512
    return {"inodes": inodes, "allocated_mb": round(allocated / 1e6, 1)}


def one_size(size: int, python: str, root: Path, env: dict, merge: bool) -> dict:
    cwd = root / "cwd"
    nullius = [python, "-m", "nullius_core"]
    dataset = root / "catalogue" / "benchmarks" / "gsm8k-scale" / f"x{size}.jsonl"
    run = measure([*nullius, "run", "gsm8k-scale", "oracle", "-j", "4", "--dataset", f"x{size}", "--job-name", f"r{size}"], cwd, env)
    assert run["returncode"] == 0, run["stderr"][-3000:]
    summary = _summary(run["stderr"])
    assert int(summary["passed"]) == size, summary
    direct = measure([sys.executable, "-c", DIRECT.replace('"dataset": "test"', f'"dataset": "x{size}"'), "python3",
                      str(dataset.parent / "driver.py")], cwd, {**env, "NULLIUS_DATASET": str(dataset)})
    assert direct["returncode"] == 0, direct["stderr"][-2000:]
    job = Path(env["NULLIUS_JOBS_DIR"]) / f"r{size}"
    out = {
        "units": size,
        "run": {k: run[k] for k in ("wall_s", "cpu_s", "peak_rss_mb", "max_process_rss_mb")},
        "direct": {k: direct[k] for k in ("wall_s", "cpu_s", "peak_rss_mb")},
        "trial": trial_disk(job / "u0001"),
        "job": job_disk(job),
    }
    out["ms_per_unit"] = round(1000 * run["wall_s"] / size, 3)
    out["overhead_ms_per_unit"] = round(1000 * (run["wall_s"] - direct["wall_s"]) / size, 3)
    out["cpu_overhead_ms_per_unit"] = round(1000 * (run["cpu_s"] - direct["cpu_s"]) / size, 3)
    out["wall_ratio_over_direct"] = round(run["wall_s"] / direct["wall_s"], 2)
    out["layout_floor"] = layout_floor(job / "u0001", min(size, 20000), root / "floor")
    out["cpu_overhead_over_floor_ms_per_unit"] = round(out["cpu_overhead_ms_per_unit"] - out["layout_floor"]["cpu_ms_per_unit"], 3)
    shutil.rmtree(job)
    if merge:
        halves = []
        for index in (1, 2):
            half = measure([*nullius, "run", "gsm8k-scale", "oracle", "-j", "4", "--dataset", f"x{size}", "--shard", f"{index}/2",
                            "--launch", f"L{size}", "--job-name", f"h{size}-{index}"], cwd, env)
            assert half["returncode"] == 0, half["stderr"][-3000:]
            halves.append(Path(env["NULLIUS_JOBS_DIR"]) / f"h{size}-{index}")
        merged = Path(env["NULLIUS_JOBS_DIR"]) / f"m{size}"
        done = measure([*nullius, "merge", *map(str, halves), "-o", str(merged)], cwd, env)
        assert done["returncode"] == 0, done["stderr"][-3000:]
        result = json.loads((merged / "result.json").read_text())
        assert result["standard"]["passed"] == size, result["standard"]
        out["merge"] = {"wall_s": done["wall_s"], "cpu_s": done["cpu_s"], "peak_rss_mb": done["peak_rss_mb"],
                        "s_per_10k_units": round(done["wall_s"] * 10000 / size, 2)}
        for folder in (*halves, merged):
            shutil.rmtree(folder)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1319,13190,100000")
    parser.add_argument("--merge-sizes", default="13190")
    parser.add_argument("--python", default=sys.executable, help="the Python of the Nullius to measure (another checkout's venv)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    merges = {int(s) for s in args.merge_sizes.split(",") if s}
    with tempfile.TemporaryDirectory(prefix="nullius-scale-") as scratch:
        root = Path(scratch)
        env = {**_env(root), "NULLIUS_CATALOGUE": str(make_catalogue(root, sizes))}
        (root / "cwd").mkdir()
        rows = []
        for size in sizes:
            # absolute, not resolved: the runs start in a scratch folder, and a venv's python is a link
            rows.append(one_size(size, os.path.abspath(args.python), root, env, size in merges))
            if not args.json:
                print(json.dumps(rows[-1]), flush=True)
    if args.json:
        print(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
