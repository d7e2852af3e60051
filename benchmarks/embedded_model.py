"""The embedded model and the reference agent's start, measured (medians; the machine is shared and noisy).

  .venv/bin/python benchmarks/embedded_model.py [--runs 5] [--units 5] [--before COMMIT]

1. The reference agent's start: spawn agent.py, send ACP `initialize`, read its
   answer; wall time to the answer and the process's CPU once its stdin closes.
   "before" is agent.py at COMMIT (default: the commit before the standard-library
   rewrite), run on this venv (which has the acp, openai and mcp SDKs); "after"
   is the working tree's. Alternated run by run.
2. The embedded model's server (provider embedded, as a run starts it): its
   load, then completion tokens per second of a reply with no tools and of one
   offered the reference agent's four tools, for threads 1 and 2.
3. Seconds per unit: `nullius run gsm8k reference --provider embedded --limit N`,
   each trial's wall time from its result.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
AGENT = ROOT / "plugins/nullius-agent-reference/nullius_agent_reference/catalogue/agents/reference"
BEFORE = "d5a9c48"  # the reference agent on the acp and openai SDKs
INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1, "clientCapabilities": {}}}


def agent_start(folder: Path) -> tuple[float, float]:
    """(seconds to the initialize answer, CPU seconds of the whole process)."""
    began = time.perf_counter()
    proc = subprocess.Popen([sys.executable, str(folder / "agent.py")], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, cwd=folder)
    proc.stdin.write((json.dumps(INIT) + "\n").encode())
    proc.stdin.flush()
    answer = proc.stdout.readline()
    wall = time.perf_counter() - began
    assert json.loads(answer)["id"] == 1, answer
    proc.stdin.close()
    _, _, usage = os.wait4(proc.pid, 0)
    return wall, usage.ru_utime + usage.ru_stime


def old_agent(commit: str, into: Path) -> Path:
    for name in ("agent.py", "reference_loop.py", "reference_mcp.py", "reference_tools.py"):
        path = AGENT.relative_to(ROOT) / name
        (into / name).write_bytes(subprocess.run(["git", "show", f"{commit}:{path}"], cwd=ROOT, check=True, capture_output=True).stdout)
    return into


def bench_start(runs: int, commit: str) -> dict:
    with tempfile.TemporaryDirectory() as scratch:
        before = old_agent(commit, Path(scratch))
        got: dict[str, list[tuple[float, float]]] = {"before": [], "after": []}
        for _ in range(runs):
            got["before"].append(agent_start(before))
            got["after"].append(agent_start(AGENT))
    return {k: {"wall_s": round(statistics.median(w for w, _ in v), 3), "cpu_s": round(statistics.median(c for _, c in v), 3)} for k, v in got.items()}


TOOLS = json.loads(subprocess.run(
    [sys.executable, "-c", f"import sys, json; sys.path.insert(0, {str(AGENT)!r}); from reference_tools import TOOL_SPECS; print(json.dumps(TOOL_SPECS))"],
    check=True, capture_output=True, text=True).stdout)
QUESTION = "Natalia sold clips to 48 of her friends in April, and then she sold half as many clips in May. How many clips did Natalia sell altogether in April and May?"


def ask(url: str, tools: bool) -> tuple[float, int]:
    body = {"messages": [{"role": "user", "content": QUESTION}], "max_tokens": 128, **({"tools": TOOLS} if tools else {})}
    began = time.perf_counter()
    with urllib.request.urlopen(urllib.request.Request(url + "/chat/completions", json.dumps(body).encode())) as reply:
        usage = json.load(reply)["usage"]
    return time.perf_counter() - began, usage["completion_tokens"]


async def bench_server(runs: int, threads: int) -> dict:
    from nullius_core.paths import Paths
    from nullius_core.plugins import ServeContext
    from nullius_model_embedded.served import EmbeddedServer

    class Quiet:
        def stage(self, *a, **k) -> None:
            pass

    os.environ["NULLIUS_EMBEDDED_THREADS"] = str(threads)
    server = EmbeddedServer(ServeContext(paths=Paths.from_env(), model=None, concurrency=1, progress=Quiet()))
    await asyncio.to_thread(server.prepare)
    began = time.perf_counter()
    url = await server.start()
    ready = time.perf_counter() - began
    try:
        out = {"threads": threads, "ready_s": round(ready, 2)}
        for tools in (False, True):
            rates = []
            for _ in range(runs):
                seconds, tokens = await asyncio.to_thread(ask, url, tools)
                rates.append(tokens / seconds)
            out["tok_s_tools" if tools else "tok_s"] = round(statistics.median(rates), 1)
        return out
    finally:
        await server.stop()


def bench_units(units: int) -> dict:
    with tempfile.TemporaryDirectory() as jobs:
        done = subprocess.run([str(ROOT / ".venv/bin/nullius"), "run", "gsm8k", "reference", "--provider", "embedded", "--limit", str(units),
                               "-j", "1", "--unsandboxed", "--jobs-dir", jobs], capture_output=True, text=True)
        assert done.returncode == 0, done.stderr[-2000:]
        job = Path(done.stdout.strip().splitlines()[-1])
        walls, calls = [], 0
        for result in job.glob("*/result.json"):
            r = json.loads(result.read_text())
            walls.append((datetime.fromisoformat(r["finished_at"].rstrip("Z")) - datetime.fromisoformat(r["started_at"].rstrip("Z"))).total_seconds())
            calls += len((result.parent / "agent" / "calls.jsonl").read_text().splitlines())
        summary = json.loads((job / "result.json").read_text())["standard"]
    return {"units": len(walls), "s_per_unit_median": round(statistics.median(walls), 2), "model_calls": calls,
            "passed": summary.get("passed"), "mean": summary.get("mean")}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--units", type=int, default=5)
    parser.add_argument("--before", default=BEFORE)
    args = parser.parse_args()
    print(json.dumps({"agent_start": bench_start(args.runs, args.before)}))
    for threads in (1, 2):
        print(json.dumps({"server": asyncio.run(bench_server(args.runs, threads))}))
    print(json.dumps({"gsm8k_units": bench_units(args.units)}))


if __name__ == "__main__":
    main()
