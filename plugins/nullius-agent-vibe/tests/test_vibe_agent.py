"""Mistral Vibe, installed from PyPI, proves its ports through `nullius conform` against the fake model.

The real agent runs in a subprocess, with every Nullius location under the
module's tmp folder but STANDARD_DIR, the session's (`nullius_installs`: the
uv install into a Python 3.12 venv is made once per digest, from uv's
shared cache when it has the wheels). The fake model plays the kits through Vibe's
own tools, and the session's MCP tools through its run_typescript sandbox
(nullius_agent_vibe/player.py). The provider's key is given to
Nullius, which keeps it in the relay: Vibe sees only its route's token, as
NULLIUS_KEY.
"""

from __future__ import annotations

import json

import pytest

from nullius_agent_vibe import plugin
from nullius_core.testing.agent_proofs import agent_world, tools_seen

PLAYER = "nullius_agent_vibe.player"  # shipped in this distribution
DEFINITION = json.loads((plugin.CATALOGUE / "agents" / "vibe" / "agent.json").read_text())
KEY = "sk-upstream-held-by-the-relay-vibe-0123456789"
MODEL = "fake-vibe"
VERSION = "2.26.1"
PORTS = {"agent.task/v1", "agent.workspace/v1", "agent.tools/v1", "agent.conversation/v1"}
SKILLS = {"decoys", "chain", "retry"}

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def world(tmp_path_factory, nullius_installs):
    """One isolated home for the module; Vibe is installed into the session's STANDARD_DIR once."""
    with agent_world(tmp_path_factory.mktemp("vibe"), nullius_installs, "vibe", MODEL, KEY, f"{PLAYER}:respond",
                     drop=("MISTRAL_", "VIBE_")) as made:
        yield made


def test_vibe_proves_every_port_and_every_skill(world):
    world.fake.use(f"{PLAYER}:respond")
    world.fake.clear()
    rows = world.prove(PORTS, VERSION)
    assert set(rows["agent.tools/v1"]["skills"]) == SKILLS, rows["agent.tools/v1"]
    # the office's tools are never offered by name: only through search_tool_functions and run_typescript
    requests = list(world.fake.requests)
    assert all(r.path == "/v1/chat/completions" and r.body["model"] == MODEL for r in requests)
    offered, called = tools_seen(requests)
    assert {"write_file", "read_file", "edit", "search_tool_functions", "run_typescript"} <= offered, offered
    assert not any(name.endswith("locate_parcel") for name in offered)
    assert {"write_file", "read_file", "edit", "search_tool_functions", "run_typescript"} <= called, called
    world.assert_clean(p.parent for p in world.jobs.glob("*/*/result.json"))
