"""Kimi CLI, installed from PyPI, proves all four agent ports through `nullius conform` against the fake model.

The real agent runs in a subprocess, with every Nullius location under the
module's tmp folder but STANDARD_DIR, the session's (`nullius_installs`: the
uv install into a Python 3.13 venv is made once per digest, from uv's
shared cache when it has the wheels). The fake model plays the kits through Kimi
CLI's own tools and the session's MCP tools (nullius_agent_kimi/player.py).
The provider's key is given to Nullius, which keeps it in the relay: Kimi CLI
sees only its route's token, as OPENAI_API_KEY.
"""

from __future__ import annotations

import json

import pytest

from nullius_agent_kimi import plugin
from nullius_core.testing import run_cli
from nullius_core.testing.agent_proofs import agent_world, tools_seen

PLAYER = "nullius_agent_kimi.player"  # shipped in this distribution
DEFINITION = json.loads((plugin.CATALOGUE / "agents" / "kimi" / "agent.json").read_text())
KEY = "sk-upstream-held-by-the-relay-kimi-0123456789"
MODEL = "fake-kimi"
VERSION = "1.50.0"
PORTS = {"agent.task/v1", "agent.workspace/v1", "agent.tools/v1", "agent.conversation/v1"}
SKILLS = {"decoys", "chain", "retry"}

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def world(tmp_path_factory, nullius_installs):
    """One isolated home for the module; Kimi CLI is installed into the session's STANDARD_DIR once."""
    with agent_world(tmp_path_factory.mktemp("kimi"), nullius_installs, "kimi", MODEL, KEY, f"{PLAYER}:respond",
                     drop=("KIMI_", "MOONSHOT_")) as made:
        yield made


def test_the_definition_and_the_catalogue(world):
    assert DEFINITION["upstream"] == {"pypi": "kimi-cli", "version": VERSION}
    assert DEFINITION["install"] == {"python": "3.13", "pip": [f"kimi-cli=={VERSION}"]}
    assert DEFINITION["start"] == ["{install}/.venv/bin/kimi", "acp"]
    model = DEFINITION["model"]
    assert model["api"] == "openai-chat" and model["env"] == {"OPENAI_BASE_URL": "{base_url}", "OPENAI_API_KEY": "{token}"}
    config = model["files"][".kimi/config.toml"]
    assert 'type = "openai_legacy"' in config and 'api_key = ""' in config and "{token}" not in json.dumps(model["files"])
    assert json.loads(model["files"][".kimi/credentials/kimi-code.json"])["access_token"].startswith("nullius-placeholder")
    assert set(DEFINITION["proven"]) == PORTS and {p["model"] for p in DEFINITION["proven"].values()} == {MODEL}
    checked = run_cli(["check", str(plugin.CATALOGUE)], world.env, in_process=True)
    assert checked.code == 0 and "ok" in checked.stdout, checked.output


def test_kimi_proves_every_port_and_every_skill(world):
    world.fake.use(f"{PLAYER}:respond")
    world.fake.clear()
    rows = world.prove(PORTS, VERSION)
    assert set(rows["agent.tools/v1"]["skills"]) == SKILLS, rows["agent.tools/v1"]
    trials = [p.parent for p in world.jobs.glob("*/*/result.json")]
    for trial in trials:
        agent = json.loads((trial / "result.json").read_text())["standard"]["agent"]
        assert agent["info"] == {"name": "Kimi Code CLI", "version": VERSION}, agent
        log = (trial / ".work" / "home" / ".kimi" / "logs" / "kimi.log").read_text()
        assert "Using LLM provider: type='openai_legacy'" in log and "oauth=None" in log  # the placeholder login is never used
    # what Kimi sent: Chat Completions, streamed, its own tools and the session's MCP tools offered by their own names
    requests = list(world.fake.requests)
    assert all(r.path == "/v1/chat/completions" and r.body["model"] == MODEL and r.body["stream"] for r in requests)
    offered, called = tools_seen(requests)
    assert {"Shell", "ReadFile", "WriteFile", "StrReplaceFile", "locate_parcel"} <= offered, offered
    assert {"Shell", "WriteFile", "ReadFile", "StrReplaceFile", "book_collection"} <= called, called
    world.assert_clean(trials)
