"""A variant on the docker backend: its instruction file and skill are in the unit's workspace inside the agent's container.

One HumanEval unit of the reference agent (fake model): the model asks the
agent to list and read the variant's files with its run_command tool, which
runs in the container, and the recorded request holds the instruction text.
"""

from __future__ import annotations

import json
import socket
from pathlib import Path

from nullius_core.testing import run_cli
from nullius_core.testing.fake_model import FakeRequest, Reply, ToolCall

from docker_world import model_args, world  # noqa: F401 - the fixture

MARKER = "DOCKER-VARIANT-MARKER: write tidy code."


def looking_player(request: FakeRequest) -> Reply:
    """First the agent's run_command (in its container) shows the variant's files; then it answers."""
    if request.last_tool_result is None:
        command = "cat AGENTS.md; cat .agents/skills/tidy/references/style.md; echo in=$(hostname)"
        return Reply(tool_calls=[ToolCall(name="run_command", arguments={"command": command})])
    return Reply(text="done")


def test_a_variants_files_reach_the_agent_in_its_container(world, tmp_path):  # noqa: F811
    env, fake, _ = world
    variant = tmp_path / "tidy"
    (variant / "skills" / "tidy" / "references").mkdir(parents=True)
    (variant / "variant.toml").write_text('agent = "reference"\nmodel = "fake-model"\n')
    (variant / "AGENTS.md").write_text(MARKER + "\n")
    (variant / "skills" / "tidy" / "SKILL.md").write_text("---\nname: tidy\ndescription: tidy code\n---\n")
    (variant / "skills" / "tidy" / "references" / "style.md").write_text("STYLE-REFERENCE\n")
    fake.use(looking_player)
    args = [a for a in model_args(fake) if a not in ("--model", "fake-model")]
    result = run_cli(["run", "humaneval", "--variant", str(variant), *args, "--limit", "1", "--job-name", "variant-docker"], env)
    assert result.code == 0, result.output
    [trial] = [p.parent for p in (Path(env["NULLIUS_JOBS_DIR"]) / "variant-docker").glob("*/result.json")]
    bodies = [json.loads(line)["request"] for line in (trial / ".work" / "relay" / "bodies.jsonl").read_text().splitlines()]
    assert MARKER in bodies[0]["messages"][0]["content"]  # the system prompt the agent built from the workspace's AGENTS.md
    seen = (trial / "agent" / "acp.jsonl").read_text()
    assert MARKER in seen and "STYLE-REFERENCE" in seen  # read by a command in the container, from the mounted workspace
    assert "in=" in seen and f"in={socket.gethostname()}" not in seen  # the command ran in the container, not on this machine
    config = json.loads((trial / "config.json").read_text())["standard"]
    assert config["backend"]["name"] == "docker" and config["variant"]["name"] == "tidy"
