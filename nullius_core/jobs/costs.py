"""A job's tokens and costs, summed over its trials' `agent_result` (each the sum of its relay's priced calls).

Harbor's JobStats sums `cost_usd` over the trials that have one; Nullius is
stricter: when one trial's cost is unknown (an unpriced model), the job's
total is `null`, not the smaller sum of the others. The trials that are
unknown are named in `standard.cost`.
"""

from __future__ import annotations

from typing import Any

TOKENS = ("n_input_tokens", "n_cache_tokens", "n_output_tokens")


def cost_of(trial: dict[str, Any]) -> dict[str, Any] | None:
    """A trial's priced cost (its relay's): as served, as if the first run, what it was priced as."""
    return ((trial.get("agent_result") or {}).get("metadata") or {}).get("cost")


_cost_of = cost_of


def harbor_totals(trials: list[dict[str, Any]]) -> dict[str, Any]:
    """JobStats' summed usage: the token counts, and `cost_usd` as served (null when a trial's is unknown)."""
    out: dict[str, Any] = {}
    with_usage = [t["agent_result"] for t in trials if t.get("agent_result")]
    for name in TOKENS:
        values = [u[name] for u in with_usage if u.get(name) is not None]
        if values:
            out[name] = sum(values)
    if with_usage:
        costs = [u.get("cost_usd") for u in with_usage]
        out["cost_usd"] = None if any(c is None for c in costs) else round(sum(costs), 9)
    return out


def job_cost(trials: list[dict[str, Any]]) -> dict[str, Any] | None:
    """`standard.cost` of result.json: both figures over the trials, and the trials whose cost is unknown."""
    priced: dict[str, Any] = {}
    unknown: list[str] = []
    figures = {"as_served_usd": 0.0, "first_run_usd": 0.0}
    seen = False
    for trial in trials:
        if not trial.get("agent_result"):
            continue  # a control, or an agent that made no call: it cost nothing
        seen = True
        cost = _cost_of(trial) or {}
        if cost.get("as_served_usd") is None:
            unknown.append(trial["trial_name"])
        for key in figures:
            value = cost.get(key)
            figures[key] = None if value is None or figures[key] is None else figures[key] + value  # type: ignore[operator]
        priced.update(cost.get("priced_as") or {})
    if not seen:
        return None
    return {
        "as_served_usd": None if figures["as_served_usd"] is None else round(figures["as_served_usd"], 9),
        "first_run_usd": None if figures["first_run_usd"] is None else round(figures["first_run_usd"], 9),
        "unknown_trials": unknown,
        "priced_as": priced,
        "agent_reported_usd": _reported(trials),
    }


def _reported(trials: list[dict[str, Any]]) -> float | None:
    """What the agents said they cost (Claude's ACP reports it), beside the relay's figure as a cross-check."""
    values = [_cost_of(t).get("agent_reported_usd") for t in trials if _cost_of(t)]
    values = [v for v in values if v is not None]
    return round(sum(values), 9) if values else None
