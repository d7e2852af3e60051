"""The Harbor benchmark's tests share one home (its installs in the session's STANDARD_DIR), the fake model and docker."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from nullius_core.testing import isolated_env
from nullius_core.testing.fake_model import running_fake_model

sys.path.insert(0, str(Path(__file__).parent))

KEY = "sk-upstream-held-by-the-relay-harbor-0123456789"


@pytest.fixture(scope="session")
def harbor_world(tmp_path_factory, nullius_installs):
    done = subprocess.run(["docker", "version", "--format", "{{.Server.Version}}"], capture_output=True, text=True, timeout=60)
    if done.returncode != 0:  # the docker backend's own tests say how to get it; here it is needed, not installed
        if os.environ.get("NULLIUS_TESTS_WITHOUT_DOCKER") == "1":
            pytest.skip(f"docker is not here: {done.stderr.strip()[-300:]}")
        pytest.fail(f"these tests need docker (./dev test starts dockerd): {done.stderr.strip()[-300:]}")
    root = tmp_path_factory.mktemp("harbor")
    env = {**isolated_env(root, standard_dir=nullius_installs), "OPENAI_COMPATIBLE_API_KEY": KEY, "ANTHROPIC_API_KEY": KEY}
    from harbor_tasks import play

    with running_fake_model(play) as fake:
        yield env, fake, root
