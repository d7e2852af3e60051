"""The relay passes the Gemini API (the model in the path, the key as x-goog-api-key) to the fake model, which speaks it.

Called with raw aiohttp requests of the exact wire shape Gemini CLI sends
(`@google/genai`: POST /v1beta/models/{model}:streamGenerateContent?alt=sse,
the key in x-goog-api-key), so what is checked is the bytes on the wire; and
through Google's own Python SDK (google-genai), which must read what comes back.
"""

from __future__ import annotations

import asyncio
import json

import aiohttp
from relay_helpers import KEY, RelayThread

USAGE = {"input_tokens": 100, "cached_tokens": 40, "output_tokens": 20, "reasoning_tokens": 5}
ASK = {"contents": [{"role": "user", "parts": [{"text": "hi"}]}], "generationConfig": {"temperature": 0, "thinkingConfig": {"thinkingBudget": 128}}}


def _relay(fake_model, env, tmp_path):
    return RelayThread(fake_model.base_url, tmp_path / "relay", env, provider="gemini", model="run-model", call_seconds=30)


def _post(url: str, body: dict, headers: dict) -> tuple[int, str, bytes]:
    async def go():
        async with aiohttp.ClientSession() as http, http.post(url, json=body, headers=headers) as r:
            return r.status, r.headers.get("Content-Type", ""), await r.read()

    return asyncio.run(go())


def _sse(raw: bytes) -> list[dict]:
    return [json.loads(line[6:]) for line in raw.decode().splitlines() if line.startswith("data: ")]


def test_gemini_calls_go_as_the_runs_model_with_the_relays_key_and_are_metered(fake_model, nullius_env, tmp_path):
    relay = _relay(fake_model, nullius_env, tmp_path)
    try:
        fake_model.use({"default": {"text": "the reply", "usage": USAGE, "chunk": 3}})
        base, me = relay.url() + "/v1beta/models/asked-model", {"x-goog-api-key": relay.token()}
        status, _, whole = _post(base + ":generateContent", ASK, me)
        assert status == 200, whole
        assert json.loads(whole)["candidates"][0]["content"]["parts"] == [{"text": "the reply"}]
        status, kind, streamed = _post(base + ":streamGenerateContent?alt=sse&key=" + relay.token(), ASK, me)
        chunks = _sse(streamed)
        assert status == 200 and kind.startswith("text/event-stream") and len(chunks) == 3
        assert "".join(p["text"] for c in chunks for p in c["candidates"][0]["content"]["parts"]) == "the reply"
        assert chunks[-1]["candidates"][0]["finishReason"] == "STOP" and "usageMetadata" not in chunks[0]
        status, _, counted = _post(base + ":countTokens", {"contents": ASK["contents"]}, me)
        assert status == 200 and json.loads(counted)["totalTokens"] > 0

        records = relay.records()
        assert [(r["api"], r["stream"], r["path"]) for r in records] == [
            ("gemini", False, "/v1beta/models/asked-model:generateContent"),
            ("gemini", True, "/v1beta/models/asked-model:streamGenerateContent"),
            ("gemini", False, "/v1beta/models/asked-model:countTokens"),
        ]
        for record in records:
            assert record["status"] == 200 and record["model_asked"] == "asked-model" and record["model_sent"] == "run-model"
        for record in records[:2]:  # promptTokenCount counts the cached; the output the thoughts
            assert record["usage"] == {"input": 100, "cached_input": 40, "output": 20, "reasoning": 5}, record
            assert record["end"] == "STOP" and record["model_served"] == "run-model"
        assert records[2]["usage"] == {}  # a token count is no model call: nothing used
        assert "x-goog-api-key" in records[0]["key_headers"] and records[0]["request"]["reasoning_effort"] == 128

        seen = fake_model.requests
        assert [r.path for r in seen] == [f"/v1beta/models/run-model:{m}" for m in ("generateContent", "streamGenerateContent", "countTokens")]
        assert seen[1].query == {"alt": "sse"}  # the caller's ?key= is its token: never sent on
        for request in seen:
            assert request.headers["x-goog-api-key"] == KEY and "authorization" not in request.headers
            assert relay.token() not in json.dumps(dict(request.headers)) and request.body == (ASK if request.api == "gemini" else {"contents": ASK["contents"]})
        text = relay.record_text()
        assert relay.token() not in text and KEY not in text
    finally:
        relay.close()


def test_gemini_callers_need_their_token_and_errors_pass_as_google_sends_them(fake_model, nullius_env, tmp_path):
    relay = _relay(fake_model, nullius_env, tmp_path)
    try:
        url = relay.url() + "/v1beta/models/m:generateContent"
        assert _post(url, ASK, {"x-goog-api-key": "nlr-not-a-token"})[0] == 401
        assert _post(url + "?key=" + relay.token(), ASK, {})[0] == 401  # a key in the query is not a route's token
        assert _post(relay.url() + "/v1beta/models/m:embedContent", ASK, {"x-goog-api-key": relay.token()})[0] == 404
        assert fake_model.requests == []

        fake_model.use({"default": {"fault": {"status": 429}}})
        status, _, body = _post(url, ASK, {"x-goog-api-key": relay.token()})
        assert status == 429 and json.loads(body)["error"]["status"] == "RESOURCE_EXHAUSTED"
        fake_model.use({"default": {"text": "cut short", "fault": {"error": {"after": 1, "message": "overloaded"}}}})
        status, _, raw = _post(url.replace(":generateContent", ":streamGenerateContent?alt=sse"), ASK, {"x-goog-api-key": relay.token()})
        assert status == 200 and _sse(raw)[-1]["error"]["message"] == "overloaded"
        records = relay.records()
        assert records[-2]["status"] == 429
        assert records[-1]["error"] == {"code": 500, "type": "INTERNAL", "message": "overloaded"}, records[-1]
    finally:
        relay.close()


def test_googles_genai_sdk_reads_the_relayed_fake_model(fake_model, nullius_env, tmp_path):
    """The real google-genai SDK, pointed at the route as Gemini CLI's @google/genai is: text, a function call, a stream, a count."""
    from google import genai
    from google.genai import types

    relay = _relay(fake_model, nullius_env, tmp_path)
    try:
        fake_model.use({"rules": [
            {"when": {"after_tool_result": "sunny"}, "reply": {"text": "It is sunny.", "usage": USAGE}},
            {"when": {"tool": "get_weather"}, "reply": {"tool_calls": [{"name": "get_weather", "arguments": {"city": "Paris"}}]}},
        ], "default": {"text": "the reply", "chunk": 4}})
        client = genai.Client(api_key=relay.token(), http_options=types.HttpOptions(base_url=relay.url()))
        assert client.models.generate_content(model="asked-model", contents="hi").text == "the reply"
        assert "".join(c.text or "" for c in client.models.generate_content_stream(model="asked-model", contents="hi")) == "the reply"
        assert client.models.count_tokens(model="asked-model", contents="hi").total_tokens >= 1

        weather = types.Tool(function_declarations=[types.FunctionDeclaration(name="get_weather", parameters={"type": "OBJECT", "properties": {"city": {"type": "STRING"}}})])
        config = types.GenerateContentConfig(tools=[weather], automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True))
        asked = client.models.generate_content(model="asked-model", contents="weather in Paris?", config=config)
        call = asked.function_calls[0]
        assert (call.name, call.args) == ("get_weather", {"city": "Paris"})
        history = [types.Content(role="user", parts=[types.Part(text="weather in Paris?")]), asked.candidates[0].content,
                   types.Content(role="user", parts=[types.Part.from_function_response(name="get_weather", response={"output": "sunny"})])]
        answered = client.models.generate_content(model="asked-model", contents=history, config=config)
        assert answered.text == "It is sunny." and answered.usage_metadata.thoughts_token_count == 5

        records = relay.records()
        assert [(r["stream"], r["model_asked"], r["model_sent"]) for r in records] == [(False, "asked-model", "run-model"), (True, "asked-model", "run-model"),
                                                                                       (False, "asked-model", "run-model"), (False, "asked-model", "run-model"),
                                                                                       (False, "asked-model", "run-model")]
        assert records[-1]["usage"] == {"input": 100, "cached_input": 40, "output": 20, "reasoning": 5}
        assert all(r.headers["x-goog-api-key"] == KEY and "/run-model:" in r.path for r in fake_model.requests)
    finally:
        relay.close()
