"""The fake model server, over real loopback sockets, read by the official OpenAI and Anthropic SDKs."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import anthropic
import httpx2 as httpx
import openai
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nullius_core.testing.fake_model import (
    DEFAULT_TEXT,
    FakeModelServer,
    FakeRequest,
    Fault,
    Match,
    Reply,
    Rule,
    Script,
    ScriptError,
    ToolCall,
    Usage,
    load_script,
    running_fake_model,
)
from nullius_core.testing.fake_model import chat, messages, responses
from nullius_core.testing.fake_model.runner import Counts
from nullius_core.testing.fake_model.wire import Ctx

ROOT = Path(__file__).resolve().parent.parent
WEATHER_TOOL_CHAT = [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}]
WEATHER_TOOL_RESP = [{"type": "function", "name": "get_weather", "parameters": {"type": "object"}}]
WEATHER_TOOL_ANTH = [{"name": "get_weather", "input_schema": {"type": "object"}}]
TOOL_REPLY = {"text": "Let me look.", "tool_calls": [{"name": "get_weather", "arguments": {"city": "Paris", "days": 3}}]}


def oai(fake: Any) -> openai.OpenAI:
    return openai.OpenAI(base_url=fake.openai_base_url, api_key="sk-test", max_retries=0)


def anth(fake: Any) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=fake.anthropic_base_url, api_key="sk-ant-test", max_retries=0)


def user(text: str) -> list[dict[str, Any]]:
    return [{"role": "user", "content": text}]


def sse(raw: bytes) -> list[tuple[str | None, str]]:
    """(event name, data) pairs of an SSE body."""
    out = []
    for block in raw.decode().split("\n\n"):
        if not block.strip():
            continue
        name, data = None, []
        for line in block.split("\n"):
            if line.startswith("event: "):
                name = line[7:]
            elif line.startswith("data: "):
                data.append(line[6:])
        out.append((name, "\n".join(data)))
    return out


def post(fake: Any, path: str, body: dict[str, Any], **kw: Any) -> httpx.Response:
    return httpx.post(fake.base_url + path, json=body, timeout=120, **kw)


# --- the three shapes, parsed by the SDKs -------------------------------------------


def test_chat_text_and_usage_not_streaming(fake_model):
    fake_model.use({"default": {"text": "Hi there.", "usage": {"input_tokens": 40, "cached_tokens": 30, "output_tokens": 12, "reasoning_tokens": 5}}})
    r = oai(fake_model).chat.completions.create(model="gpt-x", messages=user("hello"))
    assert r.object == "chat.completion" and r.model == "gpt-x"
    assert r.choices[0].message.content == "Hi there." and r.choices[0].finish_reason == "stop"
    u = r.usage
    assert (u.prompt_tokens, u.completion_tokens, u.total_tokens) == (40, 12, 52)
    assert u.prompt_tokens_details.cached_tokens == 30 and u.completion_tokens_details.reasoning_tokens == 5


def test_chat_stream_usage_only_when_asked(fake_model):
    fake_model.use({"default": {"text": "Streaming works fine.", "chunk": 5}})
    client = oai(fake_model)
    chunks = list(client.chat.completions.create(model="m", messages=user("x"), stream=True))
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == "Streaming works fine."
    assert all(c.usage is None and c.choices for c in chunks)
    assert chunks[-1].choices[0].finish_reason == "stop"
    raw = post(fake_model, "/v1/chat/completions", {"model": "m", "messages": user("x"), "stream": True}).content
    assert b'"usage"' not in raw and raw.endswith(b"data: [DONE]\n\n")
    assert all(name is None for name, _ in sse(raw))

    chunks = list(client.chat.completions.create(model="m", messages=user("x"), stream=True, stream_options={"include_usage": True}))
    assert chunks[-1].choices == [] and chunks[-1].usage.completion_tokens == 6  # 21 chars / 4
    assert all(c.usage is None for c in chunks[:-1])


def test_chat_tool_calls_both_ways(fake_model):
    fake_model.use({"default": TOOL_REPLY})
    client = oai(fake_model)
    r = client.chat.completions.create(model="m", messages=user("weather?"), tools=WEATHER_TOOL_CHAT)
    call = r.choices[0].message.tool_calls[0]
    assert r.choices[0].finish_reason == "tool_calls" and call.type == "function"
    assert call.function.name == "get_weather" and json.loads(call.function.arguments) == {"city": "Paris", "days": 3}
    with client.chat.completions.stream(model="m", messages=user("weather?"), tools=WEATHER_TOOL_CHAT) as stream:
        final = stream.get_final_completion()
    message = final.choices[0].message
    assert message.content == "Let me look." and final.choices[0].finish_reason == "tool_calls"
    assert json.loads(message.tool_calls[0].function.arguments) == {"city": "Paris", "days": 3}
    assert message.tool_calls[0].id == "call_fake2_0"


def test_responses_both_ways(fake_model):
    fake_model.use({"default": {**TOOL_REPLY, "usage": {"input_tokens": 100, "cached_tokens": 64, "reasoning_tokens": 7}}})
    client = oai(fake_model)
    r = client.responses.create(model="gpt-r", input="weather?", tools=WEATHER_TOOL_RESP)
    assert r.status == "completed" and r.output_text == "Let me look."
    call = r.output[1]
    assert call.type == "function_call" and call.name == "get_weather" and json.loads(call.arguments)["days"] == 3
    assert r.usage.input_tokens == 100 and r.usage.input_tokens_details.cached_tokens == 64
    assert r.usage.output_tokens_details.reasoning_tokens == 7 and r.usage.total_tokens == 100 + r.usage.output_tokens

    events = list(client.responses.create(model="gpt-r", input="weather?", tools=WEATHER_TOOL_RESP, stream=True))
    kinds = [e.type for e in events]
    assert kinds[:2] == ["response.created", "response.in_progress"] and kinds[-1] == "response.completed"
    for kind in ("response.output_text.delta", "response.output_text.done", "response.function_call_arguments.delta",
                 "response.function_call_arguments.done", "response.output_item.added", "response.output_item.done"):
        assert kind in kinds
    assert [e.sequence_number for e in events] == list(range(len(events)))
    assert all(getattr(e, "response", None) is None or e.response.usage is None for e in events[:-1])
    assert events[-1].response.usage.input_tokens_details.cached_tokens == 64
    with client.responses.stream(model="gpt-r", input="weather?", tools=WEATHER_TOOL_RESP) as stream:
        assert stream.get_final_response().output_text == "Let me look."


def test_anthropic_both_ways_and_count_tokens(fake_model):
    fake_model.use({"default": {**TOOL_REPLY, "usage": {"input_tokens": 500, "cached_tokens": 300, "cache_write_tokens": 100, "output_tokens": 20}}})
    client = anth(fake_model)
    r = client.messages.create(model="claude-x", max_tokens=100, messages=user("weather?"), tools=WEATHER_TOOL_ANTH)
    assert r.stop_reason == "tool_use" and r.content[0].text == "Let me look."
    assert r.content[1].type == "tool_use" and r.content[1].input == {"city": "Paris", "days": 3}
    assert (r.usage.input_tokens, r.usage.cache_read_input_tokens, r.usage.cache_creation_input_tokens) == (100, 300, 100)
    assert r.usage.output_tokens == 20
    with client.messages.stream(model="claude-x", max_tokens=100, messages=user("weather?"), tools=WEATHER_TOOL_ANTH) as stream:
        final = stream.get_final_message()
    assert final.content[1].input == {"city": "Paris", "days": 3} and final.usage.output_tokens == 20
    raw = post(fake_model, "/v1/messages?beta=true", {"model": "c", "max_tokens": 5, "messages": user("x"), "stream": True}).content
    names = [n for n, _ in sse(raw)]
    assert names[:3] == ["message_start", "content_block_start", "ping"] and names[-2:] == ["message_delta", "message_stop"]
    start = json.loads(sse(raw)[0][1])["message"]["usage"]
    assert start["input_tokens"] == 100 and start["cache_read_input_tokens"] == 300
    assert json.loads(sse(raw)[-2][1])["usage"] == {"output_tokens": 20}
    fake_model.use({"rules": [{"when": {"api": "count_tokens", "contains": "big"}, "reply": {"usage": {"input_tokens": 77}}}]})
    count = client.messages.count_tokens(model="claude-x", messages=user("x" * 40))
    assert count.input_tokens == 11  # 44 characters of prompt strings ("x" * 40, "user")
    assert client.messages.count_tokens(model="claude-x", messages=user("big")).input_tokens == 77
    assert fake_model.requests[-1].api == "count_tokens" and fake_model.requests[-1].path == "/v1/messages/count_tokens"


def test_truncated_reply_ends_as_each_provider_says(fake_model):
    fake_model.use({"default": {"text": "cut", "truncated": True}})
    assert oai(fake_model).chat.completions.create(model="m", messages=user("x")).choices[0].finish_reason == "length"
    r = oai(fake_model).responses.create(model="m", input="x")
    assert r.status == "incomplete" and r.incomplete_details.reason == "max_output_tokens"
    events = list(oai(fake_model).responses.create(model="m", input="x", stream=True))
    assert events[-1].type == "response.incomplete" and events[-1].response.usage is not None
    assert anth(fake_model).messages.create(model="c", max_tokens=1, messages=user("x")).stop_reason == "max_tokens"


def test_routes_and_the_record(fake_model, tmp_path):
    assert httpx.get(fake_model.base_url + "/v1/models").status_code == 404
    assert post(fake_model, "/chat/completions", {"model": "m"}).status_code == 404
    bad = httpx.post(fake_model.openai_base_url + "/chat/completions", content=b"{nope", timeout=120)
    assert bad.status_code == 400 and "error" in bad.json()
    anth(fake_model).messages.create(model="c", max_tokens=5, messages=user("hello"), extra_headers={"anthropic-beta": "b1"})
    last = fake_model.requests[-1]
    assert last.path == "/v1/messages" and last.api == "messages" and last.rule == "default" and last.status == 200
    # Header names are kept in lower case. This SDK sends its key as a bearer token, not x-api-key.
    assert "sk-ant-test" in last.headers.get("x-api-key", "") + last.headers.get("authorization", "")
    assert last.headers["anthropic-beta"] == "b1" and "anthropic-version" in last.headers
    assert last.body["messages"] == user("hello") and last.call == 1
    assert [r.status for r in fake_model.requests] == [404, 404, 400, 200]
    post(fake_model, "/v1/messages?beta=true", {"model": "c", "max_tokens": 5, "messages": user("x")})
    assert fake_model.requests[-1].query == {"beta": "true"}

    path = tmp_path / "rec.jsonl"
    with running_fake_model(record_path=path, max_requests=3) as fake:
        for i in range(5):
            post(fake, "/v1/chat/completions", {"model": f"m{i}", "messages": user("x")})
        assert [r.body["model"] for r in fake.requests] == ["m2", "m3", "m4"]
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert [line["body"]["model"] for line in lines] == [f"m{i}" for i in range(5)] and lines[0]["rule"] == "default"


# --- rules ------------------------------------------------------------------------------


def test_rules_by_message_tool_model_api_and_count(fake_model):
    fake_model.use(
        {
            "rules": [
                {"name": "once", "when": {"contains": "first"}, "times": 1, "reply": {"text": "only once"}},
                {"when": {"regex": "^wea.her"}, "reply": {"text": "by regex"}},
                {"when": {"tool": "get_weather"}, "reply": {"text": "tool offered"}},
                {"when": {"model": "special", "api": "responses"}, "reply": {"text": "special responses"}},
                {"when": {"call": 7}, "reply": {"text": "seventh call"}},
                {"when": {"contains": "again", "nth": 2}, "reply": {"text": "second again"}},
            ],
            "default": {"text": "fallback"},
        }
    )
    client = oai(fake_model)

    def say(text: str, **kw: Any) -> str:
        return client.chat.completions.create(model=kw.pop("model", "m"), messages=user(text), **kw).choices[0].message.content

    assert say("first") == "only once"  # call 1
    assert say("first") == "fallback"  # 2: used up
    assert say("weather now") == "by regex"  # 3
    assert say("hi", tools=WEATHER_TOOL_CHAT) == "tool offered"  # 4
    assert say("hi", model="special") == "fallback"  # 5: not the Responses API
    assert client.responses.create(model="special", input="hi").output_text == "special responses"  # 6
    assert say("anything") == "seventh call"  # 7
    assert say("again") == "fallback" and say("again") == "second again" and say("again") == "fallback"
    assert [r.rule for r in fake_model.requests[:4]] == ["once", "default", "rules[1]", "rules[2]"]


def test_after_a_tool_result_in_each_shape(fake_model):
    fake_model.use(
        {
            "rules": [
                {"when": {"after_tool_result": "sunny"}, "reply": {"text": "It is sunny."}},
                {"when": {"user_contains": "weather"}, "reply": TOOL_REPLY},
            ]
        }
    )
    chat_msgs = [
        *user("weather?"),
        {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "sunny, 21C"},
    ]
    client = oai(fake_model)
    assert client.chat.completions.create(model="m", messages=user("weather?")).choices[0].message.tool_calls
    assert client.chat.completions.create(model="m", messages=chat_msgs).choices[0].message.content == "It is sunny."
    items = [
        {"role": "user", "content": "weather?"},
        {"type": "function_call", "call_id": "c1", "name": "get_weather", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c1", "output": "sunny"},
    ]
    assert client.responses.create(model="m", input=items).output_text == "It is sunny."
    anth_msgs = [
        *user("weather?"),
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "get_weather", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": [{"type": "text", "text": "sunny"}]}]},
    ]
    assert anth(fake_model).messages.create(model="c", max_tokens=9, messages=anth_msgs).content[0].text == "It is sunny."


def test_callable_scripts(fake_model, tmp_path):
    seen: list[FakeRequest] = []

    def respond(request: FakeRequest) -> Any:
        seen.append(request)
        if request.last_tool_result is not None:
            return Reply(text=f"result was {request.last_tool_result}")
        if "dict" in (request.last_user_message or ""):
            return {"text": f"dict for {request.api} call {request.call}"}
        return None  # go on to the rules and the default

    fake_model.script = Script(respond=respond, rules=[Rule(when=Match(contains="rule"), reply=Reply(text="from a rule"))])
    client = oai(fake_model)
    assert client.chat.completions.create(model="m", messages=user("a dict please")).choices[0].message.content == "dict for chat call 1"
    assert client.chat.completions.create(model="m", messages=user("a rule")).choices[0].message.content == "from a rule"
    assert client.chat.completions.create(model="m", messages=user("z")).choices[0].message.content == DEFAULT_TEXT
    tool_msgs = [*user("u"), {"role": "tool", "tool_call_id": "c", "content": "42"}]
    assert client.chat.completions.create(model="m", messages=tool_msgs).choices[0].message.content == "result was 42"
    assert seen[-1].last_message == "42" and seen[-1].last_user_message == "u"

    script_file = tmp_path / "my_script.py"
    script_file.write_text(
        "async def respond(request):\n"
        "    return {'tool_calls': [{'name': 'echo', 'arguments': {'said': request.last_user_message}}]}\n"
        "def broken(request):\n"
        "    raise RuntimeError('boom')\n"
    )
    fake_model.use(f"{script_file}:respond")
    r = anth(fake_model).messages.create(model="c", max_tokens=5, messages=user("ping"))
    assert r.content[0].input == {"said": "ping"} and fake_model.requests[-1].rule == "respond"
    fake_model.use(load_script(f"{script_file}:broken"))
    with pytest.raises(openai.InternalServerError, match="boom"):
        client.chat.completions.create(model="m", messages=user("x"))
    with pytest.raises(ScriptError, match="has no function 'nope'"):
        load_script(f"{script_file}:nope")


def test_script_files_and_their_errors(tmp_path):
    good = tmp_path / "s.toml"
    good.write_text(
        '[[rules]]\nwhen = { contains = "hi" }\nreply = { text = "hello", usage = { output_tokens = 3 } }\n'
        "[[rules]]\ntimes = 1\n[rules.when]\ntool = \"get_weather\"\n[rules.reply]\n"
        '[[rules.reply.tool_calls]]\nname = "get_weather"\narguments = { city = "Paris" }\n'
        '[rules.reply.fault]\nfirst_byte_delay = 0.1\n[default]\ntext = "toml default"\n'
    )
    script = load_script(good)
    assert script.rules[0].reply.usage == Usage(output_tokens=3) and script.default.text == "toml default"
    assert script.rules[1].reply.tool_calls == [ToolCall(name="get_weather", arguments={"city": "Paris"})]

    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"rules": [{"when": {"contans": "x"}, "reply": {"text": "ok"}}, {"reply": {"fault": {"status": "429"}}}]}))
    with pytest.raises(ScriptError) as info:
        load_script(bad)
    message = str(info.value)
    assert f"{bad}: $.rules[0].when.contans: unknown key" in message
    assert f"{bad}: $.rules[1].reply.fault.status: expected an integer, found the string \"429\"" in message
    bad_toml = tmp_path / "bad.toml"
    bad_toml.write_text('[[rules]]\nwhen = { regex = "(" }\n')
    with pytest.raises(ScriptError, match=r"bad.toml: \$.rules\[0\].when.regex: is not a regular expression"):
        load_script(bad_toml)
    (tmp_path / "broken.json").write_text("{")
    with pytest.raises(ScriptError, match="broken.json: \\$: not valid JSON"):
        load_script(tmp_path / "broken.json")


# --- faults, as a client sees them --------------------------------------------------------


def test_status_faults(fake_model):
    fake_model.use(
        {
            "rules": [
                {"when": {"contains": "429"}, "reply": {"fault": {"status": 429, "retry_after": 7}}},
                {"when": {"contains": "503"}, "reply": {"fault": {"status": 503, "body": {"oops": True}, "headers": {"x-why": "test"}}}},
            ]
        }
    )
    with pytest.raises(openai.RateLimitError) as info:
        oai(fake_model).chat.completions.create(model="m", messages=user("429"), stream=True)
    assert info.value.response.headers["retry-after"] == "7"
    assert info.value.body["code"] == "rate_limit_exceeded" and info.value.body["type"] == "requests"
    with pytest.raises(anthropic.RateLimitError) as ainfo:
        anth(fake_model).messages.create(model="c", max_tokens=5, messages=user("429"))
    assert ainfo.value.response.headers["retry-after"] == "7"
    assert ainfo.value.body["type"] == "error" and ainfo.value.body["error"]["type"] == "rate_limit_error"
    r = post(fake_model, "/v1/responses", {"model": "m", "input": "503"})
    assert r.status_code == 503 and r.json() == {"oops": True} and r.headers["x-why"] == "test"
    assert fake_model.requests[-1].status == 503
    fake_model.script = Script(default=Reply(fault=Fault(status=500)))
    with pytest.raises(openai.InternalServerError) as info:
        oai(fake_model).responses.create(model="m", input="x")
    assert info.value.body["type"] == "server_error"


def test_reset_mid_stream_after_k_events(fake_model):
    fake_model.use({"default": {"text": "x" * 80, "chunk": 8, "fault": {"reset_after": 3}}})
    got = []
    with pytest.raises(openai.APIConnectionError):
        for chunk in oai(fake_model).chat.completions.create(model="m", messages=user("x"), stream=True):
            got.append(chunk)
    assert len(got) == 3
    events = []
    # This SDK lets the transport's error through: ECONNRESET, a real reset.
    with pytest.raises((httpx.ReadError, anthropic.APIConnectionError), match="reset"):
        for event in anth(fake_model).messages.create(model="c", max_tokens=5, messages=user("x"), stream=True):
            events.append(event.type)
    assert events == ["message_start", "content_block_start"]  # the third event, a ping, is not yielded
    with pytest.raises(openai.APIConnectionError):
        oai(fake_model).responses.create(model="m", input="x")  # not streaming: reset before any byte


def test_slow_first_byte_and_pacing(fake_model):
    fake_model.use({"default": {"text": "abcdef", "chunk": 2, "pace": 0.05, "fault": {"first_byte_delay": 0.3}}})
    started = time.monotonic()
    with httpx.stream("POST", fake_model.openai_base_url + "/chat/completions", json={"model": "m", "messages": [], "stream": True}) as r:
        first = time.monotonic() - started
        stamps = [time.monotonic() for _ in r.iter_raw()]
    assert first >= 0.3
    assert stamps[-1] - started >= 0.3 + 5 * 0.05  # 6 events paced: 5 gaps
    started = time.monotonic()
    oai(fake_model).chat.completions.create(model="m", messages=user("x"))
    assert time.monotonic() - started >= 0.3


def test_malformed_sse(fake_model):
    fake_model.use({"rules": [
        {"when": {"contains": "end"}, "reply": {"text": "abc", "fault": {"malformed": {"after": 1, "then": "end"}}}},
        {"reply": {"text": "abc", "fault": {"malformed": {"after": 2}}}},
    ]})
    raw = post(fake_model, "/v1/messages", {"model": "c", "max_tokens": 5, "messages": user("x"), "stream": True}).text
    blocks = [b for b in raw.split("\n\n") if b]
    assert blocks[2] == "data: {this is not json" and blocks[-1].startswith("event: message_stop")
    raw = post(fake_model, "/v1/chat/completions", {"model": "m", "messages": user("end"), "stream": True}).text
    assert raw.split("\n\n")[1] == "data: {this is not json" and "[DONE]" not in raw
    with pytest.raises(json.JSONDecodeError):
        list(oai(fake_model).chat.completions.create(model="m", messages=user("x"), stream=True))
    r = post(fake_model, "/v1/responses", {"model": "m", "input": "x"})
    assert r.status_code == 200 and r.text == "{this is not json"


def test_error_inside_a_200(fake_model):
    fake_model.use({"default": {"text": "abcdef", "chunk": 2, "fault": {"error": {"after": 2, "message": "upstream fell over"}}}})
    with pytest.raises(openai.APIError, match="upstream fell over"):
        list(oai(fake_model).chat.completions.create(model="m", messages=user("x"), stream=True))
    r = post(fake_model, "/v1/chat/completions", {"model": "m", "messages": user("x")})
    assert r.status_code == 200 and r.json()["error"]["message"] == "upstream fell over"
    events = list(oai(fake_model).responses.create(model="m", input="x", stream=True))
    assert [e.type for e in events] == ["response.created", "response.in_progress", "response.failed"]
    assert events[-1].sequence_number == 2 and events[-1].response.error.message == "upstream fell over"
    assert oai(fake_model).responses.create(model="m", input="x").status == "failed"
    with pytest.raises(anthropic.APIStatusError) as info:
        list(anth(fake_model).messages.create(model="c", max_tokens=5, messages=user("x"), stream=True))
    assert info.value.status_code == 200 and info.value.body["error"]["type"] == "overloaded_error"


# --- renderers: every delta reassembles ---------------------------------------------------


@settings(max_examples=60, deadline=None, database=None)
@given(
    text=st.text(max_size=60),
    chunk=st.integers(1, 9),
    args=st.dictionaries(st.text(max_size=5), st.one_of(st.integers(), st.text(max_size=8)), max_size=3),
)
def test_streams_reassemble_any_text_and_arguments(text, chunk, args):
    reply = Reply(text=text, tool_calls=[ToolCall(name="t", arguments=args)], chunk=chunk)
    ctx = Ctx(1, "m", reply, Counts(10, 0, 0, 5, 0), 0, include_usage=True)
    parsed = [json.loads(d) for _, d in sse(b"".join(chat.events(ctx))) if d != "[DONE]"]
    deltas = [c["choices"][0]["delta"] for c in parsed if c["choices"]]
    assert "".join(d.get("content") or "" for d in deltas) == text
    assert json.loads("".join(t["function"]["arguments"] for d in deltas for t in d.get("tool_calls", []))) == args
    parsed = [json.loads(d) for _, d in sse(b"".join(responses.events(ctx)))]
    assert [p["sequence_number"] for p in parsed] == list(range(len(parsed)))
    assert "".join(p["delta"] for p in parsed if p["type"] == "response.output_text.delta") == text
    assert json.loads("".join(p["delta"] for p in parsed if p["type"] == "response.function_call_arguments.delta")) == args
    parsed = [json.loads(d) for _, d in sse(b"".join(messages.events(ctx)))]
    assert "".join(p["delta"]["text"] for p in parsed if p.get("delta", {}).get("type") == "text_delta") == text
    partial = "".join(p["delta"]["partial_json"] for p in parsed if p.get("delta", {}).get("type") == "input_json_delta")
    assert json.loads(partial) == args


# --- the async API, concurrency, threads, the CLI -----------------------------------------


def test_async_server_many_concurrent_streams():
    async def main() -> None:
        async with FakeModelServer({"default": {"text": "y" * 50, "chunk": 5}}) as fake:
            client = openai.AsyncOpenAI(base_url=fake.openai_base_url, api_key="k", max_retries=0)

            async def one(i: int) -> str:
                stream = await client.chat.completions.create(model=f"m{i}", messages=user("x"), stream=True)
                return "".join([c.choices[0].delta.content or "" async for c in stream if c.choices])

            texts = await asyncio.gather(*(one(i) for i in range(200)))
            assert texts == ["y" * 50] * 200 and len(fake.requests) == 200
            await client.close()

    asyncio.run(main())


def test_sync_helper_leaves_no_thread():
    before = set(threading.enumerate())
    with running_fake_model() as fake:
        assert post(fake, "/v1/chat/completions", {"model": "m", "messages": []}).status_code == 200
    fake.stop()  # again: nothing happens
    assert set(threading.enumerate()) <= before
    with pytest.raises(ScriptError):
        fake_script_with_a_bad_field = {"rules": [{"when": {"nope": 1}}]}
        with running_fake_model(fake_script_with_a_bad_field):
            pass
    assert set(threading.enumerate()) <= before


def _serve(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "nullius_core.cli.fake_model_command", "serve", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )


def test_cli_serves_until_signalled(tmp_path):
    script = tmp_path / "s.json"
    script.write_text(json.dumps({"rules": [{"when": {"contains": "ping"}, "reply": {"text": "pong"}}]}))
    record = tmp_path / "rec.jsonl"
    proc = _serve("--script", str(script), "--record", str(record))
    try:
        line = proc.stdout.readline()
        urls = json.loads(line)
        assert set(urls) == {"base_url", "openai_base_url", "anthropic_base_url"}
        assert urls["openai_base_url"] == urls["base_url"] + "/v1"
        client = openai.OpenAI(base_url=urls["openai_base_url"], api_key="k", max_retries=0)
        assert client.chat.completions.create(model="m", messages=user("ping")).choices[0].message.content == "pong"
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=120)
    finally:
        proc.kill() if proc.poll() is None else None
    assert proc.returncode == 0, err
    assert out == "" and json.loads(record.read_text())["rule"] == "rules[0]"


def test_cli_refuses_a_bad_script(tmp_path):
    script = tmp_path / "s.json"
    script.write_text(json.dumps({"default": {"text": "x", "chunk": 0}}))
    proc = _serve("--script", str(script))
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 2 and out == ""
    assert f"{script}: $.default.chunk: must be 1 or more, found 0" in err
