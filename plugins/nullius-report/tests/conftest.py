"""The `jobs` fixture: real runs, made once per session (report_world.py says which)."""

from __future__ import annotations

import pytest
from report_world import make_jobs


@pytest.fixture(scope="session")
def jobs(tmp_path_factory, nullius_installs) -> dict:
    return make_jobs(tmp_path_factory.mktemp("report"), nullius_installs)
