"""What the judge is shown of a trial: the diff of its workspace against the first commit, made without touching its index."""

from __future__ import annotations

import subprocess
from pathlib import Path

from nullius_judge.materials import changes_patch

GIT = ["git", "-c", "user.name=t", "-c", "user.email=t@example.org"]


def _git(repo: Path, *args: str) -> None:
    subprocess.run([*GIT, "-C", str(repo), *args], check=True, capture_output=True)


def test_the_patch_is_against_the_first_commit_with_untracked_files_and_the_index_left_alone(tmp_path):
    repo = tmp_path / "workspace"
    repo.mkdir()
    _git(repo, "init", "-q")
    (repo / "lru.py").write_text("def get(k):\n    return None\n")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "setup")
    (repo / "lru.py").write_text("def get(k):\n    return cache[k]\n")
    _git(repo, "commit", "-qam", "the agent's own commit")  # the agent committed: still against the first commit
    (repo / "notes.md").write_text("untracked, never added\n")
    (repo / "staged.txt").write_text("staged by the agent\n")
    _git(repo, "add", "staged.txt")
    index = (repo / ".git" / "index").read_bytes()
    patch = changes_patch(repo)
    assert "-    return None" in patch and "+    return cache[k]" in patch
    assert "+untracked, never added" in patch and "+staged by the agent" in patch
    assert (repo / ".git" / "index").read_bytes() == index  # the workspace's own index is untouched
    status = subprocess.run(["git", "-C", str(repo), "status", "--porcelain"], capture_output=True, text=True).stdout
    assert "?? notes.md" in status and "A  staged.txt" in status


def test_a_workspace_never_committed_is_against_the_empty_tree_and_none_is_empty(tmp_path):
    repo = tmp_path / "workspace"
    repo.mkdir()
    _git(repo, "init", "-q")
    (repo / "answer.py").write_text("print(42)\n")
    assert "+print(42)" in changes_patch(repo)
    assert changes_patch(tmp_path / "no-workspace") == ""
