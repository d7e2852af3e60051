"""A job read back for a person: the end-of-run summary and `nullius view`, from the job's own files only.

Everything here comes from result.json (the job's, each trial's) and the
trials' trajectories, so a job read later, or on another machine, reads as it
did when its run ended.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import attrs

from nullius_core import handed
from nullius_core.failures import kind_of
from nullius_core.jobs.standard import read_trial_own, standard_of
from nullius_core.jobs.stats import seconds_between, slower
from nullius_core.jobs.layout import JobDir, TrialDir


@attrs.frozen
class Slowest:
    trial: str
    seconds: float


@attrs.frozen
class Report:
    job: Path
    benchmark: str
    participant: str
    model: str | None
    kind: str  # "pass" or "score"
    state: str
    reason: str | None
    planned: int
    outcomes: dict[str, int]  # passed, failed or scored, errored, left out, not run
    errors: dict[str, tuple[int, str]]  # by kind: how many, its phase
    mean: float | None
    mean_ci95: tuple[float, float] | None
    in_mean: int
    tokens: dict[str, int | None]  # input, output, cached
    cost: dict[str, Any] | None  # the job's standard.cost (jobs/costs.py): as served, as if the first run, what is unknown
    wall_seconds: float | None
    slowest: Slowest | None
    attempts: dict[str, Any] | None = None  # result.json's standard.attempts (jobs/attempts.py), without its by_unit
    variant: str | None = None  # "name (digest)": the variant every trial ran
    effort: str = ""  # an explicit reasoning effort; "" none was set
    skipped: int = 0  # units outside a scoped variant's tasks: skipped, not errors
    derived: str | None = None  # a replay's verdict against its source, or a rescore's source (jobs/replay_proof.py, run/rescore.py)


def _result(job: JobDir, name: str) -> Any:
    """A trial's result.json, None when it cannot be read yet (not written, or torn by a kill); one leading out of the job
    or past the bound is refused (handed.Refused), naming it."""
    try:
        return handed.read_json(job.path, Path(name, "result.json"))
    except handed.Refused:
        raise
    except (OSError, ValueError):
        return None


def trial_results(job: JobDir) -> list[dict[str, Any]]:
    """Every trial's result.json that can be read (a trial killed before its record has none)."""
    return [result for name in job.trial_names() if (result := _result(job, name)) is not None]


def _ran_and_slowest(job: JobDir) -> tuple[int, dict[str, Any] | None]:
    """How many trials have a result, and the slowest of them (`stats.slower`: the first of equals by name)."""
    ran, slowest = 0, None
    for name in job.trial_names():
        result = _result(job, name)
        if result is None:
            continue
        ran += 1
        slowest = slower(slowest, result)
    return ran, slowest


def _ended(summary: dict[str, Any]) -> bool:
    """result.json's `standard` of a job that ended: one still running, or killed while it ran, may lag its trials."""
    return summary.get("state") not in (None, "running") and isinstance(summary.get("trials"), int)


def _counted(summary: dict[str, Any]) -> tuple[int, dict[str, Any] | None] | None:
    """A job that ended says how many trials it has and its slowest (result.json's `standard`, counted as they came): its
    trials are not read again (30 s and 16 MB at 100,000). None for a job that has not ended, and for one written before
    `slowest` was kept: those are read trial by trial."""
    slowest = summary.get("slowest", False)
    if not _ended(summary):
        return None
    if slowest is None:  # no trial with both times
        return summary["trials"], None
    if isinstance(slowest, dict) and isinstance(slowest.get("trial"), str) and isinstance(slowest.get("seconds"), (int, float)):
        return summary["trials"], slowest
    return None


def report(folder: Path) -> Report:
    """The job in `folder` read back; ValueError when it is not a job (no config.json, or a result.json that is not one)."""
    job = JobDir(folder)
    if not job.config_file.is_file():
        raise ValueError(f"{folder} is not a job (no config.json)")
    std = standard_of(job)  # a config.json that is not a job's: JobRecordError (a ValueError) names its field
    result = handed.read_json(folder, Path("result.json")) if job.result_file.is_file() else {}
    summary = result.get("standard") or {}
    stats = result.get("stats") or {}
    ran, slowest = _counted(summary) or _ran_and_slowest(job)
    planned = len(std.planned_trials) or int(result.get("n_total_trials") or 0)
    outcomes = {k: int(summary.get(k) or 0) for k in ("passed", "failed", "scored", "errored") if k in summary}
    outcomes["left out"] = int(summary.get("left_out") or 0)
    outcomes["not run"] = max(planned - ran, 0)
    errors = {name: (n, kind.phase.value if (kind := kind_of(name)) else "?") for name, n in (summary.get("errors") or {}).items()}
    ci = summary.get("mean_ci95")
    return Report(
        job=folder,
        benchmark=std.benchmark_ref,
        participant=std.participant,
        model=std.model,
        kind=std.kind,
        state=str(summary.get("state") or "unknown"),
        reason=summary.get("reason"),
        planned=planned,
        outcomes=outcomes,
        errors=errors,
        mean=summary.get("mean") if summary.get("in_mean", ran) else None,
        mean_ci95=(float(ci[0]), float(ci[1])) if isinstance(ci, list) and len(ci) == 2 else None,
        in_mean=int(summary.get("in_mean", 0)),
        tokens={"input": stats.get("n_input_tokens"), "output": stats.get("n_output_tokens"), "cached": stats.get("n_cache_tokens")},
        cost=summary.get("cost"),
        wall_seconds=seconds_between(result.get("started_at"), result.get("finished_at") or result.get("updated_at")),
        slowest=Slowest(slowest["trial"], round(float(slowest["seconds"]), 2)) if slowest else None,
        attempts={k: v for k, v in summary["attempts"].items() if k != "by_unit"} if isinstance(summary.get("attempts"), dict) else None,
        variant=f"{std.variant.name} (digest {std.variant.digest[:12]})" if std.variant is not None else None,
        effort=std.reasoning_effort,
        skipped=len(std.out_of_scope or []),
        derived=_derived(std, summary),
    )


def _derived(std: Any, summary: dict[str, Any]) -> str | None:
    if std.replay_of is not None:
        verdict = (summary.get("replay") or {}).get("line") or "replayed: not finished"
        return f"{verdict} (of {std.replay_of.job})"
    if std.rescore_of is not None:
        return f"rescored from {std.rescore_of.job}; trials not run again"
    return None


def pick_trial(folder: Path, name: str | None) -> Path | None:
    """The trial `view` shows: the one named, else the first errored one, else the first failed one, else the first.

    One trial's record read at a time, up to the first errored one (a job of 100,000 trials is never held whole), and none
    when the ended job says every trial passed."""
    job = JobDir(folder)
    if name is not None:
        path = job.path / name
        return path if "/" not in name and not name.startswith(".") and (path / "config.json").is_file() else None
    names = job.trial_names()
    if not names or _all_passed(job, len(names)):
        return job.path / names[0] if names else None
    failed = None
    for trial in (TrialDir(job.path / n) for n in names):
        result = _result(job, trial.name)
        if result is not None and result.get("exception_info") is not None:
            return trial.path
        own = read_trial_own(result, trial.result_file) if failed is None else None
        if own is not None and own.outcome == "failed":
            failed = trial.path
    return failed or job.path / names[0]


def _all_passed(job: JobDir, found: int) -> bool:
    """An ended job whose result.json says each of its `found` trials passed: none errored, none failed."""
    try:
        summary = handed.read_json(job.path, Path("result.json")).get("standard") or {}
    except (OSError, ValueError, AttributeError):
        return False
    return _ended(summary) and not summary.get("errors") and summary.get("passed") == summary["trials"] == found


def transcript(trial: Path) -> list[tuple[str, str]]:
    """A trial's conversation as (who, text) lines: the trajectory's steps, its tool calls, its score and its exception.

    Read as a handed job is (nullius_core.handed): nothing through a link out of the job's folder, nothing past the bound."""
    lines: list[tuple[str, str]] = []
    trajectory = trial / "agent" / "trajectory.json"
    if trajectory.is_file():
        for step in handed.read_json(trial.parent, Path(trial.name, "agent", "trajectory.json")).get("steps") or []:
            if step.get("message"):
                lines.append((step.get("source") or "?", str(step["message"])))
            for call in step.get("tool_calls") or []:
                name = call.get("function_name") or call.get("name") or "tool"
                lines.append(("tool call", f"{name} {json.dumps(call.get('arguments'), ensure_ascii=False)}"))
            for found in (step.get("observation") or {}).get("results") or []:
                lines.append(("tool result", str(found.get("content"))))
    score = trial / "verifier" / "score.json"
    if score.is_file():
        lines.append(("score", handed.read_bytes(trial.parent, Path(trial.name, "verifier", "score.json")).decode(errors="replace").strip()))
    exception = trial / "exception.txt"
    if exception.is_file():
        text = handed.read_bytes(trial.parent, Path(trial.name, "exception.txt")).decode(errors="replace").strip()
        lines.append(("exception", text.splitlines()[0] if text else ""))
    return lines
