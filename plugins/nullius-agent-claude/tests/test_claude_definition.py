"""The plugin is found, and its agent.json is valid and says what the README says."""

import json

from nullius_agent_claude import plugin

FOLDER = plugin.CATALOGUE / "agents" / "claude"
DEFINITION = json.loads((FOLDER / "agent.json").read_text())


def test_agent_is_in_the_catalogue(nullius_session):
    entry = nullius_session().catalogue.get("agent", "claude")
    assert entry is not None, "is nullius-agent-claude installed (./dev setup)?"
    assert entry.origin == "claude"
    assert entry.file.parent == FOLDER


def test_nullius_check_and_list(nullius_cli):
    checked = nullius_cli("check", str(plugin.CATALOGUE), in_process=True)
    assert checked.code == 0 and "ok" in checked.stdout, checked.output
    listed = nullius_cli("list", "--json", in_process=True)
    assert listed.code == 0, listed.output
    (agent,) = [a for a in json.loads(listed.stdout)["agents"] if a["ref"] == "claude"]
    # the proofs shipped were made against the fake model, and say so
    assert set(agent["offers"]) == {"agent.task/v1", "agent.workspace/v1", "agent.conversation/v1", "agent.tools/v1"}
    assert {o["model"] for o in agent["offers"].values()} == {"fake-claude"}


def test_the_definition():
    assert DEFINITION["schema"] == "nullius.agent/v1"
    assert DEFINITION["upstream"] == {"npm": "@zed-industries/claude-agent-acp", "version": "0.23.1"}
    assert DEFINITION["install"] == {"npm": ["@zed-industries/claude-agent-acp@0.23.1"]}
    assert DEFINITION["start"] == ["{install}/node_modules/.bin/claude-agent-acp"]
    assert {p["model"] for p in DEFINITION["proven"].values()} == {"fake-claude"}
    model = DEFINITION["model"]
    assert model["api"] == "anthropic" and "side_models" not in model  # every call Claude Code made was the run's model
    env = model["env"]
    assert env["ANTHROPIC_BASE_URL"] == "{base_url}"  # the anthropic slot has no /v1: Claude Code adds /v1/messages
    assert env["ANTHROPIC_AUTH_TOKEN"] == "{token}" and "ANTHROPIC_API_KEY" not in env
    for name in ("ANTHROPIC_MODEL", "ANTHROPIC_DEFAULT_SONNET_MODEL", "ANTHROPIC_DEFAULT_OPUS_MODEL", "ANTHROPIC_DEFAULT_HAIKU_MODEL", "CLAUDE_CODE_SUBAGENT_MODEL"):
        assert env[name] == "{model}", name
    for name in ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "DISABLE_AUTOUPDATER", "IS_SANDBOX"):
        assert env[name] == "1", name
    assert env["CLAUDE_CODE_EFFORT_LEVEL"] == "{opt_reasoning_effort}"
    effort = DEFINITION["options"]["reasoning_effort"]
    assert effort["values"] == ["default", "low", "medium", "high"] and effort["default"] == "default"


def test_the_option_is_declared_as_the_reference_agent_declares_it(nullius_session):
    """Fair by construction: an option both agents have has the same name and values."""
    reference = nullius_session().catalogue.get("agent", "reference")
    assert reference is not None, "is nullius-agent-reference installed (./dev setup)?"
    theirs = json.loads(reference.file.read_text())["options"]["reasoning_effort"]
    ours = DEFINITION["options"]["reasoning_effort"]
    assert (ours["values"], ours["default"]) == (theirs["values"], theirs["default"])
