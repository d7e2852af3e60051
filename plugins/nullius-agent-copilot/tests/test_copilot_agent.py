"""GitHub Copilot CLI, installed from the npm registry, proves its ports through `nullius conform` against the fake model.

Its runs of GSM8K and HumanEval, locally and on docker, are in benchmarks/agents_matrix.py.

The real CLI runs in a subprocess, with every Nullius location under the
module's tmp folder but STANDARD_DIR, the session's (`nullius_installs`: the
npm install is made once per session). The fake model plays the kits through
Copilot's own tools (nullius_agent_copilot/player.py). The provider's key is
given to Nullius, which keeps it in the relay: Copilot sees only its route's
token, as COPILOT_PROVIDER_API_KEY.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from nullius_agent_copilot import plugin
from nullius_core.testing import files_holding, isolated_env, processes_under, run_cli
from nullius_core.testing.fake_model import running_fake_model

PLAYER = "nullius_agent_copilot.player"  # shipped in this distribution
DEFINITION = json.loads((plugin.CATALOGUE / "agents" / "copilot" / "agent.json").read_text())
KEY = "sk-upstream-held-by-the-relay-copilot-0123456789"
MODEL = "fake-copilot"
VERSION = "1.0.102"
PORTS = {"agent.task/v1", "agent.workspace/v1", "agent.conversation/v1"}  # the kits the player plays and Copilot can do
SECONDS = 600  # the first run installs from the npm registry

pytestmark = pytest.mark.slow


leftovers = processes_under  # what a test's agents left running (nullius_core.testing)


@pytest.fixture(scope="module")
def world(tmp_path_factory, nullius_installs):
    """One isolated home for the module; Copilot CLI is installed into the session's STANDARD_DIR once."""
    if shutil.which("npm") is None or shutil.which("node") is None:
        pytest.fail("node and npm must be on PATH: Copilot CLI is installed from the npm registry")
    root = tmp_path_factory.mktemp("copilot")
    env = isolated_env(root, standard_dir=nullius_installs)
    for name in [k for k in env if k.startswith(("OPENAI_", "ANTHROPIC_", "COPILOT_", "GITHUB_", "GH_"))]:
        del env[name]
    env["OPENAI_API_KEY"] = KEY  # the relay's, for the openai provider; never the agent's
    with running_fake_model(f"{PLAYER}:respond") as fake:
        yield env, fake, root
    assert leftovers(root) == []


def cli(world, args: list[str]):
    env, fake, _ = world
    result = run_cli([*args, "--model", MODEL, "--provider", "openai", "--base-url", fake.openai_base_url], env, timeout=SECONDS)
    if "cannot be installed" in result.output:
        pytest.fail("Copilot CLI could not be installed from the npm registry:\n" + result.output[-3000:])
    return result


def conform(world, *args: str) -> tuple[int, dict[str, dict], str]:
    result = cli(world, ["conform", "copilot", "--unsandboxed", "--json", *args])
    assert result.stdout.strip(), result.output
    return result.code, {r["port"]: r for r in json.loads(result.stdout)}, result.stderr


def offered(request) -> set[str]:
    return {t["function"]["name"] for t in request.body.get("tools") or []}


def test_the_definition_and_the_catalogue(world):
    env, _, _ = world
    assert DEFINITION["upstream"] == {"npm": "@github/copilot", "version": VERSION}
    assert DEFINITION["install"] == {"npm": [f"@github/copilot@{VERSION}"]}
    assert DEFINITION["start"][:2] == ["{install}/node_modules/@github/copilot-linux-x64/copilot", "--acp"]
    model = DEFINITION["model"]
    assert model["api"] == "openai-chat"
    assert model["env"]["COPILOT_PROVIDER_BASE_URL"] == "{base_url}" and model["env"]["COPILOT_PROVIDER_API_KEY"] == "{token}"
    assert {p["model"] for p in DEFINITION["proven"].values()} == {MODEL}  # proofs made against the fake model
    checked = run_cli(["check", str(plugin.CATALOGUE)], env, in_process=True)
    assert checked.code == 0 and "ok" in checked.stdout, checked.output


def test_copilot_proves_task_workspace_and_conversation(world):
    env, fake, root = world
    fake.use(f"{PLAYER}:respond")
    fake.clear()
    code, rows, stderr = conform(world, *(a for port in sorted(PORTS) for a in ("--port", port)))
    assert code == 0, stderr
    assert {p for p, r in rows.items() if r["proven"]} == PORTS, rows
    assert all(rows[p]["model"] == MODEL and rows[p]["version"] == VERSION for p in PORTS)

    jobs = Path(env["NULLIUS_JOBS_DIR"])
    job = jobs / rows["agent.workspace/v1"]["job"]
    written = json.loads((job / "write-file" / "verifier" / "score.json").read_text())["detail"]
    assert (job / "write-file" / ".work" / "workspace" / written["path"]).read_text() == written["expected"] + "\n"
    fixed = json.loads((job / "fix-bug" / "verifier" / "score.json").read_text())["detail"]["expected"]
    charge = fixed.split("sum(prices) + ")[1].split(",")[0]
    assert f"return sum(prices) + {charge}\n" in (job / "fix-bug" / ".work" / "workspace" / "ledger.py").read_text()
    for trial in [p.parent for p in jobs.glob("*/*/result.json")]:
        calls = [json.loads(line) for line in (trial / "agent" / "calls.jsonl").read_text().splitlines()]
        assert calls and all(c["model_sent"] == MODEL and c["status"] == 200 for c in calls), (trial, calls)
        result = json.loads((trial / "result.json").read_text())
        assert result["standard"]["agent"]["info"]["name"] == "Copilot"

    # what Copilot sent: Chat Completions, streamed, its own tools offered, the relay's key upstream
    requests = list(fake.requests)
    assert requests and all(r.path == "/v1/chat/completions" and r.body["model"] == MODEL and r.body["stream"] for r in requests)
    assert {"bash", "view", "create", "edit"} <= offered(requests[0])
    used = [c["function"]["name"] for r in requests for m in r.body["messages"] for c in m.get("tool_calls") or []]
    assert {"bash", "create", "view", "edit"} <= set(used), used
    assert all(r.headers.get("authorization") == f"Bearer {KEY}" for r in requests)
    assert files_holding(jobs, KEY.encode()) == [] and files_holding(Path(env["XDG_CONFIG_HOME"]), KEY.encode()) == []
    assert leftovers(root) == []

    listed = json.loads(run_cli(["list", "--json"], env).stdout)
    copilot = next(a for a in listed["agents"] if a["ref"] == "copilot")
    assert set(copilot["offers"]) == PORTS


def test_copilot_rejects_the_sessions_stdio_mcp_servers(world):
    """agent.tools/v1 cannot be proven: Copilot 1.0.102's ACP mode takes only http/sse MCP servers from the client,
    and the kit's office is a stdio server. When this fails, Copilot has changed: prove the port and update the README."""
    env, fake, _ = world
    fake.use(f"{PLAYER}:respond")
    fake.clear()
    code, rows, _ = conform(world, "--port", "agent.tools/v1")
    row = rows["agent.tools/v1"]
    assert code == 1 and not row["proven"], row
    assert fake.requests and not any("office" in name for r in fake.requests for name in offered(r))
    job = Path(env["NULLIUS_JOBS_DIR"]) / row["job"]
    logs = "".join(p.read_text() for p in (job / "one-tool" / ".work" / "home" / ".copilot" / "logs").glob("*.log"))
    assert 'Rejecting non-http/sse MCP server "office" from client' in logs
