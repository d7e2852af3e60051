"""A job's `result.json` statistics, computed over its trials by Harbor's rules, and Nullius's own.

Harbor's rules: trials group by `agent__model__dataset`; the mean counts an
errored trial's missing reward as 0; pass@k (unbiased, averaged over tasks)
is given only when every trial's reward is a single 0 or 1, for k in
{2, 4, 8, ...} and {5, 10, 15, ...} up to the fewest trials of a task. One
change to them: a trial outside the agent's doing (failures.py: a rate limit,
a refused key, a provider that did not answer, a cancelled run) is left out
of both, as it is of Nullius's own mean.
Nullius adds: the mean weighed by each unit's `parts` and its 95% interval,
pass^k for repeats (C(c, k) / C(n, k) averaged over the units, an errored
unit left out), counts of outcomes, and errors by kind and by phase.
"""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime
from math import comb, sqrt
from typing import Any

from nullius_core.failures import in_mean, kind_of
from nullius_core.jobs import costs


def evals_key(trial: dict[str, Any]) -> str:
    info = trial.get("agent_info") or {}
    model = (info.get("model_info") or {}).get("name")
    dataset = trial.get("source") or "adhoc"
    name = info.get("name", "unknown")
    return f"{name}__{model}__{dataset}" if model else f"{name}__{dataset}"


def rewards_of(trial: dict[str, Any]) -> dict[str, float] | None:
    return (trial.get("verifier_result") or {}).get("rewards")


def reward_of(trial: dict[str, Any]) -> float:
    """The trial's reward; 0 for one errored unscored (Harbor's mean counts it so)."""
    rewards = rewards_of(trial)
    return float(next(iter(rewards.values()))) if rewards else 0.0


def eligible_k(max_k: int) -> list[int]:
    ks = set()
    k = 2
    while k <= max_k:
        ks.add(k)
        k *= 2
    k = 5
    while k <= max_k:
        ks.add(k)
        k += 5
    return sorted(ks)


def _pass_at_k(n: int, c: int, k: int) -> float:
    if n - c < k:
        return 1.0
    product = 1.0
    for i in range(k):
        product *= (n - c - i) / (n - i)
    return 1.0 - product


def unit_of(trial: dict[str, Any]) -> str:
    """The trial's unit: its own record's (task_name may be the upstream's name for the task, once its setup said it)."""
    return str((trial.get("standard") or {}).get("unit") or trial["task_name"])


def pass_at_k(trials: list[dict[str, Any]]) -> dict[str, float]:
    by_task: dict[str, list[int]] = defaultdict(list)
    for trial in filter(in_mean, trials):
        rewards = rewards_of(trial)
        if rewards is None:
            by_task[unit_of(trial)].append(0)
            continue
        if len(rewards) != 1:
            return {}
        value = next(iter(rewards.values()))
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value not in (0, 1):
            return {}
        by_task[unit_of(trial)].append(int(value))
    if not by_task:
        return {}
    fewest = min(len(s) for s in by_task.values())
    return {
        str(k): sum(_pass_at_k(len(s), sum(s), k) for s in by_task.values()) / len(by_task)
        for k in eligible_k(fewest)
    }


def pass_hat_k(trials: list[dict[str, Any]]) -> dict[str, float]:
    """pass^k: the chance that k attempts all pass, over units with no errored attempt."""
    by_unit: dict[str, list[bool]] = defaultdict(list)
    errored: set[str] = set()
    for trial in trials:
        unit = unit_of(trial)
        if trial.get("exception_info") is not None or rewards_of(trial) is None:
            errored.add(unit)
            continue
        by_unit[unit].append(bool((trial.get("standard") or {}).get("passed")))
    units = {u: s for u, s in by_unit.items() if u not in errored}
    if not units:
        return {}
    fewest = min(len(s) for s in units.values())
    return {
        str(k): sum(comb(sum(s), k) / comb(len(s), k) for s in units.values()) / len(units)
        for k in range(1, fewest + 1)
    }


def job_stats(trials: list[dict[str, Any]], n_total: int, n_running: int = 0, kind: str = "pass") -> dict[str, Any]:
    """Harbor's JobStats over the trials that have a result."""
    evals: dict[str, dict[str, Any]] = {}
    grouped: dict[str, list[dict[str, Any]]] = defaultdict(list)
    stats: dict[str, Any] = {
        "n_completed_trials": 0,
        "n_errored_trials": 0,
        "n_running_trials": n_running,
        "n_pending_trials": 0,
        "n_cancelled_trials": 0,
        "n_retries": 0,
    }
    for trial in trials:
        stats["n_completed_trials"] += 1
        key = evals_key(trial)
        grouped[key].append(trial)
        entry = evals.setdefault(
            key, {"n_trials": 0, "n_errors": 0, "metrics": [], "pass_at_k": {}, "reward_stats": {}, "exception_stats": {}}
        )
        rewards = rewards_of(trial)
        if rewards is not None:
            entry["n_trials"] += 1
            for name, value in rewards.items():
                entry["reward_stats"].setdefault(name, {}).setdefault(_key(value), []).append(trial["trial_name"])
        exception = trial.get("exception_info")
        if exception is not None:
            entry["exception_stats"].setdefault(exception["exception_type"], []).append(trial["trial_name"])
            entry["n_errors"] += 1
            stats["n_errored_trials"] += 1
            if exception["exception_type"] == "CancelledError":
                stats["n_cancelled_trials"] += 1
    for key, group in grouped.items():
        evals[key]["metrics"] = [{"mean": _mean(group)}]
        evals[key]["pass_at_k"] = pass_at_k(group)
        hat = pass_hat_k(group) if kind == "pass" else {}
        if hat and max(int(k) for k in hat) > 1:
            evals[key]["pass_hat_k"] = hat
    stats["n_pending_trials"] = max(n_total - stats["n_completed_trials"] - n_running, 0)
    stats["evals"] = evals
    stats.update(costs.harbor_totals(trials))  # a trial of unknown cost makes the job's cost_usd null
    return stats


def _key(value: float) -> str:
    return str(float(value)) if isinstance(value, (int, float)) else str(value)


def _mean(trials: list[dict[str, Any]]) -> float:
    """Harbor's mean: a missing reward counts as 0 (a trial outside the agent's doing is left out: failures.py)."""
    values = []
    for trial in filter(in_mean, trials):
        values.append(reward_of(trial))
    return sum(values) / len(values) if values else 0.0


def summary(trials: list[dict[str, Any]], n_total: int, kind: str) -> dict[str, Any]:
    """Nullius's own reading of a job: outcomes, errors by kind, the mean weighed by parts and its interval, the breakdown by part.

    A trial outside the agent's doing (failures.py: rate-limited, a refused
    key, a provider that did not answer, cancelled) weighs nothing in the mean
    and is counted apart in `left_out`.
    """
    outcomes: dict[str, int] = defaultdict(int)
    errors: dict[str, int] = defaultdict(int)
    left_out: dict[str, int] = defaultdict(int)
    counted: list[tuple[float, float]] = []  # (reward, weight) of each trial in the mean
    breakdown: dict[str, dict[str, list[float]]] = {}
    slowest = None
    for trial in trials:
        slowest = slower(slowest, trial)
        own = trial.get("standard") or {}
        exception = trial.get("exception_info")
        rewards = rewards_of(trial)
        if exception is not None:
            errors[exception["exception_type"]] += 1
        if not in_mean(trial):
            left_out[exception["exception_type"]] += 1
            continue
        if exception is not None and rewards is None:
            outcomes["errored"] += 1
        elif own.get("passed") is True:
            outcomes["passed"] += 1
        else:
            outcomes["failed"] += 1
        reward = reward_of(trial)
        parts = own.get("parts") if isinstance(own.get("parts"), dict) else {}
        counted.append((reward, float(parts.get("n", 1))))
        by = parts.get("by")
        for part in parts.get("parts") or []:
            if by and isinstance(part, dict) and by in part and "reward" in part:
                breakdown.setdefault(by, {}).setdefault(str(part[by]), []).append(float(part["reward"]))
    weight = sum(w for _, w in counted)
    mean = sum(r * w for r, w in counted) / weight if weight else 0.0
    out: dict[str, Any] = {
        "trials": len(trials),
        "planned": n_total,
        "errored": outcomes["errored"],
        "cancelled": left_out.get("CancelledError", 0),
        "left_out": sum(left_out.values()),
        "in_mean": len(counted),
        "mean": mean,
        "mean_ci95": interval([r for r, _ in counted], mean, kind),
        "errors": {name: errors[name] for name in sorted(errors)},
        "errors_by_phase": error_phases(errors),
        "slowest": slowest,
    }
    if kind == "pass":
        out.update(passed=outcomes["passed"], failed=outcomes["failed"])
    else:
        out.update(scored=outcomes["passed"] + outcomes["failed"])
    if breakdown:
        out["parts"] = {by: {v: sum(r) / len(r) for v, r in groups.items()} for by, groups in breakdown.items()}
    return out


def seconds_between(start: str | None, end: str | None) -> float | None:
    """The seconds from one of a record's ISO times to another; None when either is missing or not a time."""
    if not start or not end:
        return None
    try:
        return (datetime.fromisoformat(end.replace("Z", "+00:00")) - datetime.fromisoformat(start.replace("Z", "+00:00"))).total_seconds()
    except (TypeError, ValueError):
        return None


def slower(slowest: dict[str, Any] | None, trial: dict[str, Any]) -> dict[str, Any] | None:
    """`standard.slowest` with `trial` seen too: the trial of the most seconds from start to finish, the first of equals by
    name, so that any order of the same trials says the same (a run's, a merge's, a recount's)."""
    seconds = seconds_between(trial.get("started_at"), trial.get("finished_at"))
    name = trial.get("trial_name")
    if seconds is None or not isinstance(name, str):
        return slowest
    if slowest is None or seconds > slowest["seconds"] or (seconds == slowest["seconds"] and name < slowest["trial"]):
        return {"trial": name, "seconds": seconds}
    return slowest


def error_phases(errors: dict[str, int]) -> dict[str, int]:
    """Errors by kind, counted by the phase each kind belongs to (failures.py)."""
    phases: dict[str, int] = defaultdict(int)
    for name, n in errors.items():
        kind = kind_of(name)
        if kind is not None:
            phases[kind.phase.value] += n
    return dict(sorted(phases.items()))


def interval(rewards: list[float], mean: float, kind: str) -> list[float] | None:
    """A 95% interval of the mean: Wilson's for pass/fail rewards (it holds at 0 of 5), the normal one's otherwise; None under 2."""
    n = len(rewards)
    if n < 2:
        return None
    if kind == "pass" and all(r in (0.0, 1.0) for r in rewards):
        return wilson(sum(rewards), n)
    sd = sqrt(sum((r - mean) ** 2 for r in rewards) / (n - 1))
    half = Z * sd / sqrt(n)
    return [round(mean - half, 4), round(mean + half, 4)]


Z = 1.959964


def wilson(passed: float, n: int) -> list[float]:
    """Wilson's 95% interval of `passed` successes out of `n`."""
    z = Z
    p = passed / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return [round(max(0.0, centre - half), 4), round(min(1.0, centre + half), 4)]
