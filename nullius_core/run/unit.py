"""One trial: a unit's setup, its answer (a control's or, later, an agent's), its score, its records.

Whatever happens, the trial ends with its records written: a failed op is
the trial's recorded error, named by the op, and the run goes on.
"""

from __future__ import annotations

import asyncio
import math
import traceback
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs

from nullius_core.contracts.backend import Backend
from nullius_core.contracts.driver import OP_SECONDS, Driver, DriverError
from nullius_core.contracts.lost import UnitLost
from nullius_core.contracts.own_image import NotReady, NotRun, OwnImageProblem, VerifyProblem, read_solve, read_step_solves
from nullius_core.failures import KINDS
from nullius_core.fsutil import read_json_lines
from nullius_core.jobs.harbor import Phases, environment_of
from nullius_core.jobs.layout import JobDir, TrialDir, real_folder
from nullius_core.jobs.standard import JobStandard, TrialStandard
from nullius_core.jobs.records import (
    TrialConfig,
    dump,
    utcnow,
)
from nullius_core.links import take_out
from nullius_core.relay.records import keep_record
from nullius_core.run import control_place, environments
from nullius_core.run.agent_unit import converse
from nullius_core.run.turns import TurnError
from nullius_core.run.capability_unit import CapabilityFailed, CapabilityRun, produce
from nullius_core.run.hold import HELD_MESSAGE, NotHeld, hold, keep_score_input
from nullius_core.run.prepare import Prepared
from nullius_core.run.setups import ORIGINAL
from nullius_core.run.steps import StepFailed, StepRun, oracle_steps
from nullius_core.run.trial_result import Ran, TrialOutcome, error_info, write_trial
from nullius_core.run.unit_end import ending
from nullius_core.run.voices import close_routes, open_routes

if TYPE_CHECKING:
    from nullius_core.relay.meter import CostMeter
    from nullius_core.relay.server import Relay
    from nullius_core.run.environments import BoxLender
    from nullius_core.run.unit_watch import UnitWatch

# The exception a failed op is recorded as (Harbor's names where Harbor has one).
OP_EXCEPTION = {"setup": "EnvironmentSetupError", "oracle": "OracleError", "score": "VerifierError"}
# Kinds a driver's error may name by its first words, from any op (`EnvironmentSetupError: the tool did not start`):
# the upstream's own setup, check, cancel or bug surfacing in another op, which keeps its kind.
SAID_KINDS = ("EnvironmentSetupError", "VerifierError", "CancelledError", "CauseUnknownError")


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
    again: bool = False  # run once more after it ended rate-limited (limits.run_again): its first records are set aside


@attrs.frozen(kw_only=True)
class RunFacts:
    """What every trial of a run shares."""

    job: JobDir
    job_id: str
    prepared: Prepared
    control: str | None
    model: str | None
    standard: JobStandard  # the job's config.json standard
    relay: Relay | None = None  # the run's, for an agent run
    secrets_dir: Path | None = None  # SECRETS_DIR: the benchmark's licences
    boxes: BoxLender | None = None  # when the run's backend has no boxes of its own
    meter: CostMeter | None = None  # the relay's: its `stopped` says why --max-cost cancelled the run
    hold_score: bool = False  # --hold-score: no unit is scored now; each keeps what `score` needs (held.py)
    spares: control_place.Spares | None = None  # a control run's empty workspaces, used again (control_place.py)
    watch: UnitWatch | None = None  # the engine's: a unit that runs long says its phase (unit_watch.py)

    @property
    def participant(self) -> str:
        agent = self.prepared.agent
        if self.prepared.original is not None:
            return ORIGINAL
        return self.control or (agent.resolved.key if agent else "agent")


def trial_name(unit: str, attempt: int, repeat: int) -> str:
    return unit if repeat == 1 else f"{unit}r{attempt}"


def _error(op: str, exc: DriverError) -> TrialError:
    kind = OP_EXCEPTION.get(op, "CauseUnknownError")
    if op == "score" and exc.failure == "timeout":
        kind = "VerifierTimeoutError"
    named = KINDS.get(exc.kind or "")
    if named is not None and named.phase is KINDS[kind].phase:  # the driver's own name for it (Harbor's), of the op's phase
        kind = named.name
    said = exc.message.split(":", 1)[0].strip() if exc.failure == "error" else ""
    if said in SAID_KINDS:
        kind = said
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
        standard=TrialStandard.of(facts.standard, work.unit, work.position, work.attempt),
    )


async def run_trial(facts: RunFacts, work: Work, driver: Driver, backend: Backend) -> TrialOutcome:
    trial = facts.job.trial(work.trial_name)
    control = facts.control is not None
    trial.make(folders=not control)  # a control's folders come with their first file (control_place.py)
    if control:
        trial.verifier.mkdir(exist_ok=True)  # the driver may write there from setup on; removed at the end if it stays empty
    config = trial_config(facts, work)
    trial.write_json("config.json", dump(config))
    driver.log_to(trial.log)
    started = utcnow()
    real = real_folder(facts.job.path) / trial.name
    # `verifier`: the trial's folder for the check's own records (a kit's MCP call log), outside the workspace
    base = {"unit": work.unit, "dataset": facts.prepared.dataset_name, "verifier": f"{real}/verifier"}
    if facts.prepared.bench.limits.attempts:  # the upstream tells attempts apart: every op about the unit says which
        base["attempt"] = work.attempt
    if facts.relay is not None:  # where a benchmark's guard writes a line to stop the participant's later calls (the relay's stop file)
        (trial.work / "relay").mkdir(parents=True, exist_ok=True)
        base["stop"] = f"{real}/.work/relay/stop"
    ran = Ran(started=started, phases=Phases(started), base=base)
    if facts.watch is not None:
        facts.watch.phases(work.trial_name, ran.phases)
    cancelled = False
    try:
        setup = await _set_up(facts, ran, trial, driver, backend)
        if facts.relay is not None and facts.prepared.voices:
            call_seconds = facts.prepared.bench.limits.call_seconds
            ran.voices = open_routes(facts.relay, trial, facts.prepared.voices, float(call_seconds) if call_seconds else None)
        own = ran.place.environment.own if ran.place is not None and ran.place.environment is not None else None
        if own is not None and own.steps:
            ran.steps = StepRun(own.steps, ran.place.box, driver, ran.base, trial)
        ran.phases.begin("agent_execution")
        await _answer(facts, work, ran, trial, driver, backend, setup)
        ran.phases.begin("verifier")
        if facts.hold_score:  # no score now: what it needs is kept, and the trial is held
            await _hold(facts, ran, trial)
            raise TrialError("ScoreHeld", HELD_MESSAGE)
        await _score(facts, ran, trial, driver)
        ran.phases.end()
    except TrialError as exc:
        ran.exception = error_info(exc.kind, str(exc), "".join(traceback.format_exception_only(exc)))
    except asyncio.CancelledError:
        cancelled = True
        stopped = getattr(facts.meter, "stopped", None)
        ran.exception = error_info("CancelledError", f"the run was stopped while this trial ran: {stopped}" if stopped
                                   else "the run was cancelled while this trial ran", "")
    except Exception as exc:  # noqa: BLE001 - a bug of ours is this trial's error, the run goes on
        ran.exception = error_info("CauseUnknownError", f"{type(exc).__name__}: {exc}", traceback.format_exc())
    finally:
        driver.log_to(None)
        if ran.handout is not None:
            ran.handout.remove()  # the licence files end with the part that had them
        if ran.place is not None and ran.place.box is not None:
            await asyncio.shield(ran.place.box.close())
        if ran.voices and facts.relay is not None:  # their calls recorded before the trial's usage is read
            await asyncio.shield(close_routes(facts.relay, trial, list(ran.voices)))
    finished = utcnow()
    ran.phases.end(finished)  # the phase a failure cut short ends where the trial did
    ran.exception = ran.exception or ran.agent_failure  # a timed-out agent is still scored, and its timeout recorded
    outcome = write_trial(facts, work, trial, config, ran, finished)
    if control:
        control_place.tidy(trial, ran.place, ran.bare, scored=outcome.reward is not None, spares=facts.spares)
    if cancelled:
        raise TrialCancelled(outcome)
    return outcome


async def _set_up(facts: RunFacts, ran: Ran, trial: TrialDir, driver: Driver, backend: Backend) -> dict[str, Any]:
    """The unit's place, the driver's `setup` (committed), the unit's environment: the setup reply."""
    prepared = facts.prepared
    place, ran.bare = await control_place.open_place(backend, trial, facts.control is not None, facts.spares)
    ran.place = place
    if not ran.bare:  # a backend's own place (a task's box writes into agent/ and verifier/): every folder, as for an agent
        trial.make()
    if place.sandbox is not None:  # the backend's throwaway container for what the agent left
        ran.base = {**ran.base, "sandbox": place.sandbox}
    setup = await _call(driver, "setup", {**ran.base, "dir": str(place.workspace)}, OP_SECONDS["setup"])
    if ran.bare:
        place, ran.bare = await asyncio.to_thread(control_place.widen, trial, place, setup)
        ran.place = place
    capability_bench = prepared.bench.standard.family == "capability"
    prompt = setup.get("question") if capability_bench else setup.get("prompt")
    if not isinstance(prompt, str):
        wanted = "a question (and sessions)" if capability_bench else "a prompt string"
        raise TrialError("EnvironmentSetupError", f"setup replied without {wanted}: {sorted(setup)}")
    ran.prompt = prompt
    task = setup.get("task")
    if isinstance(task, dict):  # the upstream's own names for the task (Harbor's [task] name, its digest, its folder)
        ran.task = {k: str(task[k]) for k in ("name", "checksum", "path") if isinstance(task.get(k), str) and task[k]}
    staged = getattr(prepared.agent, "staged", None)
    if staged is not None:  # in the setup's commit: the agent's changes are its own, the variant's files are not among them
        await asyncio.to_thread(staged.write_into, {"workspace": place.workspace, "home": place.home})
    await asyncio.to_thread(control_place.commit, place, ran.bare)
    try:
        ran.place, ran.handout = await environments.enter(facts, backend, place, setup, trial.name)
    except environments.EnvironmentProblem as exc:
        ran.place = attrs.evolve(place, environment=exc.environment)
        raise TrialError(exc.kind, str(exc)) from None
    if staged is not None and staged.unreachable(ran.place):
        raise TrialError("EnvironmentSetupError", str(staged.unreachable(ran.place)))
    if ran.place.sandbox is not None:  # in the unit's own image, now that its environment is known
        ran.base = {**ran.base, "sandbox": ran.place.sandbox}
    return setup


async def _answer(facts: RunFacts, work: Work, ran: Ran, trial: TrialDir, driver: Driver, backend: Backend, setup: dict[str, Any]) -> None:
    """The participant's answer: a capability's, an agent's conversation, the oracle's, or nop's nothing."""
    prepared = facts.prepared
    place, prompt = ran.place, str(ran.prompt)
    assert place is not None
    if prepared.agent is not None and prepared.agent.resolved.family == "capability":
        ran.cap_run = await _capability(facts, work, trial, driver, setup, ran.base, backend)
        ran.answer = ran.cap_run.answer
        ran.transcript = [{"role": "user", "text": prompt}, {"role": "agent", "text": ran.answer}]
    elif prepared.agent is not None:
        try:
            agent_run = await converse(prepared, facts.relay, backend, driver, trial, place, str(facts.model), prompt, setup, ran.base,
                                       ran.handout, ran.voices, ran.steps)
        except StepFailed as exc:
            raise TrialError(exc.kind, str(exc)) from None
        except NotReady as exc:
            raise TrialError("HealthcheckError", str(exc)) from None
        except NotRun as exc:
            raise TrialError("EnvironmentSetupError", str(exc)) from None
        except UnitLost as exc:  # the backend's node went while the agent ran there
            raise TrialError(UnitLost.kind, str(exc)) from None
        except (ValueError, OSError) as exc:  # the agent could not even start: the unit's setup failed
            raise TrialError("EnvironmentSetupError", f"{type(exc).__name__}: {exc}") from None
        except TurnError as exc:
            raise TrialError("DriverTurnError", str(exc)) from None
        ran.agent_run = agent_run
        ran.stopped = agent_run.stopped
        ran.phases.split("agent_setup", "agent_execution", agent_run.outcome.prompted_at)
        ran.answer = agent_run.outcome.answer
        ran.transcript = agent_run.outcome.transcript
        if agent_run.failure is not None:
            ran.agent_failure = error_info(agent_run.failure, agent_run.message or agent_run.failure, "")
            if not agent_run.scored:
                raise TrialError(agent_run.failure, agent_run.message or agent_run.failure)
    elif prepared.original is not None:
        await _original(facts, ran, trial, driver)
    elif facts.control == "oracle":
        reply = await _call(driver, "oracle", {**ran.base, "dir": str(place.workspace)}, OP_SECONDS["oracle"])
        ran.answer = reply.get("answer")
        if not isinstance(ran.answer, str):
            raise TrialError("OracleError", "oracle replied without an answer string")
        if ran.steps is not None:
            await _control_steps(ran, reply, trial)
        else:
            await _solve(reply, place, trial)
    else:
        ran.answer = ""
        if ran.steps is not None:
            await _control_steps(ran, {}, trial)


async def _control_steps(ran: Ran, reply: dict[str, Any], trial: TrialDir) -> None:
    """A task of steps under a control: each step's solve (the oracle's; none for nop), then its check."""
    try:
        solves = read_step_solves(reply, len(ran.steps.steps))
        await oracle_steps(ran.steps, solves, trial.agent / "solve-stdout.txt")
    except OwnImageProblem as exc:
        raise TrialError("OracleError", str(exc)) from None
    except NotReady as exc:
        raise TrialError("HealthcheckError", str(exc)) from None
    except StepFailed as exc:
        raise TrialError(exc.kind, str(exc)) from None


async def _original(facts: RunFacts, ran: Ran, trial: TrialDir, driver: Driver) -> None:
    """The upstream's own answerer, through the unit's route (its calls are the participant's), told the setup's model."""
    prepared, relay = facts.prepared, facts.relay
    original = prepared.original
    assert original is not None and relay is not None and ran.place is not None
    call_seconds = prepared.bench.limits.call_seconds
    route = relay.add_route(trial.name, trial.work / "relay", kind="agent", model=original.setup.sent,
                            call_seconds=float(call_seconds) if call_seconds else None)
    request = {**ran.base, "dir": str(ran.place.workspace), "setup": original.setup.request(), "model": original.setup.told,
               "base_url": relay.url(trial.name), "key": route.token, **ran.voices}
    try:
        reply = await driver.call("answer", request, original.turn_seconds or prepared.turn_seconds)
    except DriverError as exc:
        await relay.retire(trial.name)  # its calls recorded before they are read
        calls = read_json_lines(trial.work / "relay" / "calls.jsonl")
        end = ending("AnswererError", str(exc), calls, None, prepared.bench.standard.gated, who="answerer")
        raise TrialError(end.failure or "AnswererError", end.message or str(exc)) from None
    finally:
        await relay.retire(trial.name)
        keep_record(trial.work / "relay", trial.agent)  # the answerer's calls, as an agent's trial keeps its own
    ran.answer = reply.get("answer")
    if not isinstance(ran.answer, str):
        raise TrialError("AnswererError", "answer replied without an answer string")
    transcript = reply.get("transcript")
    if isinstance(transcript, list) and all(isinstance(m, dict) and {"role", "text"} <= set(m) for m in transcript):
        ran.transcript = transcript  # the conversation the upstream's loop held


async def _score(facts: RunFacts, ran: Ran, trial: TrialDir, driver: Driver) -> None:
    """The driver's `score` of what the participant left (no link leads out of it), checked."""
    prepared = facts.prepared
    place = ran.place
    assert place is not None
    ran.transcript = ran.transcript or [{"role": "user", "text": str(ran.prompt)}, {"role": "agent", "text": str(ran.answer)}]
    if prepared.agent is not None:  # what the agent left is read by the driver here: no link leads it out
        await asyncio.to_thread(take_out, place.workspace, trial.verifier / "links.txt")
    verified = await _verify(place, trial, ran.steps)
    request = {**ran.base, "dir": str(place.workspace), "answer": ran.answer, "transcript": ran.transcript, **verified}
    if "judge" in ran.voices:
        request["judge"] = ran.voices["judge"]
    if ran.stopped is not None:  # a guard stopped the participant's calls: the score says what it scores
        request["stopped"] = ran.stopped
    if prepared.setup_request is not None:
        request["setup"] = prepared.setup_request
    keep_score_input(facts, ran, trial)  # what rescore sends again (nullius rescore)
    ran.score = await _call(driver, "score", request, prepared.score_seconds)
    check_score(ran.score, prepared.bench.standard.kind)


async def _hold(facts: RunFacts, ran: Ran, trial: TrialDir) -> None:
    try:
        await hold(facts, ran, trial)
    except NotHeld as exc:
        raise TrialError("VerifierError", str(exc)) from None


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
            keep_record(trial.work / "relay", trial.agent)  # the produce call's record, as an agent's trial keeps its calls


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
    except NotReady as exc:
        raise TrialError("HealthcheckError", str(exc)) from None
    except (VerifyProblem, OSError) as exc:
        raise TrialError("OracleError", f"the oracle's solve could not run: {exc}") from None
    if code is None:
        raise TrialError("OracleError", f"the oracle's solve did not end in {steps.seconds:g} s")
    if code != 0:  # as Harbor's OracleAgent: said beside its output, and the check still runs
        trial.write_text("agent/exit-code.txt", f"{code}\n")


async def _verify(place: Any, trial: TrialDir, steps: StepRun | None) -> dict[str, Any]:
    """In a task's own image: what changed in it, then its check run where the work is; `score` is sent `verified` (or `steps`)."""
    if place is None or place.box is None:
        return {}
    own = place.environment.own
    try:
        if own.artifacts:  # after the agent, before the check's files go in: what it left, as Harbor collects it
            entries = await place.box.collect_artifacts(own.artifacts, trial.path / "artifacts")
            trial.write_json("artifacts/manifest.json", entries)
        if steps is not None:
            if not steps.checked:  # the agent's last step (or one it ran out of time in): its check
                await steps.check()
            return {"steps": steps.results}
        verified = await place.box.verify(own.verify, trial.verifier) if own.verify is not None else None
    except NotReady as exc:  # nop: the box first starts here
        raise TrialError("HealthcheckError", str(exc)) from None
    except StepFailed as exc:
        raise TrialError(exc.kind, str(exc)) from None
    except (VerifyProblem, OSError) as exc:  # OSError: docker failed under it
        raise TrialError("VerifierError", str(exc)) from None
    finally:
        try:
            changes = await place.box.changes()  # taken before the check's files went in
            patch = await place.box.workdir_patch()
        except OSError as exc:
            changes, patch = f"(the container's changes could not be taken: {exc})\n", None
        trial.write_text("agent/container-changes.txt", changes)
        if patch is not None:  # the container is gone after the unit: what the judge and `export` read of its changes
            trial.write_text("agent/changes.patch", patch)
    return {"verified": verified.request()} if verified is not None else {}


def check_score(score: dict[str, Any], kind: str) -> None:
    reward = score.get("reward")
    if isinstance(reward, bool) or not isinstance(reward, (int, float)) or not math.isfinite(reward):
        raise TrialError("VerifierError", f"score replied without a finite number as reward: {reward!r}")
    rewards = score.get("rewards")
    if rewards is not None and not (isinstance(rewards, dict) and all(
            isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in rewards.values())):
        raise TrialError("VerifierError", f"score replied rewards that are not an object of finite numbers: {rewards!r}")
    passed = score.get("passed")
    if kind == "pass" and not isinstance(passed, bool):
        raise TrialError("VerifierError", "score of a benchmark that passes or fails replied without passed: true or false")
    if kind == "score" and passed is not None and not isinstance(passed, bool):
        raise TrialError("VerifierError", f"score replied with passed that is not true or false: {passed!r}")
