"""`nullius export`: each trial's essence in a flat folder DIR/<job>__<trial>/, merged on a re-export.

A job exported may be someone else's: it is read through nullius_core.handed,
so a trial folder or a file that is a link out of the folder given is
refused, the job's and trial's names from its records are plain names or
refused (never `../`), and no file is read past the records' bound.

Immutable files (the trajectory, the patch, the verifier's output, the
reward) are written once and left alone; evaluations missing from the
export are copied; the summary and metrics.json are refreshed. A trial is
reported exported only when something new was written.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import attrs

from nullius_core.handed import Refused, copy_file, plain_name, read_bytes, within
from nullius_report import patch
from nullius_report.records import ReportError
from nullius_report.records import Trial, load_trial, read_json, trial_folders

IMMUTABLE = {  # exported name -> the trial's own file
    "trajectory.json": "agent/trajectory.json",
    "verifier_stdout.txt": "verifier/test-stdout.txt",
    "score.json": "verifier/score.json",
    "reward.txt": "verifier/reward.txt",
}


@attrs.frozen
class Exported:
    name: str
    folder: Path  # the trial's own folder
    copied: list[str]  # what this export wrote that was not there, or was different
    warning: str | None = None  # an unpriced model: its cost_usd is null


def metrics(trial: Trial, base: str | None) -> dict[str, Any]:
    """result, config and economics in one file (deterministic: a re-export of an unchanged trial writes the same)."""
    e = trial.economics
    return {
        "job": trial.job, "trial": trial.trial, "benchmark": trial.benchmark, "dataset": trial.dataset,
        "unit": trial.unit, "attempt": trial.attempt, "agent": trial.agent, "model": trial.model,
        "reasoning_effort": trial.effort, "variant": trial.variant, "variant_digest": trial.variant_digest,
        "outcome": trial.outcome, "reward": trial.reward, "passed": trial.passed,
        "token_usage": None if e is None else {"input": e.input_tokens, "output": e.output_tokens,
                                               "cached": e.cached_tokens, "total": e.total_tokens},
        "cost_usd": None if e is None else e.cost_usd, "as_served_usd": None if e is None else e.as_served_usd,
        "pricing_as_of": None if e is None else e.pricing_as_of, "priced_as": None if e is None else e.priced_as,
        "normalized_score": None if trial.assessment is None else trial.assessment.normalized_score,
        "patch_base": base,
        "result": read_json(trial.folder / "result.json"),
        "config": read_json(trial.folder / "config.json") if (trial.folder / "config.json").is_file() else None,
    }


def _write_if_new(target: Path, data: bytes, *, refresh: bool) -> bool:
    if target.exists() and not target.is_symlink() and (not refresh or target.read_bytes() == data):
        return False
    if target.is_symlink():  # never written through
        target.unlink()
    target.write_bytes(data)
    return True


def export_trial(folder: Path, to: Path, root: Path) -> Exported:
    """The trial's flat folder under `to`; `root` is the folder the user gave, which nothing read may lead out of."""
    try:
        return _export_trial(within(root, folder.absolute()), to)  # folder is root/NAME, as given: relative to here
    except Refused as exc:
        raise ReportError(str(exc)) from None


def _export_trial(folder: Path, to: Path) -> Exported:
    trial = load_trial(folder)
    record = folder / "result.json"
    name = plain_name(f"{plain_name(trial.job, record, '$.standard.job')}__{plain_name(trial.trial, record, '$.trial_name')}",
                      record, "$.standard.job and $.trial_name")
    out = to / name
    out.mkdir(parents=True, exist_ok=True)
    copied: list[str] = []
    for exported, own in IMMUTABLE.items():
        source = folder / own
        if source.is_file() and not (out / exported).exists():
            copy_file(folder, source, out / exported)
            copied.append(exported)
    base = None
    workspace = patch.workspace_of(folder)
    if workspace is not None:
        within(folder, workspace)  # a workspace that is a link out of the trial is not its workspace
    made = folder / "agent" / "changes.patch"  # a task in its own image: the patch made in its box (its base is in the image)
    if workspace is not None:
        text, base = patch.capture(workspace)
        if _write_if_new(out / "changes.patch", text.encode(), refresh=False):
            copied.append("changes.patch")
    elif made.is_file() and _write_if_new(out / "changes.patch", read_bytes(folder, made), refresh=False):
        copied.append("changes.patch")
    for source in sorted(folder.glob("assessment_eval_*.json")):
        if not (out / source.name).exists():
            copy_file(folder, source, out / source.name)
            copied.append(source.name)
    summary = folder / "assessment_summary.json"
    if summary.is_file() and _write_if_new(out / summary.name, read_bytes(folder, summary), refresh=True):
        copied.append(summary.name)
    data = (json.dumps(metrics(trial, base), indent=2, sort_keys=True, default=str) + "\n").encode()
    if _write_if_new(out / "metrics.json", data, refresh=True):
        copied.append("metrics.json")
    return Exported(name=name, folder=folder, copied=copied, warning=trial.economics.warning if trial.economics else None)


def export(paths: list[Path], to: Path) -> list[Exported]:
    to.mkdir(parents=True, exist_ok=True)
    return [export_trial(folder, to, Path(path)) for path in paths for folder in trial_folders([path])]
