"""The frozen payloads handed to observer hooks. Observers read them; they never change them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import attrs


@attrs.frozen(kw_only=True)
class RunStarted:
    """A run is about to start its units (after `stage=units`)."""

    job_name: str
    job_dir: Path
    benchmark: str
    dataset: str
    participant: str
    control: str | None
    model: str | None
    backend: str
    units: tuple[str, ...]
    repeat: int
    config: dict[str, Any]


@attrs.frozen(kw_only=True)
class UnitFinished:
    """A trial has ended and its records are written."""

    job_name: str
    trial_name: str
    trial_dir: Path
    unit: str
    attempt: int
    outcome: str
    reward: float | None
    passed: bool | None
    exception_type: str | None
    seconds: float


@attrs.frozen(kw_only=True)
class RunFinished:
    """A run has ended (finished, or cancelled); the job's result.json is written."""

    job_name: str
    job_dir: Path
    state: str
    summary: dict[str, Any]
    result: dict[str, Any]
