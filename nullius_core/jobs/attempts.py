"""A unit's attempts combined into the unit's score: a part counts as solved when any attempt solved it.

This is the rule of benchmarks scored "pass@k" per part, as ARC-AGI's
official score is (two attempts per test input; a test input is solved when
either attempt's grid is exact; a task's score the fraction of its test
inputs solved). `--repeat K` makes the attempts; the job's result.json
carries the combination under `standard.attempts` beside the per-trial mean.

A trial's parts are its score's `parts.parts` list, matched across attempts
by position; a part's combined reward is the best any attempt got for it, the
unit's the mean of its parts'. A unit whose scores have no parts takes its
best attempt's reward, and passes when any attempt passed. An attempt that
errored unscored solved nothing; one outside the agent's doing (failures.py)
is left out, as it is of the mean. Units weigh as in the mean: by `parts.n`,
1 without it.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from nullius_core.failures import in_mean
from nullius_core.jobs.stats import reward_of, rewards_of, unit_of

RULE = "any"  # a part is solved when any of the unit's attempts solved it


def _parts(trial: dict[str, Any]) -> tuple[list[float] | None, float | None]:
    """The trial's part rewards in order (None: no parts list), and its `parts.n` (None when not given)."""
    parts = (trial.get("standard") or {}).get("parts")
    if not isinstance(parts, dict) or not isinstance(parts.get("parts"), list):
        return None, None
    if rewards_of(trial) is None:
        return None, None  # unscored: its parts are not a score
    rewards = [float(p["reward"]) if isinstance(p, dict) and isinstance(p.get("reward"), (int, float)) else 0.0 for p in parts["parts"]]
    n = parts.get("n")
    return rewards, float(n) if isinstance(n, (int, float)) and not isinstance(n, bool) else None


def combine_unit(attempts: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    """One unit's attempts (its trials in the mean) as `{attempts, reward, passed?, parts?, weight}`."""
    best: list[float] = []
    weight = 1.0
    with_parts = False
    for trial in attempts:
        rewards, n = _parts(trial)
        if n is not None:
            weight = n
        if rewards is None:
            continue
        with_parts = True
        best += [0.0] * (len(rewards) - len(best))
        best = [max(b, r) for b, r in zip(best, rewards + [0.0] * (len(best) - len(rewards)))]
    out: dict[str, Any] = {"attempts": len(attempts), "weight": weight}
    if with_parts and best:
        out["reward"] = sum(best) / len(best)
        out["parts"] = best
        passed = all(b >= 1.0 for b in best) or any((t.get("standard") or {}).get("passed") is True for t in attempts)
    else:
        out["reward"] = max((reward_of(t) for t in attempts), default=0.0)
        passed = any((t.get("standard") or {}).get("passed") is True for t in attempts)
    if kind == "pass":
        out["passed"] = passed
    return out


def combined(trials: list[dict[str, Any]], kind: str) -> dict[str, Any] | None:
    """The job's `standard.attempts`; None unless some unit has two or more attempts in the mean."""
    by_unit: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for trial in filter(in_mean, trials):
        by_unit[unit_of(trial)].append(trial)
    if not by_unit or max(len(group) for group in by_unit.values()) < 2:
        return None
    units = {unit: combine_unit(group, kind) for unit, group in sorted(by_unit.items())}
    weight = sum(u["weight"] for u in units.values())
    counts = [u["attempts"] for u in units.values()]
    out: dict[str, Any] = {
        "rule": RULE,
        "k": min(counts),
        "most": max(counts),
        "units": len(units),
        "mean": sum(u["reward"] * u["weight"] for u in units.values()) / weight if weight else 0.0,
    }
    if kind == "pass":
        out["passed"] = sum(1 for u in units.values() if u["passed"])
    out["by_unit"] = {unit: {k: v for k, v in u.items() if k != "weight"} for unit, u in units.items()}
    return out
