"""The reference agent, started for real and driven over ACP against the scripted fake model."""

from __future__ import annotations

import asyncio
import os
import sys
import time

import acp
import pytest
from acp import schema

from reference_harness import ECHO_SERVER

WORKSPACE_TOOLS = {"read_file", "write_file", "list_files", "run_command"}


def tool_messages(request) -> list[dict]:
    return [m for m in request.body["messages"] if m["role"] == "tool"]


def offered(request) -> set[str]:
    return {t["function"]["name"] for t in request.body["tools"]}


def test_initialize_says_protocol_1_and_no_load_session(agent_run):
    async def scenario(agent):
        init = await agent.conn.initialize(protocol_version=1)
        assert init.protocol_version == 1
        assert init.agent_capabilities.load_session is False
        assert init.agent_info.name == "nullius-reference"
        assert init.agent_info.version == "0.1.0"

    agent_run(scenario)


def test_one_word_answer_comes_back_as_message_chunks(agent_run, fake_model):
    fake_model.use({"rules": [{"when": {"user_contains": "capital of France"}, "reply": {"text": "Paris"}}]})

    async def scenario(agent):
        session = await agent.start_session()
        result = await agent.prompt(session, "What is the capital of France? One word.")
        assert result.stop_reason == "end_turn"
        assert agent.client.text() == "Paris"
        assert not agent.client.of("tool_call")

    agent_run(scenario)
    (request,) = fake_model.requests
    assert request.path == "/v1/chat/completions"
    assert request.body["model"] == "fake-model"
    assert request.headers["authorization"] == "Bearer relay-token"
    assert offered(request) == WORKSPACE_TOOLS
    assert "reasoning_effort" not in request.body  # NULLIUS_REFERENCE_EFFORT=default sends none
    assert request.body["messages"][0]["role"] == "system"
    assert request.body["messages"][-1] == {"role": "user", "content": "What is the capital of France? One word."}


def write_script(path: str, content: str) -> dict:
    return {"rules": [
        {"when": {"after_tool_result": ""}, "reply": {"text": "Done."}},
        {"when": {"user_contains": "write", "tool": "write_file"},
         "reply": {"text": "Writing it.", "tool_calls": [
             {"name": "write_file", "arguments": {"path": path, "content": content}, "id": "call_w"}]}},
    ]}


def test_write_file_after_a_granted_permission(agent_run, fake_model):
    fake_model.use(write_script("notes/hello.txt", "hello there"))

    async def scenario(agent):
        session = await agent.start_session()
        result = await agent.prompt(session, "Please write the file.")
        assert result.stop_reason == "end_turn"
        assert (agent.workspace / "notes" / "hello.txt").read_text() == "hello there"
        (asked, options), = agent.client.permissions
        assert asked.tool_call_id == "call_w"
        assert {o.option_id: o.kind for o in options} == {"allow_once": "allow_once", "reject_once": "reject_once"}
        kinds = [(u.session_update, getattr(u, "status", None)) for u in agent.client.updates]
        assert kinds == [("agent_message_chunk", None), ("tool_call", "pending"), ("tool_call_update", "in_progress"),
                         ("tool_call_update", "completed"), ("agent_message_chunk", None)]
        start = agent.client.of("tool_call")[0]
        assert start.tool_call_id == "call_w" and start.kind == "edit"
        assert start.raw_input == {"path": "notes/hello.txt", "content": "hello there"}
        done = agent.client.of("tool_call_update")[-1]
        assert done.content[0].content.text == "wrote 11 characters to notes/hello.txt"
        assert agent.client.text() == "Writing it.Done."

    agent_run(scenario)
    assert tool_messages(fake_model.requests[-1]) == [
        {"role": "tool", "tool_call_id": "call_w", "content": "wrote 11 characters to notes/hello.txt"}]


def test_write_file_is_refused_when_the_client_rejects(agent_run, fake_model):
    fake_model.use(write_script("hello.txt", "hi"))

    async def scenario(agent):
        session = await agent.start_session()
        result = await agent.prompt(session, "Please write the file.")
        assert result.stop_reason == "end_turn"
        assert not (agent.workspace / "hello.txt").exists()
        assert len(agent.client.permissions) == 1
        assert agent.client.of("tool_call_update")[-1].status == "failed"

    agent_run(scenario, permit="reject")
    assert "permission denied" in tool_messages(fake_model.requests[-1])[0]["content"]


def test_paths_outside_the_workspace_are_refused(agent_run, fake_model, tmp_path):
    (tmp_path / "secret.txt").write_text("top secret")
    calls = [
        {"name": "read_file", "arguments": {"path": "../secret.txt"}, "id": "c_dotdot"},
        {"name": "read_file", "arguments": {"path": str(tmp_path / "secret.txt")}, "id": "c_abs"},
        {"name": "read_file", "arguments": {"path": "link/secret.txt"}, "id": "c_link"},
        {"name": "write_file", "arguments": {"path": "../escape.txt", "content": "x"}, "id": "c_write"},
        {"name": "list_files", "arguments": {"path": "/"}, "id": "c_list"},
        {"name": "read_file", "arguments": {"path": "sub/../inside.txt"}, "id": "c_inside"},
    ]
    fake_model.use({"rules": [{"when": {"after_tool_result": ""}, "reply": {"text": "ok"}},
                              {"reply": {"tool_calls": calls}}]})

    async def scenario(agent):
        (agent.workspace / "link").symlink_to(tmp_path)
        (agent.workspace / "inside.txt").write_text("fine")
        session = await agent.start_session()
        assert (await agent.prompt(session, "look around")).stop_reason == "end_turn"
        assert agent.client.permissions == []  # a refused write is refused before asking
        statuses = {u.tool_call_id: u.status for u in agent.client.of("tool_call_update")}
        assert statuses == {"c_dotdot": "failed", "c_abs": "failed", "c_link": "failed", "c_write": "failed",
                            "c_list": "failed", "c_inside": "completed"}

    agent_run(scenario)
    results = {m["tool_call_id"]: m["content"] for m in tool_messages(fake_model.requests[-1])}
    for call in ("c_dotdot", "c_abs", "c_link", "c_write", "c_list"):
        assert "outside the workspace" in results[call], results[call]
        assert "top secret" not in results[call]
    assert results["c_inside"] == "fine"
    assert not (tmp_path / "escape.txt").exists()


def test_run_command_runs_in_the_workspace_without_the_key(agent_run, fake_model):
    fake_model.use({"rules": [
        {"when": {"after_tool_result": ""}, "reply": {"text": "ran"}},
        {"reply": {"tool_calls": [{"name": "run_command", "id": "c_run", "arguments": {
            "command": "pwd; echo key=${OPENAI_API_KEY:-none}; echo oops >&2; exit 3"}}]}},
    ]})

    async def scenario(agent):
        session = await agent.start_session()
        assert (await agent.prompt(session, "run it")).stop_reason == "end_turn"
        assert len(agent.client.permissions) == 1
        assert agent.client.of("tool_call")[0].kind == "execute"
        return agent.workspace

    workspace = agent_run(scenario)
    (result,) = tool_messages(fake_model.requests[-1])
    assert result["content"] == f"exit code: 3\n{workspace.resolve()}\nkey=none\noops\n"


def test_a_second_prompt_remembers_the_first_turn(agent_run, fake_model):
    fake_model.use({"rules": [
        {"when": {"user_contains": "word is"}, "reply": {"text": "Noted."}},
        {"when": {"user_contains": "What was"}, "reply": {"text": "zebra"}},
    ]})

    async def scenario(agent):
        session = await agent.start_session()
        assert (await agent.prompt(session, "The word is zebra.")).stop_reason == "end_turn"
        assert (await agent.prompt(session, "What was the word?")).stop_reason == "end_turn"

    agent_run(scenario)
    first, second = fake_model.requests
    assert [(m["role"], m["content"]) for m in second.body["messages"][1:]] == [
        ("user", "The word is zebra."), ("assistant", "Noted."), ("user", "What was the word?")]
    assert second.body["messages"][0] == first.body["messages"][0]


def test_mcp_tools_are_offered_and_called(agent_run, fake_model, tmp_path):
    pidfile = tmp_path / "echo.pid"
    fake_model.use({"rules": [
        {"when": {"after_tool_result": "pfx: hello"}, "reply": {"tool_calls": [
            {"name": "mcp__echo__fail", "arguments": {"reason": "testing"}, "id": "c_fail"}]}},
        {"when": {"after_tool_result": "failed on purpose"}, "reply": {"text": "The echo said pfx: hello."}},
        {"when": {"tool": "mcp__echo__echo"}, "reply": {"tool_calls": [
            {"name": "mcp__echo__echo", "arguments": {"text": "hello"}, "id": "c_echo"}]}},
    ]})
    server = schema.McpServerStdio(name="echo", command=sys.executable, args=[str(ECHO_SERVER)], env=[
        schema.EnvVariable(name="ECHO_PREFIX", value="pfx"), schema.EnvVariable(name="ECHO_PIDFILE", value=str(pidfile))])

    async def scenario(agent):
        session = await agent.start_session([server])
        assert (await agent.prompt(session, "echo hello")).stop_reason == "end_turn"
        statuses = [(u.tool_call_id, u.status) for u in agent.client.of("tool_call_update")]
        assert statuses == [("c_echo", "in_progress"), ("c_echo", "completed"),
                            ("c_fail", "in_progress"), ("c_fail", "failed")]
        assert agent.client.permissions == []  # MCP tools are the environment's: no permission asked
        echo_done = agent.client.of("tool_call_update")[1]
        assert echo_done.raw_output["content"][0]["text"] == "pfx: hello"
        assert agent.client.text() == "The echo said pfx: hello."

    agent_run(scenario)
    first, second, third = fake_model.requests
    tools = {t["function"]["name"]: t["function"] for t in first.body["tools"]}
    assert set(tools) == WORKSPACE_TOOLS | {"mcp__echo__echo", "mcp__echo__fail"}
    assert tools["mcp__echo__echo"]["parameters"]["properties"] == {"text": {"title": "Text", "type": "string"}}
    assert tools["mcp__echo__echo"]["description"] == "Echo a text back, with the server's prefix."
    assert tool_messages(second) == [{"role": "tool", "tool_call_id": "c_echo", "content": "pfx: hello"}]
    assert "failed on purpose: testing" in tool_messages(third)[-1]["content"]
    pid = int(pidfile.read_text())
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and os.path.exists(f"/proc/{pid}") and "Z" not in _state(pid):
        time.sleep(0.05)
    assert not os.path.exists(f"/proc/{pid}") or "Z" in _state(pid), "the MCP server outlived the agent"


def _state(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return "gone"


def test_an_mcp_server_that_does_not_start_fails_session_new(agent_run):
    async def scenario(agent):
        await agent.conn.initialize(protocol_version=1)
        broken = schema.McpServerStdio(name="broken", command=sys.executable, args=["-c", "import sys; sys.exit(1)"],
                                       env=[])
        with pytest.raises(acp.RequestError) as failed:
            await agent.conn.new_session(cwd=str(agent.workspace), mcp_servers=[broken])
        assert failed.value.data["kind"] == "mcp_server_failed" and failed.value.data["server"] == "broken"

    agent_run(scenario, env={"NULLIUS_REFERENCE_MCP_TIMEOUT": "5"})


def test_cancel_stops_a_model_call_and_a_command(agent_run, fake_model):
    fake_model.use({"rules": [
        {"when": {"user_contains": "slow model"}, "reply": {"text": "late", "fault": {"first_byte_delay": 600}}},
        {"when": {"user_contains": "slow command"}, "reply": {"tool_calls": [
            {"name": "run_command", "id": "c_sleep", "arguments": {"command": "sleep 600 & echo $! > sleeper.pid; wait"}}]}},
        {"when": {"user_contains": "quick"}, "reply": {"text": "still here"}},
    ]})

    async def scenario(agent):
        session = await agent.start_session()
        started = time.monotonic()
        turn = asyncio.create_task(agent.prompt(session, "slow model"))
        while not fake_model.requests:
            await asyncio.sleep(0.02)
        await agent.conn.cancel(session_id=session)
        assert (await turn).stop_reason == "cancelled"

        turn = asyncio.create_task(agent.prompt(session, "slow command"))
        pidfile = agent.workspace / "sleeper.pid"
        await agent.client.wait_for(lambda: any(u.status == "in_progress" for u in agent.client.of("tool_call_update")))
        while not pidfile.exists() or not pidfile.read_text().strip():
            await asyncio.sleep(0.02)
        await agent.conn.cancel(session_id=session)
        assert (await turn).stop_reason == "cancelled"
        assert time.monotonic() - started < 300  # neither the model's 600 s nor the command's were waited out
        assert agent.client.of("tool_call_update")[-1].status == "failed"
        sleeper = int(pidfile.read_text())
        deadline = time.monotonic() + 120
        while alive_pid(sleeper) and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        if alive_pid(sleeper):
            os.kill(sleeper, 9)
            raise AssertionError("the cancelled command's child survived")

        result = await agent.prompt(session, "quick")  # the session goes on
        assert result.stop_reason == "end_turn"

    agent_run(scenario)
    last = fake_model.requests[-1].body["messages"]
    assert [m["role"] for m in last[1:]] == ["user", "user", "user"]  # no dangling tool call in the history


def alive_pid(pid: int) -> bool:
    return os.path.exists(f"/proc/{pid}") and _state(pid) != "Z"


def test_a_cancel_while_permission_is_pending(agent_run, fake_model):
    fake_model.use(write_script("x.txt", "x"))

    async def scenario(agent):
        session = await agent.start_session()
        turn = asyncio.create_task(agent.prompt(session, "write it"))
        await agent.client.wait_for(lambda: agent.client.permissions)
        await agent.conn.cancel(session_id=session)
        assert (await turn).stop_reason == "cancelled"
        assert not (agent.workspace / "x.txt").exists()

    agent_run(scenario, permit="hang")


def test_reasoning_effort_reaches_the_request_when_set(agent_run, fake_model):
    async def scenario(agent):
        session = await agent.start_session()
        assert (await agent.prompt(session, "hi")).stop_reason == "end_turn"

    agent_run(scenario, env={"NULLIUS_REFERENCE_EFFORT": "high"})
    assert fake_model.requests[-1].body["reasoning_effort"] == "high"


def test_the_call_limit_ends_the_turn_with_a_notice(agent_run, fake_model):
    fake_model.use({"default": {"tool_calls": [{"name": "list_files", "arguments": {}}]}})

    async def scenario(agent):
        session = await agent.start_session()
        result = await agent.prompt(session, "loop forever")
        assert result.stop_reason == "max_turn_requests"
        (notice,) = agent.client.of("session_info_update")
        assert notice.field_meta["nullius"]["notice"]["kind"] == "turn_limit"
        assert "3 model calls" in notice.field_meta["nullius"]["notice"]["message"]
        assert agent.client.updates[-1] is notice
        assert agent.client.of("agent_message_chunk") == []

    agent_run(scenario, env={"NULLIUS_REFERENCE_MAX_CALLS": "3"})
    assert len(fake_model.requests) == 3


@pytest.mark.parametrize("fault", [{"status": 429}, {"status": 400}, {"error": {"message": "overloaded in band"}}])
def test_a_model_error_is_a_json_rpc_error_of_the_prompt(agent_run, fake_model, fault):
    fake_model.use({"default": {"text": "never", "fault": fault}})

    async def scenario(agent):
        session = await agent.start_session()
        with pytest.raises(acp.RequestError) as failed:
            await agent.prompt(session, "hi")
        data = failed.value.data
        assert data["kind"] == "model_error"
        assert data["status"] == fault.get("status", 200)
        if "error" in fault:
            assert data["message"] == "overloaded in band"
        assert agent.client.text() == ""

    agent_run(scenario)
    assert len(fake_model.requests) == 1  # NULLIUS_REFERENCE_MAX_RETRIES=0


def test_bad_tool_calls_go_back_to_the_model_as_errors(agent_run, fake_model):
    calls = [
        {"name": "no_such_tool", "arguments": {}, "id": "c_unknown"},
        {"name": "read_file", "arguments_json": "{not json", "id": "c_json"},
        {"name": "read_file", "arguments_json": "[1, 2]", "id": "c_list"},
        {"name": "read_file", "arguments": {"path": "missing.txt"}, "id": "c_missing"},
        {"name": "read_file", "arguments": {"path": "a.txt", "mode": "r"}, "id": "c_extra"},
    ]
    fake_model.use({"rules": [{"when": {"after_tool_result": ""}, "reply": {"text": "ok"}},
                              {"reply": {"tool_calls": calls}}]})

    async def scenario(agent):
        session = await agent.start_session()
        assert (await agent.prompt(session, "go")).stop_reason == "end_turn"
        done = [u for u in agent.client.of("tool_call_update") if u.status in ("completed", "failed")]
        assert [(u.tool_call_id, u.status) for u in done] == [(c["id"], "failed") for c in calls]

    agent_run(scenario)
    results = {m["tool_call_id"]: m["content"] for m in tool_messages(fake_model.requests[-1])}
    assert results["c_unknown"] == "Error: there is no tool named 'no_such_tool'"
    assert results["c_json"].startswith("Error: the arguments are not valid JSON")
    assert results["c_list"].startswith("Error: expected a JSON object of arguments")
    assert results["c_missing"] == "Error: 'missing.txt' is not a file"
    assert results["c_extra"].startswith("Error: unknown arguments ['mode']")


def test_a_reply_cut_at_the_output_limit_ends_with_max_tokens(agent_run, fake_model):
    fake_model.use({"default": {"text": "The answer is", "truncated": True}})

    async def scenario(agent):
        session = await agent.start_session()
        result = await agent.prompt(session, "hi")
        assert result.stop_reason == "max_tokens"
        assert agent.client.text() == "The answer is"
        assert result.usage.input_tokens > 0 and result.usage.output_tokens > 0

    agent_run(scenario)
