"""The catalogue tests' world: `nullius app` over a user catalogue of the test fixtures, and helpers to read its pages.

The user catalogue is a copy of tests/fixtures/catalogue (`faulty`, whose
controls run in seconds; the agent `scripted`) and the docker plugin's
fixture `envbench` (a benchmark whose environments declare licences),
pointed at by NULLIUS_CATALOGUE, as a user's would be.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from app_world import App

ROOT = Path(__file__).resolve().parents[3]
FIXTURES = ROOT / "tests" / "fixtures" / "catalogue"
ENVBENCH = ROOT / "plugins" / "nullius-backend-docker" / "tests" / "fixtures" / "catalogue" / "benchmarks" / "envbench"
KEY = "sk-compatible-held-by-the-relay-0123456789"  # the fake model takes any key; the relay holds it
SETTLE_MS = 300_000  # an action's command ends well before this on a busy machine; the test waits for the page, not a clock


@pytest.fixture
def catalogue(tmp_path: Path) -> Path:
    target = tmp_path / "catalogue"
    shutil.copytree(FIXTURES, target)
    shutil.copytree(ENVBENCH, target / "benchmarks" / "envbench")
    return target


@pytest.fixture
def catalogue_env(app_env: dict[str, str], catalogue: Path) -> dict[str, str]:
    return {**app_env, "NULLIUS_CATALOGUE": str(catalogue), "OPENAI_COMPATIBLE_API_KEY": KEY}


@pytest.fixture
def catalogue_app(catalogue_env: dict[str, str], tmp_path: Path) -> Iterator[App]:
    running = App(catalogue_env, tmp_path)
    yield running
    running.stop()


def nullius(env: dict[str, str], *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "nullius_core", *args], env=env, capture_output=True, text=True, input=stdin, timeout=600)


def listed(env: dict[str, str]) -> dict[str, Any]:
    return json.loads(nullius(env, "list", "--json").stdout)


def app_dir(env: dict[str, str]) -> Path:
    return Path(env["XDG_CONFIG_HOME"]) / "nullius" / "app"


def started(env: dict[str, str]) -> list[dict[str, Any]]:
    """The RunBook's records of the commands the app started."""
    return [json.loads(p.read_text()) for p in sorted((app_dir(env) / "runs").glob("*.json"))]


def wait_reloaded(page: Any, selector: str) -> None:
    """An action's page reloads when its command ends: wait for what the new page shows."""
    page.wait_for_selector(selector, timeout=SETTLE_MS)
