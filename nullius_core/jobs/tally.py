"""A job's result.json kept as running figures: each trial added once, the file written from the figures, never from every trial.

`Tally.add(result)` folds one trial's result.json into the counts and sums
that `stats.summary()`, `stats.job_stats()`, `costs` and `attempts` compute
over a list of trials, in the same order and with the same arithmetic, so a
tally fed the trials one by one says exactly what those functions say of the
whole list (`job_result.job_result()` is a tally fed at once). What it keeps
does not grow with the trials but for Harbor's own lists of trial names
(`reward_stats`, `exception_stats`: references to names the run holds
anyway), the names of trials of unknown cost, and the few blocks only an
agent's trial has (its routes, who served it).

pass@k, pass^k and `standard.attempts` need each unit's trials together; a
tally made with `per_unit=False` (a run of one attempt per unit, where each
of them is empty) keeps none of that.
"""

from __future__ import annotations

from collections import defaultdict
from fractions import Fraction
from math import sqrt
from typing import Any

from nullius_core.failures import in_mean
from nullius_core.jobs import attempts
from nullius_core.jobs.costs import TOKENS, cost_of
from nullius_core.jobs.names import Names
from nullius_core.jobs.replay_proof import ProofTally
from nullius_core.jobs.stats import Z, error_phases, evals_key, pass_at_k, pass_hat_k, reward_of, rewards_of, slower, unit_of, wilson


class _Eval:
    """One `agent__model__dataset` group of Harbor's JobStats."""

    __slots__ = ("n_trials", "n_errors", "reward_stats", "exception_stats", "mean_sum", "mean_n")

    def __init__(self) -> None:
        self.n_trials = 0
        self.n_errors = 0
        self.reward_stats: dict[str, dict[str, Names]] = {}  # Harbor's lists of trial names, compact (jobs/names.py)
        self.exception_stats: dict[str, Names] = {}
        self.mean_sum = 0.0
        self.mean_n = 0


def _key(value: Any) -> str:
    return str(float(value)) if isinstance(value, (int, float)) else str(value)


class Tally:
    """Running figures of a job's trials; `stats()` and `summary()` render them as result.json says them."""

    def __init__(self, kind: str, per_unit: bool = True, proof: ProofTally | None = None):
        self.kind = kind
        self.proof = proof  # a replay's or a rescore's note (jobs/replay_proof.py), kept as trials come
        self.per_unit = per_unit
        self.completed = 0
        self.errored = 0
        self.cancelled = 0
        self.evals: dict[str, _Eval] = {}
        self.units: dict[str, list[dict[str, Any]]] = defaultdict(list)  # per_unit only: each trial's few fields the unit's figures need
        self.outcomes: dict[str, int] = defaultdict(int)
        self.errors: dict[str, int] = defaultdict(int)
        self.left_out: dict[str, int] = defaultdict(int)
        self.in_mean = 0
        self.weighted = 0.0  # sum of reward * weight, in the order trials came (as sum() over the list)
        self.weight = 0.0
        self.rewards_sum = Fraction(0)  # exact, for the interval's spread: it does not depend on the order
        self.rewards_squares = Fraction(0)
        self.binary = True  # every reward in the mean is 0 or 1
        self.breakdown: dict[str, dict[str, list[float]]] = {}  # by -> value -> [sum, count]
        self.tokens: dict[str, int] = {}
        self.with_usage = 0
        self.usage_cost: float | None = 0.0
        self.cost_seen = False
        self.unknown: list[str] = []
        self.figures: dict[str, float | None] = {"as_served_usd": 0.0, "first_run_usd": 0.0}
        self.priced: dict[str, Any] = {}
        self.reported: float | None = None
        self.routes: list[dict[str, Any]] = []  # the trials' own `routes` blocks (an agent's trial with a judge or a simulator)
        self.served: list[dict[str, Any]] = []  # the trials' own `served` blocks (an agent's trial)
        self.slowest: dict[str, Any] | None = None  # `standard.slowest`: the summary and `view` read it, not every trial

    def add(self, trial: dict[str, Any]) -> None:
        self._stats(trial)
        self.slowest = slower(self.slowest, trial)
        self._summary(trial)
        self._costs(trial)
        if self.proof is not None:
            self.proof.add(trial)
        own = trial.get("standard") or {}
        if own.get("routes"):
            self.routes.append(own["routes"])
        if own.get("served"):
            self.served.append(own["served"])
        if self.per_unit:
            self.units[unit_of(trial)].append({
                "trial_name": trial.get("trial_name"), "task_name": trial.get("task_name"),
                "verifier_result": trial.get("verifier_result"), "exception_info": trial.get("exception_info"),
                "agent_info": trial.get("agent_info"), "source": trial.get("source"),
                "standard": {k: own[k] for k in ("unit", "passed", "parts") if k in own}})

    def _stats(self, trial: dict[str, Any]) -> None:
        self.completed += 1
        entry = self.evals.get(key := evals_key(trial))
        if entry is None:
            entry = self.evals[key] = _Eval()
        rewards = rewards_of(trial)
        if rewards is not None:
            entry.n_trials += 1
            for name, value in rewards.items():
                entry.reward_stats.setdefault(name, {}).setdefault(_key(value), Names()).append(trial["trial_name"])
        exception = trial.get("exception_info")
        if exception is not None:
            entry.exception_stats.setdefault(exception["exception_type"], Names()).append(trial["trial_name"])
            entry.n_errors += 1
            self.errored += 1
            if exception["exception_type"] == "CancelledError":
                self.cancelled += 1
        if in_mean(trial):
            entry.mean_sum += reward_of(trial)
            entry.mean_n += 1

    def _summary(self, trial: dict[str, Any]) -> None:
        own = trial.get("standard") or {}
        exception = trial.get("exception_info")
        rewards = rewards_of(trial)
        if exception is not None:
            self.errors[exception["exception_type"]] += 1
        if not in_mean(trial):
            self.left_out[exception["exception_type"]] += 1
            return
        if exception is not None and rewards is None:
            self.outcomes["errored"] += 1
        elif own.get("passed") is True:
            self.outcomes["passed"] += 1
        else:
            self.outcomes["failed"] += 1
        reward = reward_of(trial)
        parts = own.get("parts") if isinstance(own.get("parts"), dict) else {}
        self.in_mean += 1
        self.weighted += reward * float(parts.get("n", 1))
        self.weight += float(parts.get("n", 1))
        exact = Fraction(reward)
        self.rewards_sum += exact
        self.rewards_squares += exact * exact
        self.binary = self.binary and reward in (0.0, 1.0)
        by = parts.get("by")
        for part in parts.get("parts") or []:
            if by and isinstance(part, dict) and by in part and "reward" in part:
                figure = self.breakdown.setdefault(by, {}).setdefault(str(part[by]), [0.0, 0])
                figure[0] += float(part["reward"])
                figure[1] += 1

    def _costs(self, trial: dict[str, Any]) -> None:
        usage = trial.get("agent_result")
        if not usage:
            return
        self.with_usage += 1
        for name in TOKENS:
            if usage.get(name) is not None:
                self.tokens[name] = self.tokens.get(name, 0) + usage[name]
        spent = usage.get("cost_usd")
        self.usage_cost = None if spent is None or self.usage_cost is None else self.usage_cost + spent
        self.cost_seen = True
        cost = cost_of(trial) or {}
        if cost.get("as_served_usd") is None:
            self.unknown.append(trial["trial_name"])
        for key, total in self.figures.items():
            value = cost.get(key)
            self.figures[key] = None if value is None or total is None else total + value
        self.priced.update(cost.get("priced_as") or {})
        if cost and cost.get("agent_reported_usd") is not None:
            self.reported = (self.reported or 0.0) + cost["agent_reported_usd"]

    # --- what result.json says ------------------------------------------------

    def stats(self, n_total: int, n_running: int = 0) -> dict[str, Any]:
        """Harbor's JobStats, as `stats.job_stats()` says it of the same trials."""
        evals: dict[str, Any] = {}
        for key, entry in self.evals.items():
            evals[key] = {"n_trials": entry.n_trials, "n_errors": entry.n_errors,
                          "metrics": [{"mean": entry.mean_sum / entry.mean_n if entry.mean_n else 0.0}],
                          "pass_at_k": {},
                          "reward_stats": {name: {value: list(names) for value, names in by_value.items()}
                                           for name, by_value in entry.reward_stats.items()},
                          "exception_stats": {kind: list(names) for kind, names in entry.exception_stats.items()}}
        if self.per_unit:
            self._per_unit_stats(evals)
        out: dict[str, Any] = {
            "n_completed_trials": self.completed,
            "n_errored_trials": self.errored,
            "n_running_trials": n_running,
            "n_pending_trials": max(n_total - self.completed - n_running, 0),
            "n_cancelled_trials": self.cancelled,
            "n_retries": 0,
            "evals": evals,
        }
        out.update({name: self.tokens[name] for name in TOKENS if name in self.tokens})
        if self.with_usage:
            out["cost_usd"] = None if self.usage_cost is None else round(self.usage_cost, 9)
        return out

    def _per_unit_stats(self, evals: dict[str, Any]) -> None:
        grouped: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for trials in self.units.values():
            for trial in trials:
                grouped[evals_key(trial)].append(trial)
        for key, group in grouped.items():
            evals[key]["pass_at_k"] = pass_at_k(group)
            hat = pass_hat_k(group) if self.kind == "pass" else {}
            if hat and max(int(k) for k in hat) > 1:
                evals[key]["pass_hat_k"] = hat

    def summary(self, n_total: int) -> dict[str, Any]:
        """Nullius's own reading, as `stats.summary()` says it of the same trials."""
        mean = self.weighted / self.weight if self.weight else 0.0
        out: dict[str, Any] = {
            "trials": self.completed,
            "planned": n_total,
            "errored": self.outcomes["errored"],
            "cancelled": self.left_out.get("CancelledError", 0),
            "left_out": sum(self.left_out.values()),
            "in_mean": self.in_mean,
            "mean": mean,
            "mean_ci95": self._interval(mean),
            "errors": {name: self.errors[name] for name in sorted(self.errors)},
            "errors_by_phase": error_phases(self.errors),
            "slowest": self.slowest,
        }
        if self.kind == "pass":
            out.update(passed=self.outcomes["passed"], failed=self.outcomes["failed"])
        else:
            out.update(scored=self.outcomes["passed"] + self.outcomes["failed"])
        if self.breakdown:
            out["parts"] = {by: {v: figure[0] / figure[1] for v, figure in groups.items()} for by, groups in self.breakdown.items()}
        return out

    def _interval(self, mean: float) -> list[float] | None:
        n = self.in_mean
        if n < 2:
            return None
        if self.kind == "pass" and self.binary:
            return wilson(float(self.rewards_sum), n)
        m = Fraction(mean)
        spread = self.rewards_squares - 2 * m * self.rewards_sum + n * m * m  # sum of (r - mean)^2, exactly
        half = Z * sqrt(max(float(spread), 0.0) / (n - 1)) / sqrt(n)
        return [round(mean - half, 4), round(mean + half, 4)]

    def cost(self) -> dict[str, Any] | None:
        """`standard.cost`, as `costs.job_cost()` says it of the same trials."""
        if not self.cost_seen:
            return None
        served, first = self.figures["as_served_usd"], self.figures["first_run_usd"]
        return {
            "as_served_usd": None if served is None else round(served, 9),
            "first_run_usd": None if first is None else round(first, 9),
            "unknown_trials": list(self.unknown),
            "priced_as": dict(self.priced),
            "agent_reported_usd": round(self.reported, 9) if self.reported is not None else None,
        }

    def attempts(self) -> dict[str, Any] | None:
        """`standard.attempts`, as `attempts.combined()` says it; None for a tally that keeps no unit's trials."""
        if not self.per_unit:
            return None
        return attempts.combined([t for trials in self.units.values() for t in trials], self.kind)

