"""What the app holds while it serves: its origin, its session's form token, where things are, the runs it started."""

from __future__ import annotations

import os
import secrets
from pathlib import Path

import attrs

from nullius_app.cli_client import Nullius
from nullius_app.runbook import RunBook


def _jobs_dir() -> Path:
    """Where jobs go: NULLIUS_JOBS_DIR, else ./jobs, as `nullius paths` says."""
    return Path(os.environ.get("NULLIUS_JOBS_DIR") or Path.cwd() / "jobs").resolve()


def _app_dir() -> Path:
    """The app's own files (saved recipes, the runs it started): beside the user settings."""
    config = Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config")
    return (config / "nullius" / "app").resolve()


@attrs.define
class AppState:
    token: str  # the session's form token: every request that changes anything carries it
    jobs_dir: Path
    app_dir: Path
    nullius: Nullius
    runs: RunBook
    origin: str = ""  # http://127.0.0.1:PORT, once listening

    @classmethod
    def for_this_machine(cls) -> AppState:
        jobs, own = _jobs_dir(), _app_dir()
        nullius = Nullius()
        return cls(token=secrets.token_urlsafe(32), jobs_dir=jobs, app_dir=own, nullius=nullius, runs=RunBook(own / "runs", nullius))

    @property
    def recipes_dir(self) -> Path:
        return self.app_dir / "recipes"
