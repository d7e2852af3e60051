"""Codex ACP, installed from npm for real, proves its ports through `nullius conform` (real CLI, real relay, fake model).

The fake model plays each kit through Codex's own tools (nullius_agent_codex/player.py).
The module shares one isolated home, so the npm install happens once; the
provider's key is in the relay's environment only.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from nullius_agent_codex import plugin
from nullius_core.testing import files_holding, isolated_env, processes_under, run_cli
from nullius_core.testing.fake_model import running_fake_model

PLAYER = "nullius_agent_codex.player"  # shipped in this distribution
DEFINITION = json.loads((plugin.CATALOGUE / "agents" / "codex" / "agent.json").read_text())
KEY = "sk-upstream-held-by-the-relay-0123456789"
MODEL = "fake-codex"
WARNING = f"Model metadata for `{MODEL}` not found. Defaulting to fallback metadata; this can degrade performance and cause issues."

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory):
    """One home for the module (Codex is installed into it once) and one fake model."""
    root = tmp_path_factory.mktemp("codex")
    env = isolated_env(root)
    for name in [k for k in env if k.startswith(("OPENAI_", "ANTHROPIC_", "OPENROUTER_", "CODEX_"))]:
        del env[name]
    env["OPENAI_API_KEY"] = KEY  # the relay's, for the openai provider; never the agent's
    with running_fake_model(f"{PLAYER}:respond") as fake:
        yield env, fake, root


def conform(world: Any, *args: str) -> tuple[dict[str, dict[str, Any]], float]:
    env, fake, _ = world
    started = time.monotonic()
    result = run_cli(
        ["conform", "codex", "--model", MODEL, "--provider", "openai", "--base-url", fake.openai_base_url,
         "--unsandboxed", "--json", *args],
        env, timeout=300,
    )
    assert result.stdout.strip(), result.output
    rows = {row["port"]: row for row in json.loads(result.stdout)}
    return rows, time.monotonic() - started


def job_of(world: Any, row: dict[str, Any]) -> Path:
    return Path(world[0]["NULLIUS_JOBS_DIR"]) / row["job"]


def score(job: Path, unit: str) -> dict[str, Any]:
    return json.loads((job / unit / "verifier" / "score.json").read_text())



def test_the_definition_and_the_catalogue(world):
    env, _, _ = world
    # codex-acp names no range: its binary embeds Codex's core, the one its user-agent says (codex_cli_rs/0.137.0)
    assert DEFINITION["upstream"] == {"npm": "@zed-industries/codex-acp", "version": "0.16.0", "core": "@openai/codex@0.137.0"}
    assert DEFINITION["upstream"]["core"] in DEFINITION["fidelity"]["install"]["npm"]  # `nullius fidelity` compares it with that core's own CLI
    assert DEFINITION["install"] == {"npm": ["@zed-industries/codex-acp@0.16.0"]}
    assert DEFINITION["start"] == ["{install}/node_modules/@zed-industries/codex-acp-linux-x64/bin/codex-acp"]
    assert DEFINITION["model"]["api"] == "openai-responses"
    assert {p["model"] for p in DEFINITION["proven"].values()} == {"fake-codex"}  # proofs made against the fake model
    effort = DEFINITION["options"]["reasoning_effort"]
    assert effort["default"] == "medium" and {"low", "medium", "high"} <= set(effort["values"])
    checked = run_cli(["check", str(plugin.CATALOGUE)], env, in_process=True)
    assert checked.code == 0 and "ok" in checked.stdout, checked.output
    listed = json.loads(run_cli(["list", "--json"], env, in_process=True).stdout)
    codex = next((a for a in listed["agents"] if a["ref"] == "codex"), None)
    assert codex is not None, "is nullius-agent-codex installed (./dev setup)?"
    assert codex["core"] == "@openai/codex@0.137.0"


def test_codex_proves_workspace_and_conversation_through_its_own_tools(world):
    env, fake, root = world
    fake.clear()
    rows, seconds = conform(world, "--port", "agent.workspace/v1", "--port", "agent.conversation/v1",
                            "--option", "reasoning_effort=high")
    for port in ("agent.workspace/v1", "agent.conversation/v1"):
        row = rows[port]
        assert row["proven"], (port, row)
        assert row["model"] == MODEL and row["version"] == "0.16.0"
    assert seconds < 150, f"conform took {seconds:.0f} s"

    # the workspace kit's files are really there, written by Codex's exec_command
    job = job_of(world, rows["agent.workspace/v1"])
    written = score(job, "write-file")["detail"]
    note = job / "write-file" / ".work" / "workspace" / written["path"]
    assert note.read_text() == written["expected"] + "\n"
    fixed = score(job, "fix-bug")
    charge = fixed["detail"]["expected"].split("+ ")[1].split(",")[0]
    assert f"    return sum(prices) + {charge}\n" in (job / "fix-bug" / ".work" / "workspace" / "ledger.py").read_text()
    calls = [item for r in fake.requests for item in r.body.get("input", []) if item.get("type") == "function_call"]
    assert {c["name"] for c in calls} == {"exec_command"}
    commands = [json.loads(c["arguments"])["cmd"] for c in calls]
    assert "cat README.md" in commands and any(c.startswith("sed -i ") for c in commands)

    # the records of every trial, and the option as Codex's own setting
    trials = [job / "write-file", job / "fix-bug", *job_of(world, rows["agent.conversation/v1"]).glob("recall-*")]
    for trial in trials:
        assert (trial / "agent" / "acp.jsonl").stat().st_size > 0
        records = [json.loads(line) for line in (trial / "agent" / "calls.jsonl").read_text().splitlines()]
        assert records and all(r["api"] == "openai-responses" and r["model_sent"] == MODEL for r in records)
        assert {r["request"]["reasoning_effort"] for r in records} == {"high"}
        config = (trial / ".work" / "home" / ".codex" / "config.toml").read_text()
        assert 'model_reasoning_effort = "high"' in config and f'model = "{MODEL}"' in config
        assert f"/{trial.name}/v1" in config  # the unit's own relay route
        result = json.loads((trial / "result.json").read_text())
        assert result["standard"]["agent"]["killed_at_end"] == []  # it ended on SIGTERM, nothing had to be killed
    bodies = [r.body for r in fake.requests]
    assert bodies and all(b["stream"] is True and b["reasoning"]["effort"] == "high" for b in bodies)

    # nothing of Codex is left running, and the provider's key stayed in the relay
    assert processes_under(root) == []
    for folder in (Path(env["NULLIUS_JOBS_DIR"]), Path(env["XDG_CONFIG_HOME"])):
        assert files_holding(folder, KEY.encode()) == []
    assert all(r.headers.get("authorization") == f"Bearer {KEY}" for r in fake.requests)  # the relay's, upstream


def test_codex_proves_the_task_port(world):
    """The word alone. Codex sends its 'Model metadata … not found' warning for an unknown slug as the turn's
    first agent_message_chunk; Nullius must take it as a notice, not as part of the answer."""
    env, fake, _ = world
    fake.clear()
    rows, _ = conform(world, "--port", "agent.task/v1")
    row = rows["agent.task/v1"]
    job = job_of(world, row)
    found = {unit: score(job, unit)["detail"]["found"] for unit in ("word-1", "word-2", "word-3")}
    assert row["proven"] and row["passed"] == "3/3", f"the answers as scored: {found}"
    assert row["model"] == MODEL
    warned = [line for line in (job / "word-1" / "agent" / "acp.jsonl").read_text().splitlines() if WARNING in line]
    assert warned, "codex-acp no longer sends the fallback-metadata warning: update the README"
    assert all(r.body["reasoning"]["effort"] == "medium" for r in fake.requests)  # the option's default


def test_codex_proves_the_tools_port_through_its_mcp_namespace(world):
    """Codex offers the office's MCP tools nested in one `mcp__office` namespace tool; the player calls them there."""
    env, fake, _ = world
    fake.clear()
    rows, _ = conform(world, "--port", "agent.tools/v1")
    row = rows["agent.tools/v1"]
    job = job_of(world, row)
    assert row["proven"] and row["passed"] == "2/2", row
    assert row["model"] == MODEL and row["version"] == "0.16.0"
    assert all(skill["ok"] for skill in row["skills"].values()), row["skills"]
    offered = [t for r in fake.requests for t in r.body.get("tools", []) if t.get("name") == "mcp__office"]
    assert offered and all(t["type"] == "namespace" for t in offered)
    calls = [i for r in fake.requests for i in r.body.get("input", []) if i.get("type") == "function_call"]
    assert calls and {c.get("namespace") for c in calls} == {"mcp__office"}
    # the office's own log: Codex called its tools, and the answers are the tools' values, clean
    for check in ("one-tool", "arguments", "decoys", "chain", "retry"):
        detail = score(job, check)["detail"]
        assert detail["calls"] and score(job, check)["passed"], (check, detail)
    one = score(job, "one-tool")["detail"]
    assert one["found"] == one["expected"]


def test_a_model_that_answers_wrongly_proves_nothing(world):
    env, fake, _ = world
    fake.use(f"{PLAYER}:respond_wrongly")
    try:
        rows, _ = conform(world, "--port", "agent.workspace/v1")
    finally:
        fake.use(f"{PLAYER}:respond")
    row = rows["agent.workspace/v1"]
    assert row["passed"] == "0/2" and not row["proven"]
