"""`nullius fidelity`: does ACP send the model the same requests as the agent's own CLI?

The workspace kit's two units are set up once each, at one path; then each
unit runs four times, alternating the ways (ACP, the CLI, ACP, the CLI), each
from the same copy of its set-up workspace and a fresh HOME at the same
paths, each run on its own relay route. The relay's bodies are read in a
scratch folder and reduced to fields and digests (fidelity_fields.py); the
text is deleted with the scratch folder, and only the digests are recorded.
"""

from __future__ import annotations

import asyncio
import os
import shlex
import shutil
import tempfile
from datetime import date, datetime, timezone
from pathlib import Path
from typing import Any

import attrs

from nullius_core import aio
from nullius_core.catalogue.catalogue import split_ref
from nullius_core.contracts.agent import Conversation
from nullius_core.contracts.backend import RouteOptions, RunContext, UnitPlace, commit_setup
from nullius_core.contracts.driver import OP_SECONDS, DriverError
from nullius_core.definitions import write_json
from nullius_core.definitions.common import FIDELITY_KEY
from nullius_core.fsutil import read_json_lines
from nullius_core.jobs.layout import TrialDir
from nullius_core.relay import upstreams
from nullius_core.relay.server import Relay
from nullius_core.run import install
from nullius_core.run.agent_unit import agent_launch
from nullius_core.run.conform import PortResult, _record
from nullius_core.run.fidelity_fields import compare, distilled
from nullius_core.run.launch import fill
from nullius_core.run.prepare import Prepared, RunRefused, prepare
from nullius_core.run.progress import Progress
from nullius_core.run.spec import RunSpec
from nullius_core.session import Session

KIT = "agent.workspace/v1"
ROUNDS = 2
WAYS = ("acp", "cli")


@attrs.frozen(kw_only=True)
class FidelityRequest:
    participant: str
    model: str
    jobs_dir: Path
    provider: str | None = None
    base_url: str | None = None
    unsandboxed: bool = False
    agent_options: dict[str, str] = attrs.field(factory=dict)


@attrs.frozen
class Verdict:
    verdict: str  # same | differs
    fields: list[str]
    noise: list[str]
    record: Path
    passed: dict[str, str]  # each way's runs that did the unit's work, by the kit's own score


def fidelity(session: Session, request: FidelityRequest, progress: Progress) -> Verdict:
    key, version = split_ref(request.participant)
    entry, definition = session.catalogue.participant(key)
    resolved = definition.resolve(key, version)
    if resolved.family != "agent":
        raise RunRefused(f"{resolved.ref} is a capability: fidelity compares an agent's ACP with its own CLI")
    if resolved.fidelity is None:
        raise RunRefused(f"{resolved.ref} has no fidelity.command in its definition ({entry.file}): "
                         "expected the agent's own CLI as a template carrying {prompt}")
    spec = RunSpec(benchmark=KIT, kit=KIT, participant=request.participant, jobs_dir=request.jobs_dir, dataset="checks",
                   model=request.model, agent_options=dict(request.agent_options), provider=request.provider,
                   base_url=request.base_url, backend="local", unsandboxed=request.unsandboxed, purpose="fidelity")
    started = datetime.now(timezone.utc)
    out = request.jobs_dir / f"{started:%Y-%m-%d__%H-%M-%S}__fidelity__{resolved.ref.replace('@', '-')}__{request.model.replace('/', '-')}"
    with tempfile.TemporaryDirectory(prefix="nullius-fidelity-") as scratch:
        prepared = prepare(session, spec, progress, Path(scratch))
        if prepared.agent.served is not None:
            raise RunRefused("fidelity with a provider that serves its own model (embedded) is not built: use a remote provider")
        cli_dir = _cli_install(session, resolved, progress)
        try:
            runs = aio.run(_all_runs(session, prepared, request.model, Path(scratch), cli_dir, progress))
        except DriverError as exc:  # the kit's own driver failed: nothing of the agent is known
            raise RunRefused(f"the kit {KIT}'s driver: {exc}") from None
    differs, noise = compare(runs["acp"], runs["cli"])
    verdict = "differs" if differs else "same"
    out.mkdir(parents=True, exist_ok=True)
    write_json(out / "fidelity.json", {"agent": resolved.ref, "model": request.model, "command": resolved.fidelity.command,
                                       "verdict": verdict, "fields": differs, "noise": noise, "runs": runs})
    passed = {way: f"{sum(1 for r in runs[way] for u in r.values() if u['passed'])}/{sum(len(r) for r in runs[way])}" for way in WAYS}
    proof = {"verdict": verdict, "fields": differs, "noise": noise, "passed": passed, "date": date.today().isoformat(), "model": request.model,
             "version": resolved.upstream.version, "record": out.name, "backend": "local"}
    _record(session, entry, definition, version, [PortResult(FIDELITY_KEY, True, proof)])
    progress.stage("fidelity", verdict=verdict, fields=",".join(differs) or None, record=str(out))
    return Verdict(verdict, differs, noise, out, passed)


def _cli_install(session: Session, resolved: Any, progress: Progress) -> Path | None:
    spec = resolved.fidelity.install
    if spec is None:
        return None
    try:
        return install.ensure(session.paths, f"{resolved.key}/{resolved.version or 'default'}-cli", spec, progress, kind="agents", label="agent's CLI")
    except install.InstallError as exc:
        raise RunRefused(f"{resolved.ref}'s CLI (fidelity.install) cannot be installed: {exc}") from None


async def _all_runs(session: Session, prepared: Prepared, model: str, scratch: Path, cli_dir: Path | None,
                    progress: Progress) -> dict[str, list[dict[str, Any]]]:
    upstream = prepared.relay_upstream
    relay = Relay(upstream, upstreams.apis(session, upstream))
    await relay.start()
    backend = prepared.backend.factory()
    await backend.start(RunContext(job="fidelity", job_dir=scratch, paths=session.paths, progress=progress))
    driver = prepared.runner.factory(prepared.launch)
    runs: dict[str, list[dict[str, Any]]] = {way: [{} for _ in range(ROUNDS)] for way in WAYS}
    try:
        units = (await driver.call("units", {"dataset": prepared.dataset_name}, OP_SECONDS["units"]))["units"]
        for unit in units:
            seed, place, prompt = await _set_up(driver, backend, prepared, scratch, unit)
            for round_ in range(ROUNDS):
                for way in WAYS:
                    trial = TrialDir(scratch / "runs" / f"{way}-{round_ + 1}" / unit)
                    trial.make()
                    _fresh(seed, place)
                    run = _acp if way == "acp" else _cli
                    failure = await run(prepared, relay, backend, trial, place, model, prompt, cli_dir)
                    bodies = [b["request"] for b in read_json_lines(trial.work / "relay" / "bodies.jsonl") if isinstance(b.get("request"), dict)]
                    passed = await _passed(driver, prepared, unit, place)
                    runs[way][round_][unit] = {**distilled(bodies), "passed": passed, "failure": failure}
                    progress.stage("fidelity", unit=unit, way=way, round=round_ + 1, requests=len(bodies), passed=passed)
    finally:
        await driver.close()
        await backend.close()
        await relay.stop()
    return runs


async def _set_up(driver: Any, backend: Any, prepared: Prepared, scratch: Path, unit: str) -> tuple[Path, UnitPlace, str]:
    """The unit set up once, at the path every run of it uses; its set-up workspace kept as the seed."""
    folder = scratch / "units" / unit
    (folder / "verifier").mkdir(parents=True)
    place = await backend.prepare_unit(folder / "workspace", folder / "home")
    request = {"unit": unit, "dataset": prepared.dataset_name, "verifier": str(folder / "verifier"), "dir": str(place.workspace)}
    setup = await driver.call("setup", request, OP_SECONDS["setup"])
    await asyncio.to_thread(commit_setup, place.workspace)
    seed = folder / "seed"
    shutil.copytree(place.workspace, seed, symlinks=True)
    return seed, place, str(setup["prompt"])


async def _passed(driver: Any, prepared: Prepared, unit: str, place: UnitPlace) -> bool | None:
    """Did this run do the unit's work (the kit's own score)? None when the check could not say."""
    request = {"unit": unit, "dataset": prepared.dataset_name, "verifier": str(place.workspace.parent / "verifier"),
               "dir": str(place.workspace), "transcript": [], "answer": ""}
    try:
        reply = await driver.call("score", request, OP_SECONDS["score"])
    except DriverError:
        return None
    return reply.get("passed") if isinstance(reply.get("passed"), bool) else None


def _fresh(seed: Path, place: UnitPlace) -> None:
    """The set-up workspace again and an empty HOME, at the same paths."""
    for folder in (place.workspace, place.home):
        shutil.rmtree(folder, ignore_errors=True)
    shutil.copytree(seed, place.workspace, symlinks=True)
    place.home.mkdir(parents=True)


async def _acp(prepared: Prepared, relay: Relay, backend: Any, trial: TrialDir, place: UnitPlace, model: str, prompt: str,
               cli_dir: Path | None) -> str | None:
    """The unit over ACP, as a run gives it; its failure's kind (failures.py), or None."""
    agent = prepared.agent
    conversation = Conversation(prompt=prompt, workspace=place.agent_dir, mcp_servers=[], seconds=float(prepared.turn_seconds),
                                notices=agent.resolved.notices)
    room = await backend.open_room(relay, f"acp-{trial.path.parent.name}-{trial.name}", trial.work / "relay", place, _route(prepared, model))
    try:
        try:
            process = await room.start_agent(agent_launch(prepared, place, room.url, room.token, model, trial))
        except (ValueError, OSError):  # the agent could not even start: recorded as the run's, as a unit's setup error
            return "EnvironmentSetupError"
        try:
            outcome = await agent.protocol.factory().converse(process, conversation, trial.agent)
        finally:
            await process.end()
    finally:
        await room.close()
    return outcome.failure


async def _cli(prepared: Prepared, relay: Relay, backend: Any, trial: TrialDir, place: UnitPlace, model: str, prompt: str,
               cli_dir: Path | None) -> str | None:
    """The agent's own CLI from its template, with the same HOME, files and variables the ACP way gets; its failure, or None."""
    resolved = prepared.agent.resolved
    name = f"cli-{trial.path.parent.name}-{trial.name}"
    route = _route(prepared, model)
    made = relay.add_route(name, trial.work / "relay", kind=route.kind, model=route.model, side_models=route.side_models,
                           call_seconds=route.call_seconds)
    try:
        launch = agent_launch(prepared, place, relay.url(name), made.token, model, trial)
        env = dict(launch.env)
        if cli_dir is not None:
            env["PATH"] = os.pathsep.join([str(cli_dir / "node_modules" / ".bin"), str(cli_dir / ".venv" / "bin"), env["PATH"]])
        slots = {"model": model, "home": str(place.home), "workspace": str(place.workspace), "here": str(prepared.agent.entry.folder),
                 "install": str(prepared.agent.install_dir or ""), "cli": str(cli_dir or "")}
        argv = [prompt if word == "{prompt}" else fill(word, slots) for word in shlex.split(resolved.fidelity.command)]
        found = shutil.which(argv[0], path=env["PATH"])
        if found is None:
            raise RunRefused(f"{resolved.ref}'s fidelity.command starts {argv[0]!r}, which is not on its PATH "
                             "(the agent's install, fidelity.install, then this machine's)")
        argv[0] = found
        with open(trial.agent / "cli-stdout.txt", "wb") as stdout, open(trial.agent / "cli-stderr.txt", "wb") as stderr:
            process = await asyncio.create_subprocess_exec(*argv, cwd=place.workspace, env=env, stdin=asyncio.subprocess.DEVNULL,
                                                           stdout=stdout, stderr=stderr, start_new_session=True)
            try:
                await asyncio.wait_for(process.wait(), float(prepared.turn_seconds))
            except asyncio.TimeoutError:
                return "AgentTimeoutError"
            finally:
                if process.returncode is None:
                    os.killpg(process.pid, 9)
                    await process.wait()
    finally:
        await relay.retire(name)
    return None if process.returncode == 0 else "NonZeroAgentExitCodeError"


def _route(prepared: Prepared, model: str) -> RouteOptions:
    wiring = prepared.agent.resolved.model
    seconds = prepared.bench.limits.call_seconds
    return RouteOptions(model=model, side_models=frozenset(wiring.side_models) if wiring else frozenset(),
                        call_seconds=float(seconds) if seconds else None)
