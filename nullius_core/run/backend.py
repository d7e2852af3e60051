"""What the run engine needs of a backend: a place for each unit (the agent's run comes with agents)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any, Protocol

import attrs


@attrs.frozen
class UnitPlace:
    """A unit's own workspace (a git repository of its own) and HOME."""

    workspace: Path
    home: Path


class Backend(Protocol):
    name: str

    def record(self) -> dict[str, Any]:
        """What config.json records of the backend (its name, its image)."""

    async def prepare_unit(self, workspace: Path, home: Path) -> UnitPlace: ...

    async def start_agent(self, launch: Any) -> Any:
        """Start an agent (`nullius_core.run.agent.AgentLaunch`) as an `AgentProcess` whose group can be ended whole."""

    async def close(self) -> None: ...


def init_repository(folder: Path) -> None:
    """An empty git repository, written directly: `git init` costs a process per unit."""
    git = folder / ".git"
    for sub in ("objects/info", "objects/pack", "refs/heads", "refs/tags", "info"):
        (git / sub).mkdir(parents=True, exist_ok=True)
    (git / "HEAD").write_text("ref: refs/heads/main\n")
    (git / "config").write_text(
        "[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = false\n\tlogallrefupdates = true\n"
    )
    (git / "description").write_text("A Nullius unit's workspace.\n")


def commit_setup(folder: Path) -> str | None:
    """Commit what setup wrote, so the agent's changes stand out; None when setup wrote nothing."""
    if not any(p.name != ".git" for p in folder.iterdir()):
        return None
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(folder),
        "GIT_AUTHOR_NAME": "nullius",
        "GIT_AUTHOR_EMAIL": "setup@nullius.invalid",
        "GIT_COMMITTER_NAME": "nullius",
        "GIT_COMMITTER_EMAIL": "setup@nullius.invalid",
        "GIT_CONFIG_NOSYSTEM": "1",
    }
    for argv in (["git", "add", "-A"], ["git", "commit", "-q", "--no-verify", "-m", "setup"]):
        subprocess.run(argv, cwd=folder, env=env, check=True, capture_output=True)
    done = subprocess.run(["git", "rev-parse", "HEAD"], cwd=folder, env=env, check=True, capture_output=True, text=True)
    return done.stdout.strip()
