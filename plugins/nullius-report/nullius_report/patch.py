"""A trial's workspace changes as one patch (nullius_core.jobs.workspace_patch: against the first commit, untracked
files included, nothing under .git touched), its errors as the report's."""

from __future__ import annotations

from pathlib import Path

from nullius_core.jobs.workspace_patch import EMPTY_TREE, PatchError, first_commit, workspace_patch
from nullius_report.records import ReportError

__all__ = ["EMPTY_TREE", "capture", "first_commit", "workspace_of"]


def workspace_of(trial: Path) -> Path | None:
    folder = trial / ".work" / "workspace"
    return folder if (folder / ".git").exists() else None


def capture(workspace: Path) -> tuple[str, str]:
    """(the patch, the base it applies to: the first commit's sha or the empty tree's)."""
    try:
        return workspace_patch(workspace)
    except PatchError as exc:
        raise ReportError(str(exc)) from None
