"""Agent runs over ACP against the fake model through the relay: answers, records, and every way an agent fails."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import ROOT

from nullius_core.testing import processes_under, run_cli

CATALOGUE = ROOT / "tests" / "fixtures" / "catalogue"
KEY = "sk-upstream-held-by-the-relay-0123456789"


@pytest.fixture
def env(nullius_env, tmp_path, fake_model):
    return {**nullius_env, "NULLIUS_CATALOGUE": str(_catalogue(tmp_path)), "NULLIUS_JOBS_DIR": str(tmp_path / "jobs"), "OPENAI_COMPATIBLE_API_KEY": KEY}


def _catalogue(root: Path, turn_seconds: int | None = None) -> Path:
    """A copy of the fixture catalogue (the scripted agent's program in its folder), with a turn limit of its own."""
    target = root / f"catalogue-{turn_seconds}"
    if not target.exists():
        shutil.copytree(CATALOGUE, target)
        if turn_seconds is not None:
            standard = json.loads((target / "benchmarks" / "faulty" / "standard.json").read_text())
            standard["limits"]["turn_seconds"] = turn_seconds
            (target / "benchmarks" / "faulty" / "standard.json").write_text(json.dumps(standard))
    return target


def run_agent(env, fake_model, mode="ask", *extra):
    args = ["run", "faulty", "scripted", "--model", "fake-1", "--provider", "openai-compatible", "--base-url", fake_model.openai_base_url,
            "--unsandboxed", "--option", f"mode={mode}", *extra]
    return run_cli(args, env)


def trials(job: Path) -> dict[str, dict]:
    return {p.parent.name: json.loads(p.read_text()) for p in job.glob("*/result.json")}


def leftovers(root: Path) -> list[str]:
    """This test's scripted agents and their sleeping children (root in their environment: processes_under), still alive."""
    return processes_under(root)


def test_an_agent_answers_through_the_relay_and_everything_is_recorded(env, fake_model, tmp_path):
    fake_model.use({"rules": [{"when": {"contains": "Say alpha"}, "reply": {"text": "alpha"}}, {"when": {"contains": "Say bravo"}, "reply": {"text": "bravo"}}]})
    result = run_agent(env, fake_model, "ask", "--limit", "2", "--job-name", "a")
    assert result.code == 0, result.output
    job = tmp_path / "jobs" / "a"
    found = trials(job)
    assert {k: v["standard"]["outcome"] for k, v in found.items()} == {"u0000": "passed", "u0001": "passed"}
    trial = found["u0000"]
    assert trial["agent_info"] == {"name": "scripted", "version": "1.0", "model_info": {"name": "fake-1", "provider": "openai-compatible"}}
    assert trial["agent_result"]["n_input_tokens"] > 0 and trial["agent_result"]["metadata"]["calls"] == 1
    folder = job / "u0000" / "agent"
    assert {p.name for p in folder.iterdir()} >= {"acp.jsonl", "calls.jsonl", "gateway.log", "trajectory.json", "trace.json", "stderr.txt"}
    acp = [json.loads(line) for line in (folder / "acp.jsonl").read_text().splitlines()]
    assert [m["msg"].get("method") for m in acp if m["dir"] == "out"][:3] == ["initialize", "session/new", "session/prompt"]
    assert any(m["msg"].get("params", {}).get("update", {}).get("sessionUpdate") == "usage_update" for m in acp)  # recorded, not dropped
    init = next(m["msg"] for m in acp if m["msg"].get("method") == "initialize")
    assert init["params"]["clientCapabilities"] == {"fs": {"readTextFile": False, "writeTextFile": False}, "terminal": False}
    steps = json.loads((folder / "trajectory.json").read_text())["steps"]
    assert [s["source"] for s in steps] == ["user", "agent"] and steps[1]["message"] == "alpha"
    # the key never reaches the agent: not its environment, not its files, not its records
    seen = fake_model.requests[-1]
    assert seen.headers["authorization"] == f"Bearer {KEY}"
    for path in job.rglob("*"):
        if path.is_file():
            assert KEY not in path.read_text(errors="replace"), path
    config = json.loads((job / "config.json").read_text())["standard"]
    assert config["consent"].startswith("--unsandboxed") and config["agent"]["permissions"].startswith("every permission request is granted")
    assert leftovers(tmp_path) == []


def test_tool_calls_permissions_and_notices(env, fake_model, tmp_path):
    fake_model.use({"default": {"text": "alpha"}})
    result = run_agent(env, fake_model, "tool", "--limit", "1", "--job-name", "t")
    assert result.code == 0, result.output
    job = tmp_path / "jobs" / "t"
    trial = trials(job)["u0000"]
    assert trial["standard"]["outcome"] == "passed"  # the notice never comes in front of the answer
    assert trial["standard"]["agent"]["permissions_granted"] == 1
    steps = json.loads((job / "u0000" / "agent" / "trajectory.json").read_text())["steps"]
    assert [s["source"] for s in steps] == ["user", "agent", "agent", "system", "agent"]
    assert steps[1]["tool_calls"][0]["function_name"] == "lookup"
    assert steps[1]["observation"]["results"][0]["content"] == '{"found": true}'
    assert steps[3]["message"] == "model metadata not found" and steps[4]["message"] == "alpha"
    trace = json.loads((job / "u0000" / "agent" / "trace.json").read_text())
    assert trace["tool_calls"][0]["id"] == "t1" and trace["model_calls"][0]["status"] == 200


@pytest.mark.parametrize(
    "mode,failure,scored",
    [
        ("crash", "NonZeroAgentExitCodeError", True),
        ("exit", "AgentExitedError", True),
        ("garbage", "AgentProtocolError", False),
        # an agent that hangs past its turn limit (AgentTimeoutError, scored, the run goes on, nothing left):
        # test_lifetime.py's run of mode=orphans, which hangs as mode=hang does and leaves processes too
    ],
)
def test_each_way_an_agent_fails_is_its_units_outcome(env, fake_model, tmp_path, mode, failure, scored):
    result = run_agent(env, fake_model, mode, "--limit", "2", "--job-name", mode)
    assert result.code == 0, result.output
    found = trials(tmp_path / "jobs" / mode)
    assert len(found) == 2  # the run went on
    for trial in found.values():
        assert trial["exception_info"]["exception_type"] == failure
        assert (trial.get("verifier_result") is not None) == scored
    assert leftovers(tmp_path) == []


def test_no_grandchild_survives_its_agent(env, fake_model, tmp_path):
    fake_model.use({"default": {"text": "alpha"}})
    result = run_agent(env, fake_model, "child", "--limit", "1", "--job-name", "c")
    assert result.code == 0, result.output
    trial = trials(tmp_path / "jobs" / "c")["u0000"]
    assert any("sleep" in killed for killed in trial["standard"]["agent"]["killed_at_end"])
    assert leftovers(tmp_path) == []


def test_a_429_on_the_last_call_is_rate_limited(env, fake_model, tmp_path):
    fake_model.use({"default": {"fault": {"status": 429, "retry_after": 1}}})
    result = run_agent(env, fake_model, "ask", "--limit", "1", "--job-name", "r")
    assert result.code == 1  # its every unit failed for the provider: the run failed, saying so
    assert json.loads((tmp_path / "jobs" / "r" / "result.json").read_text())["standard"]["state"] == "failed"
    trial = trials(tmp_path / "jobs" / "r")["u0000"]
    assert trial["exception_info"]["exception_type"] == "ApiRateLimitError" and trial["standard"]["outcome"] == "rate_limited"
    # the relay never retries a call; the unit runs once more (limits.run_again), its first records set aside
    assert len(fake_model.requests) == 2
    for record in (tmp_path / "jobs" / "r" / "u0000", tmp_path / "jobs" / "r" / ".work" / "earlier" / "u0000.1"):
        assert len((record / "agent" / "calls.jsonl").read_text().splitlines()) == 1


def test_agent_runs_are_refused_before_any_unit(env, fake_model, tmp_path):
    base = ["run", "faulty", "scripted", "--provider", "openai-compatible", "--base-url", fake_model.openai_base_url]
    no_model = run_cli([*base, "--unsandboxed"], env)
    assert no_model.code == 2 and "needs --model" in no_model.stderr
    no_key = run_cli(["run", "faulty", "scripted", "--model", "m", "--provider", "openai", "--unsandboxed"], {**env, "OPENAI_API_KEY": ""})
    assert no_key.code == 2 and "set OPENAI_API_KEY" in no_key.stderr
    bad_option = run_cli([*base, "--model", "m", "--unsandboxed", "--option", "mode=fly"], env)
    assert bad_option.code == 2 and "does not allow 'fly'" in bad_option.stderr
    no_version = run_cli([*base, "--model", "m", "--unsandboxed"][:2] + ["scripted@9", *base[3:], "--model", "m", "--unsandboxed"], env)
    assert no_version.code == 2 and "has no version '9'" in no_version.stderr
    assert not (tmp_path / "jobs").exists()
