"""fast-agent, installed from PyPI, proves all four agent ports through `nullius conform` against the fake model.

The real agent runs in a subprocess, with every Nullius location under the
module's tmp folder but STANDARD_DIR, the session's (`nullius_installs`: the
pip install into a Python 3.13 venv is made once per session, from pip's own
cache when it has the wheels). The fake model plays the kits through
fast-agent's own tools and the session's MCP tools
(nullius_agent_fast_agent/player.py). The provider's key is given to Nullius,
which keeps it in the relay: fast-agent sees only its route's token, as
GENERIC_API_KEY.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nullius_agent_fast_agent import plugin
from nullius_core.testing import isolated_env, processes_under, run_cli
from nullius_core.testing.fake_model import running_fake_model

PLAYER = "nullius_agent_fast_agent.player"  # shipped in this distribution
DEFINITION = json.loads((plugin.CATALOGUE / "agents" / "fast-agent" / "agent.json").read_text())
KEY = "sk-upstream-held-by-the-relay-fast-agent-0123456789"
MODEL = "fake-fast-agent"
VERSION = "0.10.48"
PORTS = {"agent.task/v1", "agent.workspace/v1", "agent.tools/v1", "agent.conversation/v1"}
SKILLS = {"decoys", "chain", "retry"}
SECONDS = 900  # the first run installs from PyPI

pytestmark = pytest.mark.slow


def files_holding(folder: Path, needle: bytes) -> list[str]:
    return [str(p) for p in folder.rglob("*") if p.is_file() and not p.is_symlink() and needle in p.read_bytes()]


@pytest.fixture(scope="module")
def world(tmp_path_factory, nullius_installs):
    """One isolated home for the module; fast-agent is installed into the session's STANDARD_DIR once."""
    root = tmp_path_factory.mktemp("fast-agent")
    cache = Path.home() / ".cache" / "pip"  # the user's pip cache, before HOME is the module's
    env = isolated_env(root, standard_dir=nullius_installs)
    for name in [k for k in env if k.startswith(("OPENAI_", "ANTHROPIC_", "GENERIC_", "FAST_AGENT_"))]:
        del env[name]
    env["PIP_CACHE_DIR"] = str(cache)
    env["OPENAI_API_KEY"] = KEY  # the relay's, for the openai provider; never the agent's
    with running_fake_model(f"{PLAYER}:respond") as fake:
        yield env, fake, root
    assert processes_under(root) == []


def conform(world, *args: str) -> tuple[int, dict[str, dict], str]:
    env, fake, _ = world
    result = run_cli(["conform", "fast-agent", "--unsandboxed", "--json", *args, "--model", MODEL, "--provider", "openai",
                      "--base-url", fake.openai_base_url], env, timeout=SECONDS)
    if "cannot be installed" in result.output:
        pytest.fail("fast-agent could not be installed from PyPI:\n" + result.output[-3000:])
    assert result.stdout.strip(), result.output
    return result.code, {r["port"]: r for r in json.loads(result.stdout)}, result.stderr


def test_the_definition_and_the_catalogue(world):
    env, _, _ = world
    assert DEFINITION["upstream"] == {"pypi": "fast-agent-mcp", "version": VERSION}
    assert DEFINITION["install"] == {"python": "3.13", "pip": [f"fast-agent-mcp=={VERSION}"]}
    assert DEFINITION["start"][:3] == ["{install}/.venv/bin/fast-agent", "--no-update-check", "acp"]
    assert DEFINITION["model"] == {"api": "openai-chat", "env": {"GENERIC_BASE_URL": "{base_url}", "GENERIC_API_KEY": "{token}"}}
    assert {p["model"] for p in DEFINITION["proven"].values()} == {MODEL}  # proofs made against the fake model
    assert set(DEFINITION["proven"]) == PORTS
    checked = run_cli(["check", str(plugin.CATALOGUE)], env)
    assert checked.code == 0 and "ok" in checked.stdout, checked.output


def test_fast_agent_proves_every_port_and_every_skill(world):
    env, fake, root = world
    fake.use(f"{PLAYER}:respond")
    fake.clear()
    code, rows, stderr = conform(world, *(a for port in sorted(PORTS) for a in ("--port", port)))
    assert code == 0, stderr
    assert {p for p, r in rows.items() if r["proven"]} == PORTS, rows
    assert all(rows[p]["model"] == MODEL and rows[p]["version"] == VERSION for p in PORTS)
    assert {s for s, v in rows["agent.tools/v1"]["skills"].items() if v["ok"]} == SKILLS, rows["agent.tools/v1"]

    jobs = Path(env["NULLIUS_JOBS_DIR"])
    job = jobs / rows["agent.workspace/v1"]["job"]
    written = json.loads((job / "write-file" / "verifier" / "score.json").read_text())["detail"]
    assert (job / "write-file" / ".work" / "workspace" / written["path"]).read_text() == written["expected"] + "\n"
    fixed = json.loads((job / "fix-bug" / "verifier" / "score.json").read_text())["detail"]["expected"]
    charge = fixed.split("sum(prices) + ")[1].split(",")[0]
    assert f"return sum(prices) + {charge}\n" in (job / "fix-bug" / ".work" / "workspace" / "ledger.py").read_text()
    tools_job = jobs / rows["agent.tools/v1"]["job"]
    logged = [json.loads(line) for line in (tools_job / "chain" / "verifier" / "mcp-calls.jsonl").read_text().splitlines()]
    assert [c["tool"] for c in logged] == ["locate_parcel", "shift_lead", "radio_call_sign"]  # fast-agent ran the office's server
    for trial in [p.parent for p in jobs.glob("*/*/result.json")]:
        calls = [json.loads(line) for line in (trial / "agent" / "calls.jsonl").read_text().splitlines()]
        assert calls and all(c["model_sent"] == MODEL and c["status"] == 200 for c in calls), (trial, calls)
        result = json.loads((trial / "result.json").read_text())
        assert result["standard"]["agent"]["info"] == {"name": "fast-agent-acp", "version": VERSION}

    # what fast-agent sent: Chat Completions, streamed, its own tools and the session's MCP tools offered as office__<tool>
    requests = list(fake.requests)
    assert requests and all(r.path == "/v1/chat/completions" and r.body["model"] == MODEL and r.body["stream"] for r in requests)
    offered = {t["function"]["name"] for r in requests for t in r.body.get("tools") or []}
    assert {"bash", "read_text_file", "write_text_file", "edit_file", "office__locate_parcel"} <= offered, offered
    used = {c["function"]["name"] for r in requests for m in r.body["messages"] for c in m.get("tool_calls") or []}
    assert {"bash", "write_text_file", "read_text_file", "edit_file", "office__book_collection"} <= used, used
    assert all(r.headers.get("authorization") == f"Bearer {KEY}" for r in requests)
    assert files_holding(jobs, KEY.encode()) == [] and files_holding(Path(env["HOME"]), KEY.encode()) == []
    assert processes_under(root) == []

    listed = json.loads(run_cli(["list", "--json"], env).stdout)
    agent = next(a for a in listed["agents"] if a["ref"] == "fast-agent")
    assert set(agent["offers"]) == PORTS


def test_a_model_that_answers_wrongly_proves_nothing(world):
    env, fake, _ = world
    fake.use(f"{PLAYER}:respond_wrongly")
    try:
        code, rows, _ = conform(world, "--port", "agent.tools/v1")
    finally:
        fake.use(f"{PLAYER}:respond")
    assert code == 1 and rows["agent.tools/v1"]["passed"] == "0/2" and not rows["agent.tools/v1"]["proven"]
