"""Harbor's `lock.json`: what a trial ran, pinned by digest, for a task its benchmark pinned by its own content.

Harbor writes one per trial (its TrialLock) and one per job (its JobLock,
every trial's lock), and its tools compare them: `harbor jobs diff` says
whether two jobs ran the same inputs, the uploader refuses a trial without
one. Nullius writes them where Harbor would have them: a trial whose setup
named its `task` with a checksum (a Harbor task folder's content hash,
computed by Harbor's own Packager in the driver). A unit without one (a
GSM8K problem, a HumanEval function) has no task folder to pin, so it gets
no lock rather than a digest of something that is not a folder.

What is not Harbor's own stays out: Nullius's agent and backend are named as
in config.json, with no Harbor timeout multipliers beyond the defaults, and
the job's `harbor` block leaves Harbor's version empty (Harbor did not run).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from nullius_core.fsutil import write_json_atomic
from nullius_core.jobs.layout import JobDir, TrialDir
from nullius_core.jobs.records import TrialConfig, dump, iso, utcnow

LOCK = "lock.json"
TRIAL_LOCK_SCHEMA = 2  # harbor.models.job.lock.TrialLock.schema_version, Harbor 0.25
JOB_LOCK_SCHEMA = 3  # harbor.models.job.lock.JobLock.schema_version


def trial_lock(config: TrialConfig, task: dict[str, str], stepped: bool) -> dict[str, Any] | None:
    """The trial's TrialLock, or None when its task was not pinned by content.

    The check runs in the agent's own box (Harbor's `shared` verifier mode);
    a task of steps resolves its mode per step, which Harbor records as none.
    """
    checksum = task.get("checksum")
    if not checksum:
        return None
    record = dump(config)
    pinned = {"name": task.get("name") or config.task.get("path"), "type": "local", "digest": f"sha256:{checksum}"}
    if task.get("path"):
        pinned["path"] = task["path"]
    return {
        "schema_version": TRIAL_LOCK_SCHEMA,
        "task": pinned,
        "agent": record["agent"],
        "environment": record["environment"],
        "verifier": {"environment_mode": None if stepped else "shared"},
        "skills": [],
    }


def write_trial_lock(trial: TrialDir, config: TrialConfig, task: dict[str, str], stepped: bool) -> None:
    lock = trial_lock(config, task, stepped)
    if lock is not None:
        trial.write_json(LOCK, lock)


def write_job_lock(job: JobDir, concurrency: int, names: list[str] | None = None) -> None:
    """The job's JobLock from its trials' own locks, when any trial has one (Harbor's trials match the job's entries).

    `names`, sorted, are the only trials that may hold one, when the caller knows (a merge saw each trial's files as it
    linked them): the job is then not scanned again, nor a lock looked for in every trial."""
    found: list[tuple[str, Any]] = []
    for name in _folders(job.path) if names is None else names:  # scanned, never listed: a job of 100,000 trials held no list
        try:
            with open(f"{job.path}/{name}/{LOCK}", encoding="utf-8") as handle:
                found.append((name, json.load(handle)))
        except (FileNotFoundError, NotADirectoryError):
            continue
    trials = [lock for _, lock in sorted(found, key=lambda pair: pair[0])]  # by trial name, as the trials are listed
    if not trials:
        return
    lock = {
        "schema_version": JOB_LOCK_SCHEMA,
        "created_at": iso(utcnow()),
        "harbor": {"version": None},
        "n_concurrent_trials": concurrency,
        "retry": {"max_retries": 0},  # Nullius reruns a unit by --resume, never by itself
        "trials": trials,
    }
    write_json_atomic(job.path / LOCK, lock)


def _folders(job: Path) -> Iterator[str]:
    """The job's folders but its own (`.work`), as the scan finds them."""
    with os.scandir(job) as entries:
        for entry in entries:
            if not entry.name.startswith(".") and entry.is_dir():
                yield entry.name
