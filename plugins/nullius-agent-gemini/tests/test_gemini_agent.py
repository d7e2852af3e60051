"""Gemini CLI, installed from the npm registry, proves its agent ports in one `nullius conform` run against the
fake model speaking the Gemini API, through the relay.

The real CLI runs in a subprocess, with every Nullius location under the
module's tmp folder but STANDARD_DIR, the session's (`nullius_installs`: the
npm install and the tools kit's environment are made once per session). The
fake model plays the kits through Gemini CLI's own tools
(nullius_agent_gemini/player.py). The provider's key (provider `gemini`) is
given to Nullius, which keeps it in the relay: Gemini CLI sees only its
route's token, as GEMINI_API_KEY, and the relay's URL as
GOOGLE_GEMINI_BASE_URL (its gateway mode).
"""

from __future__ import annotations

import json

import pytest

from nullius_agent_gemini import plugin
from nullius_core.testing import run_cli
from nullius_core.testing.agent_proofs import agent_world
from nullius_core.testing.chat import read_gemini

PLAYER = "nullius_agent_gemini.player"  # shipped in this distribution
DEFINITION = json.loads((plugin.CATALOGUE / "agents" / "gemini" / "agent.json").read_text())
MODEL = "fake-gemini"
VERSION = "0.61.0"
PORTS = {"agent.task/v1", "agent.workspace/v1", "agent.tools/v1", "agent.conversation/v1"}
KEY = "AIza-upstream-held-by-the-relay-gemini-0123456789"

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def world(tmp_path_factory, nullius_installs):
    """One isolated home for the module; Gemini CLI is installed into the session's STANDARD_DIR once."""
    with agent_world(tmp_path_factory.mktemp("gemini"), nullius_installs, "gemini", MODEL, KEY, f"{PLAYER}:respond",
                     drop=("GEMINI_", "GOOGLE_"), provider="gemini") as made:
        yield made


def test_the_definition_and_the_catalogue(world):
    assert DEFINITION["upstream"] == {"npm": "@google/gemini-cli", "version": VERSION}
    assert DEFINITION["install"] == {"npm": [f"@google/gemini-cli@{VERSION}"]}
    assert DEFINITION["start"] == ["{install}/node_modules/.bin/gemini", "--acp", "--approval-mode", "yolo"]
    model = DEFINITION["model"]
    assert model["api"] == "gemini"
    assert model["env"] == {"GOOGLE_GEMINI_BASE_URL": "{base_url}", "GEMINI_API_KEY": "{token}", "GEMINI_MODEL": "{model}"}
    settings = json.loads(model["files"][".gemini/settings.json"])
    # the API-key auth, at the base URL: both `--acp` and `-p` (the fidelity way) take it; a chosen "gateway" is one
    # 0.61.0's start-up check does not know ("Error authenticating: Error: Invalid auth method selected.")
    assert settings["security"]["auth"] == {"selectedType": "gemini-api-key"} and "{token}" not in json.dumps(settings)
    assert settings["privacy"]["usageStatisticsEnabled"] is False and settings["telemetry"]["enabled"] is False
    assert settings["general"]["enableAutoUpdate"] is False
    assert {p["model"] for p in DEFINITION["proven"].values()} == {MODEL}  # proofs made against the fake model
    checked = run_cli(["check", str(plugin.CATALOGUE)], world.env, in_process=True)
    assert checked.code == 0 and "ok" in checked.stdout, checked.output


def test_gemini_cli_proves_every_agent_port_in_one_conform_run(world):
    world.fake.use(f"{PLAYER}:respond")
    world.fake.clear()
    world.prove(PORTS, VERSION)
    requests = list(world.fake.requests)
    calls = [r for r in requests if r.api == "gemini"]
    assert calls and all(r.path == f"/v1beta/models/{MODEL}:streamGenerateContent" and r.query.get("alt") == "sse" for r in calls)
    reads = [read_gemini(r.body) for r in calls]
    office = {tool for r in reads for tool, _ in r.calls if tool.startswith("mcp_office_")}
    assert "mcp_office_dispatch_passphrase" in office, office  # the session's MCP tools, handed over ACP, called
    trials = [p.parent for p in world.jobs.glob("*/*/result.json")]
    assert {json.loads((t / "result.json").read_text())["standard"]["agent"]["info"]["name"] for t in trials} == {"gemini-cli"}
    for trial in trials:
        lines = [json.loads(line) for line in (trial / "agent" / "calls.jsonl").read_text().splitlines()]
        assert all(c["api"] == "gemini" for c in lines) and any(c["usage"].get("input") for c in lines)
        # a call the relay refuses (a path it does not serve) is in no record: Gemini CLI would say so on stderr
        said = (trial / "agent" / "stderr.txt").read_text() if (trial / "agent" / "stderr.txt").exists() else ""
        assert "404" not in said and "401" not in said and "Error authenticating" not in said, said[-2000:]
    world.assert_clean(trials)
