"""The plugin is found, its agent.json is valid, and its proofs were made against the fake model.

test_vibe_agent.py makes the proofs again with the real package. Its pip
install took 326 to 365 s on a busy machine.
"""

import json

from nullius_agent_vibe import plugin

DEFINITION = json.loads((plugin.CATALOGUE / "agents" / "vibe" / "agent.json").read_text())


def test_nullius_check_and_list(nullius_cli):
    checked = nullius_cli("check", str(plugin.CATALOGUE), in_process=True)
    assert checked.code == 0 and "ok" in checked.stdout, checked.output
    listed = nullius_cli("list", "--json", in_process=True)
    (agent,) = [a for a in json.loads(listed.stdout)["agents"] if a["ref"] == "vibe"]
    assert set(agent["offers"]) == {"agent.task/v1", "agent.workspace/v1", "agent.tools/v1", "agent.conversation/v1"}
    assert {o["model"] for o in agent["offers"].values()} == {"fake-vibe"}


def test_the_definition_keeps_the_key_out():
    assert DEFINITION["install"] == {"python": "3.12", "pip": ["mistral-vibe==2.26.1"]}
    assert DEFINITION["start"] == ["{install}/.venv/bin/vibe-acp"]
    model = DEFINITION["model"]
    assert model["api"] == "openai-chat" and model["env"] == {"NULLIUS_KEY": "{token}"}
    config = model["files"][".vibe/config.toml"]
    assert 'api_base = "{base_url}"' in config and 'api_key_env_var = "NULLIUS_KEY"' in config
    assert "MISTRAL_API_KEY" not in json.dumps(DEFINITION)
