"""OpenCode, installed from the npm registry, proves all four agent ports in one `nullius conform` run against the
fake model.

Its runs of GSM8K and HumanEval, locally and on docker, are in benchmarks/agents_matrix.py.

The real CLI runs in a subprocess, with every Nullius location under the
module's tmp folder but STANDARD_DIR, the session's (`nullius_installs`: the
npm install and the tools kit's environment are made once per session). The
fake model plays the kits through OpenCode's own tools
(nullius_agent_opencode/player.py). The provider's key is given to Nullius,
which keeps it in the relay: OpenCode sees only its route's token, as
NULLIUS_KEY, which its config names as the custom provider's key.
"""

from __future__ import annotations

import json

import pytest

from nullius_agent_opencode import plugin
from nullius_core.testing import run_cli
from nullius_core.testing.agent_proofs import agent_world
from nullius_core.testing.chat import read_chat

PLAYER = "nullius_agent_opencode.player"  # shipped in this distribution
DEFINITION = json.loads((plugin.CATALOGUE / "agents" / "opencode" / "agent.json").read_text())
MODEL = "fake-opencode"
VERSION = "1.18.33"
PORTS = {"agent.task/v1", "agent.workspace/v1", "agent.tools/v1", "agent.conversation/v1"}

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def world(tmp_path_factory, nullius_installs):
    """One isolated home for the module; OpenCode is installed into the session's STANDARD_DIR once."""
    with agent_world(tmp_path_factory.mktemp("opencode"), nullius_installs, "opencode", MODEL,
                     "sk-upstream-held-by-the-relay-opencode-0123456789", f"{PLAYER}:respond",
                     drop=("OPENCODE_",)) as made:
        yield made


def test_the_definition_and_the_catalogue(world):
    assert DEFINITION["upstream"] == {"npm": "opencode-ai", "version": VERSION}
    assert DEFINITION["install"] == {"npm": [f"opencode-ai@{VERSION}"]}
    assert DEFINITION["start"] == ["{install}/node_modules/opencode-linux-x64/bin/opencode", "acp"]
    model = DEFINITION["model"]
    assert model["api"] == "openai-chat" and model["env"] == {"NULLIUS_KEY": "{token}"}
    config = json.loads(model["files"][".config/opencode/opencode.json"])
    assert config["provider"]["nullius"]["options"] == {"baseURL": "{base_url}", "apiKey": "{env:NULLIUS_KEY}"}
    assert config["model"] == "nullius/{model}" and "{token}" not in model["files"][".config/opencode/opencode.json"]
    assert {p["model"] for p in DEFINITION["proven"].values()} == {MODEL}  # proofs made against the fake model
    checked = run_cli(["check", str(plugin.CATALOGUE)], world.env, in_process=True)
    assert checked.code == 0 and "ok" in checked.stdout, checked.output


def test_opencode_proves_every_agent_port_in_one_conform_run(world):
    world.fake.use(f"{PLAYER}:respond")
    world.fake.clear()
    world.prove(PORTS, VERSION)

    # what OpenCode sent: Chat Completions, streamed; its own tools and the office's as office_<tool>, directly
    requests = list(world.fake.requests)
    assert all(r.path == "/v1/chat/completions" and r.body["model"] == MODEL and r.body["stream"] for r in requests)
    used = {tool for r in requests for tool, _ in read_chat(r.body).calls}
    assert {"write", "read", "edit", "office_dispatch_passphrase", "office_book_collection"} <= used, used
    trials = [p.parent for p in world.jobs.glob("*/*/result.json")]
    for trial in trials:
        home = trial / ".work" / "home"
        assert not (home / ".npm").exists()  # no npm run for its config folder's plugin package: see the README
        assert json.loads((trial / "result.json").read_text())["standard"]["agent"]["info"]["name"] == "OpenCode"
    world.assert_clean(trials)
