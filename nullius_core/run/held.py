"""`nullius score JOB`: the trials a run held (--hold-score) scored after the fact, in the job itself.

A held trial kept what the driver's `score` would have been sent
(verifier/held.json: the answer, the transcript, the workspace's folder in
the trial). Here the benchmark's own driver is started as the job's run
started it (its benchmark, dataset and options), sent `score` for each held
trial, and the trial's records are written as a scored trial's would have
been: reward.txt, score.json, its result.json's verifier_result and outcome.
A score that fails leaves the trial held and says why; nothing is read as 0.
Then the job's result.json is written again from every trial's result.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import attrs

from nullius_core import aio
from nullius_core.contracts.driver import Driver, DriverError
from nullius_core.jobs.job_result import job_result
from nullius_core.jobs.layout import JobDir, TrialDir
from nullius_core.jobs.records import iso, utcnow
from nullius_core.jobs.standard import JobRecordError, JobStandard, read_job_standard
from nullius_core.run.lone_driver import prepared_driver
from nullius_core.run.prepare import Prepared, RunRefused
from nullius_core.run.progress import Progress
from nullius_core.run.spec import RunSpec
from nullius_core.run.trial_result import score_files
from nullius_core.run.hold import HELD
from nullius_core.run.unit import TrialError, check_score
from nullius_core.session import Session

HELD_KIND = "ScoreHeld"


def read_json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


@attrs.frozen
class Scored:
    """One held trial's score: its reward (None when it could not be scored, `error` saying why)."""

    trial: str
    outcome: str
    reward: float | None
    passed: bool | None
    error: str | None = None


def held_trials(job: JobDir) -> list[TrialDir]:
    """The job's trials still held: a ScoreHeld result and their held.json."""
    out = []
    for trial in job.trials():
        result = trial.read_result() or {}
        kind = (result.get("exception_info") or {}).get("exception_type")
        if kind == HELD_KIND and (trial.path / HELD).is_file():
            out.append(trial)
    return out


def score_held(session: Session, job_dir: Path, progress: Progress | None = None) -> list[Scored]:
    """Score every held trial of the job; RunRefused when the job's benchmark cannot be prepared."""
    job = JobDir(job_dir)
    try:
        std = read_job_standard(job.read_config(), job.config_file)
    except (OSError, ValueError, JobRecordError) as exc:
        raise RunRefused(f"{job_dir} is not a job: {exc}") from None
    trials = held_trials(job)
    if not trials:
        return []
    spec = RunSpec(benchmark=std.benchmark_ref, participant="nop", jobs_dir=job_dir.parent, dataset=std.dataset_folder or std.dataset,
                   bench_options={k: str(v) for k, v in (std.options or {}).items()}, purpose="score")
    with prepared_driver(session, spec, "score", progress) as prepared:
        scored = aio.run(_score_all(prepared, trials, std))
    rewrite_job(job, std)
    return scored


async def _score_all(prepared: Prepared, trials: list[TrialDir], std: JobStandard) -> list[Scored]:
    driver = prepared.runner.factory(prepared.launch)
    out = []
    try:
        for trial in trials:
            if not driver.alive:
                await driver.close()
                driver = prepared.runner.factory(prepared.launch)
            out.append(await _score_one(driver, prepared, trial, std))
    finally:
        await asyncio.shield(driver.close())
    return out


async def _score_one(driver: Driver, prepared: Prepared, trial: TrialDir, std: JobStandard) -> Scored:
    try:
        held: dict[str, Any] = read_json(trial.path / HELD)
        result: dict[str, Any] = trial.read_result() or {}
        if not isinstance(held.get("dir"), str):
            raise ValueError("no dir")
    except (OSError, ValueError, AttributeError) as exc:
        return Scored(trial.name, "held", None, None, error=f"{HELD} cannot be read: {exc}")
    return await score_kept(driver, prepared, trial, std, held, result)


async def score_kept(driver: Driver, prepared: Prepared, trial: TrialDir, std: JobStandard, held: dict[str, Any],
                     result: dict[str, Any], judge: dict[str, str] | None = None) -> Scored:
    """`score` sent what a trial kept (held.json's fields: its workspace's folder, answer, transcript), and the judge's route
    when a rescore gives one; its records rewritten."""
    unit = (result.get("standard") or {}).get("unit") or trial.name
    request: dict[str, Any] = {"unit": unit, "dataset": prepared.dataset_name, "verifier": str(trial.verifier.resolve()),
                               "dir": str((trial.path / held["dir"]).resolve()), "answer": held.get("answer") or "",
                               "transcript": held.get("transcript") or []}
    attempt = (result.get("standard") or {}).get("attempt")
    if prepared.bench.limits.attempts and attempt:
        request["attempt"] = attempt
    for key in ("stopped", "setup"):
        if held.get(key) is not None:
            request[key] = held[key]
    if judge is not None:
        request["judge"] = judge
    started = utcnow()
    driver.log_to(trial.log)
    try:
        score = await driver.call("score", request, prepared.score_seconds)
        check_score(score, std.kind)
    except (DriverError, TrialError) as exc:
        trial.log(f"nullius score: the score failed: {exc}\n")
        return Scored(trial.name, "held", None, None, error=str(exc))
    finally:
        driver.log_to(None)
    outcome, reward, passed, parts = score_files(trial, score, std.kind)
    _rewrite_trial(trial, result, held, score, outcome, reward, passed, parts, started)
    return Scored(trial.name, outcome, reward, passed)


def _rewrite_trial(trial: TrialDir, result: dict[str, Any], held: dict[str, Any], score: dict[str, Any], outcome: str,
                   reward: float, passed: bool | None, parts: Any, started: Any) -> None:
    """The trial's result.json as a scored trial's: its reward, its outcome, the agent's own failure (a timeout) kept."""
    result = dict(result)
    result["verifier_result"] = {"rewards": {"reward": reward, **(score.get("rewards") or {})}}
    result["exception_info"] = held.get("agent_failure")
    result["verifier"] = {"started_at": iso(started), "finished_at": iso(utcnow())}
    standard = dict(result.get("standard") or {})
    standard.update(outcome=outcome, passed=passed, parts=parts, scored_later=iso(utcnow()))
    result["standard"] = standard
    if held.get("agent_failure") is None:
        (trial.path / "exception.txt").unlink(missing_ok=True)
    trial.write_json("result.json", result)


def rewrite_job(job: JobDir, std: JobStandard) -> None:
    """The job's result.json from every trial's result, its state as the run left it."""
    results = [r for r in (t.read_result() for t in job.trials()) if r is not None]
    before = read_json(job.result_file) if job.result_file.is_file() else {}
    summary = before.get("standard") or {}
    state = summary.get("state") or "finished"
    result = job_result(std, results, len(std.planned_trials), final=True, state=state, reason=summary.get("reason"),
                        started_at=before.get("started_at"))
    job.write_result(result)
