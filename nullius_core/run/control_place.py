"""A control's place: no more folders than the unit uses.

No agent runs in a control's unit, so it needs no HOME, and its workspace
needs a git repository only when something is written into it: setup's
files are committed as an agent's unit's are (the oracle's changes then
stand out), and a workspace the oracle wrote into with no setup's files is
made a repository at the trial's end, as it would have been from the start.
A workspace nothing wrote into is removed with the trial's `.work/`: a
GSM8K oracle's trial keeps its records and no empty folder.

A backend that offers `prepare_control(workspace, home)` (the local one)
makes such a place; any other makes its usual one (`prepare_unit`). A
control whose setup puts it in its task's own image gets its whole place
after setup (`widen`): the box writes into agent/ and reads the workspace.
"""

from __future__ import annotations

import os
from typing import Any

from nullius_core.contracts.backend import Backend, UnitPlace, commit_setup, init_repository
from nullius_core.jobs.layout import TrialDir


async def open_place(backend: Backend, trial: TrialDir, control: bool) -> tuple[UnitPlace, bool]:
    """The unit's place, and whether it is a control's bare one (a workspace folder alone)."""
    bare = getattr(backend, "prepare_control", None) if control else None
    if bare is not None:
        return await bare(trial.workspace, trial.home), True
    return await backend.prepare_unit(trial.workspace, trial.home), False


OWN_IMAGE = ("image", "compose")  # a setup reply that puts the unit in its task's own image


def widen(trial: TrialDir, place: UnitPlace, setup: dict[str, Any]) -> bool:
    """A bare place made whole when setup put the unit in its task's own image (its box writes into agent/ and verifier/ and
    reads the workspace as a repository): whether the place is still bare."""
    if not any(setup.get(k) is not None for k in OWN_IMAGE):
        return True
    trial.make()
    place.home.mkdir(parents=True, exist_ok=True)
    place.workspace.mkdir(parents=True, exist_ok=True)
    init_repository(place.workspace)
    return False


def commit(place: UnitPlace, bare: bool) -> None:
    """What setup wrote, committed; a bare workspace becomes a repository only when setup wrote something."""
    if bare:
        if not _holds_anything(place.workspace):
            return
        init_repository(place.workspace)
    commit_setup(place.workspace)


def tidy(trial: TrialDir, place: Any, bare: bool, scored: bool) -> None:
    """At the end of a control's trial in a bare place: its workspace removed when nothing was written into it, else made a
    repository; an unscored trial's verifier/ removed when the driver wrote nothing there."""
    if not bare or place is None:
        return
    if not scored:
        _remove_if_empty(str(trial.verifier))
    workspace = str(place.workspace)
    if _holds_anything(place.workspace):
        if not os.path.isdir(f"{workspace}/.git"):
            init_repository(place.workspace)
        return
    if _remove_if_empty(workspace):
        _remove_if_empty(str(trial.work))


def _holds_anything(folder: Any) -> bool:
    try:
        with os.scandir(folder) as entries:
            return any(True for _ in entries)
    except FileNotFoundError:
        return False


def _remove_if_empty(folder: str) -> bool:
    try:
        os.rmdir(folder)
    except OSError:  # not empty, or not there
        return False
    return True
