"""A replay's proof: each trial's note of how its calls were answered, and the job's verdict against its source job; a rescore's note.

A replay of an unchanged setup diverges nowhere and gives the source's
rewards, trial by trial: `replayed: N units, 0 diverged, rewards equal: yes`
in the job's result.json (`standard.replay`), its summary and `nullius view`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from nullius_core.jobs.standard import Divergence, FieldDiff, JobStandard, TrialReplay


def trial_replay(calls: list[dict[str, Any]]) -> TrialReplay | None:
    """A trial's calls, as a replay answered them: None when none was (the trial of a control)."""
    replayed = sum(1 for c in calls if "replayed" in c)
    live = sum(1 for c in calls if c.get("live"))
    first = next((c for c in calls if "diverged" in c), None)
    if not replayed and first is None:
        return None
    diverged = None
    if first is not None:
        what = first["diverged"]
        diverged = Divergence(route=str(first.get("route")), index=int(what["index"]), call=str(first.get("id")),
                              source_call=what.get("source_call"), why=str(what.get("why")),
                              diff=[FieldDiff(**d) for d in what.get("diff") or []], differing=int(what.get("differing") or 0))
    return TrialReplay(replayed=replayed, live=live, diverged=diverged)


def _reward(result: dict[str, Any]) -> float | None:
    return ((result.get("verifier_result") or {}).get("rewards") or {}).get("reward")


def source_rewards(source: Path) -> dict[str, float | None]:
    """Each trial's reward in the source job, by trial name (None: not scored)."""
    out = {}
    for path in sorted(source.glob("*/result.json")):
        try:
            result = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(result, dict):
            out[path.parent.name] = _reward(result)
    return out


def _where(diverged: dict[str, Any]) -> str:
    """A divergence in a few words: `call 0 of u0000: messages[1].content`."""
    fields = ", ".join(d.get("path", "") for d in (diverged.get("diff") or [])[:3]) or str(diverged.get("why"))
    return f"call {diverged.get('index')} of {diverged.get('route')}: {fields}"


def job_replay(std: JobStandard, trials: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The replay's verdict, for result.json's `standard.replay`: None for a job that is not a replay."""
    if std.replay_of is None:
        return None
    before = source_rewards(Path(std.replay_of.job))
    diverged = {str(t.get("trial_name")): _where(d) for t in trials if (d := ((t.get("standard") or {}).get("replay") or {}).get("diverged"))}
    live = sum(1 for t in trials if ((t.get("standard") or {}).get("replay") or {}).get("live"))
    differing = sorted(str(t.get("trial_name")) for t in trials if _reward(t) != before.get(str(t.get("trial_name")), _reward(t)) or
                       str(t.get("trial_name")) not in before)
    equal = not differing and len(trials) == len(before)
    line = f"replayed: {len(trials)} units, {len(diverged)} diverged, rewards equal: {'yes' if equal else 'no'}"
    return {"source": std.replay_of.job, "source_id": std.replay_of.job_id, "units": len(trials), "diverged": len(diverged),
            "diverged_trials": dict(sorted(diverged.items())), "live_trials": live, "rewards_equal": equal,
            "differing": differing, "line": line}


def job_rescore(std: JobStandard, trials: list[dict[str, Any]]) -> dict[str, Any] | None:
    """A rescore's note for result.json's `standard.rescore`: its source, and the trials that kept the source's record and why."""
    if std.rescore_of is None:
        return None
    kept = {str(t.get("trial_name")): (t.get("standard") or {}).get("not_rescored") for t in trials}
    refused = {name: why for name, why in sorted(kept.items()) if why}
    return {"source": std.rescore_of.job, "source_id": std.rescore_of.job_id, "rescored": len(trials) - len(refused),
            "not_rescored": refused}
