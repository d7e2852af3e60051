"""Qwen Code, installed from the npm registry, proves all four agent ports in one `nullius conform` run against the
fake model.

Its runs of GSM8K and HumanEval, locally and on docker, are in benchmarks/agents_matrix.py.

The real CLI runs in a subprocess, with every Nullius location under the
module's tmp folder but STANDARD_DIR, the session's (`nullius_installs`: the
npm install and the tools kit's environment are made once per session). The
fake model plays the kits through Qwen Code's own tools
(nullius_agent_qwen/player.py). The provider's key is given to Nullius, which
keeps it in the relay: Qwen Code sees only its route's token, as OPENAI_API_KEY.
"""

from __future__ import annotations

import json

import pytest

from nullius_agent_qwen import plugin
from nullius_core.testing import run_cli
from nullius_core.testing.agent_proofs import agent_world
from nullius_core.testing.chat import read_chat

PLAYER = "nullius_agent_qwen.player"  # shipped in this distribution
DEFINITION = json.loads((plugin.CATALOGUE / "agents" / "qwen" / "agent.json").read_text())
MODEL = "fake-qwen"
VERSION = "0.24.4"
PORTS = {"agent.task/v1", "agent.workspace/v1", "agent.tools/v1", "agent.conversation/v1"}

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def world(tmp_path_factory, nullius_installs):
    """One isolated home for the module; Qwen Code is installed into the session's STANDARD_DIR once."""
    with agent_world(tmp_path_factory.mktemp("qwen"), nullius_installs, "qwen", MODEL,
                     "sk-upstream-held-by-the-relay-qwen-0123456789", f"{PLAYER}:respond",
                     drop=("QWEN_", "DASHSCOPE_", "BAILIAN_")) as made:
        yield made


def test_the_definition_and_the_catalogue(world):
    assert DEFINITION["upstream"] == {"npm": "@qwen-code/qwen-code", "version": VERSION}
    assert DEFINITION["install"] == {"npm": [f"@qwen-code/qwen-code@{VERSION}"]}
    assert DEFINITION["start"] == ["{install}/node_modules/.bin/qwen", "--acp"]
    assert DEFINITION["env"]["QWEN_CODE_LEGACY_MCP_BLOCKING"] == "1"  # the session's MCP tools from the first request on
    model = DEFINITION["model"]
    assert model["api"] == "openai-chat"
    assert model["env"] == {"OPENAI_BASE_URL": "{base_url}", "OPENAI_API_KEY": "{token}", "OPENAI_MODEL": "{model}"}
    settings = model["files"][".qwen/settings.json"]
    assert json.loads(settings)["security"]["auth"]["selectedType"] == "openai" and "{token}" not in settings
    assert {p["model"] for p in DEFINITION["proven"].values()} == {MODEL}  # proofs made against the fake model
    checked = run_cli(["check", str(plugin.CATALOGUE)], world.env, in_process=True)
    assert checked.code == 0 and "ok" in checked.stdout, checked.output


def test_qwen_proves_every_agent_port_in_one_conform_run(world):
    world.fake.use(f"{PLAYER}:respond")
    world.fake.clear()
    world.prove(PORTS, VERSION)
    reads = [read_chat(r.body) for r in world.fake.requests]
    first = next(r for r in reads if r.prompts and "dispatch passphrase" in r.prompts[-1])
    assert first.results == [] and "mcp__office__dispatch_passphrase" in first.context  # listed from the first request
    bridged = {args.get("name") for r in reads for tool, args in r.calls if tool == "tool_call"}
    assert "mcp__office__dispatch_passphrase" in bridged, bridged

    requests = list(world.fake.requests)
    assert all(r.path == "/v1/chat/completions" and r.body["model"] == MODEL and r.body["stream"] for r in requests)
    trials = [p.parent for p in world.jobs.glob("*/*/result.json")]
    assert {json.loads((t / "result.json").read_text())["standard"]["agent"]["info"]["name"] for t in trials} == {"qwen-code"}
    world.assert_clean(trials)
