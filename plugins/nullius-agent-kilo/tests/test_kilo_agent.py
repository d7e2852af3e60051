"""Kilo Code CLI, installed from the npm registry, proves all four agent ports in one `nullius conform` run against the
fake model.

The real CLI runs in a subprocess, with every Nullius location under the
module's tmp folder but STANDARD_DIR, the session's (`nullius_installs`: the
npm install and the tools kit's environment are made once per session). The
fake model plays the kits through Kilo's own tools
(nullius_agent_kilo/player.py). The provider's key is given to Nullius,
which keeps it in the relay: Kilo sees only its route's token, as
NULLIUS_KEY, which its config names as the custom provider's key.

GSM8K runs (as qwen's and opencode's tests make) are left out, to keep this
file short: see the README.
"""

from __future__ import annotations

import json

import pytest

from nullius_agent_kilo import plugin
from nullius_core.testing import run_cli
from nullius_core.testing.agent_proofs import agent_world
from nullius_core.testing.chat import read_chat

PLAYER = "nullius_agent_kilo.player"  # shipped in this distribution
DEFINITION = json.loads((plugin.CATALOGUE / "agents" / "kilo" / "agent.json").read_text())
MODEL = "fake-kilo"
VERSION = "7.7.7"
PORTS = {"agent.task/v1", "agent.workspace/v1", "agent.tools/v1", "agent.conversation/v1"}

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def world(tmp_path_factory, nullius_installs):
    """One isolated home for the module; Kilo is installed into the session's STANDARD_DIR once."""
    with agent_world(tmp_path_factory.mktemp("kilo"), nullius_installs, "kilo", MODEL,
                     "sk-upstream-held-by-the-relay-kilo-0123456789", f"{PLAYER}:respond",
                     drop=("KILO_", "KILOCODE_", "OPENCODE_")) as made:
        yield made


def test_the_definition_and_the_catalogue(world):
    assert DEFINITION["upstream"] == {"npm": "@kilocode/cli", "version": VERSION}
    assert DEFINITION["install"] == {"npm": [f"@kilocode/cli@{VERSION}"]}
    assert DEFINITION["start"] == ["{install}/node_modules/@kilocode/cli-linux-x64/bin/kilo", "acp"]
    model = DEFINITION["model"]
    assert model["api"] == "openai-chat" and model["env"] == {"NULLIUS_KEY": "{token}"}
    config = json.loads(model["files"][".config/kilo/kilo.json"])
    assert config["provider"]["nullius"]["options"] == {"baseURL": "{base_url}", "apiKey": "{env:NULLIUS_KEY}"}
    assert config["model"] == "nullius/{model}" and "{token}" not in model["files"][".config/kilo/kilo.json"]
    assert {p["model"] for p in DEFINITION["proven"].values()} == {MODEL}  # proofs made against the fake model
    checked = run_cli(["check", str(plugin.CATALOGUE)], world.env, in_process=True)
    assert checked.code == 0 and "ok" in checked.stdout, checked.output


def test_kilo_proves_every_agent_port_in_one_conform_run(world):
    world.fake.use(f"{PLAYER}:respond")
    world.fake.clear()
    world.prove(PORTS, VERSION)

    # what Kilo sent: Chat Completions, streamed; its own tools and the office's as office_<tool>, directly
    requests = list(world.fake.requests)
    assert all(r.path == "/v1/chat/completions" and r.body["model"] == MODEL and r.body["stream"] for r in requests)
    used = {tool for r in requests for tool, _ in read_chat(r.body).calls}
    assert {"write", "read", "edit", "office_dispatch_passphrase", "office_book_collection"} <= used, used
    trials = [p.parent for p in world.jobs.glob("*/*/result.json")]
    for trial in trials:
        assert json.loads((trial / "result.json").read_text())["standard"]["agent"]["info"]["name"] == "Kilo"
    world.assert_clean(trials)
