"""The Inspect AI peer of the speed benchmark: GSM8K over mockllm/model.

    from benchmarks.peers.inspect_env import ensure_inspect_venv, run_inspect_gsm8k
    run_inspect_gsm8k(log=True)   # {"wall_s", "peak_rss_mb", "samples", "accuracy", ...}

or from the command line (what produced the numbers in README.md beside this file):

    python benchmarks/peers/inspect_env.py --runs 3

``ensure_inspect_venv()`` builds, once per machine, a venv holding exactly
``inspect-ai==0.3.285`` at ``~/.cache/nullius-bench/inspect-venv`` (``$XDG_CACHE_HOME``
honoured; ``NULLIUS_INSPECT_VENV`` overrides the path, ``NULLIUS_INSPECT_PYTHON``
the interpreter it is built from, by default the one running this module). The
build runs under an exclusive ``fcntl`` lock beside the venv, and a completion
marker (holding the version, the interpreter, the build time and ``pip freeze``)
is written last: a venv without it, or with another version in it, is rebuilt.

``run_inspect_gsm8k(log)`` runs the peer exactly as
``$NULLIUS_PEERS/inspect_gsm8k.py`` documents it,
``inspect eval inspect_gsm8k.py@gsm8k_mock --model mockllm/model``, from a scratch
copy of that file (the original is never touched), with ``GSM8K_JSONL`` pointing at
the shared dataset seed. ``log=False`` adds Inspect's documented
``--no-log-samples`` ("Do not include samples in the log file"): the eval log is
still written, with its header, results and stats, but without the per-sample
records. Wall time is the whole ``inspect`` process, from spawn to exit; peak RSS
is polled from ``/proc`` over the whole process tree (``peak_rss_mb``, summed over
the live processes at each poll), and the kernel's own high-water mark of the
largest single process is given too (``max_process_rss_mb``, ru_maxrss as
``/usr/bin/time -v`` reports it). Samples and accuracy are read from the eval
log afterwards, outside the timed span.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

INSPECT_VERSION = "0.3.285"
MARKER_NAME = ".nullius-inspect-complete"
sys.path.insert(0, str(Path(__file__).resolve().parent))
from where import peers  # noqa: E402

from nullius_bench_gsm8k.plugin import TEST_SPLIT  # noqa: E402

PEER = Path(os.environ["NULLIUS_INSPECT_PEER"]) if os.environ.get("NULLIUS_INSPECT_PEER") else peers("inspect_gsm8k.py")
DATASET = Path(os.environ.get("NULLIUS_GSM8K_JSONL", str(TEST_SPLIT)))
TASK = "inspect_gsm8k.py@gsm8k_mock"
MODEL = "mockllm/model"
NO_LOG_OPTION = "--no-log-samples"


class InspectVenvBuildFailed(RuntimeError):
    pass


def venv_dir() -> Path:
    override = os.environ.get("NULLIUS_INSPECT_VENV")
    if override:
        return Path(override).expanduser().resolve()
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache / "nullius-bench" / "inspect-venv"


def _marker_ok(venv: Path) -> bool:
    marker = venv / MARKER_NAME
    if not marker.is_file() or not (venv / "bin" / "inspect").exists():
        return False
    try:
        return json.loads(marker.read_text()).get("inspect_ai") == INSPECT_VERSION
    except (OSError, ValueError):
        return False


def build_info() -> dict | None:
    venv = venv_dir()
    return json.loads((venv / MARKER_NAME).read_text()) if _marker_ok(venv) else None


def _run(cmd: list[str], what: str, keep_fds: tuple[int, ...] = ()) -> str:
    # keep_fds: the build lock's fd goes to the children too, so that if this process is killed
    # mid-build, the lock stays held until its orphaned pip has exited as well.
    out = subprocess.run(cmd, capture_output=True, text=True, pass_fds=keep_fds)
    if out.returncode != 0:
        raise InspectVenvBuildFailed(
            f"{what} failed (exit {out.returncode}): {' '.join(cmd)}\n{out.stdout[-4000:]}\n{out.stderr[-4000:]}"
        )
    return out.stdout


def _build(venv: Path, keep_fds: tuple[int, ...] = ()) -> None:
    base = os.environ.get("NULLIUS_INSPECT_PYTHON") or sys.executable
    if venv.is_symlink() or venv.is_file():
        venv.unlink()
    elif venv.exists():
        shutil.rmtree(venv)
    started = time.monotonic()
    _run([base, "-m", "venv", str(venv)], "creating the Inspect venv", keep_fds)
    py = str(venv / "bin" / "python")
    _run([py, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", f"inspect-ai=={INSPECT_VERSION}"],
         f"pip install inspect-ai=={INSPECT_VERSION}", keep_fds)
    got = _run([py, "-c", "import importlib.metadata as m, inspect_ai; print(m.version('inspect-ai'))"],
               "importing inspect_ai").strip()
    if got != INSPECT_VERSION:
        raise InspectVenvBuildFailed(f"inspect-ai {got} installed, {INSPECT_VERSION} wanted")
    info = {
        "inspect_ai": INSPECT_VERSION,
        "python": _run([py, "-c", "import sys; print(sys.version.split()[0])"], "python version").strip(),
        "base_python": base,
        "build_seconds": round(time.monotonic() - started, 1),
        "built_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "freeze": _run([py, "-m", "pip", "freeze", "--all"], "pip freeze").split(),
    }
    tmp = venv / (MARKER_NAME + ".tmp")
    tmp.write_text(json.dumps(info, indent=2) + "\n")
    os.replace(tmp, venv / MARKER_NAME)  # last: the venv is complete
    print(f"[nullius] built inspect-ai {INSPECT_VERSION} venv at {venv} in {info['build_seconds']}s", file=sys.stderr)


def ensure_inspect_venv() -> Path:
    """The venv holding exactly inspect-ai==INSPECT_VERSION, built once per machine."""
    venv = venv_dir()
    if _marker_ok(venv):
        return venv
    venv.parent.mkdir(parents=True, exist_ok=True)
    with open(venv.parent / (venv.name + ".lock"), "a+") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            if not _marker_ok(venv):
                _build(venv, (lock.fileno(),))
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
    return venv


# --- measuring a process tree -------------------------------------------------------------

# The measuring is shared with the other speed benchmarks.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from measure import measure as _measure  # noqa: E402


_READ_LOG = r"""
import json, sys
from inspect_ai.log import list_eval_logs, read_eval_log
logs = list_eval_logs(sys.argv[1])
assert len(logs) == 1, f"expected one eval log, found {len(logs)}"
log = read_eval_log(logs[0], header_only=True)
acc = None
for score in (log.results.scores if log.results else []):
    if "accuracy" in score.metrics:
        acc = score.metrics["accuracy"].value
        break
full = read_eval_log(logs[0])
print(json.dumps({
    "status": log.status,
    "samples": log.results.total_samples if log.results else 0,
    "completed_samples": log.results.completed_samples if log.results else 0,
    "accuracy": acc,
    "samples_in_log": len(full.samples or []),
    "log_file": logs[0].name,
}))
"""


def run_inspect_gsm8k(log: bool, *, keep: bool = False) -> dict:
    """Run the Inspect GSM8K peer once, with (log=True) or without its per-sample log.

    Returns {"wall_s", "peak_rss_mb", "samples", "accuracy"} plus
    "max_process_rss_mb", "log_bytes", "samples_in_log", "argv" and "scratch" (kept only if keep=True).
    """
    venv = ensure_inspect_venv()
    scratch = Path(tempfile.mkdtemp(prefix="inspect-gsm8k-"))
    try:
        shutil.copy2(PEER, scratch / PEER.name)  # a copy: the shared peer file is never modified
        env = dict(os.environ)
        env.update(
            {
                "GSM8K_JSONL": str(DATASET),  # the copy no longer sits beside ../datasets
                "INSPECT_LOG_DIR": str(scratch / "logs"),
                "PATH": f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}",
                "VIRTUAL_ENV": str(venv),
            }
        )
        env.pop("PYTHONPATH", None)
        argv = [str(venv / "bin" / "inspect"), "eval", TASK, "--model", MODEL]
        if not log:
            argv.append(NO_LOG_OPTION)
        run = _measure(argv, scratch, env)
        if run["returncode"] != 0:
            raise RuntimeError(f"inspect eval failed (exit {run['returncode']}):\n{run['stdout'][-3000:]}\n{run['stderr'][-3000:]}")
        parsed = json.loads(_run([str(venv / "bin" / "python"), "-c", _READ_LOG, str(scratch / "logs")], "reading the eval log"))
        log_bytes = sum(p.stat().st_size for p in (scratch / "logs").iterdir())
        return {
            "wall_s": run["wall_s"],
            "peak_rss_mb": run["peak_rss_mb"],
            "samples": parsed["samples"],
            "accuracy": parsed["accuracy"],
            "max_process_rss_mb": run["max_process_rss_mb"],
            "samples_in_log": parsed["samples_in_log"],
            "log_bytes": log_bytes,
            "status": parsed["status"],
            "argv": ["inspect", *argv[1:]],
            "scratch": str(scratch) if keep else None,
        }
    finally:
        if not keep:
            shutil.rmtree(scratch, ignore_errors=True)


def benchmark(runs: int = 3) -> dict:
    """`runs` runs each way, alternating with/without the log; medians and every run."""
    ensure_inspect_venv()
    results: dict[str, list[dict]] = {"with_log": [], "without_log": []}
    for _ in range(runs):
        results["with_log"].append(run_inspect_gsm8k(log=True))
        results["without_log"].append(run_inspect_gsm8k(log=False))
    summary = {}
    for key, rs in results.items():
        summary[key] = {
            "median_wall_s": round(statistics.median(r["wall_s"] for r in rs), 2),
            "median_peak_rss_mb": round(statistics.median(r["peak_rss_mb"] for r in rs), 1),
            "median_max_process_rss_mb": round(statistics.median(r["max_process_rss_mb"] for r in rs), 1),
            "samples": sorted({r["samples"] for r in rs}),
            "accuracy": sorted({r["accuracy"] for r in rs}),
            "runs": rs,
        }
    info = build_info() or {}
    summary["inspect_ai"] = INSPECT_VERSION
    summary["python"] = info.get("python")
    summary["venv_build_seconds"] = info.get("build_seconds")
    return summary


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--once", choices=["log", "nolog"], help="a single run, printed as JSON")
    args = parser.parse_args()
    if args.once:
        print(json.dumps(run_inspect_gsm8k(log=args.once == "log"), indent=2))
    else:
        print(json.dumps(benchmark(args.runs), indent=2))
