"""A unit's token totals, read from its relay's record, in Harbor's AgentContext fields.

Only the agent's own calls count as the agent's (side models included); a
judge's and a simulated user's routes are recorded beside them and reported
apart, never as the agent's tokens.
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
    totals = {"n_input_tokens": 0, "n_cache_tokens": 0, "n_output_tokens": 0}
    by_model: dict[str, dict[str, int]] = {}
    for call in own:
        usage = call.get("usage") or {}
        name = f"{provider}/{call.get('model_sent')}" if provider else str(call.get("model_sent"))
        model = by_model.setdefault(name, {"n_input_tokens": 0, "n_cache_tokens": 0, "n_output_tokens": 0})
        for field, key in (("n_input_tokens", "input"), ("n_cache_tokens", "cached_input"), ("n_output_tokens", "output")):
            value = usage.get(key) or 0
            totals[field] += value
            model[field] += value
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
        },
    }


def from_folder(folder: Path, provider: str | None = None) -> dict[str, Any] | None:
    return agent_context(read_json_lines(folder / "calls.jsonl"), provider)
