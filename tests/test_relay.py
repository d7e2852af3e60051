"""The relay between agents and the (fake) provider: shapes, records, keys, faults, isolation, load."""

from __future__ import annotations

import asyncio
import json
import os
import resource
import signal
import subprocess
import sys
import threading
import time
import aiohttp
import anthropic
import openai
import pytest
from relay_helpers import KEY, RelayThread

USAGE = {"input_tokens": 100, "cached_tokens": 40, "output_tokens": 20, "reasoning_tokens": 5}


@pytest.fixture
def relay(fake_model, nullius_env, tmp_path):
    r = RelayThread(fake_model.openai_base_url, tmp_path / "relay", nullius_env, model="run-model", side_models=frozenset({"side-model"}), call_seconds=3)
    yield r
    r.close()


def oa(relay, unit="u0000"):
    return openai.OpenAI(base_url=relay.url(unit), api_key=relay.token(unit), max_retries=0)


def an(relay, unit="u0000"):
    return anthropic.Anthropic(base_url=relay.url(unit)[: -len("/v1")], api_key=relay.token(unit), max_retries=0)


def test_every_api_shape_passes_and_is_recorded(relay, fake_model):
    fake_model.use({"default": {"text": "the reply", "usage": USAGE}})
    client, aclient = oa(relay), an(relay)
    msgs = [{"role": "user", "content": "hi"}]
    assert client.chat.completions.create(model="asked", messages=msgs).choices[0].message.content == "the reply"
    text = "".join(c.choices[0].delta.content or "" for c in client.chat.completions.create(model="asked", messages=msgs, stream=True, stream_options={"include_usage": True}) if c.choices)
    assert text == "the reply"
    assert client.responses.create(model="asked", input="hi").output_text == "the reply"
    with client.responses.stream(model="asked", input="hi") as stream:
        assert stream.get_final_response().output_text == "the reply"
    assert aclient.messages.create(model="asked", max_tokens=50, messages=msgs).content[0].text == "the reply"
    with aclient.messages.stream(model="asked", max_tokens=50, messages=msgs) as stream:
        assert stream.get_final_text() == "the reply"
    records = relay.records()
    assert [(r["api"], r["stream"]) for r in records] == [
        ("openai-chat", False), ("openai-chat", True), ("openai-responses", False),
        ("openai-responses", True), ("anthropic-messages", False), ("anthropic-messages", True),
    ]
    for record in records:
        assert record["status"] == 200 and record["model_asked"] == "asked" and record["model_sent"] == "run-model"
        assert record["usage"]["input"] == 100 and record["usage"]["cached_input"] == 40 and record["usage"]["output"] == 20
        assert record["ms_first_byte"] <= record["ms_last_byte"] <= record["ms_total"]
    assert records[0]["usage"]["reasoning"] == 5 and records[2]["usage"]["reasoning"] == 5
    for seen in fake_model.requests:
        assert seen.body["model"] == "run-model"
        assert seen.headers.get("authorization") == f"Bearer {KEY}"
        assert relay.token() not in json.dumps(dict(seen.headers))
    # the names of the caller's credential headers, never their values
    assert "authorization" in records[0]["key_headers"]
    text = (relay.folder / "u0000" / "calls.jsonl").read_text() + (relay.folder / "u0000" / "bodies.jsonl").read_text()
    assert relay.token() not in text and KEY not in text


def test_usage_asked_for_the_caller_reaches_only_the_record(relay, fake_model):
    fake_model.use({"default": {"text": "streamed", "usage": USAGE}})
    chunks = list(oa(relay).chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}], stream=True))
    assert all(c.usage is None for c in chunks) and all(c.choices for c in chunks)
    assert fake_model.requests[-1].body["stream_options"] == {"include_usage": True}
    assert relay.records()[-1]["usage"]["input"] == 100


def test_side_models_go_as_asked_and_query_strings_pass(relay, fake_model):
    client = oa(relay)
    client.chat.completions.create(model="side-model", messages=[{"role": "user", "content": "x"}])
    an(relay).messages.create(model="whatever", max_tokens=5, messages=[{"role": "user", "content": "x"}], extra_query={"beta": "true"})
    side, main = relay.records()
    assert side["side"] is True and side["model_sent"] == "side-model"
    assert fake_model.requests[0].body["model"] == "side-model"
    assert main["side"] is False and fake_model.requests[1].query == {"beta": "true"}


def test_a_429_reaches_the_caller_as_it_came_and_is_not_retried(relay, fake_model):
    fake_model.use({"default": {"fault": {"status": 429, "retry_after": 7}}})
    with pytest.raises(openai.RateLimitError) as err:
        oa(relay).chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}])
    assert err.value.response.headers["retry-after"] == "7"
    assert len(fake_model.requests) == 1
    [record] = relay.records()
    assert record["status"] == 429 and record["error"]["code"] == "rate_limit_exceeded"


def test_upstream_errors_pass_with_their_status(relay, fake_model):
    fake_model.use({"default": {"fault": {"status": 500}}})
    with pytest.raises(openai.InternalServerError):
        oa(relay).chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}])
    assert relay.records()[-1]["status"] == 500


def test_an_error_inside_a_200_is_recorded_beside_the_reply(relay, fake_model):
    fake_model.use({"default": {"text": "x", "fault": {"error": {"after": 1, "message": "overloaded", "code": "server_error"}}}})
    events = list(oa(relay).responses.create(model="m", input="x", stream=True))
    assert events[-1].type == "response.failed"  # the caller gets it as it came
    record = relay.records()[-1]
    assert record["status"] == 200 and record["error"]["message"] == "overloaded" and record["end"] == "failed"


def test_a_reset_mid_stream_reaches_the_caller_and_the_record(relay, fake_model):
    fake_model.use({"default": {"text": "a long text " * 20, "chunk": 4, "pace": 0.001, "fault": {"reset_after": 3}}})
    with pytest.raises(Exception):
        list(oa(relay).chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}], stream=True))
    record = relay.records()[-1]
    assert record["broken"] is True and "cause" in record


def test_a_call_past_its_limit_is_cut(relay, fake_model):
    fake_model.use({"default": {"text": "late", "fault": {"first_byte_delay": 6}}})
    started = time.monotonic()
    with pytest.raises(openai.APIStatusError) as err:
        oa(relay).chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}])
    assert err.value.status_code == 504 and time.monotonic() - started < 5.5
    assert relay.records()[-1]["cut"] == "past the call limit of 3 s"


def test_an_unreachable_upstream_is_a_502_with_its_cause(nullius_env, tmp_path):
    dead = RelayThread("http://127.0.0.1:9/v1", tmp_path / "dead", nullius_env)
    try:
        with pytest.raises(openai.APIStatusError) as err:
            oa(dead).chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}])
        assert err.value.status_code == 502
        assert "Connect" in dead.records()[-1]["cause"]
    finally:
        dead.close()


def test_garbage_gets_a_clear_4xx_and_reaches_nothing(relay, fake_model):
    async def go():
        async with aiohttp.ClientSession() as http:
            own = {"Authorization": f"Bearer {relay.token()}"}
            url = relay.url() + "/chat/completions"
            out = {}
            async with http.post(url, data=b"not json", headers=own) as r:
                out["not json"] = r.status
            async with http.post(url, data=b"[1, 2]", headers=own) as r:
                out["not an object"] = r.status
            async with http.post(url, data=b"x" * (33 * 1024 * 1024), headers=own) as r:
                out["huge"] = r.status
            async with http.post(relay.url() + "/../u0001/v1/chat/completions", json={}, headers=own) as r:
                out["outside"] = r.status
            async with http.post(relay.url("u0001") + "/chat/completions", json={"model": "m", "messages": []}, headers=own) as r:
                out["another unit's route"] = r.status
            async with http.post(url, json={"model": "m"}) as r:
                out["no token"] = r.status
            async with http.get(relay.url() + "/models", headers=own) as r:
                out["models"] = r.status
            async with http.post("http://" + relay.url().split("/")[2] + "/elsewhere", json={}) as r:
                out["no route"] = r.status
            return out

    statuses = asyncio.run(go())
    assert statuses == {
        "not json": 400, "not an object": 400, "huge": 413, "outside": 404,
        "another unit's route": 403, "no token": 401, "models": 404, "no route": 404,
    }
    assert fake_model.requests == []
    assert relay.records("u0001") == []


def test_a_guards_stop_line_refuses_the_agents_later_calls(relay, fake_model):
    client = oa(relay)
    client.chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}])
    (relay.folder / "u0000" / "stop").write_text("relay: a note refuses nothing\n")
    client.chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}])
    with open(relay.folder / "u0000" / "stop", "a") as handle:
        handle.write("guard: the answer was given away\n")
    with pytest.raises(openai.PermissionDeniedError):
        client.chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}])
    client.chat.completions.create(model="side-model", messages=[{"role": "user", "content": "x"}])
    assert len(fake_model.requests) == 3
    assert relay.records()[2]["refused"] == "stopped: guard: the answer was given away"


def test_a_thousand_concurrent_streams_complete_and_are_all_recorded(fake_model, nullius_env, tmp_path):
    # No call limit: on a loaded machine a stream may wait its turn for seconds, and that is not what this proves.
    relay = RelayThread(fake_model.openai_base_url, tmp_path / "relay", nullius_env)
    try:
        thousand_streams(relay, fake_model)
    finally:
        relay.close()


def thousand_streams(relay, fake_model):
    # four descriptors a stream in this one process: the client's, the relay's two, the fake's
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    assert soft >= 4200, f"this test needs 4,200 open files; the relay raised the soft limit to {soft} (the hard limit is {hard})"
    fake_model.use({"default": {"text": "streamed words " * 4, "chunk": 8}})

    async def one(http, i):
        body = {"model": "m", "stream": True, "messages": [{"role": "user", "content": f"call {i}"}]}
        async with http.post(relay.url() + "/chat/completions", json=body, headers={"Authorization": f"Bearer {relay.token()}"}) as r:
            text = await r.text()
            return r.status, text

    async def go():
        timeout = aiohttp.ClientTimeout(total=600)
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0), timeout=timeout) as http:
            return await asyncio.gather(*(one(http, i) for i in range(1000)))

    results = asyncio.run(go())
    assert all(status == 200 and text.rstrip().endswith("data: [DONE]") for status, text in results)
    records = relay.records(timeout=300)
    assert len(records) == 1000 and len({r["id"] for r in records}) == 1000
    assert all(r["status"] == 200 and r["usage"]["output"] > 0 for r in records)
    bodies = [json.loads(line) for line in (relay.folder / "u0000" / "bodies.jsonl").read_text().splitlines()]
    assert sorted(b["request"]["messages"][0]["content"] for b in bodies) == sorted(f"call {i}" for i in range(1000))


def test_relay_serve_refuses_a_missing_key_and_serves_with_one(nullius_env, fake_model, tmp_path):
    missing = subprocess.run([sys.executable, "-m", "nullius_core", "relay", "serve", "--provider", "openai"], env=nullius_env, capture_output=True, text=True, timeout=30)
    assert missing.returncode == 2 and "set OPENAI_API_KEY" in missing.stderr
    env = {**nullius_env, "OPENAI_API_KEY": KEY, "OPENAI_BASE_URL": fake_model.openai_base_url}
    proc = subprocess.Popen([sys.executable, "-m", "nullius_core", "relay", "serve", "--provider", "openai", "--model", "served", "--record", str(tmp_path / "rec")],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        info = json.loads(proc.stdout.readline())
        assert set(info) >= {"base_url", "token"} and info["base_url"].endswith("/main/v1")
        reply = openai.OpenAI(base_url=info["base_url"], api_key=info["token"], max_retries=0).chat.completions.create(model="x", messages=[{"role": "user", "content": "x"}])
        assert reply.choices[0].message.content
        [record] = [json.loads(line) for line in (tmp_path / "rec" / "calls.jsonl").read_text().splitlines()]
        assert record["model_sent"] == "served"
        assert KEY not in " ".join(proc.args)  # the key is never on a command line
    finally:
        proc.send_signal(signal.SIGINT)
        assert proc.wait(10) == 0


def test_served_by_pins_replace_the_callers_routing(nullius_env, fake_model, tmp_path):
    env = {**nullius_env, "OPENROUTER_API_KEY": KEY}
    refused = subprocess.run([sys.executable, "-m", "nullius_core", "relay", "serve", "--provider", "openai", "--served-by", "x"],
                             env={**env, "OPENAI_API_KEY": KEY}, capture_output=True, text=True, timeout=30)
    assert refused.returncode == 2 and "routes no model to several providers" in refused.stderr
    bad = subprocess.run([sys.executable, "-m", "nullius_core", "relay", "serve", "--provider", "openrouter", "--model", "m", "--served-by", "Anthropic"],
                         env=env, capture_output=True, text=True, timeout=30)
    assert bad.returncode == 2 and "is not a provider slug" in bad.stderr
    fake_model.use({"openrouter": {"models": {"pinned/model": [{"slug": "deepinfra", "name": "DeepInfra"}, {"slug": "google-vertex", "name": "Google"},
                                                                {"slug": "anthropic", "name": "Anthropic"}]}}})
    proc = subprocess.Popen([sys.executable, "-m", "nullius_core", "relay", "serve", "--provider", "openrouter", "--base-url", fake_model.openai_base_url,
                             "--model", "pinned/model", "--served-by", "anthropic,google-vertex", "--record", str(tmp_path / "rec")],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        info = json.loads(proc.stdout.readline())
        client = openai.OpenAI(base_url=info["base_url"], api_key=info["token"], max_retries=0)
        leaked = "sk-or-v1-the-callers-own-key-0123456789abcdef"
        client.chat.completions.create(model="x", messages=[{"role": "user", "content": "x"}],
                                       extra_body={"provider": {"order": ["cheap"], "note": leaked}})
        assert fake_model.requests[-1].body["provider"] == {"order": ["anthropic", "google-vertex"], "allow_fallbacks": False}
        assert fake_model.requests[-1].headers["x-openrouter-metadata"] == "enabled"  # the routing facts, whatever the caller sent
        list(client.chat.completions.create(model="x", messages=[{"role": "user", "content": "x"}], stream=True))
        list(client.responses.create(model="x", input="x", stream=True))
        anthropic.Anthropic(base_url=info["base_url"][: -len("/v1")], api_key=info["token"], max_retries=0).messages.create(
            model="x", max_tokens=10, messages=[{"role": "user", "content": "x"}])
        assert fake_model.requests[-1].body["provider"] == {"order": ["anthropic", "google-vertex"], "allow_fallbacks": False}
        assert "x-openrouter-metadata" not in fake_model.requests[-1].headers  # Messages replies carry no routing facts
        records = [json.loads(line) for line in (tmp_path / "rec" / "calls.jsonl").read_text().splitlines()]
        assert records[0]["routing_sent"]["order"] == ["anthropic", "google-vertex"] and records[0]["routing_caller"]["order"] == ["cheap"]
        assert leaked not in (tmp_path / "rec" / "calls.jsonl").read_text()  # the caller's routing, cleaned as every record is
        # who served: the endpoint the routing facts mark selected, whole, streamed, and in a Responses stream's terminal event
        assert [(r["api"], r["served_by"], r["held"]) for r in records] == [
            ("openai-chat", "Anthropic", True), ("openai-chat", "Anthropic", True), ("openai-responses", "Anthropic", True),
            ("anthropic-messages", None, None)]
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(10)


def test_a_killed_relay_leaves_records_every_line_of_which_parses(nullius_env, fake_model, tmp_path):
    fake_model.use({"default": {"text": "streamed words " * 4, "chunk": 4, "pace": 0.001}})
    env = {**nullius_env, "OPENAI_API_KEY": KEY, "OPENAI_BASE_URL": fake_model.openai_base_url}
    proc = subprocess.Popen([sys.executable, "-m", "nullius_core", "relay", "serve", "--provider", "openai", "--record", str(tmp_path / "rec")],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    info = json.loads(proc.stdout.readline())

    async def hammer():
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as http:
            async def one():
                try:
                    async with http.post(info["base_url"] + "/chat/completions", json={"model": "m", "stream": True, "messages": [{"role": "user", "content": "x"}]},
                                         headers={"Authorization": f"Bearer {info['token']}"}) as r:
                        await r.read()
                except aiohttp.ClientError:
                    pass
            tasks = [asyncio.create_task(one()) for _ in range(300)]
            # Kill once some calls are recorded and most are still in flight; a
            # fixed sleep raced a loaded CI machine that had recorded none yet.
            calls = tmp_path / "rec" / "calls.jsonl"
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline and (not calls.exists() or calls.read_bytes().count(b"\n") < 3):
                await asyncio.sleep(0.02)
            assert sum(t.done() for t in tasks) < len(tasks), "every call finished before the kill"
            os.kill(proc.pid, signal.SIGKILL)
            await asyncio.gather(*tasks)

    asyncio.run(hammer())
    proc.wait(10)
    for name in ("calls.jsonl", "bodies.jsonl"):
        lines = (tmp_path / "rec" / name).read_text().splitlines()
        assert lines, name
        for line in lines:
            json.loads(line)


def test_a_call_in_flight_when_the_relay_stops_is_recorded_cut(fake_model, nullius_env, tmp_path):
    fake_model.use({"default": {"text": "slow words " * 40, "chunk": 5, "pace": 0.5}})  # a minute of stream
    relay = RelayThread(fake_model.openai_base_url, tmp_path / "relay", nullius_env)
    first = threading.Event()

    def caller():
        client = oa(relay)
        try:
            for _ in client.chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}], stream=True):
                first.set()
        except openai.APIError:
            pass  # its stream breaks when the relay stops

    thread = threading.Thread(target=caller, daemon=True)
    thread.start()
    assert first.wait(60), "the stream never began"
    relay.close()
    thread.join(60)
    [record] = [json.loads(line) for line in (tmp_path / "relay" / "u0000" / "calls.jsonl").read_text().splitlines()]
    assert record["status"] == 200 and record["cut"] == "the relay stopped before the reply ended"
    assert record["reply_bytes"] > 0
