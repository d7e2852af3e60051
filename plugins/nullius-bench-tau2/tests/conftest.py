"""Shared for τ²-bench's tests: the driver's environment installed once, the drivers started once, the fake model.

The drivers start together (each imports tau2 and litellm, seconds of work)
and serve every test of the session, as Nullius's drivers serve unit after
unit. The one test double is the model endpoint: Nullius's scripted fake
model, playing tau2's user simulator and judge (nullius_bench_tau2.player).
"""

from __future__ import annotations

import pytest
from tau2_harness import Driver, install

from nullius_core.testing.fake_model import running_fake_model


@pytest.fixture(scope="session")
def driver_env(nullius_installs):
    return install(nullius_installs)


@pytest.fixture(scope="session")
def drivers(driver_env, tmp_path_factory):
    """airline, retail and telecom-small drivers, and an airline one judged by the NL assertions with short waits."""
    scratch = tmp_path_factory.mktemp("drivers")
    started = {
        "airline": Driver(driver_env, "airline", scratch),
        "retail": Driver(driver_env, "retail", scratch),
        "telecom-small": Driver(driver_env, "telecom-small", scratch),
        "judged": Driver(driver_env, "airline", scratch,
                         {"evaluation": "nl_assertions", "judge_seconds": "2", "simulator_seconds": "3"}),
    }
    yield started
    for driver in started.values():  # all told at once, then each waited for: they end together
        driver.proc.stdin.close()
    for driver in started.values():
        driver.close()


@pytest.fixture(scope="session")
def model():
    """The fake model, for the session; each test sets its script."""
    with running_fake_model() as fake:
        yield fake


@pytest.fixture
def simulator(model):
    """The turn's `simulator`: the fake model's OpenAI-compatible endpoint, as the unit's route would be."""
    from nullius_bench_tau2.player import respond

    model.use(respond)
    return {"model": "gpt-4.1-2025-04-14", "base_url": model.openai_base_url, "key": "sk-fake"}
