"""Fixtures for testing Nullius and its plugins (registered through `pytest11`)."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from nullius_core.session import Session
from nullius_core.testing.helpers import CliResult, isolated_env, make_session, run_cli

if TYPE_CHECKING:
    from nullius_core.testing.fake_model import SyncFakeModel


@pytest.fixture
def nullius_env(tmp_path: Path) -> dict[str, str]:
    """Variables that put every Nullius location under this test's tmp_path."""
    return isolated_env(tmp_path / "nullius")


INSTALLS_VARIABLE = "NULLIUS_TEST_INSTALLS"  # a folder, or "fresh": one under the session's tmp folder


@pytest.fixture(scope="session")
def nullius_installs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A STANDARD_DIR shared by the test sessions of this machine: `isolated_env(root, standard_dir=nullius_installs)`.

    Environments are installed once per digest of what makes them (locked
    while installed, counted only once their marker is written: a killed
    install is redone), so every home pointed here installs an agent, a
    driver or a kit's environment once, and later test runs find it, as a
    user's machine does: ~/.cache/nullius-tests/standard, or the folder
    NULLIUS_TEST_INSTALLS names ("fresh": a new one for this session). A test
    about installing keeps a STANDARD_DIR of its own.
    """
    chosen = os.environ.get(INSTALLS_VARIABLE, "")
    if chosen == "fresh":
        return tmp_path_factory.mktemp("installs")
    folder = Path(chosen).expanduser() if chosen else Path.home() / ".cache" / "nullius-tests" / "standard"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@pytest.fixture
def nullius_session(nullius_env: dict[str, str]) -> Callable[..., Session]:
    """`nullius_session(("name", plugin), ...)`: a session with inline plugins."""

    def factory(*plugins: tuple[str, Any], env: dict[str, str] | None = None) -> Session:
        return make_session(env or nullius_env, plugins)

    return factory


@pytest.fixture
def nullius_cli(nullius_env: dict[str, str]) -> Callable[..., CliResult]:
    """`nullius_cli("list", "--json")`: the real command in a subprocess (`in_process=True`: in the test's process)."""

    def run(*args: str, env: dict[str, str] | None = None, cwd: Path | None = None, in_process: bool = False) -> CliResult:
        return run_cli(list(args), env or nullius_env, cwd=cwd, in_process=in_process)

    return run


@pytest.fixture
def fake_model() -> Iterator[SyncFakeModel]:
    """A fake model server on a free loopback port, in a thread of its own, stopped at teardown.

    It answers the built-in default until the test sets a script:
    `fake_model.use({"rules": [...]})` or `fake_model.script = Script(...)`.
    Point clients at `fake_model.openai_base_url` or `fake_model.anthropic_base_url`;
    read what they sent in `fake_model.requests`. See docs/fake-model.md.
    """
    from nullius_core.testing.fake_model import running_fake_model  # aiohttp only when asked for

    with running_fake_model() as fake:
        yield fake


__all__: Iterable[str] = ["fake_model", "nullius_cli", "nullius_env", "nullius_installs", "nullius_session"]
