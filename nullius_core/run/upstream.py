"""Upstreams: a benchmark's repository, cloned once at its tested commit under STANDARD_DIR/upstreams/."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from nullius_core.definitions import Upstream
from nullius_core.heartbeat import heartbeat
from nullius_core.paths import Paths
from nullius_core.run.progress import Progress, Timer
from nullius_core.secret_names import without_secrets

CLONED = ".nullius-cloned"  # written last, holding the commit: what makes a folder a clone
REACH_SECONDS = 60  # `git ls-remote` of a repository that answers takes a second or two


class UpstreamError(Exception):
    """The upstream cannot be had; says why and what to do."""


def clone_dir(paths: Paths, key: str, upstream: Upstream) -> Path | None:
    if not upstream.repository or not upstream.tested:
        return None
    return paths.standard_dir / "upstreams" / key / upstream.tested


def existing_clone(paths: Paths, key: str, upstream: Upstream | None) -> Path | None:
    folder = clone_dir(paths, key, upstream) if upstream else None
    return folder if folder is not None and (folder / CLONED).exists() else None


def cloned_commit(folder: Path) -> str:
    """The commit a clone made by `ensure_clone` is checked out at."""
    try:
        return (folder / CLONED).read_text().strip()
    except OSError as exc:
        raise UpstreamError(f"{folder} is not a clone made by Nullius (no {CLONED}: {exc.strerror})") from None


def _git_env() -> dict[str, str]:
    return {**without_secrets(os.environ), "GIT_TERMINAL_PROMPT": "0"}


def reachable(upstream: Upstream) -> None:
    """Raise UpstreamError when a clone of the upstream cannot happen: no git, or a repository that does not answer.

    `git ls-remote` asks the repository for its refs and fetches no object:
    a run checks it before any install, so an offline machine is refused in
    a second, not after the installs that come before the clone.
    """
    where = f"cannot clone {upstream.repository} at {upstream.tested}"
    if shutil.which("git") is None:
        raise UpstreamError(f"{where}: git is not on PATH (apt-get install -y git)")
    argv = ["git", "ls-remote", "--quiet", str(upstream.repository), "HEAD"]
    try:
        done = subprocess.run(argv, capture_output=True, text=True, env=_git_env(), timeout=REACH_SECONDS, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise UpstreamError(f"{where}: the repository did not answer in {REACH_SECONDS} s") from None
    if done.returncode != 0:
        raise UpstreamError(f"{where}: {done.stderr.strip() or done.stdout.strip() or f'git ls-remote exited {done.returncode}'}")


def ensure_clone(paths: Paths, key: str, upstream: Upstream, progress: Progress) -> Path:
    """The clone at `tested`, made now if it is not there yet."""
    folder = clone_dir(paths, key, upstream)
    if folder is None:
        raise UpstreamError(f"benchmark {key!r} pins no upstream repository and commit")
    if (folder / CLONED).exists():
        progress.stage("install", upstream=key, state="cached")
        return folder
    progress.stage("install", upstream=key, state="start", commit=upstream.tested)
    timer = Timer()
    tmp = folder.with_name(folder.name + ".partial")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.parent.mkdir(parents=True, exist_ok=True)
    env = _git_env()
    steps = [
        ["git", "clone", "--quiet", "--no-checkout", upstream.repository, str(tmp)],
        ["git", "-C", str(tmp), "checkout", "--quiet", upstream.tested],
    ]
    failed = None
    with heartbeat(progress, "install", upstream=key):
        for argv in steps:
            done = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=1800)
            if done.returncode != 0:
                failed = done.stderr.strip() or done.stdout.strip()
                break
    if failed is not None:
        shutil.rmtree(tmp, ignore_errors=True)
        progress.stage("install", upstream=key, state="failed", seconds=timer.seconds)
        raise UpstreamError(f"cannot clone {upstream.repository} at {upstream.tested}: {failed}")
    (tmp / CLONED).write_text(upstream.tested + "\n")
    tmp.rename(folder)
    progress.stage("install", upstream=key, state="done", seconds=timer.seconds)
    return folder
