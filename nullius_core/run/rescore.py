"""`nullius rescore JOB -o OUT`: every trial of a job scored again into a new job, from what it recorded; nothing runs again.

The job is copied whole into OUT (its config.json naming the source as
`standard.rescore_of`, its options as the score is now asked), then the
benchmark's own driver, prepared as a run prepares it, is sent `score` for
each trial from what the trial kept:

* `verifier/held.json` (a trial a run held, `--hold-score`);
* else `verifier/score-input.json` (what its run's `score` was sent);
* else, for a job recorded before runs kept that, its answer and transcript
  read back from `agent/trajectory.json` and its workspace `.work/workspace`.

A trial that kept none of them, or whose unit ended before it could be
scored (an error of its setup or its agent), is refused with the reason and
keeps its source's record, marked `not_rescored`; the others are rescored.
Then the new job's result.json is written from its trials.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import uuid
from pathlib import Path
from typing import Any

from nullius_core import aio, handed
from nullius_core.definitions.converter import unstructure
from nullius_core.failures import Phase, kind_of
from nullius_core.jobs.layout import JobDir, TrialDir
from nullius_core.jobs.records import iso, utcnow
from nullius_core.jobs.standard import JobStandard, read_job_standard
from nullius_core.run.held import HELD_KIND, Scored, rewrite_job, score_kept
from nullius_core.run.hold import HELD, SCORE_INPUT
from nullius_core.run.lone_driver import prepared_driver
from nullius_core.run.prepare import Prepared, RunRefused
from nullius_core.run.progress import Progress
from nullius_core.run.rescore_judge import RescoreJudge, judge_for, judging
from nullius_core.run.spec import RunSpec
from nullius_core.session import Session


class NotKept(Exception):
    """A trial that cannot be scored again: the message says why."""


def rescore(session: Session, source: Path, std: JobStandard, out: Path, options: dict[str, str], judge_model: str | None = None,
            progress: Progress | None = None, base_url: str | None = None) -> list[Scored]:
    """Score every trial of the job in `source` again into a new job in `out`; RunRefused when its benchmark cannot be prepared.

    `base_url`: the command line's. A judge asked again sends this machine's key, so the job's base URL (its record
    may be someone else's) is used only when the command line names it again."""
    judge = judge_for(session, std, judge_model)
    recorded = std.agent.base_url if std.agent is not None else None
    if judge is not None and recorded is not None and base_url != recorded:
        raise RunRefused(f"the job's judge was asked at {recorded}: give --base-url {recorded} to send this machine's key there "
                         "(a job's record does not choose where a key goes)")
    asked = {**{k: str(v) for k, v in (std.options or {}).items()}, **options}
    spec = RunSpec(benchmark=std.benchmark_ref, participant="nop", jobs_dir=out.parent, dataset=std.dataset_folder or std.dataset,
                   bench_options=asked, purpose="rescore",
                   # a judged benchmark's driver is prepared with the judge's provider, as a control's run of it is
                   provider=judge.upstream.provider.name if judge else None, base_url=recorded if judge else None,
                   judge_model=judge.voice.model if judge else None)
    with prepared_driver(session, spec, "rescore", progress) as prepared:
        new = _copy(source, out, std, asked, judge)
        job = JobDir(out)
        scored = aio.run(_score_all(session, prepared, list(job.trials()), new, judge))
    rewrite_job(job, new)
    return scored


def _refuse_links_out(source: Path) -> None:
    """A job whose folder holds a link leading out of it (someone else's job, say) is not copied: the copy would read through it."""
    out = handed.links_out(source)
    if out:
        raise RunRefused(f"{out[0]}: leads out of {source} (a link to {out[0].resolve()})")


def _copy(source: Path, out: Path, std: JobStandard, options: dict[str, str], judge: RescoreJudge | None) -> JobStandard:
    """The job copied whole into `out`, its config.json the new job's: a new id, the options asked, its source named."""
    # a link is copied as the link (never followed); one leading out of the job is refused first (handed.links_out)
    _refuse_links_out(source)
    shutil.copytree(source, out, symlinks=True, dirs_exist_ok=True)
    job = JobDir(out)
    config = job.read_config()
    config["job_name"], config["jobs_dir"] = out.name, str(out.parent)
    standard = dict(config["standard"])
    standard.update(job_id=str(uuid.uuid4()), created_at=iso(utcnow()), options=options or None, purpose="rescore",
                    rescore_of={"job": str(source), "job_id": std.job_id, "live": False})
    if judge is not None:  # the judge this rescore asks (--judge-model, else the job's own)
        standard["judge"] = unstructure(judge.record())
    config["standard"] = standard
    job.write_config(config)
    return read_job_standard(config, job.config_file)


async def _score_all(session: Session, prepared: Prepared, trials: list[TrialDir], std: JobStandard,
                     judge: RescoreJudge | None) -> list[Scored]:
    call_seconds = float(prepared.bench.limits.call_seconds) if prepared.bench.limits.call_seconds else None
    async with judging(session, judge, call_seconds) as with_judge:
        return await _each(prepared, trials, std, with_judge)


async def _each(prepared: Prepared, trials: list[TrialDir], std: JobStandard, with_judge: Any) -> list[Scored]:
    driver = prepared.runner.factory(prepared.launch)
    out = []
    try:
        for trial in trials:
            result = trial.read_result() or {}
            try:
                kept = kept_input(trial, result)
            except NotKept as exc:
                _mark(trial, result, str(exc))
                out.append(Scored(trial.name, str((result.get("standard") or {}).get("outcome") or "error"), None, None, error=str(exc)))
                continue
            if not driver.alive:
                await driver.close()
                driver = prepared.runner.factory(prepared.launch)
            one = await with_judge(trial, lambda route: score_kept(driver, prepared, trial, std, kept, result, route))
            if one.reward is None:
                _mark(trial, trial.read_result() or result, f"the score failed: {one.error}")
            out.append(one)
    finally:
        await asyncio.shield(driver.close())
    return out


def kept_input(trial: TrialDir, result: dict[str, Any]) -> dict[str, Any]:
    """What `score` is sent again for this trial, from what it kept; NotKept says why there is nothing to score."""
    if not result:
        raise NotKept("the trial has no result.json: its unit never ended")
    kind = kind_of((result.get("exception_info") or {}).get("exception_type"))
    if kind is not None and not kind.scored and kind.phase is not Phase.VERIFIER:
        raise NotKept(f"its unit ended {kind.name} ({kind.phase.value}) before it was scored: there is nothing to score")
    for name in (HELD, SCORE_INPUT):
        path = trial.path / name
        if path.is_file():
            try:
                kept = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError) as exc:
                raise NotKept(f"{name} cannot be read: {exc}") from None
            if kind is not None and kind.name == HELD_KIND:
                return kept
            return {**kept, "agent_failure": result.get("exception_info") if kind is not None and kind.scored else None}
    return _from_trajectory(trial, result)


def _from_trajectory(trial: TrialDir, result: dict[str, Any]) -> dict[str, Any]:
    """A trial recorded before runs kept score-input.json: its answer and transcript from its trajectory, its workspace in place."""
    if not (trial.path / ".work" / "workspace").is_dir():
        raise NotKept("its workspace is not in the trial (.work/workspace), and it kept no score-input.json")
    try:
        steps = json.loads((trial.agent / "trajectory.json").read_text(encoding="utf-8")).get("steps") or []
    except (OSError, ValueError, AttributeError) as exc:
        raise NotKept(f"its agent/trajectory.json cannot be read: {exc}") from None
    said = [s for s in steps if isinstance(s, dict) and s.get("source") in ("user", "agent") and isinstance(s.get("message"), str)]
    answers = [s["message"] for s in said if s["source"] == "agent"]
    if not answers:
        raise NotKept("its trajectory holds no answer of the agent")
    transcript = [{"role": s["source"], "text": s["message"]} for s in said]
    own = result.get("standard") or {}
    kind = kind_of((result.get("exception_info") or {}).get("exception_type"))
    return {"dir": ".work/workspace", "answer": answers[-1], "transcript": transcript, "stopped": own.get("stopped"),
            "agent_failure": result.get("exception_info") if kind is not None and kind.scored else None}


def _mark(trial: TrialDir, result: dict[str, Any], why: str) -> None:
    """A trial not rescored keeps its source's record, and says so."""
    if not result:
        return
    standard = dict(result.get("standard") or {})
    standard["not_rescored"] = why
    trial.write_json("result.json", {**result, "standard": standard})
