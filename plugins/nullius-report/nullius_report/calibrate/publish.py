"""`nullius calibrate publish`: per trial, base/<key> (seeded once) and calib/<key>/<job>__<trial> on the sink repository.

<key> is the benchmark and the first 12 hex of the workspace's first commit
(the empty tree's for a workspace whose setup committed nothing): two trials
of one task share one base. The trial branch holds the agent's patch as a
commit and `.calibration/`: the instruction, the criteria and rubric when
the trial has them, every evaluation, the summary, metrics.json; never the
trajectory (it may hold what a reviewer needs not see, and it is clutter).
"""

from __future__ import annotations

import json
import re
import tempfile
from pathlib import Path
from typing import Any

from nullius_core import handed
from nullius_report import export, patch
from nullius_report.calibrate import git_ops, platform
from nullius_report.records import ReportError, Trial, load_trial, trial_folders

RUBRIC_FILES = ("assessment_dimensions.json", "assessment_criteria.md")


def _safe(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-") or "x"


def _record(trial: Trial, path: Path) -> bytes:
    """A file of the trial's, read as a handed job's is: not through a link out of the job, not past the bound."""
    try:
        return handed.read_bytes(trial.folder.parent, Path(trial.folder.name) / path)
    except handed.Refused as exc:
        raise ReportError(str(exc)) from None


def _record_json(trial: Trial, path: Path) -> Any:
    try:
        return json.loads(_record(trial, path))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ReportError(f"{trial.folder / path}: expected JSON ({exc})") from None


def instruction(trial: Trial) -> str | None:
    """The prompt the agent was given: the trajectory's first user step (the trajectory itself is never published)."""
    path = trial.folder / "agent" / "trajectory.json"
    if not path.is_file():
        return None
    steps = _record_json(trial, Path("agent", "trajectory.json")).get("steps") or []
    return next((s.get("message") for s in steps if s.get("source") == "user"), None)


def _rubric(trial: Trial, given: dict[str, Path]) -> dict[str, bytes]:
    """The criteria and rubric the judge read: as given (--rubric, --criteria), else where the trial keeps them (its
    folder, or its assessment materials)."""
    found: dict[str, bytes] = {}
    for name in RUBRIC_FILES:
        candidates = [*([given[name]] if name in given else []), trial.folder / name,
                      *sorted((trial.folder / "assessment").rglob(name))]
        hit = next((c for c in candidates if c.is_file()), None)
        if hit is not None:  # one given on the command line is the user's; one of the trial's is read as handed
            found[name] = hit.read_bytes() if name in given and hit == given[name] else _record(trial, hit.relative_to(trial.folder))
    return found


def calibration_files(trial: Trial, base: str, given: dict[str, Path] | None = None) -> dict[str, bytes]:
    files: dict[str, bytes] = {}
    text = instruction(trial)
    if text is not None:
        files["instruction.md"] = text.encode() + b"\n"
    files.update(_rubric(trial, given or {}))
    for source in sorted(trial.folder.glob("assessment_eval_*.json")):
        files[source.name] = _record(trial, Path(source.name))
    if (trial.folder / "assessment_summary.json").is_file():
        files["assessment_summary.json"] = _record(trial, Path("assessment_summary.json"))
    files["metrics.json"] = (json.dumps(export.metrics(trial, base), indent=2, sort_keys=True, default=str) + "\n").encode()
    at = f"{base[:12]}, the empty tree: its setup committed nothing" if base == patch.EMPTY_TREE else base[:12]
    absent = [n for n in ("instruction.md", *RUBRIC_FILES, "assessment_summary.json") if n not in files]
    files["README.md"] = (f"# {trial.job} / {trial.trial}\n\nUnit {trial.unit} of {trial.benchmark}, agent {trial.agent} "
                          f"on {trial.model}, reward {trial.reward}.\n\nThe commit before this one is the agent's change "
                          f"against the task's workspace at its first commit ({at}).\n"
                          + (f"\nNot in this trial's records: {', '.join(absent)}.\n" if absent else "")).encode()
    return files


def publish(paths: list[Path], remote: str, open_prs: bool = False, rubric: Path | None = None,
            criteria: Path | None = None) -> list[str]:
    folders = trial_folders(paths)
    given = {name: path for name, path in zip(RUBRIC_FILES, (rubric, criteria)) if path is not None}
    for path in given.values():
        if not path.is_file():
            raise ReportError(f"calibrate refused: {path}: no such file")
    host = platform.preflight(remote) if open_prs else None  # before any work: a precise refusal, nothing pushed
    git_ops.remote_branch(remote, "HEAD")  # the sink repository must be readable before anything is pushed
    lines: list[str] = []
    with tempfile.TemporaryDirectory(prefix="nullius-calibrate-") as tmp:
        work = git_ops.scratch(Path(tmp) / "work")
        for folder in folders:
            trial = load_trial(folder)
            workspace = patch.workspace_of(folder)
            if workspace is None:
                lines.append(f"{trial.job}__{trial.trial}: skipped: no workspace (.work/workspace) to take a patch from")
                continue
            text, base = patch.capture(workspace)
            key = f"{_safe(trial.benchmark)}-{base[:12]}"
            base_branch, branch = f"base/{key}", f"calib/{key}/{_safe(trial.job)}__{_safe(trial.trial)}"
            base_commit, seeded = git_ops.seed_base(work, workspace, base, remote, base_branch, key)
            if seeded:
                lines.append(f"{base_branch}: seeded ({base_commit[:12]})")
            if git_ops.remote_branch(remote, branch) is not None:
                lines.append(f"{branch}: already published, left as it is")
                continue
            commit = git_ops.trial_branch(work, base_commit, text, calibration_files(trial, base, given), remote, branch,
                                          f"{trial.agent} on {trial.unit} ({trial.job}/{trial.trial}): the agent's changes")
            lines.append(f"{branch}: published ({commit[:12]})")
            if host is not None:
                lines.append(_open(host, remote, trial, branch, base_branch))
    return lines


def _open(host: platform.GitPlatform, remote: str, trial: Trial, branch: str, base_branch: str) -> str:
    repo = platform.slug(remote)
    if (found := host.find_open_pr_for_branch(repo, branch)) is not None:
        return f"{branch}: a request is open already ({found.url})"
    score = "not assessed" if trial.assessment is None else f"normalized score {trial.assessment.normalized_score:.3f}"
    body = (f"Calibration review of {trial.job}/{trial.trial}: {trial.agent} on {trial.model}, reward {trial.reward}, "
            f"judge: {score}. The judge's evaluations are in .calibration/; comment on the diff.")
    made = host.create_pr(repo, branch, base_branch, f"calibrate: {trial.job}/{trial.trial}", body)
    if not made.url:
        raise ReportError(f"{host.cli}: opened no request for {branch}")
    return f"{branch}: request opened ({made.url})"
