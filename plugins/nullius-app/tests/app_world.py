"""The app's test world: `nullius app` as a user starts it, and headless Chromium (Debian's, driven by Playwright) as a user's browser.

Playwright's own browser download cannot work here: the browser is the
system's (`/usr/bin/chromium`), started with the flags that keep it off a
network it cannot reach. Every page a test looks at is kept as a screenshot
under the test's own folder (`<tmp_path>/screenshots/`).
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

from nullius_core.testing import isolated_env

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage"]
START_SECONDS = 120  # the app's first page lists the catalogue: a busy machine may take a while


class App:
    """A running `nullius app`: its URL, its process, and what it printed."""

    def __init__(self, env: dict[str, str], cwd: Path):
        self.proc = subprocess.Popen([sys.executable, "-m", "nullius_core", "app", "--port", "0"], env=env, cwd=cwd,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()  # the one JSON line, once it listens (or nothing, when it cannot start)
        if not line:
            raise RuntimeError(f"nullius app did not start: {self.proc.stderr.read()}")
        self.url = json.loads(line)["url"].rstrip("/")
        self.env = env

    def stop(self) -> str:
        self.proc.terminate()
        try:
            _, err = self.proc.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            _, err = self.proc.communicate()
        return err


@pytest.fixture
def app_env(nullius_installs: Path, tmp_path: Path) -> dict[str, str]:
    """Every Nullius location under the test's folder, the installs shared with the session's other tests."""
    return isolated_env(tmp_path / "world", standard_dir=nullius_installs)


@pytest.fixture
def app(app_env: dict[str, str], tmp_path: Path) -> Iterator[App]:
    running = App(app_env, tmp_path)
    yield running
    running.stop()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Chromium for one test module. Playwright's sync API keeps an event loop running in this thread while it is open,
    so no later module's `asyncio.run` could work: it closes with the module that asked for it."""
    from playwright.sync_api import sync_playwright

    if not Path(CHROMIUM).exists():
        pytest.fail("the browser tests need Debian's chromium (apt-get install chromium): ./dev test installs it")
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=FLAGS, headless=True)
        yield launched
        launched.close()


@pytest.fixture
def page(browser: Any, tmp_path: Path) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    opened = context.new_page()
    opened.set_default_timeout(120_000)  # a step waits for what it needs; the limit never decides a busy machine's test
    yield opened
    context.close()


def shot(page: Any, tmp_path: Path, name: str) -> Path:
    """The page as a person sees it, kept under the test's folder."""
    folder = tmp_path / "screenshots"
    folder.mkdir(exist_ok=True)
    path = folder / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path
