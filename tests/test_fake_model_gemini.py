"""The fake model speaks the Gemini API: text and functionCall parts, functionResponse parts read back, SSE, usage, errors."""

from __future__ import annotations

import json
from typing import Any

import httpx2 as httpx

WEATHER = [{"functionDeclarations": [{"name": "get_weather", "parameters": {"type": "OBJECT"}}]}]
TOOL_REPLY = {"text": "Let me look.", "tool_calls": [{"name": "get_weather", "arguments": {"city": "Paris", "days": 3}, "id": "w1"}]}


def post(fake: Any, path: str, body: dict[str, Any]) -> httpx.Response:
    return httpx.post(fake.base_url + path, json=body, timeout=120)


def said(text: str) -> dict[str, Any]:
    return {"role": "user", "parts": [{"text": text}]}


def chunks(response: httpx.Response) -> list[dict[str, Any]]:
    assert response.headers["content-type"].startswith("text/event-stream")
    return [json.loads(line[6:]) for line in response.text.splitlines() if line.startswith("data: ")]


def test_gemini_text_tool_calls_tool_results_streams_and_usage(fake_model):
    fake_model.use({"rules": [
        {"when": {"after_tool_result": "sunny"}, "reply": {"text": "It is sunny.", "usage": {"input_tokens": 50, "cached_tokens": 10,
                                                                                              "output_tokens": 9, "reasoning_tokens": 4}}},
        {"when": {"user_contains": "weather", "tool": "get_weather", "api": "gemini"}, "reply": TOOL_REPLY},
    ]})
    ask = {"contents": [said("weather?")], "tools": WEATHER, "systemInstruction": {"parts": [{"text": "be brief"}]}}
    whole = post(fake_model, "/v1beta/models/gemini-x:generateContent", ask).json()
    parts = whole["candidates"][0]["content"]["parts"]
    assert parts == [{"text": "Let me look."}, {"functionCall": {"id": "w1", "name": "get_weather", "args": {"city": "Paris", "days": 3}}}]
    assert whole["candidates"][0]["finishReason"] == "STOP" and whole["modelVersion"] == "gemini-x"

    streamed = chunks(post(fake_model, "/v1beta/models/gemini-x:streamGenerateContent?alt=sse", ask))
    calls = [p["functionCall"] for c in streamed for p in c["candidates"][0]["content"]["parts"] if "functionCall" in p]
    assert calls == [parts[1]["functionCall"]]  # a call comes whole, in one chunk
    assert "".join(p.get("text", "") for c in streamed for p in c["candidates"][0]["content"]["parts"]) == "Let me look."
    assert [("usageMetadata" in c, c["candidates"][0].get("finishReason")) for c in streamed][-1] == (True, "STOP")
    assert not any("usageMetadata" in c for c in streamed[:-1])

    after = {"contents": [said("weather?"), {"role": "model", "parts": parts},
                          {"role": "user", "parts": [{"functionResponse": {"id": "w1", "name": "get_weather", "response": {"output": "sunny, 21C"}}}]}],
             "tools": WEATHER}
    answered = post(fake_model, "/v1beta/models/gemini-x:generateContent", after).json()
    assert answered["candidates"][0]["content"]["parts"] == [{"text": "It is sunny."}]
    assert answered["usageMetadata"] == {"promptTokenCount": 50, "candidatesTokenCount": 5, "totalTokenCount": 59, "cachedContentTokenCount": 10,
                                         "thoughtsTokenCount": 4, "promptTokensDetails": [{"modality": "TEXT", "tokenCount": 50}]}
    as_array = post(fake_model, "/v1beta/models/gemini-x:streamGenerateContent", after)  # no alt=sse: one JSON array
    assert as_array.headers["content-type"].startswith("application/json") and as_array.json()[-1]["candidates"][0]["finishReason"] == "STOP"

    counted = post(fake_model, "/v1beta/models/gemini-x:countTokens", {"contents": [said("weather?")]}).json()
    assert list(counted) == ["totalTokens"] and counted["totalTokens"] >= 1
    seen = fake_model.requests
    assert [(r.api, r.call) for r in seen] == [("gemini", 1), ("gemini", 2), ("gemini", 3), ("gemini", 4), ("gemini_count_tokens", 4)]
    assert seen[0].rule == "rules[1]" and seen[2].rule == "rules[0]"


def test_gemini_errors_come_in_googles_shape(fake_model):
    missing = post(fake_model, "/v1beta/models/gemini-x:embedContent", {"contents": []})
    assert missing.status_code == 404 and missing.json()["error"]["status"] == "NOT_FOUND"
    fake_model.use({"default": {"fault": {"status": 429}}})
    limited = post(fake_model, "/v1beta/models/gemini-x:generateContent", {"contents": [said("hi")]})
    assert limited.status_code == 429 and limited.json() == {"error": {"code": 429, "message": "Error 429.", "status": "RESOURCE_EXHAUSTED"}}
    fake_model.use({"default": {"text": "abcdef", "chunk": 2, "fault": {"error": {"after": 2, "type": "UNAVAILABLE"}}}})
    broken = chunks(post(fake_model, "/v1beta/models/gemini-x:streamGenerateContent?alt=sse", {"contents": [said("hi")]}))
    assert len(broken) == 3 and broken[-1]["error"]["status"] == "UNAVAILABLE"
