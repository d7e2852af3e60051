"""The driver and the MCP server on questions of several categories, scored by bfcl-eval's own checkers.

The environment is driver.install's (bfcl-eval 2026.3.23 with --no-deps and
the pins of what its checker and backends import), made once and reused.
Each test plays a unit as Nullius does (setup, then oracle or an agent's
calls over the MCP server, then score) and holds BFCL's verdict: a right
call passes, a wrong one fails with the checker's own message recorded.
"""

from __future__ import annotations

import json

import pytest
from bfcl_harness import STANDARD, Driver, Mcp, install

CATEGORIES = ["simple_java", "parallel_multiple", "live_relevance", "irrelevance", "multi_turn_miss_func"]


@pytest.fixture(scope="module")
def env_root(nullius_installs):
    return install(nullius_installs)


@pytest.fixture(scope="module")
def drivers(env_root, tmp_path_factory):
    started = {c: Driver(env_root, c, tmp_path_factory.mktemp(c)) for c in CATEGORIES}  # they import at once
    yield started
    for driver in started.values():
        driver.close()


def unit_dirs(tmp_path, unit):
    work, verifier = tmp_path / unit / "work", tmp_path / unit / "verifier"
    work.mkdir(parents=True)
    return {"unit": unit, "dir": str(work), "verifier": str(verifier)}


def play(driver, env_root, tmp_path, unit, calls=None, oracle=False):
    """setup; then the oracle, or these calls made over the MCP server as an agent would; then score."""
    where = unit_dirs(tmp_path, unit)
    setup = driver.call("setup", **where)
    assert setup["prompt"] and setup["mcp"][0]["server"] == "bfcl", setup
    answer = ""
    if oracle:
        answer = driver.call("oracle", **where)["answer"]
    for name, arguments in calls or []:
        server = Mcp(env_root, setup["mcp"][0])
        text, error = server.call(name, arguments)
        assert not error, text
        server.close()
    return driver.call("score", answer=answer, transcript=[], **where)


def test_units_are_the_pinned_questions(drivers):
    for category, driver in drivers.items():
        declared = {**STANDARD["datasets"], **STANDARD["versions"]["2026.3.23-irrelevance"]["datasets"]}[category]
        units = driver.call("units")["units"]
        assert len(units) == declared["units"] == len(set(units)), category
        assert units[0].startswith(category)


def test_single_turn_calls_are_scored_by_the_ast_checker(drivers, env_root, tmp_path):
    java = drivers["simple_java"]
    # simple_java_1: SQLCompletionAnalyzer.makeProposalsFromObject, every argument a string of Java source
    assert play(java, env_root, tmp_path, "simple_java_1", oracle=True)["passed"] is True
    wrong = play(java, env_root, tmp_path / "wrong", "simple_java_1", calls=[(
        "SQLCompletionAnalyzer_makeProposalsFromObject",
        {"object": "Customers", "useShortName": "false", "params": 'new HashMap<String, String>() {{ put("limit", 50); }}'})])
    assert wrong["passed"] is False and wrong["reward"] == 0.0
    assert "Invalid value for parameter 'useShortName'" in json.dumps(wrong["detail"]["checker"]["error"])
    nop = play(java, env_root, tmp_path / "nop", "simple_java_1")
    assert nop["passed"] is False and nop["detail"]["checker"]["error_type"] == "simple_function_checker:wrong_count"
    # a question its own possible answer cannot pass (README): the checker's refusal is what is recorded
    stuck = play(java, env_root, tmp_path / "stuck", "simple_java_36", oracle=True)
    assert stuck["passed"] is False and "Invalid value for parameter 'parts'" in json.dumps(stuck["detail"]["checker"])
    # parallel_multiple_12: the possible answer names a parameter the function lacks, allowed only left out
    assert play(drivers["parallel_multiple"], env_root, tmp_path, "parallel_multiple_12", oracle=True)["passed"] is True


def test_relevance_and_irrelevance(drivers, env_root, tmp_path):
    relevance = drivers["live_relevance"]
    assert play(relevance, env_root, tmp_path, "live_relevance_0-0-0", oracle=True)["passed"] is True
    assert play(relevance, env_root, tmp_path / "nop", "live_relevance_0-0-0")["passed"] is False
    irrelevance = drivers["irrelevance"]
    assert play(irrelevance, env_root, tmp_path, "irrelevance_0")["passed"] is True  # no call: BFCL's right answer
    setup = irrelevance.call("setup", **unit_dirs(tmp_path / "call", "irrelevance_0"))
    tool = Mcp(env_root, setup["mcp"][0]).tools()[0]
    called = play(irrelevance, env_root, tmp_path / "called", "irrelevance_0", calls=[(tool, {})])
    assert called["passed"] is False and called["detail"]["checker"]["error_type"] == "irrelevance_error:decoder_success"


def test_multi_turn_runs_bfcls_backends_and_gives_a_withheld_function_at_its_turn(drivers, env_root, tmp_path):
    driver = drivers["multi_turn_miss_func"]
    where = unit_dirs(tmp_path, "multi_turn_miss_func_0")  # GorillaFileSystem and TwitterAPI; sort withheld to turn 3
    setup = driver.call("setup", **where)
    server = Mcp(env_root, setup["mcp"][0])
    assert "sort" not in server.tools() and "cd" in server.tools()
    text, error = server.call("cd", {"folder": "document"})
    assert not error and json.loads(text) == {"current_working_directory": "document"}  # GorillaFileSystem's own answer
    assert server.call("sort", {"file_name": "final_report.pdf"})[1] is True  # not yet listed: refused
    assert server.call("cd", {"folder=1); import os; os.system('true'); cd(folder": "x"})[1] is True
    transcript = [{"role": "user", "text": setup["prompt"]}]
    for turn in range(1, 4):
        transcript.append({"role": "agent", "text": "Done."})
        reply = driver.call("turn", transcript=transcript, **where)
        transcript.append({"role": "user", "text": reply["message"]})
    assert reply["message"] == "I have updated some more functions you can choose from. What about now?"
    assert server.next_notification()["method"] == "notifications/tools/list_changed"
    assert "sort" in server.tools()
    server.close()
    scored = driver.call("score", answer="Done.", transcript=transcript, **where)
    assert scored["passed"] is False  # one call, then nothing: BFCL's multi-turn checker says which turn failed
    assert scored["detail"]["checker"]["error"]["error_type"] == "multi_turn:instance_state_mismatch" or \
        "turn 0" in scored["detail"]["checker"]["error"]["error_message"]
    again = unit_dirs(tmp_path / "oracle", "multi_turn_miss_func_0")
    driver.call("setup", **again)
    calls = json.loads(driver.call("oracle", **again)["answer"])
    assert [c["turn"] for c in calls if c["tool"] == "sort"] == [3]
    assert driver.call("score", answer="", transcript=[], **again)["passed"] is True
    for _ in range(2):  # scored twice: the backends' state of one scoring never reaches the next
        assert driver.call("score", answer="", transcript=[], **again)["passed"] is True
