"""The produce phase of an agent's unit: its relay route, its process, its conversation, its record.

The agent gets the relay's URL for its unit and a token that opens that unit's
route alone; the provider's key stays in the relay. Its HOME, PATH and locale
are its own. Whatever happens, its whole process group is ended and its
route's calls are recorded before the unit is scored.
"""

from __future__ import annotations

import asyncio

import os
import shutil
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs

from nullius_core.contracts.agent import AgentLaunch, AgentOutcome, Conversation, McpServerEntry
from nullius_core.contracts.backend import Backend, RouteOptions, UnitPlace
from nullius_core.contracts.driver import Driver
from nullius_core.contracts.licences import Handout
from nullius_core.definitions import ResolvedBenchmark
from nullius_core.failures import kind_of
from nullius_core.fsutil import read_json_lines
from nullius_core.jobs.layout import TrialDir
from nullius_core.relay.records import keep_record
from nullius_core.relay.seal import seal
from nullius_core.run.launch import fill
from nullius_core.run.prepare import Prepared
from nullius_core.run.steps import StepRun, StepTurns
from nullius_core.run.turns import DriverTurns
from nullius_core.run.unit_end import ending

if TYPE_CHECKING:
    from nullius_core.relay.server import Relay


@attrs.define
class AgentRun:
    outcome: AgentOutcome
    killed: list[str]
    calls: list[dict[str, Any]]
    runtime: dict[str, Any] | None  # the backend's word on what the agent ran on (its process's `runtime`), if any
    failure: str | None
    message: str | None
    stopped: str | None = None  # a benchmark guard's line in the stop file: scored, and marked so (unit_end.py)

    @property
    def scored(self) -> bool:
        kind = kind_of(self.failure)
        return kind is None or kind.scored


def _machine_path(install: Path | None) -> str:
    own = Path(sys.prefix).resolve() if sys.prefix != sys.base_prefix else None
    parts = [p for p in os.environ.get("PATH", "/usr/bin:/bin").split(os.pathsep) if p and not (own and Path(p).resolve().is_relative_to(own))]
    if install is not None:
        parts = [str(install / "node_modules" / ".bin"), str(install / ".venv" / "bin"), *parts]
    return os.pathsep.join(parts)


def agent_launch(prepared: Prepared, place: UnitPlace, base_url: str, token: str, model: str, trial: TrialDir, handout: Handout | None = None) -> AgentLaunch:
    agent = prepared.agent
    resolved = agent.resolved
    install = Path(agent.install_dir) if agent.install_dir else None
    wiring = resolved.model
    api_url = base_url[: -len("/v1")] if wiring is not None and wiring.api == "anthropic" else base_url
    slots = {
        "base_url": api_url,
        "token": token,
        "model": model,
        "home": str(place.home),
        "workspace": str(place.workspace),
        "here": str(agent.entry.folder),
        "install": str(install) if install else "",
        **{f"opt_{k}": v for k, v in agent.options.items()},
    }
    env = {
        "HOME": str(place.home),
        "PATH": _machine_path(install),
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "TERM": "dumb",
        "TMPDIR": str(place.home / "tmp"),
        "USER": os.environ.get("USER", "nullius"),
    }
    (place.home / "tmp").mkdir(parents=True, exist_ok=True)
    env.update({k: fill(v, slots) for k, v in resolved.env.items()})
    if wiring is not None:
        env.update({k: fill(v, slots) for k, v in wiring.env.items()})
        for relative, text in wiring.files.items():
            target = (place.home / relative).resolve()
            if not target.is_relative_to(place.home.resolve()):
                raise ValueError(f"model.files names {relative!r}, outside the agent's HOME")
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(fill(text, slots), encoding="utf-8")
    env.update(agent.effort_env)  # the reasoning effort, where the agent declares it takes one as a variable
    argv = [fill(a, slots) for a in resolved.start]
    licence_files: tuple[tuple[Path, str], ...] = ()
    if handout is not None:  # the environment's licences: in memory, never in a file of the agent's
        env.update(handout.env())
        licence_files = tuple((f.host, f.secret.path or "") for f in handout.files)
    reads = tuple(p for p in (install, Path(agent.entry.folder)) if p is not None)
    staged = agent.staged
    workdir_files = staged.folder / "workspace" if staged is not None and "workspace" in staged.roots() else None
    return AgentLaunch(argv=argv, env=env, cwd=place.agent_dir, home=place.home, stderr=trial.agent / "stderr.txt", label=resolved.ref, reads=reads,
                       licence_files=licence_files, workdir_files=workdir_files)


def mcp_servers(prepared: Prepared, setup: dict[str, Any]) -> list[McpServerEntry]:
    """The stdio MCP servers setup asked for: a benchmark's own by name, or a command of the entry's."""
    bench: ResolvedBenchmark = prepared.bench
    slots = {"here": str(prepared.entry.folder), "install": str(prepared.install_dir or "")}
    out = []
    for entry in setup.get("mcp") or []:
        if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
            raise ValueError(f"setup's mcp entry is not {{name, server|command, env}}: {entry!r}")
        if entry.get("server") is not None:
            declared = bench.mcp_servers.get(entry["server"])
            if declared is None:
                raise ValueError(f"setup asks for MCP server {entry['server']!r}, which standard.json does not declare")
            argv = [fill(a, slots) for a in declared.command]
        else:
            argv = [str(a) for a in entry.get("command") or []]
        if not argv:
            raise ValueError(f"MCP entry {entry['name']!r} has no command")
        command = argv[0] if os.path.isabs(argv[0]) else (shutil.which(argv[0]) or argv[0])
        env = {str(k): str(v) for k, v in (entry.get("env") or {}).items()}
        if entry.get("server") is not None and prepared.bench_route is not None:  # the benchmark's own server embeds as its driver does
            env.update(OPENAI_BASE_URL=prepared.bench_route["base_url"], OPENAI_API_KEY=prepared.bench_route["key"])
        out.append(McpServerEntry(name=entry["name"], command=command, args=argv[1:], env=env, on_machine=entry.get("server") is not None))
    return out


async def converse(
    prepared: Prepared,
    relay: Relay,
    backend: Backend,
    driver: Driver,
    trial: TrialDir,
    place: UnitPlace,
    model: str,
    prompt: str,
    setup: dict[str, Any],
    base: dict[str, Any],
    handout: Handout | None = None,
    voices: dict[str, dict[str, str]] | None = None,
    steps: StepRun | None = None,
) -> AgentRun:
    agent = prepared.agent
    resolved = agent.resolved
    limits = prepared.bench.limits
    seconds = float(setup.get("agent_seconds") or prepared.turn_seconds)
    conversational = "agent.conversation/v1" in prepared.bench.standard.needs or bool(prepared.bench.standard.kit and prepared.bench.standard.kit.port == "agent.conversation/v1")

    turns = DriverTurns(driver, base, place, trial, prompt, voices)
    prompt = await turns.first_message()
    conversation = Conversation(
        prompt=prompt,
        workspace=place.agent_dir,
        mcp_servers=mcp_servers(prepared, setup),
        seconds=seconds,
        next_turn=StepTurns(steps) if steps is not None else turns if conversational else None,
        max_turns=len(steps.steps) if steps is not None else int(limits.turns or 20),
        notices=resolved.notices,
    )
    route = RouteOptions(
        model=model,
        side_models=frozenset(resolved.model.side_models) if resolved.model else frozenset(),
        call_seconds=float(limits.call_seconds) if limits.call_seconds else None,
    )
    killed: list[str] = []
    runtime: dict[str, Any] | None = None
    # the room, its route and its token end with the unit, whatever happened
    room = await backend.open_room(relay, trial.name, trial.work / "relay", place, route)
    try:
        conversation = attrs.evolve(conversation, mcp_servers=room.mcp_servers(conversation.mcp_servers))
        launch = agent_launch(prepared, place, room.url, room.token, model, trial, handout)
        protocol = agent.protocol.factory()
        process = await room.start_agent(launch)
        runtime = getattr(process, "runtime", None)  # optional: a backend that puts the agent on a runtime of its own says which
        try:
            outcome = await protocol.converse(process, conversation, trial.agent)
        finally:
            killed = await process.end()
    finally:
        await room.close()
    await asyncio.to_thread(seal, trial.work / "relay")  # what replay needs, made off the calls' path
    keep_record(trial.work / "relay", trial.agent)
    calls = read_json_lines(trial.work / "relay" / "calls.jsonl")
    end = ending(outcome.failure, outcome.message, calls, trial.work / "relay" / "stop", prepared.bench.standard.gated)
    return AgentRun(outcome=outcome, killed=killed, calls=calls, runtime=runtime, failure=end.failure, message=end.message,
                    stopped=end.stopped)
