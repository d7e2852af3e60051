"""One unit's agent room, from its opening to its close, on the local and the bwrap backends side by side.

    .venv/bin/python benchmarks/bwrap_starts.py [--rounds 40]

What the bwrap backend adds to every agent's unit, without the rest of a run
around it: the room opened, an agent started (on bwrap, in its sandbox
with its door made and served: a Python that answers one line, then one
call to its relay route, through the door on bwrap), its reply read, the agent ended and the
room closed. The two backends alternate, round by round, against one relay
and the fake model; printed are the medians and what bwrap adds. Then the
parts of a sandbox's start, each alone, alternating: `true` directly, a
bare Python (`python3 -I -S -c pass`), the sandbox around `true`, and the
sandbox around `true` with its door (bwrap held by --block-fd while the
run's helper makes the door's listeners in the sandbox's namespace and
this process serves them). A whole run's figures are bwrap_speed.py's.
"""

from __future__ import annotations

import argparse
import asyncio
import io
import os
import statistics
import subprocess
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
from nullius_core.sandbox.door import BRIDGE
from nullius_plugins.bwrap_backend import BwrapBackend, sandbox
from nullius_plugins.bwrap_backend.door import open_door
from nullius_plugins.bwrap_backend.maker import ListenerMaker
from nullius_plugins.local_backend import LocalBackend

AGENT = r"""
import json, os, sys, urllib.request
sys.stdin.readline()
body = json.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}]}).encode()
request = urllib.request.Request(os.environ["URL"] + "/chat/completions", data=body,
                                 headers={"Authorization": "Bearer " + os.environ["TOKEN"], "Content-Type": "application/json"})
print(json.load(urllib.request.urlopen(request, timeout=120))["choices"][0]["message"]["content"], flush=True)
"""


async def one(backend, relay: Relay, root: Path, n: int) -> float:
    trial = root / f"t{n}"
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
        await process.wait()  # it exits by itself, on both backends
        await process.end()
    finally:
        await room.close()
    return time.perf_counter() - started


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
        try:
            for n in range(rounds + 2):
                order = list(backends) if n % 2 == 0 else list(backends)[::-1]
                for name in order:
                    took = await one(backends[name], relay, root / name, n)
                    if n >= 2:  # the first two rounds warm the page cache
                        times[name].append(took)
            report(times)
            await parts(root, rounds, relay.base_url)
        finally:
            await backends["bwrap"].close()
            await relay.stop()
    os.system(f"rm -rf {root}")


def report(times: dict[str, list[float]]) -> None:
    local, bwrap = statistics.median(times["local"]), statistics.median(times["bwrap"])
    print(f"{len(times['local'])} rounds, alternating: one agent's room, start, call, end and close; load average {os.getloadavg()[0]:.1f}")
    print(f"local  median {local * 1000:7.1f} ms")
    print(f"bwrap  median {bwrap * 1000:7.1f} ms   adds {(bwrap - local) * 1000:6.1f} ms a unit ({bwrap / local:.2f}x)")


async def parts(root: Path, rounds: int, relay_url: str) -> None:
    python, prefix = sandbox.python_home()
    work = root / "work"
    work.mkdir()
    maker = ListenerMaker()
    await maker.start("bwrap_starts")
    shown = {"cwd": work, "writes": [work], "reads": [prefix, BRIDGE.parent]}
    cases = {
        "true": ["true"],
        "python3 -I -S -c pass": [str(python), "-I", "-S", "-c", "pass"],
        "sandbox: true": sandbox.argv("/usr/bin/bwrap", ["true"], **shown),
    }
    took: dict[str, list[float]] = {name: [] for name in [*cases, "sandbox: its door, then true"]}
    for _ in range(rounds):
        for name, argv in cases.items():
            started = time.perf_counter()
            subprocess.run(argv, env={"PATH": sandbox.SYSTEM_PATH}, check=True)
            took[name].append(time.perf_counter() - started)
        started = time.perf_counter()
        await door_then_true(maker, shown, relay_url)
        took["sandbox: its door, then true"].append(time.perf_counter() - started)
    await maker.close()
    print("the parts, each alone: " + ", ".join(f"{name} {statistics.median(v) * 1000:.1f} ms" for name, v in took.items()))


async def door_then_true(maker: ListenerMaker, shown: dict, relay_url: str) -> None:
    """As the room starts its sandbox: bwrap held until its door listens, then `true`."""
    info, block = os.pipe(), os.pipe()
    argv = sandbox.argv("/usr/bin/bwrap", ["true"], **shown, options=["--info-fd", str(info[1]), "--block-fd", str(block[0])])
    proc = await asyncio.create_subprocess_exec(*argv, env={"PATH": sandbox.SYSTEM_PATH}, pass_fds=(info[1], block[0]))
    os.close(info[1])
    os.close(block[0])
    try:
        servers = await open_door(maker, info[0], block[1], relay_url, None)
    finally:
        os.close(block[1])
    assert await proc.wait() == 0
    for server in servers:
        server.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=40)
    asyncio.run(main(parser.parse_args().rounds))
    sys.exit(0)
