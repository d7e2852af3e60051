"""Shared fixtures: fixture plugin distributions, pip-installed for real into folders of their own.

Each group is installed with pip into a `--target` folder and put on
PYTHONPATH for the `nullius` subprocesses of a test, so its entry points are
found exactly as an installed plugin's are, without touching the development
environment.
"""

from __future__ import annotations

import os
import subprocess
import sys
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


@pytest.fixture(scope="session")
def installed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Group name -> the folder its distributions were installed into (the groups' pip installs run side by side)."""
    root = tmp_path_factory.mktemp("dists")
    out = {name: root / name for name in GROUPS}
    running = {name: subprocess.Popen(_pip_install_argv(out[name], sources), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
               for name, sources in GROUPS.items()}
    for name, proc in running.items():
        said, _ = proc.communicate(timeout=900)
        assert proc.returncode == 0, f"pip install of the fixture group {name!r} failed:\n{said[-3000:]}"
    return out


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
