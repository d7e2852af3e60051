"""The produce phase of a capability's unit: a fresh process, the sessions added, the question recalled.

Nullius sends `add` and `recall`; the driver's `produce` reads the recall
(with the model, through the unit's relay route, when the run has one). The
capability's whole reply, its `trace` included, is recorded; the benchmark
reads only the port's fields.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import attrs

from nullius_core.contracts.driver import OP_SECONDS, Driver, DriverError, DriverLaunch
from nullius_core.fsutil import append_line
from nullius_core.jobs.layout import TrialDir
from nullius_core.jobs.records import iso, utcnow
from nullius_core.run.install import prefetch_folder
from nullius_core.run.launch import fill, machine_python, process_env
from nullius_core.run.prepare import Prepared

CAPABILITY_SECONDS = 300.0


class CapabilityFailed(Exception):
    def __init__(self, kind: str, message: str):
        self.kind = kind
        super().__init__(message)


@attrs.define
class CapabilityRun:
    answer: str
    memory: str
    steps: list[dict[str, Any]]


def launch(prepared: Prepared, trial: TrialDir) -> DriverLaunch:
    capability = prepared.agent
    resolved = capability.resolved
    slots = {"here": str(capability.entry.folder), "install": str(capability.install_dir or "")}
    argv = [fill(a, slots) for a in resolved.start]
    if argv and argv[0] in ("python3", "python"):
        argv[0] = str(machine_python())
    env = process_env()
    env.update({k: fill(v, slots) for k, v in resolved.env.items()})
    env.update({f"NULLIUS_OPTION_{k.upper()}": v for k, v in capability.options.items()})
    env["NULLIUS_PREFETCH"] = prefetch_folder(Path(capability.install_dir) if capability.install_dir else None, resolved.install)
    env["PYTHONUNBUFFERED"] = "1"
    trial.work.mkdir(parents=True, exist_ok=True)
    return DriverLaunch(argv=argv, env=env, cwd=trial.work, label=f"capability {resolved.ref}")


async def produce(
    prepared: Prepared, driver: Driver, trial: TrialDir, setup: dict[str, Any], base: dict[str, Any], route: Any, relay: Any, model: str | None, backend: Any
) -> CapabilityRun:
    sessions = setup.get("sessions")
    question = setup.get("question")
    if not isinstance(sessions, list) or not isinstance(question, str):
        raise CapabilityFailed("EnvironmentSetupError", "a capability benchmark's setup replies {sessions: [...], question: ...}")
    log = trial.agent / "capability.jsonl"
    steps: list[dict[str, Any]] = [{"source": "user", "message": question, "timestamp": iso(utcnow())}]
    capability = prepared.agent
    reads = [Path(p) for p in (capability.install_dir, capability.entry.folder) if p]
    process = capability.runner.factory(backend.capability_launch(launch(prepared, trial), reads, trial.name))
    process.log_to(trial.log)
    try:
        for session in sessions:
            reply = await _call(process, "add", {"session": session}, log)
            steps.append({"source": "system", "message": f"add session {session.get('id')}", "timestamp": iso(utcnow()),
                          "extra": {"session_id": session.get("id"), "trace": reply.get("trace")}})
        reply = await _call(process, "recall", {"question": question}, log)
    finally:
        await process.close()
    memory = reply.get("memory")
    if not isinstance(memory, str):
        raise CapabilityFailed("CapabilityError", "recall replied without memory (a string)")
    steps.append({"source": "agent", "message": memory, "timestamp": iso(utcnow()), "extra": {"trace": reply.get("trace")}})
    request = {**base, "dir": str(trial.workspace), "question": question, "memory": memory,
               "base_url": relay.url(trial.name) if route is not None else None,
               "key": route.token if route is not None else None, "model": model}
    try:
        produced = await driver.call("produce", request, OP_SECONDS["produce"])
    except DriverError as exc:
        raise CapabilityFailed("ProduceError", str(exc)) from None
    answer = produced.get("answer")
    if not isinstance(answer, str):
        raise CapabilityFailed("ProduceError", "produce replied without an answer string")
    steps.append({"source": "agent", "message": answer, "timestamp": iso(utcnow()), "extra": {"produced": True}})
    return CapabilityRun(answer=answer, memory=memory, steps=steps)


async def _call(process: Driver, op: str, request: dict[str, Any], log: Path) -> dict[str, Any]:
    append_line(log, {"at": iso(utcnow()), "dir": "out", "msg": {"op": op, **request}})
    try:
        reply = await process.call(op, request, CAPABILITY_SECONDS)
    except DriverError as exc:
        append_line(log, {"at": iso(utcnow()), "dir": "error", "msg": {"op": op, "error": str(exc)}})
        raise CapabilityFailed("CapabilityError", str(exc).replace("driver op", "capability op")) from None
    append_line(log, {"at": iso(utcnow()), "dir": "in", "msg": reply})
    return reply
