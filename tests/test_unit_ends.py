"""How a unit ends (run/unit_end.py): the stop file's guard, the context window, the output limit, an error under a 200,
a gated benchmark's records, and the kinds a driver's error names by its first words.

The scripted agent asks the fake model through the relay; the fake model's
faults stand for the provider's refusals. Everything else is real.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import ROOT

from nullius_core.testing import run_cli

CATALOGUE = ROOT / "tests" / "fixtures" / "catalogue"
KEY = "sk-upstream-held-by-the-relay-ends-0123456789"
QUOTED = "QUOTED-FROM-THE-GATED-TASK"


@pytest.fixture
def env(nullius_env, tmp_path):
    catalogue = tmp_path / "catalogue"
    shutil.copytree(CATALOGUE, catalogue)
    return {**nullius_env, "NULLIUS_CATALOGUE": str(catalogue), "NULLIUS_JOBS_DIR": str(tmp_path / "jobs"), "OPENAI_COMPATIBLE_API_KEY": KEY}


def run_agent(env, fake_model, name, *extra):
    return run_cli(["run", "faulty", "scripted", "--model", "fake-1", "--provider", "openai-compatible", "--base-url", fake_model.openai_base_url,
                    "--unsandboxed", "--job-name", name, *extra], env)


def results(job: Path) -> dict[str, dict]:
    return {p.parent.name: json.loads(p.read_text()) for p in sorted(job.glob("*/result.json"))}


def test_a_guards_stop_refuses_the_agents_calls_and_the_unit_is_scored_and_marked(env, fake_model, tmp_path):
    fake_model.use({"default": {"text": "alpha"}})
    ran = run_agent(env, fake_model, "guarded", "--limit", "2", "--bench-option", "mode=guarded")
    assert ran.code == 0, ran.output
    job = tmp_path / "jobs" / "guarded"
    assert fake_model.requests == []  # every call of the agent was refused unsent
    for name, result in results(job).items():
        assert "exception_info" not in result  # its agent exited on the refusals: the stop explains it
        assert result["standard"]["stopped"] == "guard: the unit's answer was given away"
        assert result["verifier_result"]["rewards"]["reward"] == 0.0  # scored: the agent answered nothing
        score = json.loads((job / name / "verifier" / "score.json").read_text())
        assert score["detail"]["stopped"] == "guard: the unit's answer was given away"  # the driver was told
        [call] = [json.loads(line) for line in (job / name / "agent" / "calls.jsonl").read_text().splitlines()]
        assert call["status"] == 403 and call["refused"].startswith("stopped: guard:")


def test_a_call_the_context_window_refused_is_the_agents_and_the_unit_is_scored(env, fake_model, tmp_path):
    body = {"error": {"message": "This model's maximum context length is 8192 tokens.", "type": "invalid_request_error",
                      "param": "messages", "code": "context_length_exceeded"}}
    fake_model.use({"default": {"fault": {"status": 400, "body": body}}})
    ran = run_agent(env, fake_model, "window", "--limit", "1")
    assert ran.code == 0, ran.output
    job = tmp_path / "jobs" / "window"
    [result] = results(job).values()
    assert result["exception_info"]["exception_type"] == "ContextWindowExceededError"
    assert result["verifier_result"] is not None  # scored as the agent left it
    stop = (job / "u0000" / ".work" / "relay" / "stop").read_text()
    assert stop.startswith("relay: context window: ")  # the relay's note, which refuses nothing
    [call] = [json.loads(line) for line in (job / "u0000" / "agent" / "calls.jsonl").read_text().splitlines()]
    assert call["context_window"] is True


@pytest.mark.parametrize("text,failure", [("", "OutputLengthExceededError"), ("alpha, cut", None)])
def test_the_output_limit_fails_a_unit_only_when_its_last_reply_said_nothing(env, fake_model, tmp_path, text, failure):
    fake_model.use({"default": {"text": text, "truncated": True}})
    name = f"length-{bool(text)}"
    ran = run_agent(env, fake_model, name, "--limit", "1")
    assert ran.code == 0, ran.output
    [result] = results(tmp_path / "jobs" / name).values()
    assert (result.get("exception_info") or {}).get("exception_type") == failure
    assert result["verifier_result"] is not None


def test_an_error_under_a_200_is_recorded_and_fails_the_session_as_the_providers(env, fake_model, tmp_path):
    fake_model.use({"default": {"fault": {"error": {"message": "upstream overloaded", "code": "server_error"}}}})
    ran = run_agent(env, fake_model, "inband", "--limit", "1")
    assert ran.code == 1, ran.output  # every unit failed for the provider: the run failed
    job = tmp_path / "jobs" / "inband"
    [result] = results(job).values()
    assert result["exception_info"]["exception_type"] == "ApiError"
    assert "upstream overloaded" in result["exception_info"]["exception_message"]
    [call] = [json.loads(line) for line in (job / "u0000" / "agent" / "calls.jsonl").read_text().splitlines()]
    assert call["status"] == 200 and call["error"]["message"] == "upstream overloaded"
    assert "served" not in result["standard"]  # a failed call was answered by no one


def test_a_gated_benchmark_says_the_status_and_class_alone(env, fake_model, tmp_path):
    standard_file = Path(env["NULLIUS_CATALOGUE"]) / "benchmarks" / "faulty" / "standard.json"
    standard = json.loads(standard_file.read_text())
    standard["gated"] = True
    standard_file.write_text(json.dumps(standard))
    fake_model.use({"default": {"fault": {"status": 429, "body": {"error": {"message": f"Rate limited: {QUOTED}", "code": "rate_limit"}}}}})
    ran = run_agent(env, fake_model, "gated", "--limit", "1")
    assert ran.code == 1, ran.output  # every unit failed for the provider: the run failed
    job = tmp_path / "jobs" / "gated"
    [result] = results(job).values()
    info = result["exception_info"]
    assert info["exception_type"] == "ApiRateLimitError"
    assert info["exception_message"].startswith("the agent's last model call got 429 (ApiRateLimitError; gated")
    for path in [job / "u0000" / "result.json", job / "u0000" / "exception.txt", job / "result.json", job / "progress.jsonl"]:
        assert QUOTED not in path.read_text(), path
    assert QUOTED not in ran.stderr
    assert QUOTED in (job / "u0000" / "agent" / "calls.jsonl").read_text()  # the call records keep the provider's words


def test_a_drivers_error_that_names_its_kind_keeps_it(env, fake_model, tmp_path):
    ran = run_cli(["run", "faulty", "oracle", "--limit", "4", "--bench-option", "mode=named", "--job-name", "named"], env)
    assert ran.code == 0, ran.output
    kinds = {name: r["exception_info"]["exception_type"] for name, r in results(tmp_path / "jobs" / "named").items()}
    assert kinds == {"u0000": "EnvironmentSetupError", "u0001": "CancelledError", "u0002": "CauseUnknownError", "u0003": "VerifierError"}


def test_a_rate_limited_unit_runs_once_more_its_first_records_set_aside(env, fake_model, tmp_path):
    limited = {"when": {"contains": "Say alpha"}, "reply": {"fault": {"status": 429}}, "times": 1}
    fake_model.use({"rules": [limited, {"when": {"contains": "Say alpha"}, "reply": {"text": "alpha"}}]})
    ran = run_agent(env, fake_model, "again", "--limit", "1")
    assert ran.code == 0, ran.output
    job = tmp_path / "jobs" / "again"
    [result] = results(job).values()
    assert result["standard"]["outcome"] == "passed"
    first = json.loads((job / ".work" / "earlier" / "u0000.1" / "result.json").read_text())
    assert first["standard"]["outcome"] == "rate_limited" and first["exception_info"]["exception_type"] == "ApiRateLimitError"
    assert "again=" in ran.stderr and json.loads((job / "result.json").read_text())["standard"]["passed"] == 1
    events = [json.loads(line) for line in (job / "events.jsonl").read_text().splitlines()]
    assert [(e["type"], e.get("again")) for e in events] == [("trial_started", None), ("trial_finished", True),
                                                             ("trial_started", None), ("trial_finished", None)]


def test_a_benchmark_that_says_not_keeps_a_rate_limited_units_outcome(env, fake_model, tmp_path):
    standard_file = Path(env["NULLIUS_CATALOGUE"]) / "benchmarks" / "faulty" / "standard.json"
    standard = json.loads(standard_file.read_text())
    standard["limits"]["run_again"] = False
    standard_file.write_text(json.dumps(standard))
    limited = {"when": {"contains": "Say alpha"}, "reply": {"fault": {"status": 429}}, "times": 1}
    fake_model.use({"rules": [limited, {"when": {"contains": "Say alpha"}, "reply": {"text": "alpha"}}]})
    ran = run_agent(env, fake_model, "once", "--limit", "1")
    assert ran.code == 1, ran.output  # its one unit failed for the provider: the run failed
    job = tmp_path / "jobs" / "once"
    [result] = results(job).values()
    assert result["standard"]["outcome"] == "rate_limited"
    assert not (job / ".work" / "earlier").exists() and len([r for r in fake_model.requests if r.api == "chat"]) == 1


def test_a_benchmarks_call_limit_cuts_the_agents_call_at_its_relay(env, fake_model, tmp_path):
    """limits.call_seconds: how long the relay waits for one model call, on every route of the run (relay serve's --timeout)."""
    standard_file = Path(env["NULLIUS_CATALOGUE"]) / "benchmarks" / "faulty" / "standard.json"
    standard = json.loads(standard_file.read_text())
    standard["limits"]["call_seconds"] = 1
    standard_file.write_text(json.dumps(standard))
    fake_model.use({"default": {"text": "alpha", "fault": {"first_byte_delay": 30}}})
    ran = run_agent(env, fake_model, "cut", "--limit", "1")
    job = tmp_path / "jobs" / "cut"
    [call] = [json.loads(line) for line in (job / "u0000" / "agent" / "calls.jsonl").read_text().splitlines()]
    assert call["status"] == 504 and call["cut"] == "past the call limit of 1 s", ran.output
    assert call["ms_total"] < 25_000  # cut at its limit, not at the provider's 30 s


def test_relay_serve_takes_the_call_limit_as_timeout(nullius_env, fake_model, tmp_path):
    import subprocess
    import sys

    import openai

    fake_model.use({"default": {"text": "late", "fault": {"first_byte_delay": 30}}})
    env = {**nullius_env, "OPENAI_COMPATIBLE_API_KEY": KEY}
    proc = subprocess.Popen([sys.executable, "-m", "nullius_core", "relay", "serve", "--provider", "openai-compatible", "--base-url",
                             fake_model.openai_base_url, "--timeout", "1", "--record", str(tmp_path / "rec")],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        info = json.loads(proc.stdout.readline())
        client = openai.OpenAI(base_url=info["base_url"], api_key=info["token"], max_retries=0, timeout=60)
        with pytest.raises(openai.APIStatusError) as refused:
            client.chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}])
        assert refused.value.status_code == 504
        [call] = [json.loads(line) for line in (tmp_path / "rec" / "calls.jsonl").read_text().splitlines()]
        assert call["cut"] == "past the call limit of 1 s"
    finally:
        proc.terminate()
        proc.wait(10)


def test_a_score_after_a_guards_stop_stands_though_the_agents_last_call_got_a_429(env, fake_model, tmp_path):
    """The guard stops the unit while the agent's call is in flight, and that call gets a 429: the stop explains the end."""
    stop = tmp_path / "jobs" / "guard-429" / "u0000" / ".work" / "relay" / "stop"

    def respond(request):
        with open(stop, "a") as guard:
            guard.write("guard: the agent asked for the answer key\n")
        return {"fault": {"status": 429}}

    fake_model.use(respond)
    ran = run_agent(env, fake_model, "guard-429", "--limit", "1")
    assert ran.code == 0, ran.output
    [result] = results(tmp_path / "jobs" / "guard-429").values()
    assert result["standard"]["stopped"] == "guard: the agent asked for the answer key"
    assert result["standard"]["outcome"] == "failed" and "exception_info" not in result  # scored, not rate_limited
    [call] = [json.loads(line) for line in (tmp_path / "jobs" / "guard-429" / "u0000" / "agent" / "calls.jsonl").read_text().splitlines()]
    assert call["status"] == 429
