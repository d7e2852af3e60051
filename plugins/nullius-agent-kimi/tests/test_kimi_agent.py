"""Kimi CLI, installed from PyPI, proves all four agent ports through `nullius conform` against the fake model.

The real agent runs in a subprocess, with every Nullius location under the
module's tmp folder but STANDARD_DIR, the session's (`nullius_installs`: the
pip install into a Python 3.13 venv is made once per session, from pip's own
cache when it has the wheels). The fake model plays the kits through Kimi
CLI's own tools and the session's MCP tools (nullius_agent_kimi/player.py).
The provider's key is given to Nullius, which keeps it in the relay: Kimi CLI
sees only its route's token, as OPENAI_API_KEY.
"""

from __future__ import annotations

import json

import pytest

from nullius_agent_kimi import plugin
from nullius_core.testing import processes_under, run_cli
from nullius_core.testing.agent_proofs import agent_world, called_tools, files_holding, offered_tools, trial_calls, workspace_kit_done

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
    root = tmp_path_factory.mktemp("kimi")
    with agent_world(root, nullius_installs, "kimi", f"{PLAYER}:respond", MODEL, KEY, clear=("KIMI_", "MOONSHOT_")) as world:
        yield world


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
    checked = run_cli(["check", str(plugin.CATALOGUE)], world.env)
    assert checked.code == 0 and "ok" in checked.stdout, checked.output


def test_kimi_proves_every_port_and_every_skill(world):
    world.fake.use(f"{PLAYER}:respond")
    world.fake.clear()
    code, rows, stderr = world.conform(*(a for port in sorted(PORTS) for a in ("--port", port)))
    assert code == 0, stderr
    assert {p for p, r in rows.items() if r["proven"]} == PORTS, rows
    assert all(rows[p]["model"] == MODEL and rows[p]["version"] == VERSION for p in PORTS)
    assert {s for s, v in rows["agent.tools/v1"]["skills"].items() if v["ok"]} == SKILLS, rows["agent.tools/v1"]

    workspace_kit_done(world.jobs / rows["agent.workspace/v1"]["job"])
    chain = world.jobs / rows["agent.tools/v1"]["job"] / "chain" / "verifier" / "mcp-calls.jsonl"
    assert [json.loads(line)["tool"] for line in chain.read_text().splitlines()] == ["locate_parcel", "shift_lead", "radio_call_sign"]
    for trial, calls in trial_calls(world.jobs).items():
        assert calls and all(c["model_sent"] == MODEL and c["status"] == 200 for c in calls), (trial, calls)
        agent = json.loads((trial / "result.json").read_text())["standard"]["agent"]
        assert agent["info"] == {"name": "Kimi Code CLI", "version": VERSION}, agent
        log = (trial / ".work" / "home" / ".kimi" / "logs" / "kimi.log").read_text()
        assert "Using LLM provider: type='openai_legacy'" in log and "oauth=None" in log  # the placeholder login is never used

    # what Kimi sent: Chat Completions, streamed, its own tools and the session's MCP tools offered by their own names
    requests = list(world.fake.requests)
    assert requests and all(r.path == "/v1/chat/completions" and r.body["model"] == MODEL and r.body["stream"] for r in requests)
    assert {"Shell", "ReadFile", "WriteFile", "StrReplaceFile", "locate_parcel"} <= offered_tools(requests)
    assert {"Shell", "WriteFile", "ReadFile", "StrReplaceFile", "book_collection"} <= called_tools(requests)
    assert all(r.headers.get("authorization") == f"Bearer {KEY}" for r in requests)
    assert files_holding(world.jobs, KEY.encode()) == [] and files_holding(world.root / "home", KEY.encode()) == []
    assert processes_under(world.root) == []
    assert world.offers() == PORTS


def test_a_model_that_answers_wrongly_proves_nothing(world):
    world.fake.use(f"{PLAYER}:respond_wrongly")
    try:
        code, rows, _ = world.conform("--port", "agent.tools/v1")
    finally:
        world.fake.use(f"{PLAYER}:respond")
    assert code == 1 and rows["agent.tools/v1"]["passed"] == "0/2" and not rows["agent.tools/v1"]["proven"]
