"""The run-end table of a run over several configurations (--all-variants): one row per configuration, with ± inter-trial std.

A configuration is (variant name and digest, agent, model, reasoning effort):
the (agent, model, effort) of nasde's table, kept apart per variant so that
two variants of one agent and model are never averaged together. Score is
the mean reward over the trials that count in the mean (failures.in_mean,
as the job's own mean); tokens are input + output per trial, cost the relay's
"as if the first run" figure per trial (jobs/costs.py); each with the
sample standard deviation (n - 1) when n >= 2.
"""

from __future__ import annotations

import statistics
from pathlib import Path
from typing import Any

import attrs

from nullius_core.failures import in_mean
from nullius_core.jobs.costs import cost_of
from nullius_core.jobs.layout import JobDir
from nullius_core.jobs.report import trial_results
from nullius_core.jobs.standard import standard_of
from nullius_core.jobs.stats import reward_of


@attrs.frozen
class Figure:
    """A mean over n trials, with its sample std when n >= 2; None when no trial has the figure."""

    n: int
    mean: float | None
    std: float | None


@attrs.frozen
class Configuration:
    variant: str  # "name (digest12)", or "-" for a run without one
    agent: str
    model: str
    effort: str  # "" when none was set
    trials: int
    score: Figure
    tokens: Figure
    cost: Figure  # USD, as if the first run; None mean when a trial's price is unknown
    unknown_cost: int  # trials without a price


def figure(values: list[float]) -> Figure:
    if not values:
        return Figure(0, None, None)
    return Figure(len(values), statistics.fmean(values), statistics.stdev(values) if len(values) >= 2 else None)


def _tokens(trial: dict[str, Any]) -> float | None:
    usage = trial.get("agent_result") or {}
    if usage.get("n_input_tokens") is None and usage.get("n_output_tokens") is None:
        return None
    return float((usage.get("n_input_tokens") or 0) + (usage.get("n_output_tokens") or 0))


def configurations(jobs: list[Path]) -> list[Configuration]:
    """One row per configuration over the jobs' trials, in the order the jobs ran."""
    groups: dict[tuple[str, str, str, str], list[dict[str, Any]]] = {}
    for folder in jobs:
        std = standard_of(JobDir(folder))
        variant = f"{std.variant.name} ({std.variant.digest[:12]})" if std.variant is not None else "-"
        agent = std.agent.ref if std.agent is not None else std.participant
        groups.setdefault((variant, agent, std.model or "", std.reasoning_effort), []).extend(trial_results(JobDir(folder)))
    out = []
    for (variant, agent, model, effort), trials in groups.items():
        scored = [reward_of(t) for t in trials if in_mean(t)]
        tokens = [v for t in trials if (v := _tokens(t)) is not None]
        firsts = [(cost_of(t) or {}).get("first_run_usd") for t in trials if t.get("agent_result")]
        unknown = sum(1 for c in firsts if c is None)
        cost = figure([float(c) for c in firsts if c is not None]) if not unknown else Figure(len(firsts), None, None)
        out.append(Configuration(variant=variant, agent=agent, model=model, effort=effort, trials=len(trials), score=figure(scored),
                                 tokens=figure(tokens), cost=cost, unknown_cost=unknown))
    return out
