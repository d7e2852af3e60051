"""The Backend contract, checked on a real backend: local and docker pass it, and a plugin's backend must.

`check_backend(factory, root, env)` runs one agent unit's worth of the
contract (nullius_core/contracts/backend.py's `Backend`) against a real relay and
the fake model, with a small agent program of its own, and returns the rules
the backend broke, each as one line (an empty list: it keeps them all):

    from nullius_core.testing.backend_contract import check_backend
    assert check_backend(MyBackend, tmp_path, nullius_env) == []
"""

from __future__ import annotations

import asyncio
import io
import json
import os
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from nullius_core.contracts.agent import AgentLaunch
from nullius_core.contracts.backend import RouteOptions, RunContext, missing_methods
from nullius_core.relay.server import Relay, Upstream
from nullius_core.relay.upstreams import apis
from nullius_core.run.progress import Progress
from nullius_core.testing.fake_model import running_fake_model
from nullius_core.testing.helpers import make_session

KEY = "sk-contract-held-by-the-relay-0123456789"
REPLY = "the contract's reply"
SLEEPER = "6061"  # `sleep 6061`: the child the agent leaves in its group, found by its argv

# The agent: it writes into its working folder, calls its route through the room, leaves a child, and waits to be ended.
AGENT = r"""
import json, os, subprocess, sys, urllib.request
line = sys.stdin.readline()
with open("contract.txt", "w") as out:
    out.write(line)
body = json.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}]}).encode()
request = urllib.request.Request(os.environ["CONTRACT_URL"] + "/chat/completions", data=body, headers={
    "Authorization": "Bearer " + os.environ["CONTRACT_TOKEN"], "Content-Type": "application/json"})
reply = json.load(urllib.request.urlopen(request, timeout=120))
subprocess.Popen(["sleep", "%s"])
print(json.dumps({"home": os.environ.get("HOME"), "reply": reply["choices"][0]["message"]["content"],
                  "key": [k for k, v in os.environ.items() if "sk-contract" in v]}), flush=True)
sys.stdin.readline()
""" % SLEEPER


def sleepers() -> list[int]:
    """The contract agent's children still alive anywhere on this machine (a container's included: one kernel)."""
    found = []
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                argv = Path(f"/proc/{entry.name}/cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if argv[:2] == [b"sleep", SLEEPER.encode()]:
                found.append(int(entry.name))
    return found


def check_backend(factory: Callable[[], Any], root: Path, env: Mapping[str, str]) -> list[str]:
    """The rules of the Backend contract the backend made by `factory` broke."""
    with running_fake_model({"default": {"text": REPLY}}) as fake:
        return asyncio.run(_check(factory, root, env, fake.openai_base_url))


async def _check(factory: Callable[[], Any], root: Path, env: Mapping[str, str], base_url: str) -> list[str]:
    broken: list[str] = []
    backend = factory()
    missing = missing_methods(backend)
    if missing:
        return [f"lacks what the engine calls: {', '.join(missing)}"]
    session = make_session(env)
    upstream = Upstream(provider=session.providers.get("openai-compatible"), base_url=base_url, key=KEY)
    relay = Relay(upstream, apis(session, upstream))
    await relay.start()
    job = root / "job"
    job.mkdir(parents=True, exist_ok=True)
    await backend.start(RunContext(job="contract", job_dir=job, paths=session.paths, progress=Progress(stream=io.StringIO())))
    try:
        record = backend.record()
        if not isinstance(record, dict) or record.get("name") != backend.name:
            broken.append(f"record() does not name the backend {backend.name!r}: {record!r}")
        broken += await _unit(backend, relay, job / "u0000")
    finally:
        await backend.close()
        await relay.stop()
    if sleepers():
        broken.append(f"close() left the agent's child alive: pids {sleepers()}")
    return broken


async def _unit(backend: Any, relay: Relay, trial: Path) -> list[str]:
    broken: list[str] = []
    place = await backend.prepare_unit(trial / "workspace", trial / "home")
    if not (place.workspace.is_dir() and (place.workspace / ".git" / "HEAD").is_file() and place.home.is_dir()):
        broken.append("prepare_unit() did not make the workspace (a git repository) and HOME")
    kept = await backend.use_environment(place, None, "agent", None)
    if (kept.workspace, kept.home) != (place.workspace, place.home):
        broken.append("use_environment(None) moved the unit's workspace or HOME")
    room = await backend.open_room(relay, "u0000", trial / "relay", kept, RouteOptions(model=None))
    try:
        launch = AgentLaunch(argv=["python3", "-c", AGENT], cwd=kept.workspace, home=kept.home, stderr=trial / "stderr.txt",
                             label="the contract's agent",
                             env={"CONTRACT_URL": room.url, "CONTRACT_TOKEN": room.token, "HOME": str(kept.home),
                                  "PATH": os.environ.get("PATH", "/usr/bin:/bin")})
        try:
            process = await room.start_agent(launch)
        except Exception as exc:  # noqa: BLE001 - a backend that cannot start the agent breaks the contract, named
            return [*broken, f"start_agent() failed: {type(exc).__name__}: {exc}"]
        process.stdin.write(b"hello from the engine\n")
        await process.stdin.drain()
        line = await asyncio.wait_for(process.stdout.readline(), 300)
        said = json.loads(line) if line.strip() else {}
        if not said:
            stderr = (trial / "stderr.txt").read_text(errors="replace")[-2000:] if (trial / "stderr.txt").exists() else ""
            broken.append(f"the agent said nothing on its stdout (its stderr: {stderr!r})")
        if said and said.get("reply") != REPLY:
            broken.append(f"the agent's call through its room did not reach the model: {said.get('reply')!r}")
        if said.get("key"):
            broken.append(f"the provider's key is in the agent's environment: {said['key']}")
        written = kept.workspace / "contract.txt"
        if not written.is_file() or written.read_text() != "hello from the engine\n":
            broken.append("what the agent wrote in its working folder is not in the unit's workspace here")
        killed = await process.end()  # what had to be killed after TERM: a list of strings
        if not isinstance(killed, list) or sleepers():
            broken.append(f"end() left the agent's child alive: pids {sleepers()} (it said {killed!r})")
    finally:
        await room.close()
    calls = [json.loads(x) for x in (trial / "relay" / "calls.jsonl").read_text().splitlines()] if (trial / "relay" / "calls.jsonl").exists() else []
    if [c.get("status") for c in calls] != [200]:
        broken.append(f"the relay did not record the agent's one call on its route: {[c.get('status') for c in calls]}")
    launch = backend.capability_launch(_driver_launch(trial), [trial], "u0000")
    if not getattr(launch, "argv", None):
        broken.append("capability_launch() gave no command")
    return broken


def _driver_launch(trial: Path) -> Any:
    from nullius_core.contracts.driver import DriverLaunch

    return DriverLaunch(argv=[sys.executable, "-c", "pass"], env={}, cwd=trial, label="a capability")
