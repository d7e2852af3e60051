"""Small calls while one big reply passes: the relay before and after, side by side in one run.

    .venv/bin/python benchmarks/relay_stall.py [--rounds 3] [--mb 50] [--before 9a7933b]

Two relays, each on its own process, in front of one fake upstream: "before"
is the relay's code as of `--before` (a commit, unpacked with `git archive`
into a scratch folder and run from there), "after" is this working tree's.
Each relay has two routes. "direct" is the floor: the same calls straight to
the upstream. Each round, for each of the three in turn:

* quiet: small whole calls on route `small`, one after another, for
  `--quiet-seconds`;
* loaded: the same small calls while one `--mb` MB reply passes on route
  `big` (read by curl as fast as it comes), until that reply has ended:
  a stream of Chat Completions chunks, then, in its own phase, one whole
  JSON body.

It prints the median and p99 of the small calls' latency in each phase, the
loaded p99 minus the quiet p99 (the target: within 50 ms), how long the big
reply took, and each relay's peak resident memory (VmHWM). The machine is
noisy: read the medians and ratios measured here, in the same run.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from io import BytesIO
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from measure import free_port, wait_port  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable
KEY = "sk-upstream-real-key-0123456789abcdef"

SMALL = json.dumps({
    "id": "chatcmpl-small", "object": "chat.completion", "created": 1, "model": "m",
    "choices": [{"index": 0, "message": {"role": "assistant", "content": "a small reply"}, "finish_reason": "stop"}],
    "usage": {"prompt_tokens": 3, "completion_tokens": 3, "total_tokens": 6},
}).encode()


# --- the fake upstream (its own process) -------------------------------------


def serve_upstream(port: int, mb: int) -> None:
    from aiohttp import web

    piece = "word " * 200  # 1,000 characters of text a chunk
    event = b"data: " + json.dumps({"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m",
                                    "choices": [{"index": 0, "delta": {"content": piece}, "finish_reason": None}]}).encode() + b"\n\n"
    count = mb * 2**20 // len(event)
    tail = (b'data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[],'
            b'"usage":{"prompt_tokens":3,"completion_tokens":9,"total_tokens":12}}\n\ndata: [DONE]\n\n')
    batch = event * 64  # written 64 events at a time, as a fast provider's socket would deliver them
    whole = json.dumps({"id": "w", "object": "chat.completion", "created": 1, "model": "m",
                        "choices": [{"index": 0, "message": {"role": "assistant", "content": "word " * (mb * 2**20 // 5)}, "finish_reason": "stop"}],
                        "usage": {"prompt_tokens": 3, "completion_tokens": 9, "total_tokens": 12}}).encode()

    async def chat(request: web.Request) -> web.StreamResponse:
        body = json.loads(await request.read())
        if body.get("model") == "big-stream":
            out = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
            await out.prepare(request)
            for _ in range(count // 64):
                await out.write(batch)
            await out.write(tail)
            await out.write_eof()
            return out
        if body.get("model") == "big-whole":
            # one body with its length, written a MiB at a time, as a server sends a big file; one write of it
            # all would stall this upstream itself for a tenth of a second
            out = web.StreamResponse(headers={"Content-Type": "application/json"})
            out.content_length = len(whole)
            await out.prepare(request)
            for i in range(0, len(whole), 2**20):
                await out.write(whole[i : i + 2**20])
            await out.write_eof()
            return out
        return web.Response(body=SMALL, content_type="application/json")

    app = web.Application(client_max_size=2**20)
    app.router.add_post("/v1/chat/completions", chat)
    web.run_app(app, host="127.0.0.1", port=port, access_log=None, print=None)


# --- a relay, from a given copy of the code (its own process) ----------------

RELAY = r"""
import asyncio, json, os, sys
sys.path.insert(0, sys.argv[1])
from pathlib import Path
from nullius_core.testing.helpers import make_session
from nullius_core.relay import upstreams
from nullius_core.relay.server import Relay

async def main():
    env = {**os.environ, "OPENAI_COMPATIBLE_API_KEY": sys.argv[3]}
    session = make_session(env)
    upstream = upstreams.resolve(session, "openai-compatible", sys.argv[2], env)
    relay = Relay(upstream, upstreams.apis(session, upstream))
    await relay.start()
    record = Path(sys.argv[4])
    routes = {unit: relay.add_route(unit, record / unit).token for unit in ("small", "big")}
    print(json.dumps({"url": relay.base_url, "tokens": routes, "code": sys.modules["nullius_core"].__file__}), flush=True)
    loop = asyncio.get_running_loop()
    done = loop.create_future()
    loop.add_reader(sys.stdin.fileno(), lambda: done.done() or done.set_result(None))
    await done
    await relay.stop()

try:
    import uvloop
    uvloop.run(main())
except ImportError:
    asyncio.run(main())
"""


def unpack(ref: str, into: Path) -> Path:
    """The core and the bundled plugins as of `ref`, unpacked: the relay's code before."""
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", ref, "nullius_core", "nullius_plugins"],
                             capture_output=True, check=True).stdout
    with tarfile.open(fileobj=BytesIO(archive)) as tar:
        tar.extractall(into)
    return into


class Direct:
    """The floor: the same calls straight to the upstream, no relay."""

    def __init__(self, upstream: str):
        self.name = "direct"
        self.urls = {"small": f"{upstream}/chat/completions", "big": f"{upstream}/chat/completions"}
        self.tokens = {"small": "none", "big": "none"}

    def peak_mb(self) -> float:
        return float("nan")

    def close(self) -> None:
        pass


class Relay:
    def __init__(self, name: str, code: Path, upstream: str, record: Path):
        self.name = name
        self.proc = subprocess.Popen([PY, "-c", RELAY, str(code), upstream, KEY, str(record)], cwd=record.parent,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        info = json.loads(self.proc.stdout.readline())
        if not info["code"].startswith(str(code)):
            raise RuntimeError(f"{name}: the relay ran {info['code']}, not the code in {code}")
        self.urls = {unit: f"{info['url']}/{unit}/v1/chat/completions" for unit in ("small", "big")}
        self.tokens = info["tokens"]

    def peak_mb(self) -> float:
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
        return float("nan")

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait(30)


# --- the measurement ---------------------------------------------------------


async def small_calls(relay: Relay | Direct, until) -> list[float]:  # type: ignore[no-untyped-def]
    import aiohttp

    url = relay.urls["small"]
    headers = {"Authorization": f"Bearer {relay.tokens['small']}"}
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    times = []
    async with aiohttp.ClientSession() as http:
        while not until():
            t0 = time.perf_counter()
            async with http.post(url, json=body, headers=headers) as reply:
                await reply.read()
                assert reply.status == 200, reply.status
            times.append((time.perf_counter() - t0) * 1000)
    return times


def big_reply(relay: Relay | Direct, model: str) -> subprocess.Popen:
    body = json.dumps({"model": model, "stream": model == "big-stream", "messages": [{"role": "user", "content": "big"}]})
    return subprocess.Popen(["curl", "-sS", "-N", "-o", "/dev/null", "-w", "%{http_code} %{size_download}",
                             "-H", f"Authorization: Bearer {relay.tokens['big']}", "-H", "Content-Type: application/json",
                             "-d", body, relay.urls["big"]], stdout=subprocess.PIPE, text=True)


def phase(relay: Relay | Direct, model: str | None, quiet_seconds: float) -> dict:
    if model is None:
        deadline = time.monotonic() + quiet_seconds
        return {"ms": asyncio.run(small_calls(relay, lambda: time.monotonic() > deadline))}
    t0 = time.monotonic()
    curl = big_reply(relay, model)
    times = asyncio.run(small_calls(relay, lambda: curl.poll() is not None))
    status, size = curl.stdout.read().split()
    return {"ms": times, "big_s": time.monotonic() - t0, "big_status": int(status), "big_mb": int(size) / 2**20}


def p99(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(0.99 * (len(ordered) - 1))))]


def summary(phases: list[dict]) -> dict:
    times = [t for p in phases for t in p["ms"]]
    out = {"calls": len(times), "median_ms": round(statistics.median(times), 2), "p99_ms": round(p99(times), 2),
           "max_ms": round(max(times), 2)}
    if "big_s" in phases[0]:
        out["big_s_median"] = round(statistics.median(p["big_s"] for p in phases), 2)
        out["big_ok"] = all(p["big_status"] == 200 for p in phases)
        out["big_mb"] = round(statistics.median(p["big_mb"] for p in phases), 1)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--mb", type=int, default=50)
    parser.add_argument("--quiet-seconds", type=float, default=3)
    parser.add_argument("--before", default="9a7933b", help="the commit whose relay is 'before' (default: the last before the relay was hardened)")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--upstream", type=int, help=argparse.SUPPRESS)  # internal: serve the fake upstream on this port
    args = parser.parse_args()
    if args.upstream:
        serve_upstream(args.upstream, args.mb)
        return
    results: dict = {}
    with tempfile.TemporaryDirectory(prefix="nullius-relay-stall-") as scratch_dir:
        scratch = Path(scratch_dir)
        port = free_port()
        upstream = subprocess.Popen([PY, __file__, "--upstream", str(port), "--mb", str(args.mb)])
        relays: list[Relay | Direct] = []
        try:
            wait_port(port)
            base = f"http://127.0.0.1:{port}/v1"
            relays.append(Direct(base))
            before = unpack(args.before, scratch / "before")
            for name, code in (("before", before), ("after", ROOT)):
                (scratch / f"record-{name}").mkdir()
                relays.append(Relay(name, code, base, scratch / f"record-{name}" / "r"))
            kinds = {"quiet": None, "stream": "big-stream", "whole": "big-whole"}
            raw: dict = {r.name: {k: [] for k in kinds} for r in relays}
            for _ in range(args.rounds):
                for relay in relays:
                    for kind, model in kinds.items():
                        raw[relay.name][kind].append(phase(relay, model, args.quiet_seconds))
            for relay in relays:
                results[relay.name] = {kind: summary(phases) for kind, phases in raw[relay.name].items()}
                quiet = results[relay.name]["quiet"]["p99_ms"]
                for kind in ("stream", "whole"):
                    results[relay.name][kind]["p99_over_quiet_ms"] = round(results[relay.name][kind]["p99_ms"] - quiet, 2)
                results[relay.name]["peak_rss_mb"] = round(relay.peak_mb(), 1)
        finally:
            for relay in relays:
                relay.close()
            upstream.terminate()
            upstream.wait(10)
    results["args"] = {"rounds": args.rounds, "mb": args.mb, "before": args.before, "cpus": os.cpu_count()}
    if args.json:
        print(json.dumps(results, indent=2))
        return
    for name in ("direct", "before", "after"):
        for kind in ("quiet", "stream", "whole"):
            print(f"{name:6} {kind:6} {json.dumps(results[name][kind])}")
        if name != "direct":
            print(f"{name:6} peak RSS {results[name]['peak_rss_mb']} MB")


if __name__ == "__main__":
    main()
