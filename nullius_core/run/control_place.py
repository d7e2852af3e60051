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

A run's empty control workspaces are used again (`Spares`): a folder made
and removed costs 0.1 to 0.5 ms on ext4 (more after many deletions), most
of what a GSM8K oracle unit costs beyond its driver. A unit takes an empty
one from `<job>/.work/spare/`; at its end it goes back if still empty, else
it is moved into the trial's `.work/workspace`, where it would have been.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import attrs

from nullius_core.contracts.backend import Backend, UnitPlace, commit_setup, init_repository
from nullius_core.jobs.layout import TrialDir


class Spares:
    """A run's empty control workspaces, each taken by one unit at a time (a killed run's are cleared by the next)."""

    def __init__(self, folder: Path) -> None:
        self.folder = str(folder)
        self.free: list[str] = []
        self.made = 0
        shutil.rmtree(self.folder, ignore_errors=True)

    def take(self) -> Path:
        if self.free:
            return Path(self.free.pop())
        path = f"{self.folder}/{self.made}"
        self.made += 1
        os.makedirs(path)
        return Path(path)

    def give_back(self, workspace: Path) -> None:
        self.free.append(str(workspace))

    def close(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)


async def open_place(backend: Backend, trial: TrialDir, control: bool, spares: Spares | None = None) -> tuple[UnitPlace, bool]:
    """The unit's place, and whether it is a control's bare one (a workspace folder alone, a spare one when the run keeps them)."""
    bare = getattr(backend, "prepare_control", None) if control else None
    if bare is not None:
        return await bare(spares.take() if spares is not None else trial.workspace, trial.home), True
    return await backend.prepare_unit(trial.workspace, trial.home), False


def _into_trial(trial: TrialDir, place: UnitPlace) -> UnitPlace:
    """A spare workspace moved to the trial's own, where every reader looks for it."""
    if place.workspace == trial.workspace:
        return place
    trial.work.mkdir(exist_ok=True)
    os.rename(place.workspace, trial.workspace)
    return attrs.evolve(place, workspace=trial.workspace)


OWN_IMAGE = ("image", "compose")  # a setup reply that puts the unit in its task's own image


def widen(trial: TrialDir, place: UnitPlace, setup: dict[str, Any]) -> tuple[UnitPlace, bool]:
    """A bare place made whole when setup put the unit in its task's own image (its box writes into agent/ and verifier/ and
    reads the workspace as a repository): the place, and whether it is still bare."""
    if not any(setup.get(k) is not None for k in OWN_IMAGE):
        return place, True
    trial.make()
    place = _into_trial(trial, place)
    place.home.mkdir(parents=True, exist_ok=True)
    place.workspace.mkdir(parents=True, exist_ok=True)
    init_repository(place.workspace)
    return place, False


def commit(place: UnitPlace, bare: bool) -> None:
    """What setup wrote, committed; a bare workspace becomes a repository only when setup wrote something."""
    if bare:
        if not _holds_anything(place.workspace):
            return
        init_repository(place.workspace)
    commit_setup(place.workspace)


def tidy(trial: TrialDir, place: Any, bare: bool, scored: bool, spares: Spares | None = None) -> None:
    """At the end of a control's trial in a bare place: its workspace removed (a spare one given back) when nothing was written
    into it, else moved into the trial and made a repository; an unscored trial's verifier/ removed when the driver wrote nothing
    there."""
    if not bare or place is None:
        return
    if not scored:
        _remove_if_empty(str(trial.verifier))
    if _holds_anything(place.workspace):
        place = _into_trial(trial, place)
        if not os.path.isdir(f"{place.workspace}/.git"):
            init_repository(place.workspace)
        return
    if spares is not None and place.workspace != trial.workspace:
        if os.path.isdir(place.workspace):  # the driver may have removed it: then the next unit gets a new one
            spares.give_back(place.workspace)
        return
    workspace = str(place.workspace)
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
