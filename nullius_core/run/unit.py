"""One trial: a unit's setup, its answer (a control's or, later, an agent's), its score, its records.

Whatever happens, the trial ends with its records written: a failed op is
the trial's recorded error, named by the op, and the run goes on.
"""

from __future__ import annotations

import asyncio
import hashlib
import math
import traceback
import uuid
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs

from nullius_core.contracts.backend import Backend, commit_setup
from nullius_core.contracts.driver import OP_SECONDS, Driver, DriverError
from nullius_core.contracts.own_image import NotRun, OwnImageProblem, VerifyProblem, read_solve
from nullius_core.failures import kind_of
from nullius_core.fsutil import read_json_lines
from nullius_core.jobs.harbor import Phases, environment_of, verifier_text
from nullius_core.jobs.layout import JobDir, TrialDir
from nullius_core.jobs.records import (
    ExceptionInfo,
    Timing,
    TrialConfig,
    TrialResult,
    VerifierResult,
    dump,
    iso,
    utcnow,
)
from nullius_core.links import take_out
from nullius_core.run import environments
from nullius_core.run.agent_unit import AgentRun, TurnError, converse
from nullius_core.run.capability_unit import CapabilityFailed, CapabilityRun, produce
from nullius_core.run.prepare import Prepared
from nullius_core.run.trial_records import agent_info, agent_trajectory, control_trajectory, trace_of, usage_of

if TYPE_CHECKING:
    from nullius_core.relay.meter import CostMeter
    from nullius_core.relay.server import Relay
    from nullius_core.run.environments import BoxLender

# The exception a failed op is recorded as (Harbor's names where Harbor has one).
OP_EXCEPTION = {"setup": "EnvironmentSetupError", "oracle": "OracleError", "score": "VerifierError"}


class TrialCancelled(Exception):
    """The run was cancelled while this trial ran; its record is written (`outcome`)."""

    def __init__(self, outcome: TrialOutcome):
        self.outcome = outcome
        super().__init__("cancelled")


class TrialError(Exception):
    """A trial failed in a way that has a name in the record."""

    def __init__(self, kind: str, message: str):
        self.kind = kind
        super().__init__(message)


@attrs.frozen(kw_only=True)
class Work:
    unit: str
    position: int
    attempt: int
    trial_name: str


@attrs.frozen(kw_only=True)
class RunFacts:
    """What every trial of a run shares."""

    job: JobDir
    job_id: str
    prepared: Prepared
    control: str | None
    model: str | None
    standard: dict[str, Any]
    relay: Relay | None = None  # the run's, for an agent run
    secrets_dir: Path | None = None  # SECRETS_DIR: the benchmark's licences
    boxes: BoxLender | None = None  # when the run's backend has no boxes of its own
    meter: CostMeter | None = None  # the relay's: its `stopped` says why --max-cost cancelled the run

    @property
    def participant(self) -> str:
        agent = self.prepared.agent
        return self.control or (agent.resolved.key if agent else "agent")


@attrs.frozen(kw_only=True)
class TrialOutcome:
    result: dict[str, Any]
    outcome: str
    reward: float | None
    passed: bool | None
    exception_type: str | None
    seconds: float


def trial_name(unit: str, attempt: int, repeat: int) -> str:
    return unit if repeat == 1 else f"{unit}r{attempt}"


def _error(op: str, exc: DriverError) -> TrialError:
    kind = OP_EXCEPTION.get(op, "CauseUnknownError")
    if op == "score" and exc.failure == "timeout":
        kind = "VerifierTimeoutError"
    return TrialError(kind, str(exc))


async def _call(driver: Driver, op: str, request: dict[str, Any], timeout: float) -> dict[str, Any]:
    try:
        return await driver.call(op, request, timeout)
    except DriverError as exc:
        raise _error(op, exc) from None


def trial_config(facts: RunFacts, work: Work) -> TrialConfig:
    prepared = facts.prepared
    return TrialConfig(
        task={"path": f"{prepared.entry.key}/{work.unit}", "source": prepared.dataset_name},
        trial_name=work.trial_name,
        trials_dir=str(facts.job.path),
        agent={"name": facts.participant, "model_name": facts.model},
        environment=environment_of(prepared.backend.name),
        job_id=facts.job_id,
        standard={**facts.standard, "unit": work.unit, "position": work.position, "attempt": work.attempt},
    )


async def run_trial(facts: RunFacts, work: Work, driver: Driver, backend: Backend) -> TrialOutcome:
    prepared = facts.prepared
    trial = facts.job.trial(work.trial_name)
    trial.make()
    config = trial_config(facts, work)
    trial.write_json("config.json", dump(config))
    driver.log_to(trial.log)
    started = utcnow()
    phases = Phases(started)
    exception: ExceptionInfo | None = None
    prompt: str | None = None
    answer: str | None = None
    score: dict[str, Any] | None = None
    agent_run: AgentRun | None = None
    cap_run: CapabilityRun | None = None
    transcript: list[dict[str, str]] | None = None
    cancelled = False
    # `verifier`: the trial's folder for the check's own records (a kit's MCP call log), outside the workspace
    base = {"unit": work.unit, "dataset": prepared.dataset_name, "verifier": str(trial.verifier.resolve())}
    agent_failure: ExceptionInfo | None = None
    handout = None
    place = None
    try:
        place = await backend.prepare_unit(trial.workspace, trial.home)
        if place.sandbox is not None:  # the backend's throwaway container for what the agent left
            base = {**base, "sandbox": place.sandbox}
        setup = await _call(driver, "setup", {**base, "dir": str(place.workspace)}, OP_SECONDS["setup"])
        capability_bench = prepared.bench.standard.family == "capability"
        prompt = setup.get("question") if capability_bench else setup.get("prompt")
        if not isinstance(prompt, str):
            wanted = "a question (and sessions)" if capability_bench else "a prompt string"
            raise TrialError("EnvironmentSetupError", f"setup replied without {wanted}: {sorted(setup)}")
        await asyncio.to_thread(commit_setup, place.workspace)
        try:
            place, handout = await environments.enter(facts, backend, place, setup, trial.name)
        except environments.EnvironmentProblem as exc:
            place = attrs.evolve(place, environment=exc.environment)
            raise TrialError(exc.kind, str(exc)) from None
        if place.sandbox is not None:  # in the unit's own image, now that its environment is known
            base = {**base, "sandbox": place.sandbox}
        phases.begin("agent_execution")
        if prepared.agent is not None and prepared.agent.resolved.family == "capability":
            cap_run = await _capability(facts, work, trial, driver, setup, base, backend)
            answer = cap_run.answer
            transcript = [{"role": "user", "text": prompt}, {"role": "agent", "text": answer}]
        elif prepared.agent is not None:
            try:
                agent_run = await converse(prepared, facts.relay, backend, driver, trial, place, str(facts.model), prompt, setup, base, handout)
            except NotRun as exc:
                raise TrialError("EnvironmentSetupError", str(exc)) from None
            except (ValueError, OSError) as exc:  # the agent could not even start: the unit's setup failed
                raise TrialError("EnvironmentSetupError", f"{type(exc).__name__}: {exc}") from None
            except TurnError as exc:
                raise TrialError("DriverTurnError", str(exc)) from None
            phases.split("agent_setup", "agent_execution", agent_run.outcome.prompted_at)
            answer = agent_run.outcome.answer
            transcript = agent_run.outcome.transcript
            if agent_run.failure is not None:
                agent_failure = _info(agent_run.failure, agent_run.message or agent_run.failure, "")
                if not agent_run.scored:
                    raise TrialError(agent_run.failure, agent_run.message or agent_run.failure)
        elif facts.control == "oracle":
            reply = await _call(driver, "oracle", {**base, "dir": str(place.workspace)}, OP_SECONDS["oracle"])
            answer = reply.get("answer")
            if not isinstance(answer, str):
                raise TrialError("OracleError", "oracle replied without an answer string")
            await _solve(reply, place, trial)
        else:
            answer = ""
        phases.begin("verifier")
        transcript = transcript or [{"role": "user", "text": prompt}, {"role": "agent", "text": answer}]
        if prepared.agent is not None:  # what the agent left is read by the driver here: no link leads it out
            await asyncio.to_thread(take_out, place.workspace, trial.verifier / "links.txt")
        verified = await _verify(place, trial)
        score = await _call(
            driver,
            "score",
            {**base, "dir": str(place.workspace), "answer": answer, "transcript": transcript, **verified},
            prepared.score_seconds,
        )
        check_score(score, prepared.bench.standard.kind)
        phases.end()
    except TrialError as exc:
        exception = _info(exc.kind, str(exc), "".join(traceback.format_exception_only(exc)))
    except asyncio.CancelledError:
        cancelled = True
        stopped = getattr(facts.meter, "stopped", None)
        exception = _info("CancelledError", f"the run was stopped while this trial ran: {stopped}" if stopped else "the run was cancelled while this trial ran", "")
    except Exception as exc:  # noqa: BLE001 - a bug of ours is this trial's error, the run goes on
        exception = _info("CauseUnknownError", f"{type(exc).__name__}: {exc}", traceback.format_exc())
    finally:
        driver.log_to(None)
        if handout is not None:
            handout.remove()  # the licence files end with the part that had them
        if place is not None and place.box is not None:
            await asyncio.shield(place.box.close())
    finished = utcnow()
    phases.end(finished)  # the phase a failure cut short ends where the trial did
    exception = exception or agent_failure  # a timed-out agent is still scored, and its timeout recorded
    outcome = _write(facts, work, trial, config, started, finished, phases.timings, exception, prompt, answer, score, agent_run, cap_run, place)
    if cancelled:
        raise TrialCancelled(outcome)
    return outcome


async def _capability(
    facts: RunFacts, work: Work, trial: TrialDir, driver: Driver, setup: dict[str, Any], base: dict[str, Any], backend: Backend
) -> CapabilityRun:
    relay = facts.relay
    route = relay.add_route(trial.name, trial.work / "relay", kind="agent", model=facts.model) if relay is not None else None
    try:
        return await produce(facts.prepared, driver, trial, setup, base, route, relay, facts.model, backend)
    except CapabilityFailed as exc:
        raise TrialError(exc.kind, str(exc)) from None
    finally:
        if route is not None:
            await relay.quiet(trial.name)
            relay.remove_route(trial.name)


async def _solve(reply: dict[str, Any], place: Any, trial: TrialDir) -> None:
    """The oracle's `solve`, run in the unit's box; its output is agent/solve-stdout.txt."""
    try:
        steps = read_solve(reply)
    except OwnImageProblem as exc:
        raise TrialError("OracleError", str(exc)) from None
    if steps is None:
        return
    if place.box is None:
        raise TrialError("OracleError", "the oracle replied a solve, which runs only in a task's own image")
    try:
        code = await place.box.solve(steps, trial.agent / "solve-stdout.txt")
    except (VerifyProblem, OSError) as exc:
        raise TrialError("OracleError", f"the oracle's solve could not run: {exc}") from None
    if code is None:
        raise TrialError("OracleError", f"the oracle's solve did not end in {steps.seconds:g} s")


async def _verify(place: Any, trial: TrialDir) -> dict[str, Any]:
    """In a task's own image: what changed in it, then its check run where the work is; `score` is sent `verified`."""
    if place is None or place.box is None:
        return {}
    own = place.environment.own
    try:
        verified = await place.box.verify(own.verify, trial.verifier) if own.verify is not None else None
    except (VerifyProblem, OSError) as exc:  # OSError: docker failed under it
        raise TrialError("VerifierError", str(exc)) from None
    finally:
        try:
            changes = await place.box.changes()  # taken before the check's files went in
        except OSError as exc:
            changes = f"(the container's changes could not be taken: {exc})\n"
        trial.write_text("agent/container-changes.txt", changes)
    return {"verified": verified.request()} if verified is not None else {}


def check_score(score: dict[str, Any], kind: str) -> None:
    reward = score.get("reward")
    if isinstance(reward, bool) or not isinstance(reward, (int, float)) or not math.isfinite(reward):
        raise TrialError("VerifierError", f"score replied without a finite number as reward: {reward!r}")
    passed = score.get("passed")
    if kind == "pass" and not isinstance(passed, bool):
        raise TrialError("VerifierError", "score of a benchmark that passes or fails replied without passed: true or false")
    if kind == "score" and passed is not None and not isinstance(passed, bool):
        raise TrialError("VerifierError", f"score replied with passed that is not true or false: {passed!r}")


def _info(kind: str, message: str, trace: str) -> ExceptionInfo:
    return ExceptionInfo(exception_type=kind, exception_message=message, exception_traceback=trace, occurred_at=iso(utcnow()))


def _write(
    facts: RunFacts,
    work: Work,
    trial: TrialDir,
    config: TrialConfig,
    started: datetime,
    finished: datetime,
    timings: dict[str, Timing],
    exception: ExceptionInfo | None,
    prompt: str | None,
    answer: str | None,
    score: dict[str, Any] | None,
    agent_run: AgentRun | None = None,
    cap_run: CapabilityRun | None = None,
    place: Any = None,
) -> TrialOutcome:
    prepared = facts.prepared
    kind = prepared.bench.standard.kind
    reward = passed = None
    failure = kind_of(exception.exception_type if exception is not None else None)
    scored = score is not None and (failure is None or failure.scored)
    if scored:
        assert score is not None
        reward = float(score["reward"])
        passed = score.get("passed") if kind == "pass" else None
        trial.write_text("verifier/reward.txt", f"{reward:g}\n")
        trial.write_json("verifier/score.json", {k: score[k] for k in ("reward", "detail", "passed", "parts") if k in score})
        if not (trial.verifier / "test-stdout.txt").exists():  # a task's own check wrote its own: it stays whole
            trial.write_text("verifier/test-stdout.txt", verifier_text(score))  # where Harbor's Verifier tab looks
    if exception is not None:
        trial.write_text("exception.txt", f"{exception.exception_type}: {exception.exception_message}\n{exception.exception_traceback}")
    if not scored:
        outcome = failure.outcome if failure is not None else "error"
    elif kind == "pass":
        outcome = "passed" if passed else "failed"
    else:
        outcome = "scored"
    upstream = getattr(prepared.agent, "upstream", None)
    reported = agent_run.outcome.reported_cost_usd if agent_run is not None else None
    usage = usage_of(trial, upstream.provider.name if upstream else None, reported)
    if prompt is not None:
        if agent_run is not None:
            trajectory = agent_trajectory(facts, agent_run.outcome.steps, agent_run.calls, usage, agent_run.outcome.stop_reason, agent_run.outcome.grants)
            trial.write_json("agent/trace.json", trace_of(agent_run))
        elif cap_run is not None:
            calls = read_json_lines(trial.work / "relay" / "calls.jsonl")
            trajectory = agent_trajectory(facts, cap_run.steps, calls, usage, None, [])
        else:
            trajectory = control_trajectory(facts, prompt, answer, started, finished)
        trial.write_json("agent/trajectory.json", dump(trajectory))
    own: dict[str, Any] = {
        "unit": work.unit,
        "position": work.position,
        "attempt": work.attempt,
        "control": facts.control,
        "outcome": outcome,
        "passed": passed,
        "parts": (score or {}).get("parts") if scored else None,
        "job": facts.job.name,
        "benchmark": prepared.bench.ref,
        "dataset": prepared.dataset_name,
    }
    if place is not None and (place.environment is not None or place.image is not None):
        own["environment"] = place.environment.name if place.environment is not None else None
        own["image"] = place.image
    if agent_run is not None:
        own["agent"] = {
            "ref": prepared.agent.resolved.ref,
            "stop_reason": agent_run.outcome.stop_reason,
            "turns": sum(1 for t in agent_run.outcome.transcript if t["role"] == "user"),
            "permissions_granted": len([g for g in agent_run.outcome.grants if g["granted"]]),
            "killed_at_end": agent_run.killed,
            "info": agent_run.outcome.info,
        }
    result = TrialResult(
        id=str(uuid.uuid4()),
        task_name=work.unit,
        trial_name=work.trial_name,
        trial_uri=trial.path.resolve().as_uri(),
        task_id={"path": f"{prepared.entry.key}/{work.unit}"},
        source=prepared.dataset_name,
        task_checksum=hashlib.sha256(f"{facts.standard.get('dataset_sha256') or prepared.entry.key}:{work.unit}".encode()).hexdigest(),
        config=config,
        agent_info=agent_info(facts),
        agent_result=usage,
        verifier_result=VerifierResult(rewards={"reward": reward}) if reward is not None else None,
        exception_info=exception,
        started_at=iso(started),
        finished_at=iso(finished),
        environment_setup=timings.get("environment_setup"),
        agent_setup=timings.get("agent_setup"),
        agent_execution=timings.get("agent_execution"),
        verifier=timings.get("verifier"),
        standard=own,
    )
    record = dump(result)
    trial.write_json("result.json", record)
    return TrialOutcome(
        result=record,
        outcome=outcome,
        reward=reward,
        passed=passed,
        exception_type=exception.exception_type if exception else None,
        seconds=(finished - started).total_seconds(),
    )


