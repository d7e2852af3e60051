"""The jobs folder and one job, as the viewer shows them: read from each job's own files, a bad record said, never raised.

A job is a folder of the jobs folder holding `config.json`; its summary is
its `result.json` (Harbor's stats and Nullius's `standard` block), its
trials the folders named in `config.json`'s `planned_trials` (and any other
with a `result.json`). docs/standard.md ("Jobs") says what each file holds.
"""

from __future__ import annotations

import re
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import attrs

from nullius_app.job_files import Unreadable, dig, held, read_object, record

# One row per outcome a trial may show: its label, in the order a summary lists them.
OUTCOMES: dict[str, str] = {
    "passed": "passed",
    "failed": "failed",
    "scored": "scored",
    "error": "error",
    "rate_limited": "rate limited",
    "cancelled": "cancelled",
    "diverged": "diverged on replay",  # nullius replay met a request unlike the recorded one
    "held": "held for scoring",  # run with --hold-score: `nullius score JOB` scores it
    "running": "running",
    "not_run": "not run",
    "unreadable": "cannot be read",
}


def obj(value: Any) -> dict[str, Any]:
    """A record's object, or an empty one where the record holds something else."""
    return value if isinstance(value, dict) else {}


def number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def moment(value: Any) -> datetime | None:
    """An ISO 8601 time of a record (`2026-11-30T13:16:07.433126Z`), or None."""
    if not isinstance(value, str):
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None


@attrs.frozen(kw_only=True)
class JobRow:
    name: str
    created: str = ""
    benchmark: str = ""
    dataset: str = ""
    participant: str = ""
    model: str = ""
    state: str = ""
    trials: int | None = None
    planned: int | None = None
    mean: float | None = None
    problem: str | None = None  # the job's records cannot be read: which and why


def job_row(jobs_dir: Path, folder: Path) -> JobRow:
    name = folder.name
    try:
        config = obj(read_object(record(jobs_dir, folder, "config.json"), "config.json").get("standard"))
    except Unreadable as exc:
        return JobRow(name=name, created=_mtime(folder), problem=str(exc))
    base = dict(name=name, created=str(config.get("created_at") or _mtime(folder)), benchmark=str(config.get("benchmark_ref") or ""),
                dataset=str(config.get("dataset") or ""), participant=str(config.get("participant") or ""),
                model=str(config.get("model") or ""), planned=len(config.get("planned_trials") or []) or None)
    path = record(jobs_dir, folder, "result.json")
    if path is None:
        return JobRow(**base, state="starting (no result.json yet)")
    try:
        standard = obj(read_object(path, "result.json").get("standard"))
    except Unreadable as exc:
        return JobRow(**base, problem=str(exc))
    trials = standard.get("trials")
    return JobRow(**base, state=str(standard.get("state") or ""), trials=trials if isinstance(trials, int) else None,
                  mean=number(standard.get("mean")))


def _mtime(folder: Path) -> str:
    try:
        return datetime.fromtimestamp(folder.stat().st_mtime, timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    except OSError:
        return ""


def list_jobs(jobs_dir: Path) -> tuple[list[JobRow], list[str]]:
    """Every job of the jobs folder, newest first, and the folders there that are not jobs (no config.json)."""
    rows: list[JobRow] = []
    others: list[str] = []
    try:
        entries = sorted(jobs_dir.iterdir())
    except OSError:
        return [], []
    for entry in entries:
        if entry.name.startswith("."):
            continue
        folder = held(jobs_dir, entry.name)
        if folder is None or not folder.is_dir():
            continue  # a link leading out of the jobs folder is not a job of it
        if (folder / "config.json").exists() or (folder / "result.json").exists():
            rows.append(job_row(jobs_dir, folder))
        else:
            others.append(entry.name)
    rows.sort(key=lambda r: r.created, reverse=True)
    return rows, others


@attrs.frozen(kw_only=True)
class TrialRow:
    name: str
    unit: str
    attempt: int
    outcome: str  # a key of OUTCOMES
    reward: float | None = None
    exception: str = ""
    seconds: float | None = None
    problem: str | None = None


def _unit_of(name: str, repeat: int) -> tuple[str, int]:
    """A planned trial's unit and attempt from its name: `<unit>r<k>` with --repeat, else the unit itself."""
    found = re.fullmatch(r"(.+)r(\d+)", name) if repeat > 1 else None
    return (found.group(1), int(found.group(2))) if found else (name, 1)


def trial_row(jobs_dir: Path, folder: Path, name: str, repeat: int) -> TrialRow:
    unit, attempt = _unit_of(name, repeat)
    trial = held(jobs_dir, folder.name, name)
    if trial is None or not trial.is_dir():
        return TrialRow(name=name, unit=unit, attempt=attempt, outcome="not_run")
    path = record(jobs_dir, trial, "result.json")
    if path is None:
        return TrialRow(name=name, unit=unit, attempt=attempt, outcome="running")
    try:
        result = read_object(path, f"{name}/result.json")
    except Unreadable as exc:
        return TrialRow(name=name, unit=unit, attempt=attempt, outcome="unreadable", problem=str(exc))
    standard = obj(result.get("standard"))
    outcome = standard.get("outcome")
    started, finished = moment(result.get("started_at")), moment(result.get("finished_at"))
    attempt_now = standard.get("attempt")
    return TrialRow(name=name, unit=str(standard.get("unit") or unit),
                    attempt=attempt_now if isinstance(attempt_now, int) else attempt,
                    outcome=outcome if outcome in OUTCOMES else "unreadable",
                    problem=None if outcome in OUTCOMES else f"{name}/result.json: an outcome not known here ({outcome!r})",
                    reward=number(dig(result, "verifier_result", "rewards", "reward")),
                    exception=str(dig(result, "exception_info", "exception_type", default="") or ""),
                    seconds=(finished - started).total_seconds() if started and finished else None)


def trial_names(folder: Path, config: dict[str, Any]) -> list[str]:
    """The job's trials in plan order, then any other trial folder (one holding a result.json), by name."""
    planned = [n for n in config.get("planned_trials") or [] if isinstance(n, str)]
    seen = set(planned)
    try:
        extra = sorted(p.name for p in folder.iterdir() if not p.name.startswith(".") and p.name not in seen
                       and (p / "result.json").exists())
    except OSError:
        extra = []
    return planned + extra


@attrs.frozen(kw_only=True)
class JobView:
    name: str
    config: dict[str, Any]  # config.json's standard block
    result: dict[str, Any]  # result.json whole ({} when it cannot be read)
    trials: list[TrialRow]
    problems: list[str]

    @property
    def standard(self) -> dict[str, Any]:
        return obj(self.result.get("standard"))

    @property
    def repeat(self) -> int:
        repeat = self.config.get("repeat")
        return repeat if isinstance(repeat, int) and repeat > 0 else 1

    def counts(self) -> list[tuple[str, str, int]]:
        """(outcome, label, trials) for each outcome some trial has, in OUTCOMES' order."""
        found = {k: sum(1 for t in self.trials if t.outcome == k) for k in OUTCOMES}
        return [(k, OUTCOMES[k], n) for k, n in found.items() if n]

    def pass_k(self) -> list[tuple[str, list[tuple[str, float | None, float | None]]]]:
        """Per eval that has them: (k, pass^k, pass@k) by k, from Harbor's stats and Nullius's pass_hat_k."""
        out = []
        for key, found in obj(dig(self.result, "stats", "evals")).items():
            hat, at = obj(dig(found, "pass_hat_k")), obj(dig(found, "pass_at_k"))
            ks = sorted(set(hat) | set(at), key=lambda k: (len(k), k))
            if ks:
                out.append((key, [(k, number(hat.get(k)), number(at.get(k))) for k in ks]))
        return out


def job_view(jobs_dir: Path, folder: Path) -> JobView:
    problems: list[str] = []
    try:
        config = obj(read_object(record(jobs_dir, folder, "config.json"), "config.json").get("standard"))
    except Unreadable as exc:
        config, problems = {}, [str(exc)]
    result: dict[str, Any] = {}
    try:
        result = read_object(record(jobs_dir, folder, "result.json"), "result.json")
    except Unreadable as exc:
        problems.append(str(exc))
    repeat = config.get("repeat") if isinstance(config.get("repeat"), int) else 1
    trials = [trial_row(jobs_dir, folder, name, repeat) for name in trial_names(folder, config)]
    problems += [t.problem for t in trials if t.problem]
    return JobView(name=folder.name, config=config, result=result, trials=trials, problems=problems)
