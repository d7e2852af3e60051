"""A workspace's changes as one patch against its first commit, untracked files included, nothing under .git touched.

What the judge is shown and what `nullius export` writes as changes.patch.
The untracked files are staged into a temporary index (GIT_INDEX_FILE),
never the workspace's own, and their blobs written to a temporary object
folder (GIT_OBJECT_DIRECTORY, the workspace's objects as its alternate):
nothing under the workspace's .git changes, its index byte-identical after.
A workspace with no commit (a benchmark whose setup wrote nothing) is
diffed against the empty tree.

A workspace may be someone else's (an exported job handed over), and a
repository's own config can name commands git runs (core.fsmonitor, a
filter's clean, diff.external, textconv): the staging and the diff run in a
repository of our own (GIT_DIR, an empty config) over the workspace's files,
its objects reached as an alternate. The workspace's repository is only
asked its first commit, and its .git must be a folder inside it.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from pathlib import Path

EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"  # git's well-known empty tree


class PatchError(Exception):
    """git could not read the workspace: the message says which command and what git said."""


# no system or user config either: the patch is the same on every machine
_ENV = {"GIT_TERMINAL_PROMPT": "0", "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull}


def _git(workspace: Path, *args: str, env: dict[str, str] | None = None) -> str:
    done = subprocess.run(["git", "-C", str(workspace), *args], capture_output=True, text=True, timeout=300,
                          env={**os.environ, **_ENV, **(env or {})})
    if done.returncode != 0:
        raise PatchError(f"{workspace}: git {' '.join(args)} failed: {done.stderr.strip()[-300:]}")
    return done.stdout


def _own_git(workspace: Path) -> Path:
    """The workspace's .git, refused unless it is a folder inside the workspace (not a link, not a gitdir file)."""
    git = workspace / ".git"
    if git.is_symlink() or not git.is_dir() or not git.resolve().is_relative_to(workspace.resolve()):
        raise PatchError(f"{workspace}: expected its .git to be a folder inside it")
    return git.resolve()


def first_commit(workspace: Path) -> str | None:
    """The workspace's first commit (the benchmark's setup), or None when it has none."""
    git = _own_git(workspace)
    probe = subprocess.run(["git", "--git-dir", str(git), "rev-parse", "--verify", "-q", "HEAD"], capture_output=True,
                           text=True, env={**os.environ, **_ENV})
    if probe.returncode != 0:
        return None
    return _git(workspace, "--git-dir", str(git), "rev-list", "--max-parents=0", "HEAD").split()[-1]


def workspace_patch(workspace: Path) -> tuple[str, str]:
    """(the patch, the base it applies to: the first commit's sha or the empty tree's)."""
    base = first_commit(workspace) or EMPTY_TREE
    objects = _own_git(workspace) / "objects"
    with tempfile.TemporaryDirectory(prefix="nullius-index-") as tmp:
        own = Path(tmp) / "git"
        _git(workspace, "init", "-q", "--bare", str(own))
        (own / "objects" / "info" / "alternates").write_text(f"{objects}\n")
        env = {"GIT_DIR": str(own), "GIT_WORK_TREE": str(workspace.resolve()), "GIT_INDEX_FILE": str(Path(tmp) / "index")}
        _git(workspace, "read-tree", *(["--empty"] if base == EMPTY_TREE else [base]), env=env)
        _git(workspace, "add", "-A", "--", ".", env=env)  # the work tree, untracked files too, into the temporary index
        patch = _git(workspace, "diff", "--cached", "--binary", "--no-color", "--no-ext-diff", "--no-textconv", base, env=env)
    return patch, base
