"""A workspace's changes as one patch against its first commit, untracked files included, nothing under .git touched.

What the judge is shown and what `nullius export` writes as changes.patch.
The untracked files are staged into a temporary index (GIT_INDEX_FILE),
never the workspace's own, and their blobs written to a temporary object
folder (GIT_OBJECT_DIRECTORY, the workspace's objects as its alternate):
nothing under the workspace's .git changes, its index byte-identical after.
A workspace with no commit (a benchmark whose setup wrote nothing) is
diffed against the empty tree.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from pathlib import Path

EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"  # git's well-known empty tree


class PatchError(Exception):
    """git could not read the workspace: the message says which command and what git said."""


def _git(workspace: Path, *args: str, env: dict[str, str] | None = None) -> str:
    done = subprocess.run(["git", "-C", str(workspace), *args], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "GIT_TERMINAL_PROMPT": "0", **(env or {})})
    if done.returncode != 0:
        raise PatchError(f"{workspace}: git {' '.join(args)} failed: {done.stderr.strip()[-300:]}")
    return done.stdout


def first_commit(workspace: Path) -> str | None:
    """The workspace's first commit (the benchmark's setup), or None when it has none."""
    probe = subprocess.run(["git", "-C", str(workspace), "rev-parse", "--verify", "-q", "HEAD"], capture_output=True, text=True)
    if probe.returncode != 0:
        return None
    return _git(workspace, "rev-list", "--max-parents=0", "HEAD").split()[-1]


def workspace_patch(workspace: Path) -> tuple[str, str]:
    """(the patch, the base it applies to: the first commit's sha or the empty tree's)."""
    base = first_commit(workspace) or EMPTY_TREE
    with tempfile.TemporaryDirectory(prefix="nullius-index-") as tmp:
        objects = _git(workspace, "rev-parse", "--git-path", "objects").strip()
        (Path(tmp) / "objects" / "pack").mkdir(parents=True)  # git takes a folder to be an object store only with pack/
        env = {"GIT_INDEX_FILE": str(Path(tmp) / "index"), "GIT_OBJECT_DIRECTORY": str(Path(tmp) / "objects"),
               "GIT_ALTERNATE_OBJECT_DIRECTORIES": str((workspace / objects).resolve())}
        _git(workspace, "read-tree", *(["--empty"] if base == EMPTY_TREE else [base]), env=env)
        _git(workspace, "add", "-A", "--", ".", env=env)  # the work tree, untracked files too, into the temporary index
        patch = _git(workspace, "diff", "--cached", "--binary", "--no-color", "--no-ext-diff", base, env=env)
    return patch, base
