"""A unit's token totals, read from its relay's record, in Harbor's AgentContext fields.

Only the agent's own calls count as the agent's (side models included); a
judge's and a simulated user's routes are recorded beside them and reported
apart, never as the agent's tokens.

The cost is the sum of each call's `cost`, which the relay's meter wrote in
the call's line (meter.py): `cost_usd` (Harbor's field) is the cost as
served, `metadata.cost.first_run_usd` the figure as if every run were the
first. One call whose cost is unknown (an unpriced model, a call recorded
without a meter) makes the sum `null`, never a smaller number.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from nullius_core.fsutil import read_json_lines


def agent_context(calls: list[dict[str, Any]], provider: str | None = None) -> dict[str, Any] | None:
    own = [c for c in calls if c.get("kind", "agent") == "agent"]
    if not own:
        return None
    totals: dict[str, Any] = {"n_input_tokens": 0, "n_cache_tokens": 0, "n_output_tokens": 0}
    by_model: dict[str, dict[str, Any]] = {}
    by_model_calls: dict[str, list[dict[str, Any]]] = {}
    for call in own:
        usage = call.get("usage") or {}
        name = f"{provider}/{call.get('model_sent')}" if provider else str(call.get("model_sent"))
        model = by_model.setdefault(name, {"n_input_tokens": 0, "n_cache_tokens": 0, "n_output_tokens": 0})
        by_model_calls.setdefault(name, []).append(call)
        for field, key in (("n_input_tokens", "input"), ("n_cache_tokens", "cached_input"), ("n_output_tokens", "output")):
            value = usage.get(key) or 0
            totals[field] += value
            model[field] += value
    cost = calls_cost(own)
    totals["cost_usd"] = cost["as_served_usd"]
    for name, model in by_model.items():
        model["cost_usd"] = calls_cost(by_model_calls[name])["as_served_usd"]
    statuses = Counter(str(c.get("status")) for c in own)
    served = Counter(c["served_by"] for c in own if c.get("served_by"))
    others = Counter(c.get("kind") for c in calls if c.get("kind", "agent") != "agent")
    return {
        **totals,
        "model_usage": by_model,
        "metadata": {
            "calls": len(own),
            "side_calls": sum(1 for c in own if c.get("side")),
            "reasoning_tokens": sum((c.get("usage") or {}).get("reasoning") or 0 for c in own),
            "statuses": dict(statuses),
            "served_by": dict(served),
            "other_routes": dict(others),
            "cost": cost,
        },
    }


def routes_used(calls: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """What each route besides the agent's spent (a simulator's, a judge's), by kind: never counted as the agent's."""
    out: dict[str, dict[str, Any]] = {}
    for kind in sorted({str(c.get("kind")) for c in calls if c.get("kind", "agent") != "agent"}):
        mine = [c for c in calls if c.get("kind") == kind]
        cost = calls_cost(mine)
        out[kind] = {
            "calls": len(mine),
            "input_tokens": sum((c.get("usage") or {}).get("input") or 0 for c in mine),
            "output_tokens": sum((c.get("usage") or {}).get("output") or 0 for c in mine),
            "cached_tokens": sum((c.get("usage") or {}).get("cached_input") or 0 for c in mine),
            "cost_usd": cost["as_served_usd"],
            "first_run_usd": cost["first_run_usd"],
        }
    return out


def added_routes(uses: list[dict[str, dict[str, Any]]]) -> dict[str, dict[str, Any]]:
    """Several trials' `routes_used`, summed by kind (a cost is None when one of its figures is)."""
    out: dict[str, dict[str, Any]] = {}
    for use in uses:
        for kind, figures in use.items():
            total = out.setdefault(kind, {k: 0 for k in figures})
            for key, value in figures.items():
                total[key] = None if value is None or total[key] is None else round(total[key] + value, 9)
    return out


def _figure(call: dict[str, Any], key: str) -> float | None:
    if call.get("refused"):
        return 0.0  # the stop file refused it unsent: nothing billed
    return (call.get("cost") or {}).get(key)


def calls_cost(calls: list[dict[str, Any]]) -> dict[str, Any]:
    """Both figures over some calls (None when one call's is unknown), and the prices they were read at."""
    out: dict[str, Any] = {}
    for key in ("as_served_usd", "first_run_usd"):
        figures = [_figure(c, key) for c in calls]
        out[key] = None if any(f is None for f in figures) else round(sum(figures), 9)  # type: ignore[arg-type]
    out["unpriced_calls"] = sum(1 for c in calls if _figure(c, "as_served_usd") is None)
    out["priced_as"] = {c["cost"]["priced_as"]: c["cost"].get("price_as_of") for c in calls if (c.get("cost") or {}).get("priced_as")}
    return out


def from_folder(folder: Path, provider: str | None = None) -> dict[str, Any] | None:
    return agent_context(read_json_lines(folder / "calls.jsonl"), provider)
