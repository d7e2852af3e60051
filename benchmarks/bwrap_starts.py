"""One unit's agent room, from its opening to its close, on the local and the bwrap backends side by side.

    .venv/bin/python benchmarks/bwrap_starts.py [--rounds 40]

What the bwrap backend adds to every agent's unit, without the rest of a run
around it: the room opened (bwrap's door folder and its relay socket), an
agent started (a Python that answers one line, then one call to its relay
route, through the door on bwrap), its reply read, the agent ended and the
room closed. The two backends alternate, round by round, against one relay
and the fake model; printed are the medians and what bwrap adds. A whole
run's figures are bwrap_speed.py's.
"""

from __future__ import annotations

import argparse
import asyncio
import io
import os
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

from nullius_core.contracts.agent import AgentLaunch
from nullius_core.contracts.backend import RouteOptions, RunContext
from nullius_core.relay.server import Relay, Upstream
from nullius_core.relay.upstreams import apis
from nullius_core.run.progress import Progress
from nullius_core.testing import isolated_env
from nullius_core.testing.fake_model import running_fake_model
from nullius_core.testing.helpers import make_session
from nullius_plugins.bwrap_backend import BwrapBackend
from nullius_plugins.local_backend import LocalBackend

AGENT = r"""
import json, os, sys, urllib.request
sys.stdin.readline()
body = json.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}]}).encode()
request = urllib.request.Request(os.environ["URL"] + "/chat/completions", data=body,
                                 headers={"Authorization": "Bearer " + os.environ["TOKEN"], "Content-Type": "application/json"})
print(json.load(urllib.request.urlopen(request, timeout=120))["choices"][0]["message"]["content"], flush=True)
"""


def children_cpu() -> float:
    """CPU seconds of every process this one has started and reaped, and theirs (bwrap, its door, the agent)."""
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


async def one(backend, relay: Relay, root: Path, n: int) -> tuple[float, float]:
    trial = root / f"t{n}"
    cpu = children_cpu()
    started = time.perf_counter()
    place = await backend.prepare_unit(trial / "workspace", trial / "home")
    room = await backend.open_room(relay, f"u{n}", trial / "relay", place, RouteOptions(model=None))
    try:
        launch = AgentLaunch(argv=["python3", "-c", AGENT], cwd=place.workspace, home=place.home, stderr=trial / "stderr.txt", label="agent",
                             env={"URL": room.url, "TOKEN": room.token, "HOME": str(place.home), "PATH": "/usr/bin:/bin"})
        process = await room.start_agent(launch)
        process.stdin.write(b"go\n")
        await process.stdin.drain()
        said = await process.stdout.readline()
        assert said.strip() == b"ok", (said, (trial / "stderr.txt").read_text()[-2000:])
        await process.wait()  # it exits by itself: every process of it reaped, its CPU counted in this process's children's
        await process.end()
    finally:
        await room.close()
    return time.perf_counter() - started, children_cpu() - cpu


async def main(rounds: int) -> None:
    root = Path(tempfile.mkdtemp(prefix="nullius-bwrap-starts-"))
    env = isolated_env(root)
    with running_fake_model({"default": {"text": "ok"}}) as fake:
        session = make_session(env)
        upstream = Upstream(provider=session.providers.get("openai-compatible"), base_url=fake.openai_base_url, key="sk-bench-0123456789")
        relay = Relay(upstream, apis(session, upstream))
        await relay.start()
        backends = {"local": LocalBackend(), "bwrap": BwrapBackend()}
        for name, backend in backends.items():
            await backend.start(RunContext(job="starts", job_dir=root / name, paths=session.paths, progress=Progress(stream=io.StringIO())))
        times: dict[str, list[float]] = {name: [] for name in backends}
        cpus: dict[str, list[float]] = {name: [] for name in backends}
        try:
            for n in range(rounds + 2):
                order = list(backends) if n % 2 == 0 else list(backends)[::-1]
                for name in order:
                    took, cpu = await one(backends[name], relay, root / name, n)
                    if n >= 2:  # the first two rounds warm the page cache
                        times[name].append(took)
                        cpus[name].append(cpu)
        finally:
            await relay.stop()
    local, bwrap = statistics.median(times["local"]), statistics.median(times["bwrap"])
    cpu_l, cpu_b = statistics.median(cpus["local"]), statistics.median(cpus["bwrap"])
    print(f"{rounds} rounds, alternating: one agent's room, start, call, end and close; load average {os.getloadavg()[0]:.1f}")
    print(f"local  wall {local * 1000:7.1f} ms   its processes' CPU {cpu_l * 1000:6.1f} ms")
    print(f"bwrap  wall {bwrap * 1000:7.1f} ms   its processes' CPU {cpu_b * 1000:6.1f} ms   "
          f"adds {(bwrap - local) * 1000:6.1f} ms wall ({bwrap / local:.2f}x), {(cpu_b - cpu_l) * 1000:6.1f} ms CPU a unit")
    os.system(f"rm -rf {root}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=40)
    asyncio.run(main(parser.parse_args().rounds))
    sys.exit(0)
