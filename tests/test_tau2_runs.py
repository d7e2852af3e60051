"""τ²-bench end to end: the reference agent, Claude Agent ACP and tau2's own agent (Original) talk with tau2's user simulator.

The simulator and the agent's model are Nullius's fake model, played from
each task's expected actions (nullius_bench_tau2.agent_player); everything
else is real: tau2's loop, environment and evaluation in the driver, the
MCP server that executes nothing, the agents over ACP, the relay and its
routes. Harbor's own models read the jobs.
"""

from __future__ import annotations

import json
from pathlib import Path

from test_harbor_reads_jobs import harbor_check, harbor_python  # noqa: F401 - a fixture

from nullius_core.paths import Paths
from nullius_core.testing import isolated_env, run_cli

KEY = "sk-upstream-held-by-the-relay-tau2-0123456789"


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def test_tau2_conversations_with_an_agent_claude_and_the_original_setup(harbor_python, nullius_installs, fake_model, tmp_path):  # noqa: F811
    from nullius_bench_tau2.agent_player import agent_player

    # the session's installs: the agents' and the driver's environments are not what this test is about
    env = {**isolated_env(tmp_path / "nullius", standard_dir=nullius_installs), "NULLIUS_JOBS_DIR": str(tmp_path / "jobs"),
           "OPENAI_COMPATIBLE_API_KEY": KEY}
    first = run_cli(["run", "tau2", "nop", "--dataset", "airline", "--limit", "1", "--job-name", "nop"], env)  # installs the driver
    assert first.code == 0, first.output
    tasks = next(Paths.from_env(env).data_dir.glob("tau2/airline/*/tasks.json"))
    fake_model.use(agent_player(json.loads(tasks.read_text())))
    way = ["--provider", "openai-compatible", "--base-url", fake_model.openai_base_url, "--dataset", "airline", "-j", "2"]
    runs = {
        "reference": ["reference", "--model", "fake", "--unsandboxed", "--limit", "3"],
        "claude": ["claude", "--model", "claude-sonnet-4-5", "--unsandboxed", "--limit", "2"],
        "original": ["original", "--limit", "2"],
    }
    for name, args in runs.items():
        result = run_cli(["run", "tau2", *args, *way, "--job-name", name], env)
        assert result.code == 0, result.output
        job = tmp_path / "jobs" / name
        trials = {p.parent.name: json.loads(p.read_text()) for p in job.glob("*/result.json")}
        assert {t["standard"]["outcome"] for t in trials.values()} == {"passed"}, (name, result.stderr)
        for unit, trial in trials.items():
            folder = job / unit
            # the reward is tau2's own evaluation of the simulation its loop returned
            assert (folder / "verifier" / "tau2-simulation.json").is_file()
            assert json.loads((folder / "verifier" / "score.json").read_text())["reward"] == 1.0
            # the simulated user's calls are on its route, never among the participant's
            simulator = _lines(folder / "simulator" / "calls.jsonl")
            assert simulator and {c["model_sent"] for c in simulator} == {"gpt-4.1-2025-04-14"}
            assert trial["standard"]["routes"]["simulator"]["calls"] == len(simulator)
            own = _lines(folder / ".work" / "relay" / "calls.jsonl")
            assert own and {c.get("kind", "agent") for c in own} == {"agent"} and trial["agent_result"]["metadata"]["calls"] == len(own)
            steps = json.loads((folder / "agent" / "trajectory.json").read_text())["steps"]
            assert steps[0]["source"] == "user" and "<instructions>" in steps[0]["message"]
        if name == "reference":  # a task done with tools: each call and its result in the trajectory
            steps = json.loads((job / "u0002" / "agent" / "trajectory.json").read_text())["steps"]
            calls = [c["function_name"] for s in steps for c in s.get("tool_calls") or []]
            assert "mcp__airline__send_certificate" in calls and all(s.get("observation") for s in steps if s.get("tool_calls"))
        if name == "original":
            config = json.loads((job / "config.json").read_text())["standard"]
            assert config["setup"]["name"] == "original" and config["setup"]["comparable_with_paper"] is True
            assert config["model"] == "gpt-4.1-2025-04-14"
        assert harbor_check(harbor_python, job)["checked"]["trials"] == len(trials)
    for path in (tmp_path / "jobs").rglob("*"):
        if path.is_file():
            assert KEY not in path.read_text(errors="replace"), path
