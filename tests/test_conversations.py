"""Conversations with a simulated user and a judge: their routes, the fields each op is sent, their records apart from the agent's."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import ROOT

from nullius_core.testing import run_cli

CATALOGUE = ROOT / "tests" / "fixtures" / "catalogue"
KEY = "sk-upstream-held-by-the-relay-talk-0123456789"
VOICES = [
    {"when": {"model": "sim-official"}, "reply": {"text": "Hello, I am the simulated user."}},
    {"when": {"model": "sim-other"}, "reply": {"text": "Hello from the other simulator."}},
    {"when": {"model": "sim-board"}, "reply": {"text": "Hello from the leaderboard's simulator."}},
    {"when": {"model_regex": "^judge-"}, "reply": {"text": "PASS"}},
    {"when": {"model": "fake-1"}, "reply": {"text": "Glad to help."}},
    {"when": {"model_regex": "^(paper-model|other-model)"}, "reply": {"text": "The upstream's own answer."}},
]


@pytest.fixture
def env(nullius_env, tmp_path, fake_model):
    catalogue = tmp_path / "catalogue"
    shutil.copytree(CATALOGUE, catalogue)
    agent = json.loads((catalogue / "agents" / "scripted" / "agent.json").read_text())
    agent["proven"]["agent.conversation/v1"] = {"passed": "2/2", "kit_version": 1, "version": "1.0", "model": "fake"}
    (catalogue / "agents" / "scripted" / "agent.json").write_text(json.dumps(agent))
    fake_model.use({"rules": VOICES})
    return {**nullius_env, "NULLIUS_CATALOGUE": str(catalogue), "NULLIUS_JOBS_DIR": str(tmp_path / "jobs"), "OPENAI_COMPATIBLE_API_KEY": KEY}


def _run(env, fake_model, *extra):
    return run_cli(["run", "talk", *extra, "--provider", "openai-compatible", "--base-url", fake_model.openai_base_url], env)


def _agent_run(env, fake_model, name, *extra):
    return _run(env, fake_model, "scripted", "--model", "fake-1", "--unsandboxed", "--job-name", name, *extra)


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def test_a_conversation_opens_with_the_simulated_user_and_is_judged_on_routes_of_its_own(env, fake_model, tmp_path):
    result = _agent_run(env, fake_model, "talk")
    assert result.code == 0, result.output
    job = tmp_path / "jobs" / "talk"
    trial = json.loads((job / "u0000" / "result.json").read_text())
    assert trial["standard"]["outcome"] == "passed" and trial["verifier_result"]["rewards"]["reward"] == 1.0
    # the conversation opens with the user's first message, after setup's prompt and a blank line
    steps = json.loads((job / "u0000" / "agent" / "trajectory.json").read_text())["steps"]
    users = [s["message"] for s in steps if s["source"] == "user"]
    assert users[0] == "You help the user of u0000.\n\nHello, I am the simulated user." and len(users) == 2
    # the routes' calls are theirs: asked as the official models, recorded apart, never the agent's
    simulator = _lines(job / "u0000" / "simulator" / "calls.jsonl")
    judge = _lines(job / "u0000" / "judge" / "calls.jsonl")
    assert [c["model_sent"] for c in simulator] == ["sim-official", "sim-official"] and {c["kind"] for c in simulator} == {"simulator"}
    assert [c["model_sent"] for c in judge] == ["judge-official"] and judge[0]["model_asked"] == "the-driver-names-any"
    agents = _lines(job / "u0000" / "agent" / "calls.jsonl")
    assert len(agents) == 2 and {c.get("kind", "agent") for c in agents} == {"agent"}
    assert trial["agent_result"]["metadata"]["calls"] == 2
    routes = trial["standard"]["routes"]
    assert routes["simulator"]["calls"] == 2 and routes["judge"]["calls"] == 1 and routes["simulator"]["input_tokens"] > 0
    summary = json.loads((job / "result.json").read_text())["standard"]
    assert summary["routes"]["simulator"]["calls"] == 4 and summary["routes"]["judge"]["calls"] == 2
    # what each op was sent: the simulator with every turn, the judge with turn and score, the attempt with setup, turn and score
    ops = _lines(job / "u0000" / "verifier" / "ops.jsonl")
    turns = [o for o in ops if o["op"] == "turn"]
    assert len(turns) == 3 and all(o["simulator"] == "sim-official" and o["judge"] == "judge-official" and o["attempt"] == 1 for o in turns)
    score = next(o for o in ops if o["op"] == "score")
    assert score["judge"] == "judge-official" and score["simulator"] is None
    assert next(o for o in ops if o["op"] == "setup")["attempt"] == 1
    config = json.loads((job / "config.json").read_text())["standard"]
    assert config["simulator"] == {"model": "sim-official", "official_model": "sim-official", "official": True}
    assert config["judge"]["official"] is True and config["like_leaderboard"] is False
    # the relay's key and the routes' tokens reach no record; the fake provider saw the key alone
    assert all(r.headers["authorization"] == f"Bearer {KEY}" for r in fake_model.requests)
    for path in job.rglob("*"):
        if path.is_file():
            text = path.read_text(errors="replace")
            assert KEY not in text and "nlr-" not in text, path


def test_another_simulator_and_the_leaderboards_setting_are_recorded_and_a_contradiction_refused(env, fake_model, tmp_path):
    other = _agent_run(env, fake_model, "other", "--simulator-model", "sim-other", "--limit", "1")
    assert other.code == 0, other.output
    config = json.loads((tmp_path / "jobs" / "other" / "config.json").read_text())["standard"]
    assert config["simulator"] == {"model": "sim-other", "official_model": "sim-official", "official": False}
    assert {c["model_sent"] for c in _lines(tmp_path / "jobs" / "other" / "u0000" / "simulator" / "calls.jsonl")} == {"sim-other"}
    board = _agent_run(env, fake_model, "board", "--like-leaderboard", "--limit", "1")
    assert board.code == 0, board.output
    config = json.loads((tmp_path / "jobs" / "board" / "config.json").read_text())["standard"]
    assert config["simulator"]["model"] == "sim-board" and config["judge"]["model"] == "judge-board" and config["like_leaderboard"] is True
    assert config["repeat"] == 2 and sorted(config["planned_trials"]) == ["u0000r1", "u0000r2"]
    attempts = [o["attempt"] for t in ("u0000r1", "u0000r2") for o in _lines(tmp_path / "jobs" / "board" / t / "verifier" / "ops.jsonl")
                if o["op"] == "setup"]
    assert attempts == [1, 2]  # the upstream tells its attempts apart
    for extra in (["--judge-model", "judge-mine"], ["--repeat", "1"]):
        refused = _agent_run(env, fake_model, "no", "--like-leaderboard", *extra)
        assert refused.code == 2 and "--like-leaderboard" in refused.stderr and "Traceback" not in refused.output, refused.output
    assert not (tmp_path / "jobs" / "no").exists()
    unknown = run_cli(["run", "scored", "nop", "--judge-model", "judge-x"], env)
    assert unknown.code == 2 and "asks no judge" in unknown.stderr


def test_a_failing_simulator_is_that_units_error_and_a_judged_control_asks_the_judge(env, fake_model, tmp_path):
    fake_model.use({"rules": [{"when": {"model": "sim-official", "contains": "u0000"}, "reply": {"fault": {"status": 500}}}, *VOICES]})
    broken = _agent_run(env, fake_model, "broken", "-j", "1")
    assert broken.code == 0, broken.output  # that unit's error, the run goes on to its end
    found = {p.parent.name: json.loads(p.read_text()) for p in (tmp_path / "jobs" / "broken").glob("*/result.json")}
    assert found["u0000"]["exception_info"]["exception_type"] == "DriverTurnError" and found["u0001"]["standard"]["outcome"] == "passed"
    assert "HTTP Error 500" in found["u0000"]["exception_info"]["exception_message"]
    assert _lines(tmp_path / "jobs" / "broken" / "u0000" / "simulator" / "calls.jsonl")[0]["status"] == 500  # recorded all the same
    fake_model.use({"rules": VOICES})
    # a control calls no model but the judge: it needs a provider, and asks the judge through a relay of the run's own
    alone = run_cli(["run", "talk", "oracle", "--job-name", "o1"], {k: v for k, v in env.items()})
    assert alone.code == 2 and "is judged (judge-official)" in alone.stderr and "provider" in alone.stderr
    oracle = _run(env, fake_model, "oracle", "--job-name", "o2")
    assert oracle.code == 0, oracle.output
    job = tmp_path / "jobs" / "o2"
    trial = json.loads((job / "u0000" / "result.json").read_text())
    assert trial["standard"]["outcome"] == "passed" and trial["standard"]["routes"]["judge"]["calls"] == 1
    assert not (job / "u0000" / "simulator").exists()  # a control never asks the simulator
    assert [o["op"] for o in _lines(job / "u0000" / "verifier" / "ops.jsonl")] == ["setup", "oracle", "score"]
    # a judge asked only with some options (score.judge.when): without them, a control needs no provider and asks none
    unjudged = run_cli(["run", "talk", "oracle", "--bench-option", "judged=no", "--job-name", "o3"], env)
    assert unjudged.code == 0, unjudged.output
    assert not (tmp_path / "jobs" / "o3" / "u0000" / "judge").exists()
    assert json.loads((tmp_path / "jobs" / "o3" / "config.json").read_text())["standard"]["judge"] is None
    mine = _run(env, fake_model, "oracle", "--bench-option", "judged=no", "--judge-model", "judge-x")
    assert mine.code == 2 and "is not asked with these options" in mine.stderr


def test_no_agent_original_runs_the_upstreams_answerer_on_the_setup_the_model_picks(env, fake_model, tmp_path):
    result = _run(env, fake_model, "original", "--model", "paper-model", "--job-name", "orig", "-j", "1")
    assert result.code == 0, result.output
    job = tmp_path / "jobs" / "orig"
    config = json.loads((job / "config.json").read_text())["standard"]
    assert config["setup"] == {"name": "original", "model_asked": "paper-model", "model_sent": "paper-model-v2", "model_told": "paper-model",
                               "comparable_with_paper": True}
    assert config["participant"] == "original" and config["agent"] is None and config["consent"] is None
    trial = json.loads((job / "u0000" / "result.json").read_text())
    assert trial["standard"]["outcome"] == "passed" and trial["agent_info"]["name"] == "original"
    assert trial["agent_info"]["model_info"] == {"name": "paper-model-v2", "provider": "openai-compatible"}
    assert trial["agent_result"]["metadata"]["calls"] == 1 and trial["standard"]["routes"]["simulator"]["calls"] == 1
    calls = _lines(job / "u0000" / ".work" / "relay" / "calls.jsonl")
    assert [c["model_sent"] for c in calls] == ["paper-model-v2"]  # as served_as names it
    assert _lines(job / "u0000" / "agent" / "calls.jsonl") == calls  # kept in agent/ as an agent's trial keeps its calls
    seen = json.loads((job / "u0000" / "verifier" / "answer.json").read_text())
    assert seen == {"setup": {"name": "original", "model": "paper-model"}, "model": "paper-model", "units_setup": [seen["setup"]], "attempt": 1}
    assert json.loads((job / "u0000" / "verifier" / "score.json").read_text())["detail"]["setup"] == seen["setup"]
    steps = json.loads((job / "u0000" / "agent" / "trajectory.json").read_text())["steps"]
    assert steps[-1]["message"] == "The upstream's own answer."
    # another model: the model method, the upstream told its paper's model, not comparable with the paper
    other = _run(env, fake_model, "original", "--model", "other-model", "--job-name", "other", "--limit", "1")
    assert other.code == 0, other.output
    config = json.loads((tmp_path / "jobs" / "other" / "config.json").read_text())["standard"]
    assert config["setup"] == {"name": "model", "model_asked": "other-model", "model_sent": "other-model", "model_told": "paper-model",
                               "comparable_with_paper": False}
    none = run_cli(["run", "scored", "original", "--model", "m", "--provider", "openai-compatible", "--base-url", fake_model.openai_base_url], env)
    assert none.code == 2 and "declares no setups" in none.stderr and "Traceback" not in none.output
