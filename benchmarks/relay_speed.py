"""The relay's speed, side by side on loopback: direct to the fake upstream, through the floor, through the relay.

    .venv/bin/pip install -e '.[bench]'      # httptools, for the load generator
    .venv/bin/python benchmarks/relay_speed.py [--seconds 6] [--memory-calls 100000]

The peers are in $NULLIUS_PEERS/relay/: `upstream.py` (a fast fake OpenAI
upstream), `minimal_proxy.py` (the floor: sixty lines of aiohttp that forward
and append one line per call) and `loadgen.py` (a closed-loop keep-alive load
generator). The relay runs as `nullius relay serve`, recording everything
(calls.jsonl, bodies.jsonl, gateway.log, cleaned).

Measured, each against the same upstream in the same session:
* added latency at p50 with one connection, non-streaming and to the first
  streamed event (the proxy's p50 minus the direct p50);
* CPU per call of each proxy process, from its own /proc counters, under a
  load of 32 connections; calls a second one core could carry (1 / CPU per call);
  the same for streamed calls;
* the relay's resident memory before and after --memory-calls calls;
* how long `relay serve` takes to be ready (its JSON line).
On two cores the load generator shares the CPU, so read CPU per call and the
ratios, not absolute rates.
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
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from measure import free_port, wait_port  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
from peers.where import peers  # noqa: E402

PEERS = peers("relay")
PY = sys.executable
TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def rss_mb(pid: int) -> float:
    return int(Path(f"/proc/{pid}/statm").read_text().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def load(url: str, token: str, stream: bool, conc: int, seconds: float, max_requests: int = 10**9, warmup: float = 1.0) -> dict:
    argv = [PY, str(PEERS / "loadgen.py"), "--url", url, "--auth", token, "--stream", str(int(stream)),
            "--conc", str(conc), "--duration", str(seconds), "--warmup", str(warmup), "--max-requests", str(max_requests)]
    done = subprocess.run(argv, capture_output=True, text=True, check=True, timeout=seconds + warmup + 600)
    return json.loads(done.stdout)


class Target:
    def __init__(self, name: str, url: str, token: str, pid: int | None):
        self.name, self.url, self.token, self.pid = name, url, token, pid


def start_relay(upstream_port: int, record: Path) -> tuple[subprocess.Popen, Target, float]:
    env = {**os.environ, "OPENAI_API_KEY": "sk-upstream-real-key-0123456789", "PYTHONUNBUFFERED": "1"}
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        [PY, "-m", "nullius_core", "relay", "serve", "--provider", "openai", "--base-url",
         f"http://127.0.0.1:{upstream_port}/v1", "--record", str(record)],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env,
    )
    info = json.loads(proc.stdout.readline())
    ready = time.perf_counter() - t0
    return proc, Target("relay", info["base_url"] + "/chat/completions", info["token"], proc.pid), ready


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=6)
    parser.add_argument("--memory-calls", type=int, default=100_000)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    procs: list[subprocess.Popen] = []
    report: dict = {}
    with tempfile.TemporaryDirectory(prefix="nullius-relay-bench-") as scratch:
        try:
            up_port, floor_port = free_port(), free_port()
            procs.append(subprocess.Popen([PY, str(PEERS / "upstream.py"), "--port", str(up_port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
            wait_port(up_port)
            floor = subprocess.Popen(
                [PY, str(PEERS / "minimal_proxy.py"), "--port", str(floor_port), "--upstream", f"http://127.0.0.1:{up_port}",
                 "--log", str(Path(scratch) / "floor.jsonl")],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            )
            procs.append(floor)
            wait_port(floor_port)
            readies = []
            for i in range(5):
                proc, _, ready = start_relay(up_port, Path(scratch) / f"ready{i}")
                readies.append(ready)
                proc.terminate()
                proc.wait()
            relay, relay_target, _ = start_relay(up_port, Path(scratch) / "relay")
            procs.append(relay)
            targets = [
                Target("direct", f"http://127.0.0.1:{up_port}/v1/chat/completions", "sk-client-side", None),
                Target("floor", f"http://127.0.0.1:{floor_port}/v1/chat/completions", "sk-client-side", floor.pid),
                relay_target,
            ]
            latency = {t.name: load(t.url, t.token, False, 1, args.seconds) for t in targets}
            stream = {t.name: load(t.url, t.token, True, 1, args.seconds) for t in targets}
            cpu = {}
            for t in targets[1:]:
                before = cpu_seconds(t.pid)
                result = load(t.url, t.token, False, 32, args.seconds, warmup=0)
                used = cpu_seconds(t.pid) - before
                cpu[t.name] = {"cpu_s": used, "result": result}
            streamed = {}  # the streamed path (each read kept, its sizes recorded for replay) under the same load
            for t in targets[1:]:
                before = cpu_seconds(t.pid)
                result = load(t.url, t.token, True, 32, args.seconds, warmup=0)
                streamed[t.name] = {"cpu_s": cpu_seconds(t.pid) - before, "result": result}
            before_mb = rss_mb(relay.pid)
            mem = load(relay_target.url, relay_target.token, False, 32, 3600, max_requests=args.memory_calls, warmup=0)
            after_mb = rss_mb(relay.pid)
            report = summarise(latency, stream, cpu, readies, before_mb, after_mb, mem, Path(scratch) / "relay")
            per_stream = {k: 1000 * v["cpu_s"] / max(1, _count(v["result"])) for k, v in streamed.items()}
            report["cpu_ms_per_streamed_call"] = {k: round(v, 3) for k, v in per_stream.items()}
            report["cpu_ratio_streamed_relay_over_floor"] = round(per_stream["relay"] / per_stream["floor"], 3)
        finally:
            for proc in procs:
                proc.terminate()
            for proc in procs:
                proc.wait(timeout=10)
    print(json.dumps(report, indent=2) if args.json else render(report))




def summarise(latency, stream, cpu, readies, before_mb, after_mb, mem, record: Path) -> dict:  # type: ignore[no-untyped-def]
    lat = {k: v["lat_p50_ms"] for k, v in latency.items()}
    ttfb = {k: v["ttfb_p50_ms"] for k, v in stream.items()}
    per_call = {k: 1000 * v["cpu_s"] / max(1, _count(v["result"])) for k, v in cpu.items()}
    calls_recorded = sum(1 for _ in open(record / "calls.jsonl")) if (record / "calls.jsonl").exists() else 0
    return {
        "added_latency_p50_ms": {k: round(v - lat["direct"], 3) for k, v in lat.items() if k != "direct"},
        "added_ttfb_p50_ms": {k: round(v - ttfb["direct"], 3) for k, v in ttfb.items() if k != "direct"},
        "cpu_ms_per_call": {k: round(v, 3) for k, v in per_call.items()},
        "calls_per_second_on_one_core": {k: round(1000 / v) for k, v in per_call.items() if v},
        "cpu_ratio_relay_over_floor": round(per_call["relay"] / per_call["floor"], 3),
        "ready_s_median": round(statistics.median(readies), 3),
        "relay_rss_mb": {"before": round(before_mb, 1), "after": round(after_mb, 1), "calls": _count(mem), "errors": mem["errors"]},
        "calls_recorded": calls_recorded,
        "raw": {"latency": latency, "stream": stream},
    }


def _count(result: dict) -> int:
    """Every call the load made, its warm-up's included (the CPU counters saw them all)."""
    return int(result["total_incl_warmup"])


def render(report: dict) -> str:
    lines = []
    for key, value in report.items():
        if key != "raw":
            lines.append(f"{key}: {json.dumps(value)}")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
