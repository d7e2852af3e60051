"""What a trial writes when it ends, whatever happened: its score's files, its trajectory, its result.json.

`Ran` is what the trial did so far, filled in as its phases go (unit.py);
`write_trial` turns it into the records, the outcome named by the failures
table.
"""

from __future__ import annotations

import hashlib
import uuid
from datetime import datetime
from typing import TYPE_CHECKING, Any

import attrs

from nullius_core.contracts.backend import UnitPlace
from nullius_core.contracts.licences import Handout
from nullius_core.failures import kind_of
from nullius_core.fsutil import read_json_lines
from nullius_core.jobs.harbor import Phases, verifier_text
from nullius_core.jobs.layout import TrialDir, real_folder
from nullius_core.jobs.locks import write_trial_lock
from nullius_core.jobs.replay_proof import trial_replay
from nullius_core.jobs.records import ExceptionInfo, StepResult, Timing, TrialConfig, TrialResult, VerifierResult, dump, iso, utcnow
from nullius_core.jobs.standard import RouteUse, TrialAgent, TrialOwn, TrialVariant
from nullius_core.relay.pins import served
from nullius_core.relay.usage import routes_used
from nullius_core.run.agent_unit import AgentRun
from nullius_core.run.capability_unit import CapabilityRun
from nullius_core.run.voices import ROLES, record_folder
from nullius_core.run.trial_records import agent_info, agent_trajectory, control_trajectory, held_trajectory, trace_of, usage_of

if TYPE_CHECKING:
    from nullius_core.run.unit import RunFacts, Work


@attrs.frozen(kw_only=True)
class TrialOutcome:
    result: dict[str, Any]
    outcome: str
    reward: float | None
    passed: bool | None
    exception_type: str | None
    seconds: float


@attrs.define(kw_only=True)
class Ran:
    """What a trial did so far: each phase adds to it; it is written whatever happened."""

    started: datetime
    phases: Phases
    base: dict[str, Any]  # what every driver op about the unit carries (unit, dataset, verifier, sandbox)
    place: UnitPlace | None = None
    handout: Handout | None = None
    prompt: str | None = None
    answer: str | None = None
    transcript: list[dict[str, str]] | None = None
    score: dict[str, Any] | None = None
    steps: Any = None  # a StepRun (run/steps.py), for a task of steps
    task: dict[str, str] = attrs.field(factory=dict)  # setup's `task`: the upstream's own name, digest and folder for it
    agent_run: AgentRun | None = None
    cap_run: CapabilityRun | None = None
    exception: ExceptionInfo | None = None
    agent_failure: ExceptionInfo | None = None  # a timed-out agent: still scored, its timeout recorded
    voices: dict[str, dict[str, str]] = attrs.field(factory=dict)  # the unit's simulator and judge routes, as the driver gets them
    stopped: str | None = None  # a benchmark guard's line in the stop file: the participant's later calls were refused
    bare: bool = False  # a control's place of a workspace folder alone (run/control_place.py)


def error_info(kind: str, message: str, trace: str) -> ExceptionInfo:
    return ExceptionInfo(exception_type=kind, exception_message=message, exception_traceback=trace, occurred_at=iso(utcnow()))


def write_trial(facts: RunFacts, work: Work, trial: TrialDir, config: TrialConfig, ran: Ran, finished: datetime) -> TrialOutcome:
    prepared = facts.prepared
    exception = ran.exception
    outcome, reward, passed, parts = _scored(trial, ran, prepared.bench.standard.kind)
    if exception is not None:
        trial.write_text("exception.txt", f"{exception.exception_type}: {exception.exception_message}\n{exception.exception_traceback}")
    upstream = getattr(prepared.agent, "upstream", None)
    reported = ran.agent_run.outcome.reported_cost_usd if ran.agent_run is not None else None
    usage = usage_of(trial, upstream.provider.name if upstream else None, reported)
    if ran.prompt is not None:
        trial.write_json("agent/trajectory.json", dump(_trajectory(facts, trial, ran, usage, finished)))
    timings = ran.phases.timings
    result = TrialResult(
        id=str(uuid.uuid4()),
        task_name=ran.task.get("name") or work.unit,
        trial_name=work.trial_name,
        trial_uri=(real_folder(facts.job.path) / trial.name).as_uri(),
        task_id={"path": ran.task.get("path") or f"{prepared.entry.key}/{work.unit}"},
        source=prepared.dataset_name,
        task_checksum=ran.task.get("checksum") or hashlib.sha256(f"{facts.standard.dataset_sha256 or prepared.entry.key}:{work.unit}".encode()).hexdigest(),
        config=config,
        agent_info=agent_info(facts),
        agent_result=usage,
        verifier_result=VerifierResult(rewards={"reward": reward, **(ran.score or {}).get("rewards", {})}) if reward is not None else None,
        exception_info=exception,
        started_at=iso(ran.started),
        finished_at=iso(finished),
        environment_setup=timings.get("environment_setup"),
        agent_setup=timings.get("agent_setup"),
        agent_execution=timings.get("agent_execution"),
        verifier=timings.get("verifier"),
        step_results=_step_results(ran),
        standard=attrs.evolve(_own(facts, work, ran, outcome, passed, parts), routes=_routes(trial) if facts.relay else None,
                              served=_served(facts, trial) if facts.relay else None,  # no relay, no route: nothing to read
                              replay=_replay(facts, trial)),
    )
    record = dump(result)
    write_trial_lock(trial, config, ran.task, stepped=ran.steps is not None)  # before result.json: a trial with a result has its lock
    trial.write_json("result.json", record)
    return TrialOutcome(
        result=record,
        outcome=outcome,
        reward=reward,
        passed=passed,
        exception_type=exception.exception_type if exception else None,
        seconds=(finished - ran.started).total_seconds(),
    )


def _step_results(ran: Ran) -> list[StepResult] | None:
    """A task of steps' step_results; step 1's turn began with the trial's agent_execution (the agent's start left out, as there)."""
    if ran.steps is None:
        return None
    steps = ran.steps.step_results()
    began = ran.phases.timings.get("agent_execution")
    if steps and steps[0].agent_execution is None and began is not None and steps[0].verifier is not None:
        steps[0] = attrs.evolve(steps[0], agent_execution=Timing(started_at=began.started_at, finished_at=steps[0].verifier.started_at))
    return steps


def _scored(trial: TrialDir, ran: Ran, kind: str) -> tuple[str, float | None, bool | None, Any]:
    """The trial's outcome, reward, passed and the score's parts; a score that stands (failures.KINDS' `scored`) is written where Harbor reads it."""
    failure = kind_of(ran.exception.exception_type if ran.exception is not None else None)
    score = ran.score
    if score is None or not (failure is None or failure.scored):
        return (failure.outcome if failure is not None else "error"), None, None, None
    return score_files(trial, score, kind)


def score_files(trial: TrialDir, score: dict[str, Any], kind: str) -> tuple[str, float, bool | None, Any]:
    """A score that stands, written where Harbor reads it: the outcome, reward, passed and parts (a held score's later too)."""
    reward = float(score["reward"])
    passed = score.get("passed") if kind == "pass" else None
    trial.write_text("verifier/reward.txt", f"{reward:g}\n")
    trial.write_json("verifier/score.json", {k: score[k] for k in ("reward", "rewards", "detail", "passed", "parts") if k in score})
    if not (trial.verifier / "test-stdout.txt").exists():  # a task's own check wrote its own: it stays whole
        trial.write_text("verifier/test-stdout.txt", verifier_text(score))  # where Harbor's Verifier tab looks
    if kind == "pass":
        return ("passed" if passed else "failed"), reward, passed, score.get("parts")
    return "scored", reward, passed, score.get("parts")


def _trajectory(facts: RunFacts, trial: TrialDir, ran: Ran, usage: Any, finished: datetime) -> Any:
    if ran.agent_run is not None:
        run = ran.agent_run
        trial.write_json("agent/trace.json", trace_of(run))
        return agent_trajectory(facts, run.outcome.steps, run.calls, usage, run.outcome.stop_reason, run.outcome.grants)
    if ran.cap_run is not None:
        calls = read_json_lines(trial.work / "relay" / "calls.jsonl")
        return agent_trajectory(facts, ran.cap_run.steps, calls, usage, None, [])
    if facts.prepared.original is not None and ran.transcript and ran.prompt is not None:
        return held_trajectory(facts, ran.prompt, ran.transcript, ran.started, finished)
    return control_trajectory(facts, ran.prompt, ran.answer, ran.started, finished)


def _routes(trial: TrialDir) -> dict[str, RouteUse] | None:
    calls = [c for role in ROLES for c in read_json_lines(record_folder(trial, role) / "calls.jsonl")]
    return {kind: RouteUse(**figures) for kind, figures in routes_used(calls).items()} or None


def _served(facts: RunFacts, trial: TrialDir) -> dict[str, Any] | None:
    """Who served the unit's answered calls, on every route of it (the judge's and the simulator's too), and whether each pin held."""
    folders = [trial.work / "relay", *(record_folder(trial, role) for role in ROLES)]
    calls = [c for folder in folders for c in read_json_lines(folder / "calls.jsonl")]
    pins = facts.prepared.pins
    figures = served(calls, pins) if calls else None
    return figures if figures is not None and (pins or figures["by_provider"]) else None


def _replay(facts: RunFacts, trial: TrialDir) -> Any:
    """A replay's note of the unit's calls (jobs/replay_proof.py), over every route of it."""
    if facts.standard.replay_of is None:
        return None
    folders = [trial.work / "relay", *(record_folder(trial, role) for role in ROLES)]
    return trial_replay([c for folder in folders for c in read_json_lines(folder / "calls.jsonl")])


def _own(facts: RunFacts, work: Work, ran: Ran, outcome: str, passed: bool | None, parts: Any) -> TrialOwn:
    prepared = facts.prepared
    place, run = ran.place, ran.agent_run
    return TrialOwn(
        unit=work.unit,
        position=work.position,
        attempt=work.attempt,
        control=facts.control,
        outcome=outcome,
        passed=passed,
        parts=parts,
        job=facts.job.name,
        benchmark=prepared.bench.ref,
        dataset=prepared.dataset_name,
        environment=place.environment.name if place is not None and place.environment is not None else None,
        image=place.image if place is not None else None,
        variant=TrialVariant(name=facts.standard.variant.name, digest=facts.standard.variant.digest) if facts.standard.variant else None,
        reasoning_effort=facts.standard.reasoning_effort,
        stopped=ran.stopped,
        agent=TrialAgent(
            ref=prepared.agent.resolved.ref,
            stop_reason=run.outcome.stop_reason,
            turns=sum(1 for t in run.outcome.transcript if t["role"] == "user"),
            permissions_granted=len([g for g in run.outcome.grants if g["granted"]]),
            killed_at_end=list(run.killed),
            runtime=run.runtime,
            info=run.outcome.info,
        ) if run is not None else None,
    )
