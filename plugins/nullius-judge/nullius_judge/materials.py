"""What the judge is shown of each trial, written as the dataset folder of the internal benchmark `judge`.

For each trial: its rubric and criteria (found beside the task, or given with
--rubric / --criteria-dir), the diff of its workspace against the first commit
(untracked files included, made with a temporary index so the workspace's own
index is never touched), its verifier's output, and optionally its trajectory.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import attrs

from nullius_core.jobs.workspace_patch import workspace_patch
from nullius_judge.rubric import CRITERIA_FILE, DIMENSIONS_FILE, Rubric, RubricError, load, unstructure

VERIFIER_FILES = ("reward.txt", "reward.json", "score.json", "test-stdout.txt")


@attrs.frozen
class Trial:
    """A trial of the job to assess."""

    name: str
    folder: Path
    result: dict[str, Any]
    config: dict[str, Any]

    @property
    def unit(self) -> str:
        return ((self.config.get("standard") or {}).get("unit")) or self.name

    @property
    def task_path(self) -> Path | None:
        path = (self.result.get("task_id") or {}).get("path")
        return Path(path) if path and Path(path).is_absolute() and Path(path).is_dir() else None

    @property
    def reward(self) -> float | None:
        rewards = (self.result.get("verifier_result") or {}).get("rewards") or {}
        return rewards.get("reward")


@attrs.frozen
class Sources:
    """Where the rubric and criteria come from when the job's tasks do not hold them."""

    rubric: Path | None = None
    criteria_dir: Path | None = None


def trials_of(job: Path) -> list[Trial]:
    """The job's trials (folders with result.json and config.json), in name order."""
    found = []
    for folder in sorted(p for p in job.iterdir() if p.is_dir() and not p.name.startswith(".")):
        result, config = folder / "result.json", folder / "config.json"
        if result.is_file() and config.is_file():
            found.append(Trial(folder.name, folder, json.loads(result.read_text()), json.loads(config.read_text())))
    return found


def rubric_for(trial: Trial, sources: Sources) -> tuple[Rubric, Path]:
    if sources.rubric is not None:
        return load(sources.rubric), sources.rubric
    task = trial.task_path
    for place in ([task.parent, task] if task else []):
        if (place / DIMENSIONS_FILE).is_file():
            return load(place / DIMENSIONS_FILE), place / DIMENSIONS_FILE
    where = f"beside its task ({task.parent / DIMENSIONS_FILE})" if task else "(its benchmark keeps no task folder)"
    raise RubricError(f"trial {trial.name}: no {DIMENSIONS_FILE} {where}: give one with --rubric FILE")


def criteria_for(trial: Trial, sources: Sources) -> str:
    candidates = []
    if sources.criteria_dir is not None:
        d = sources.criteria_dir
        candidates += [d / f"{trial.unit}.md", d / trial.unit / CRITERIA_FILE, d / CRITERIA_FILE]
    if trial.task_path is not None:
        candidates.append(trial.task_path / CRITERIA_FILE)
    for path in candidates:
        if path.is_file():
            return path.read_text(encoding="utf-8")
    return ""


def changes_patch(workspace: Path) -> str:
    """The workspace against its first commit, untracked files included; nothing under its .git is touched."""
    if not (workspace / ".git").exists():
        return ""
    return workspace_patch(workspace)[0]


def _instruction(trial: Trial) -> str:
    if trial.task_path is not None and (trial.task_path / "instruction.md").is_file():
        return (trial.task_path / "instruction.md").read_text(encoding="utf-8")
    trajectory = trial.folder / "agent" / "trajectory.json"
    if trajectory.is_file():
        steps = json.loads(trajectory.read_text()).get("steps") or []
        first = next((s for s in steps if s.get("source") == "user"), None)
        if first and isinstance(first.get("message"), str):
            return first["message"]
    return ""


def _answer(trial: Trial) -> str:
    """The agent's last message (a task-port benchmark's answer lies there, not in the workspace)."""
    trajectory = trial.folder / "agent" / "trajectory.json"
    if not trajectory.is_file():
        return ""
    steps = json.loads(trajectory.read_text()).get("steps") or []
    last = next((s for s in reversed(steps) if s.get("source") == "agent" and isinstance(s.get("message"), str)), None)
    return last["message"] if last else ""


def _patch_of(trial: Trial) -> str:
    patch = changes_patch(trial.folder / ".work" / "workspace")
    made = trial.folder / "agent" / "changes.patch"  # a task in its own image whose workdir is a repository: made in the box
    changes = trial.folder / "agent" / "container-changes.txt"  # a task in its own image: what docker diff saw
    if not patch and made.is_file():
        patch = made.read_text()
    elif not patch and changes.is_file():
        patch = "# the task ran in its own image, whose working directory is no git repository; the paths it changed (docker diff):\n" + changes.read_text()
    return patch


def write_unit(trial: Trial, sources: Sources, into: Path, include_trajectory: bool) -> str:
    """Write the trial's materials into `into` (trial.json, files/); the rubric's fingerprint."""
    rubric, rubric_path = rubric_for(trial, sources)
    criteria = criteria_for(trial, sources)
    files = into / "files"
    (files / "verifier").mkdir(parents=True)
    patch = _patch_of(trial)
    (files / "changes.patch").write_text(patch)
    answer = _answer(trial)
    (files / "answer.txt").write_text(answer)
    (files / DIMENSIONS_FILE).write_text(rubric_path.read_text())
    (files / CRITERIA_FILE).write_text(criteria)
    for name in VERIFIER_FILES:
        if (trial.folder / "verifier" / name).is_file():
            shutil.copyfile(trial.folder / "verifier" / name, files / "verifier" / name)
    if include_trajectory and (trial.folder / "agent" / "trajectory.json").is_file():
        shutil.copyfile(trial.folder / "agent" / "trajectory.json", files / "trajectory.json")
    changed = sum(1 for line in patch.splitlines() if line[:1] in "+-" and not line.startswith(("+++", "---")))
    unit = {"trial": trial.name, "rubric": unstructure(rubric), "criteria": criteria, "reward": trial.reward,
            "instruction": _instruction(trial), "diff": patch, "changed_lines": changed,
            "answer": answer, "answer_lines": len(answer.splitlines()),
            "files": sorted(str(p.relative_to(files)) for p in files.rglob("*") if p.is_file())}
    (into / "trial.json").write_text(json.dumps(unit, indent=1))
    return rubric.fingerprint()
