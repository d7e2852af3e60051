"""Shared fixtures: fixture plugin distributions, pip-installed for real into folders of their own.

Each group is installed with pip into a `--target` folder and put on
PYTHONPATH for the `nullius` subprocesses of a test, so its entry points are
found exactly as an installed plugin's are, without touching the development
environment. A group is installed once per machine and per content of its
sources (~/.cache/nullius-tests/fixture-dists), not once per test session or
xdist worker.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from nullius_core.testing import isolated_env

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures" / "plugins"

GROUPS = {
    # the well-behaved plugin and the ones that fail, as a machine might have them
    "main": ["nullius-fixture-plugin", "nullius-fixture-broken", "nullius-fixture-misspelt", "nullius-fixture-badregister"],
    "good": ["nullius-fixture-plugin"],
    "conflict": ["nullius-fixture-conflict"],
    "template": [str(ROOT / "examples" / "benchmark-plugin-template")],
}


def pytest_sessionstart(session: pytest.Session) -> None:
    """Byte-compile Nullius's own sources (the core, the bundled plugins, the plugin distributions) once, before any test.

    Nearly every test runs `nullius` in subprocesses, each of which imports
    the same modules: on a machine that sets PYTHONDONTWRITEBYTECODE (as CI
    images often do) each of them would compile every module again. Python
    reads a cached file only while it matches its source, so an edit is
    never missed.
    """
    import compileall
    import re

    skip = re.compile(r"[/\\]catalogue[/\\]templates[/\\]")  # the scaffolds' templates are not Python until filled
    for folder in [ROOT / "nullius_core", ROOT / "nullius_plugins", *sorted((ROOT / "plugins").glob("*/nullius_*"))]:
        compileall.compile_dir(folder, quiet=2, rx=skip)


def _pip_install_argv(target: Path, sources: list[str]) -> list[str]:
    paths = [s if os.path.isabs(s) else str(FIXTURES / s) for s in sources]
    return [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation", "--target", str(target), *paths]


def pip_install_target(target: Path, sources: list[str]) -> None:
    subprocess.run(_pip_install_argv(target, sources), check=True, capture_output=True, text=True)


INSTALLED = Path.home() / ".cache" / "nullius-tests" / "fixture-dists"  # once per machine and per content of the sources


def _sources_digest(sources: list[str]) -> str:
    """The digest of what the group's distributions are built from (their files, not what a build left beside them)."""
    digest = hashlib.sha256()
    for source in sources:
        folder = Path(source) if os.path.isabs(source) else FIXTURES / source
        for path in sorted(folder.rglob("*")):
            relative = path.relative_to(folder)
            if path.is_file() and not {"build", "__pycache__"} & set(relative.parts) and ".egg-info" not in str(relative):
                digest.update(f"{source}/{relative}\0".encode() + path.read_bytes())
    return digest.hexdigest()[:16]


def _install_group(name: str, sources: list[str]) -> Path:
    """The group's folder, pip-installed the first time (another process installing it is waited for)."""
    target = INSTALLED / f"{name}-{_sources_digest(sources)}"
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target.parent / f".{target.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (target / ".installed").exists():
            shutil.rmtree(target, ignore_errors=True)
            done = subprocess.run(_pip_install_argv(target, sources), capture_output=True, text=True, timeout=900)
            assert done.returncode == 0, f"pip install of the fixture group {name!r} failed:\n{(done.stdout + done.stderr)[-3000:]}"
            (target / ".installed").write_text("\n".join(sources) + "\n")
    return target


@pytest.fixture(scope="session")
def installed() -> dict[str, Path]:
    """Group name -> the folder its distributions were installed into: once per machine and per content of their sources."""
    with ThreadPoolExecutor(len(GROUPS)) as pool:
        return dict(zip(GROUPS, pool.map(_install_group, GROUPS, GROUPS.values())))


def with_path(env: dict[str, str], *folders: Path) -> dict[str, str]:
    env = dict(env)
    env["PYTHONPATH"] = os.pathsep.join([*(str(f) for f in folders), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return env


@pytest.fixture
def env_main(nullius_env: dict[str, str], installed: dict[str, Path]) -> dict[str, str]:
    return with_path(nullius_env, installed["main"])


@pytest.fixture
def env_good(nullius_env: dict[str, str], installed: dict[str, Path]) -> dict[str, str]:
    return with_path(nullius_env, installed["good"])


@pytest.fixture
def env_shared_installs(tmp_path: Path, nullius_installs: Path) -> dict[str, str]:
    """nullius_env, but for STANDARD_DIR: the shared one (nullius_installs), so an agent's, driver's or kit's environment is installed once.

    For tests that are not about installing; those keep nullius_env's STANDARD_DIR of their own.
    """
    return isolated_env(tmp_path / "nullius", standard_dir=nullius_installs)
