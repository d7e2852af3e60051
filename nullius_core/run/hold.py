"""--hold-score: a trial that keeps what the driver's `score` would be sent, to be scored after the fact (`nullius score`, held.py).

What the agent left is made as `score` would find it (no link leads out of
the workspace), and verifier/held.json keeps the answer, the transcript, the
stop file's line, the setup's request and the agent's own failure (a
timeout, scored later as it left the unit), with the workspace's folder in
the trial. A unit whose check needs what ends with it (its task's box, its
judge's route) cannot be held.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from nullius_core.jobs.layout import TrialDir
from nullius_core.jobs.records import dump
from nullius_core.links import take_out

if TYPE_CHECKING:
    from nullius_core.run.trial_result import Ran
    from nullius_core.run.unit import RunFacts

HELD = "verifier/held.json"
SCORE_INPUT = "verifier/score-input.json"
HELD_MESSAGE = "the run held this unit's score (--hold-score); `nullius score JOB` scores it"


class NotHeld(Exception):
    """This unit's score cannot be held: the message says why."""


async def hold(facts: RunFacts, ran: Ran, trial: TrialDir) -> None:
    """What `score` would be sent, kept in verifier/held.json beside the workspace; NotHeld when it cannot be."""
    place = ran.place
    assert place is not None
    if place.box is not None or ran.steps is not None or "judge" in ran.voices:
        why = "its judge's route ends with the unit" if "judge" in ran.voices else "its check runs in the task's box, which ends with the unit"
        raise NotHeld(f"--hold-score cannot hold this unit's score: {why}")
    workspace = place.workspace.resolve()
    if not workspace.is_relative_to(trial.path.resolve()):
        raise NotHeld(f"--hold-score cannot hold this unit's score: its workspace {workspace} is outside the trial")
    ran.transcript = ran.transcript or [{"role": "user", "text": str(ran.prompt)}, {"role": "agent", "text": str(ran.answer)}]
    if facts.prepared.agent is not None:  # as `score` would find it: no link leads out of what the agent left
        await asyncio.to_thread(take_out, place.workspace, trial.verifier / "links.txt")
    trial.write_json(HELD, _kept(facts, ran, trial))


def _kept(facts: RunFacts, ran: Ran, trial: TrialDir) -> dict[str, Any]:
    assert ran.place is not None
    return {"dir": str(ran.place.workspace.resolve().relative_to(trial.path.resolve())), "answer": ran.answer,
            "transcript": ran.transcript, "stopped": ran.stopped, "setup": facts.prepared.setup_request,
            "agent_failure": dump(ran.agent_failure) if ran.agent_failure is not None else None}


def keep_score_input(facts: RunFacts, ran: Ran, trial: TrialDir) -> None:
    """What a scored trial's `score` is sent, kept as held.json keeps it (verifier/score-input.json): `nullius rescore` reads it.

    Only for a participant's unit (a control's answer is in its trajectory,
    and its trial stays small) scored from its workspace in the trial (not in
    a task's box, which ends with the unit). A judge's route is not kept:
    a rescore opens one of its own.
    """
    place = ran.place
    if facts.control is not None or place is None or place.box is not None or ran.steps is not None:
        return
    if not place.workspace.resolve().is_relative_to(trial.path.resolve()):
        return
    trial.write_json(SCORE_INPUT, _kept(facts, ran, trial))
