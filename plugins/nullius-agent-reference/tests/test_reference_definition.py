"""The plugin is found, its agent.json is valid, and its pins are what these tests run."""

import importlib.metadata
import json
import subprocess
import sys

from nullius_agent_reference import plugin

FOLDER = plugin.CATALOGUE / "agents" / "reference"
DEFINITION = json.loads((FOLDER / "agent.json").read_text())


def test_agent_is_in_the_catalogue(nullius_session):
    entry = nullius_session().catalogue.get("agent", "reference")
    assert entry is not None, "is nullius-agent-reference installed (./dev setup)?"
    assert entry.origin == "reference"
    assert entry.file.parent == FOLDER


def test_nullius_check_and_list(nullius_cli):
    checked = nullius_cli("check", str(plugin.CATALOGUE), in_process=True)
    assert checked.code == 0 and "ok" in checked.stdout, checked.output
    listed = nullius_cli("list", "--json", in_process=True)
    assert listed.code == 0, listed.output
    (agent,) = [a for a in json.loads(listed.stdout)["agents"] if a["ref"] == "reference"]
    # the proofs shipped were made against the fake model, and say so
    assert set(agent["offers"]) == {"agent.task/v1", "agent.workspace/v1", "agent.conversation/v1", "agent.tools/v1"}
    assert {o["model"] for o in agent["offers"].values()} == {"fake-model"}


def test_the_definition():
    assert DEFINITION["upstream"] == {"pypi": "nullius-agent-reference", "version": "0.1.0"}
    assert DEFINITION["start"] == ["{install}/.venv/bin/python", "{here}/agent.py"]
    assert DEFINITION["model"]["api"] == "openai-chat"
    assert {p["model"] for p in DEFINITION["proven"].values()} == {"fake-model"}
    assert DEFINITION["options"]["reasoning_effort"]["default"] == "default"


def test_every_pin_is_exact_and_is_what_the_tests_run():
    """The tests start agent.py on this interpreter, so its packages must be the pinned ones."""
    pins = dict(p.split("==") for p in DEFINITION["install"]["pip"])
    assert "mcp" in pins  # ACP and Chat Completions it speaks itself (reference_acp.py, reference_http.py)
    assert not {"agent-client-protocol", "openai"} & set(pins)
    for name, version in pins.items():
        assert importlib.metadata.version(name) == version, name


def test_the_package_ships_the_agent_and_its_helpers():
    shipped = sorted(p.name for p in FOLDER.iterdir() if p.name != "__pycache__")
    assert shipped == ["agent.json", "agent.py", "reference_acp.py", "reference_http.py", "reference_loop.py", "reference_mcp.py", "reference_tools.py"]


def test_the_agent_starts_on_the_standard_library_alone(tmp_path):
    """A session without MCP servers never imports an SDK: the whole start is the standard library's."""
    done = subprocess.run([sys.executable, "-X", "importtime", str(FOLDER / "agent.py")], input="",  # stdin closed at once
                          capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    imported = {line.split("|")[-1].strip().split(".")[0] for line in done.stderr.splitlines() if line.startswith("import time:")}
    assert not imported & {"acp", "openai", "mcp", "pydantic", "httpx", "httpx2", "anyio"}, imported
