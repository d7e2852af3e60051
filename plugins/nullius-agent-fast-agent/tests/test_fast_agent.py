"""fast-agent, installed from PyPI, proves all four agent ports through `nullius conform` against the fake model.

The real agent runs in a subprocess, with every Nullius location under the
module's tmp folder but STANDARD_DIR, the session's (`nullius_installs`: the
uv install into a Python 3.13 venv is made once per digest, from uv's
shared cache when it has the wheels). The fake model plays the kits through
fast-agent's own tools and the session's MCP tools
(nullius_agent_fast_agent/player.py). The provider's key is given to Nullius,
which keeps it in the relay: fast-agent sees only its route's token, as
GENERIC_API_KEY.
"""

from __future__ import annotations

import json

import pytest

from nullius_agent_fast_agent import plugin
from nullius_core.testing import run_cli
from nullius_core.testing.agent_proofs import agent_world, tools_seen

PLAYER = "nullius_agent_fast_agent.player"  # shipped in this distribution
DEFINITION = json.loads((plugin.CATALOGUE / "agents" / "fast-agent" / "agent.json").read_text())
KEY = "sk-upstream-held-by-the-relay-fast-agent-0123456789"
MODEL = "fake-fast-agent"
VERSION = "0.10.48"
PORTS = {"agent.task/v1", "agent.workspace/v1", "agent.tools/v1", "agent.conversation/v1"}
SKILLS = {"decoys", "chain", "retry"}

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def world(tmp_path_factory, nullius_installs):
    """One isolated home for the module; fast-agent is installed into the session's STANDARD_DIR once."""
    with agent_world(tmp_path_factory.mktemp("fast-agent"), nullius_installs, "fast-agent", MODEL, KEY, f"{PLAYER}:respond",
                     drop=("GENERIC_", "FAST_AGENT_")) as made:
        yield made


def test_the_definition_and_the_catalogue(world):
    assert DEFINITION["upstream"] == {"pypi": "fast-agent-mcp", "version": VERSION}
    assert DEFINITION["install"] == {"python": "3.13", "pip": [f"fast-agent-mcp=={VERSION}"]}
    assert DEFINITION["start"][:3] == ["{install}/.venv/bin/fast-agent", "--no-update-check", "acp"]
    assert DEFINITION["model"] == {"api": "openai-chat", "env": {"GENERIC_BASE_URL": "{base_url}", "GENERIC_API_KEY": "{token}"}}
    assert set(DEFINITION["proven"]) == PORTS and {p["model"] for p in DEFINITION["proven"].values()} == {MODEL}
    checked = run_cli(["check", str(plugin.CATALOGUE)], world.env, in_process=True)
    assert checked.code == 0 and "ok" in checked.stdout, checked.output


def test_fast_agent_proves_every_port_and_every_skill(world):
    world.fake.use(f"{PLAYER}:respond")
    world.fake.clear()
    rows = world.prove(PORTS, VERSION)
    assert set(rows["agent.tools/v1"]["skills"]) == SKILLS, rows["agent.tools/v1"]
    trials = [p.parent for p in world.jobs.glob("*/*/result.json")]
    for trial in trials:
        agent = json.loads((trial / "result.json").read_text())["standard"]["agent"]
        assert agent["info"] == {"name": "fast-agent-acp", "version": VERSION} and agent["killed_at_end"] == [], agent
    # what fast-agent sent: Chat Completions, streamed, its own tools and the session's MCP tools (office__<tool>)
    requests = list(world.fake.requests)
    assert all(r.path == "/v1/chat/completions" and r.body["model"] == MODEL and r.body["stream"] for r in requests)
    offered, called = tools_seen(requests)
    assert {"bash", "read_text_file", "write_text_file", "edit_file", "office__locate_parcel"} <= offered, offered
    assert {"bash", "write_text_file", "read_text_file", "edit_file", "office__book_collection"} <= called, called
    world.assert_clean(trials)
