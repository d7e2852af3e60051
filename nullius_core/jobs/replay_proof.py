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


class ProofTally:
    """A replay's verdict and a rescore's note, kept as the job's trials are added (as jobs/tally.py keeps the rest of result.json).

    Made only for a replay or a rescore (`proof_tally`): an ordinary run keeps nothing here.
    """

    def __init__(self, std: JobStandard):
        self.std = std
        self.before = source_rewards(Path(std.replay_of.job)) if std.replay_of is not None else None
        self.units = 0
        self.live = 0
        self.diverged: dict[str, str] = {}
        self.differing: list[str] = []
        self.refused: dict[str, Any] = {}

    def add(self, trial: dict[str, Any]) -> None:
        self.units += 1
        name = str(trial.get("trial_name"))
        own = trial.get("standard") or {}
        if self.before is not None:
            note = own.get("replay") or {}
            if note.get("diverged"):
                self.diverged[name] = _where(note["diverged"])
            self.live += 1 if note.get("live") else 0
            if name not in self.before or _reward(trial) != self.before[name]:
                self.differing.append(name)
        if own.get("not_rescored"):
            self.refused[name] = own["not_rescored"]

    def replay(self) -> dict[str, Any] | None:
        """The replay's verdict, for result.json's `standard.replay`: None for a job that is not a replay."""
        if self.std.replay_of is None or self.before is None:
            return None
        equal = not self.differing and self.units == len(self.before)
        line = f"replayed: {self.units} units, {len(self.diverged)} diverged, rewards equal: {'yes' if equal else 'no'}"
        return {"source": self.std.replay_of.job, "source_id": self.std.replay_of.job_id, "units": self.units,
                "diverged": len(self.diverged), "diverged_trials": dict(sorted(self.diverged.items())), "live_trials": self.live,
                "rewards_equal": equal, "differing": sorted(self.differing), "line": line}

    def rescore(self) -> dict[str, Any] | None:
        """A rescore's note for result.json's `standard.rescore`: its source, and the trials that kept the source's record and why."""
        if self.std.rescore_of is None:
            return None
        return {"source": self.std.rescore_of.job, "source_id": self.std.rescore_of.job_id, "rescored": self.units - len(self.refused),
                "not_rescored": dict(sorted(self.refused.items()))}


def proof_tally(std: JobStandard) -> ProofTally | None:
    """A ProofTally for a replay's or a rescore's job; None for any other."""
    return ProofTally(std) if std.replay_of is not None or std.rescore_of is not None else None
