"""The builder's and the runs page's test world: `nullius app` over a catalogue with the test fixtures' benchmarks, and helpers for its pages.

The user catalogue is a copy of the core's test fixtures (tests/fixtures/catalogue:
`faulty`, whose `mode=slow` makes each setup take `delay` seconds, and the
`scripted` agent), beside every installed plugin's own entries (HumanEval,
tau2, ...). No key reaches the app: every variable named like a secret is
left out, so a run that needs one is refused by the CLI, in its words.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from app_world import App, shot

from nullius_core.secret_names import without_secrets
from nullius_core.testing import isolated_env

ROOT = Path(__file__).resolve().parents[3]
FIXTURE_CATALOGUE = ROOT / "tests" / "fixtures" / "catalogue"


@pytest.fixture
def world_env(nullius_installs: Path, tmp_path: Path) -> dict[str, str]:
    env = without_secrets(isolated_env(tmp_path / "world", standard_dir=nullius_installs))
    catalogue = tmp_path / "catalogue"
    shutil.copytree(FIXTURE_CATALOGUE, catalogue)
    env["NULLIUS_CATALOGUE"] = str(catalogue)
    return env


@pytest.fixture
def world(world_env: dict[str, str], tmp_path: Path) -> Iterator[App]:
    running = App(world_env, tmp_path)
    yield running
    running.stop()


def recipes_dir(app: App) -> Path:
    return Path(app.env["XDG_CONFIG_HOME"]) / "nullius" / "app" / "recipes"


def jobs_dir(app: App) -> Path:
    return Path(app.env["NULLIUS_JOBS_DIR"])


def edit_definition(env: dict[str, str], bench: str, options: dict[str, Any], **top: Any) -> None:
    """Add options (and top-level keys: setups, ...) to a benchmark of the test's own catalogue copy."""
    path = Path(env["NULLIUS_CATALOGUE"]) / "benchmarks" / bench / "standard.json"
    standard = json.loads(path.read_text())
    standard.setdefault("options", {}).update(options)
    standard.update(top)
    path.write_text(json.dumps(standard))


def choose_benchmark(page: Any, app: App, ref: str) -> None:
    """The builder for `ref`, chosen as a person does: the benchmark's select."""
    page.goto(app.url + "/build")
    page.select_option("#choose-benchmark", ref.partition("@")[0])
    page.wait_for_selector("form#builder")
    plan_settled(page)


def plan_settled(page: Any) -> None:
    """Wait until the plan shown answers the form as it is now (the page asks /build/plan a moment after each change)."""
    page.wait_for_selector('form#builder[data-plan="drawn"]', state="attached")


def commands(page: Any) -> list[str]:
    return [line for line in page.inner_text("#commands").splitlines() if line.strip()]


def job_row(page: Any, name: str) -> Any:
    return page.locator(f'tr[data-job="{name}"]')


def look(page: Any, tmp_path: Path, name: str) -> Path:
    """A screenshot of the page (app_world.shot), taken with no field in focus.

    Chromium scrolls a focused field back into view once the full-page
    screenshot gives the window its size again, which would move a button
    under the next click; a person's browser never changes size that way.
    """
    page.evaluate("document.activeElement && document.activeElement.blur()")
    if page.locator("form#builder").count():
        plan_settled(page)  # the blur's change asks for the plan again
    return shot(page, tmp_path, name)
