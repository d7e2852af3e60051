"""The git layer of calibration: an orphan base branch per (repository, first commit), seeded once, and a trial branch.

Everything happens in a scratch repository of our own; the trial's workspace
is only read (fetched from). The base commit is made with a fixed author and
date, so the same base always has the same commit: pushed once, found again.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from nullius_report.patch import EMPTY_TREE
from nullius_report.records import ReportError

FIXED = {"GIT_AUTHOR_NAME": "nullius calibrate", "GIT_AUTHOR_EMAIL": "calibrate@nullius.invalid",
         "GIT_COMMITTER_NAME": "nullius calibrate", "GIT_COMMITTER_EMAIL": "calibrate@nullius.invalid"}
EPOCH = {"GIT_AUTHOR_DATE": "2000-01-01T00:00:00Z", "GIT_COMMITTER_DATE": "2000-01-01T00:00:00Z"}


def git(repo: Path, *args: str, stdin: str | None = None, dated: bool = False) -> str:
    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0", **FIXED, **(EPOCH if dated else {})}
    done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, env=env, input=stdin)
    if done.returncode != 0:
        raise ReportError(f"git {' '.join(args[:3])} failed: {done.stderr.strip() or done.stdout.strip()}")
    return done.stdout.strip()


def scratch(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    git(folder, "init", "-q")
    return folder


def remote_branch(remote: str, branch: str) -> str | None:
    """The sha of `branch` on `remote`, or None when it has none."""
    done = subprocess.run(["git", "ls-remote", "--heads", remote, f"refs/heads/{branch}"], capture_output=True, text=True,
                          env={**os.environ, "GIT_TERMINAL_PROMPT": "0"})
    if done.returncode != 0:
        raise ReportError(f"calibrate refused: the repository {remote} cannot be read: {done.stderr.strip()}")
    line = done.stdout.strip()
    return line.split()[0] if line else None


def seed_base(work: Path, workspace: Path | None, base: str, remote: str, branch: str, key: str) -> tuple[str, bool]:
    """(the base branch's commit, whether this call pushed it). An existing base branch is fetched, never remade."""
    there = remote_branch(remote, branch)
    if there is not None:
        git(work, "fetch", "-q", "--no-tags", remote, f"refs/heads/{branch}")
        return there, False
    if base == EMPTY_TREE:
        tree = git(work, "mktree", stdin="")
    else:
        if workspace is None:
            raise ReportError(f"no workspace to seed the base {key} from")
        git(work, "fetch", "-q", "--no-tags", str(workspace), "HEAD")
        tree = git(work, "rev-parse", f"{base}^{{tree}}")
    commit = git(work, "commit-tree", tree, "-m", f"base: {key}\n\nThe task's workspace at its first commit.", dated=True)
    git(work, "push", "-q", remote, f"{commit}:refs/heads/{branch}")
    return commit, True


def trial_branch(work: Path, base_commit: str, patch_text: str, files: dict[str, bytes], remote: str, branch: str,
                 message: str) -> str:
    """Base + the agent's patch as a commit of its own + a commit of the .calibration/ files, pushed as `branch`."""
    git(work, "checkout", "-q", "--force", "--detach", base_commit)
    git(work, "clean", "-q", "-fdx")
    if patch_text.strip():
        patch_file = work / ".git" / "calibration.patch"
        patch_file.write_text(patch_text)
        git(work, "apply", "--index", "--binary", str(patch_file))
    git(work, "commit", "-q", "--allow-empty", "-m", message)
    for name, data in files.items():
        target = work / ".calibration" / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    git(work, "add", "-f", "--", ".calibration")
    git(work, "commit", "-q", "-m", ".calibration: the reviewer's context (instruction, rubric, evaluations, metrics)")
    commit = git(work, "rev-parse", "HEAD")
    git(work, "push", "-q", remote, f"{commit}:refs/heads/{branch}")
    return commit
