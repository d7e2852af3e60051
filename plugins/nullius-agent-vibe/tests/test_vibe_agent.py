"""Mistral Vibe, installed from PyPI, proves its ports through `nullius conform` against the fake model.

The real agent runs in a subprocess, with every Nullius location under the
module's tmp folder but STANDARD_DIR, the session's (`nullius_installs`: the
pip install into a Python 3.12 venv is made once per session, from pip's own
cache when it has the wheels). The fake model plays the kits through Vibe's
own tools, and the session's MCP tools through its run_typescript sandbox
(nullius_agent_vibe/player.py). The provider's key is given to
Nullius, which keeps it in the relay: Vibe sees only its route's token, as
NULLIUS_KEY.
"""

from __future__ import annotations

import json

import pytest

from nullius_agent_vibe import plugin
from nullius_core.testing.agent_proofs import agent_world, called_tools, offered_tools, prove_ports

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
    root = tmp_path_factory.mktemp("vibe")
    with agent_world(root, nullius_installs, "vibe", f"{PLAYER}:respond", MODEL, KEY, clear=("MISTRAL_", "VIBE_")) as world:
        yield world


def test_vibe_proves_every_port_and_every_skill(world):
    world.fake.use(f"{PLAYER}:respond")
    prove_ports(world, PORTS, VERSION, KEY, SKILLS)
    # the office's tools are never offered by name: only through search_tool_functions and run_typescript
    requests = list(world.fake.requests)
    assert {"write_file", "read_file", "edit", "search_tool_functions", "run_typescript"} <= offered_tools(requests)
    assert not any(name.endswith("locate_parcel") for name in offered_tools(requests))
    assert {"write_file", "read_file", "edit", "search_tool_functions", "run_typescript"} <= called_tools(requests)
