"""Without a daemon that answers, a docker run is refused before it installs anything: the backend's `check`, asked first.

Needs no docker: the daemon asked is a socket that does not exist.
"""

from __future__ import annotations

import json
import shutil

from nullius_core.testing import run_cli

from docker_world import REPO

FIXTURES = REPO / "tests" / "fixtures" / "catalogue"


def test_a_daemon_that_does_not_answer_refuses_the_run_before_any_install(nullius_env, tmp_path):
    catalogue = tmp_path / "catalogue"
    shutil.copytree(FIXTURES, catalogue)
    agent = catalogue / "agents" / "scripted" / "agent.json"
    agent.write_text(json.dumps({**json.loads(agent.read_text()), "install": {"pip": ["six==1.16.0"]}}))  # never installed: refused first
    env = {**nullius_env, "NULLIUS_CATALOGUE": str(catalogue), "OPENAI_COMPATIBLE_API_KEY": "sk-any", "DOCKER_HOST": f"unix://{tmp_path}/no.sock"}
    result = run_cli(["run", "faulty", "scripted", "--backend", "docker", "--model", "m", "--provider", "openai-compatible",
                      "--base-url", "http://127.0.0.1:9/v1", "--limit", "1"], env)
    assert result.code == 2, result.output
    assert "stage=install" not in result.stderr and "Traceback" not in result.stderr
    [line] = result.stderr.splitlines()  # said once
    assert line.startswith("nullius: run refused: the backend 'docker' cannot start: DockerError: the docker daemon does not answer at ")
    assert "apt-get install docker.io" in line
