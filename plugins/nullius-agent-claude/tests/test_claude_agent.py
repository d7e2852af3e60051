"""Claude Agent ACP, installed from the npm registry, proves its ports through `nullius conform` against the fake model.

The real CLI runs in a subprocess, with every Nullius location under the
module's tmp folder but STANDARD_DIR, the session's (`nullius_installs`: the
npm install and the kits' environments are made once per session). The fake model plays the kits through Claude Code's
own tools (nullius_agent_claude/player.py). The provider's key is given to Nullius, which
keeps it in the relay: the agent sees only its route's token.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from nullius_core.testing import isolated_env, processes_under, run_cli
from nullius_core.testing.fake_model import running_fake_model

PLAYER = "nullius_agent_claude.player"  # shipped in this distribution
KEY = "sk-ant-test-held-by-the-relay-0123456789abcdef"
MODEL = "fake-claude"
PORTS = {"agent.task/v1", "agent.workspace/v1", "agent.conversation/v1", "agent.tools/v1"}  # the kits nullius_agent_claude.player plays
CONFORM_SECONDS = 600  # the first run installs from the npm registry


leftovers = processes_under  # what this module's runs left running (nullius_core.testing)


@pytest.fixture(scope="module")
def world(tmp_path_factory, nullius_installs):
    """One isolated home for the module; Claude Agent ACP is installed into the session's STANDARD_DIR once."""
    if shutil.which("npm") is None or shutil.which("node") is None:
        pytest.fail("node and npm must be on PATH: Claude Agent ACP is installed from the npm registry and runs on Node >= 18")
    root = tmp_path_factory.mktemp("claude")
    env = {**isolated_env(root, standard_dir=nullius_installs), "ANTHROPIC_API_KEY": KEY}
    env.pop("ANTHROPIC_AUTH_TOKEN", None)
    env.pop("ANTHROPIC_BASE_URL", None)
    with running_fake_model(f"{PLAYER}:respond") as fake:
        yield env, fake, root
    assert leftovers(root) == []


def conform(world, *args: str) -> tuple[int, list[dict], str]:
    env, fake, root = world
    result = run_cli(["conform", "claude", "--model", MODEL, "--provider", "anthropic", "--base-url", fake.openai_base_url,
                      "--unsandboxed", "--json", *args], env, timeout=CONFORM_SECONDS)
    if "cannot be installed" in result.output:
        pytest.fail("Claude Agent ACP could not be installed from the npm registry (is registry.npmjs.org reachable?):\n" + result.output[-3000:])
    assert result.stdout.strip(), result.output
    return result.code, json.loads(result.stdout), result.stderr


def trials(jobs: Path, job: str) -> dict[str, Path]:
    return {p.parent.name: p.parent for p in (jobs / job).glob("*/result.json")}


def tool_calls(trial: Path) -> list[tuple[str, list[str]]]:
    steps = json.loads((trial / "agent" / "trajectory.json").read_text())["steps"]
    return [(c["function_name"].split()[0], sorted(c["arguments"])) for s in steps for c in s.get("tool_calls") or []]


def files_holding(folder: Path, secret: bytes) -> list[str]:
    hits = []
    for path in folder.rglob("*"):
        if path.is_file() and not path.is_symlink() and secret in path.read_bytes():
            hits.append(str(path.relative_to(folder)))
    return hits


def test_claude_proves_task_workspace_and_conversation(world):
    env, fake, root = world
    fake.use(f"{PLAYER}:respond")
    fake.clear()
    code, rows, stderr = conform(world, *(a for port in sorted(PORTS) for a in ("--port", port)))
    assert code == 0, stderr
    ports = {r["port"]: r for r in rows}
    assert {p for p, r in ports.items() if r["proven"]} == PORTS, rows
    for port in PORTS:  # the proofs name the fake model, so nobody takes them for a real model's
        assert ports[port]["model"] == MODEL and ports[port]["version"] == "0.23.1", ports[port]
    # Claude Code really called the kit's MCP tools: every skill shown, the chain's three hops in the log
    assert {name: skill["ok"] for name, skill in ports["agent.tools/v1"]["skills"].items()} == {"decoys": True, "chain": True, "retry": True}
    chain_log = Path(world[0]["NULLIUS_JOBS_DIR"]) / ports["agent.tools/v1"]["job"] / "chain" / "verifier" / "mcp-calls.jsonl"
    assert [json.loads(line)["tool"] for line in chain_log.read_text().splitlines()] == ["locate_parcel", "shift_lead", "radio_call_sign"]
    assert "stage=install agent=claude/0.23.1" in stderr

    jobs = Path(env["NULLIUS_JOBS_DIR"])
    by_port = {port: trials(jobs, ports[port]["job"]) for port in PORTS}
    assert sorted(by_port["agent.task/v1"]) == ["word-1", "word-2", "word-3"]
    for port, found in by_port.items():
        for name, trial in found.items():
            assert (trial / "agent" / "acp.jsonl").stat().st_size > 0, (port, name)
            calls = [json.loads(line) for line in (trial / "agent" / "calls.jsonl").read_text().splitlines()]
            assert calls and all(c["model_sent"] == MODEL and not c["side"] and c["status"] == 200 for c in calls), (port, name, calls)
            result = json.loads((trial / "result.json").read_text())
            assert result["standard"]["agent"]["info"]["name"] == "@zed-industries/claude-agent-acp"
            assert result["standard"]["agent"]["killed_at_end"] == [], (port, name)

    # the workspace kit passes only because Claude Code really wrote the files, with its own tools
    write, fix = by_port["agent.workspace/v1"]["write-file"], by_port["agent.workspace/v1"]["fix-bug"]
    wanted = json.loads((write / "verifier" / "score.json").read_text())["detail"]
    assert (write / ".work" / "workspace" / wanted["path"]).read_text().strip() == wanted["expected"]
    assert tool_calls(write) == [("Write", ["content", "file_path"])]
    assert tool_calls(fix) == [("Read", ["file_path"]), ("Read", ["file_path"]), ("Edit", ["file_path", "new_string", "old_string", "replace_all"])]
    fixed = json.loads((fix / "verifier" / "score.json").read_text())["detail"]["expected"]  # "... returns sum(prices) + N, ..."
    charge = fixed.split("sum(prices) + ")[1].split(",")[0]
    assert f"return sum(prices) + {charge}\n" in (fix / ".work" / "workspace" / "ledger.py").read_text()

    # what Claude Code sent: Anthropic Messages, streamed, its own tools offered, as the run's model, the relay's key upstream
    requests = list(fake.requests)
    assert requests and all(r.api == "messages" and r.path == "/v1/messages" for r in requests), {(r.api, r.path) for r in requests}
    assert all(r.body["model"] == MODEL and r.body["stream"] is True for r in requests)
    offered = {t["name"] for t in requests[0].body["tools"]}
    assert {"Write", "Read", "Edit", "Bash", "Glob", "Grep"} <= offered, offered
    assert all(r.headers.get("x-api-key") == KEY for r in requests)  # the relay's key, not the agent's token
    # reasoning_effort `default` is CLAUDE_CODE_EFFORT_LEVEL=default, which Claude Code reads as unset: its own choice,
    # medium for this model name (test_reasoning_effort_reaches_claude_code_as_its_effort_level sets low)
    assert {json.dumps(r.body.get("output_config")) for r in requests} == {'{"effort": "medium"}'}
    assert not any("nlr-" in json.dumps(r.headers) for r in requests)

    assert files_holding(jobs, KEY.encode()) == []  # not in records, workspaces, the agent's HOME
    assert leftovers(root) == []

    listed = json.loads(run_cli(["list", "--json"], env).stdout)
    claude = next(a for a in listed["agents"] if a["ref"] == "claude")
    assert set(claude["offers"]) == PORTS


@pytest.fixture(scope="module")
def low_effort(world):
    """One task-kit conform with --option reasoning_effort=low: its rows and the requests Claude Code sent."""
    env, fake, root = world
    fake.use(f"{PLAYER}:respond")
    fake.clear()
    code, rows, stderr = conform(world, "--port", "agent.task/v1", "--option", "reasoning_effort=low")
    assert code == 0, stderr
    return rows, list(fake.requests), Path(env["NULLIUS_JOBS_DIR"]) / rows[0]["job"]


def test_reasoning_effort_reaches_claude_code_as_its_effort_level(world, low_effort):
    rows, requests, job = low_effort
    assert rows[0]["proven"], rows
    assert requests and all(r.body.get("output_config") == {"effort": "low"} for r in requests), [r.body.get("output_config") for r in requests]
    assert all(r.body.get("thinking") == {"type": "adaptive"} for r in requests)
    config = json.loads((job / "config.json").read_text())
    assert config["standard"]["agent"]["options"] == {"reasoning_effort": "low"}
    # `default` (medium for this model name): test_claude_proves_task_workspace_and_conversation's run, which leaves it unset
    env, fake, root = world
    assert leftovers(root) == []


def test_the_relay_records_claude_codes_effort(low_effort):
    rows, requests, job = low_effort
    calls = [json.loads(line) for p in job.glob("*/agent/calls.jsonl") for line in p.read_text().splitlines()]
    assert calls and all(c["request"]["reasoning_effort"] == "low" for c in calls), [c["request"] for c in calls]


def test_a_model_that_answers_wrongly_proves_nothing(world):
    env, fake, root = world
    fake.use(f"{PLAYER}:respond_wrongly")
    code, rows, stderr = conform(world, "--port", "agent.workspace/v1")
    assert code == 1, stderr
    [row] = rows
    assert row["passed"] == "0/2" and not row["proven"], row
    job = Path(env["NULLIUS_JOBS_DIR"]) / row["job"]
    assert not list((job / "write-file" / ".work" / "workspace").glob("notes/*.txt"))
    assert leftovers(root) == []
