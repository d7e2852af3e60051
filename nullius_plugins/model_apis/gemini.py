"""The Gemini API: the model in the path, usage in `usageMetadata` (each streamed chunk's is the total so far).

`generateContent` answers one GenerateContentResponse; `streamGenerateContent`
with `?alt=sse` streams them as `data:` events (without it, one JSON array of
them); `countTokens` answers `{"totalTokens": n}`, which is no model call's
usage. The relay puts the run's model in the path (`PathMatch.sent_path`): the
body names no model, so it goes as it came.
"""

from __future__ import annotations

from typing import Any

from nullius_core.contracts.model_api import Facts, Sent, Usage, error_of
from nullius_core.contracts.sse import Event
from nullius_plugins.model_apis.common import count, loads, text_of

PATHS = (
    "/v1beta/models/{model}:generateContent",
    "/v1beta/models/{model}:streamGenerateContent",
    "/v1beta/models/{model}:countTokens",
)


def usage_of(obj: Any) -> Usage:
    """promptTokenCount counts cached content; the output is the candidates' tokens and the thoughts' (reasoning)."""
    usage = obj if isinstance(obj, dict) else {}
    prompt, tool_prompt = count(usage.get("promptTokenCount")), count(usage.get("toolUsePromptTokenCount"))
    candidates, thoughts = count(usage.get("candidatesTokenCount")), count(usage.get("thoughtsTokenCount"))
    return Usage(
        input=None if prompt is None and tool_prompt is None else (prompt or 0) + (tool_prompt or 0),
        cached_input=count(usage.get("cachedContentTokenCount")),
        output=None if candidates is None and thoughts is None else (candidates or 0) + (thoughts or 0),
        reasoning=thoughts,
    )


def _error(obj: dict[str, Any]) -> dict[str, Any] | None:
    """Google's `{"error": {code, message, status}}`, status as the type."""
    error = obj.get("error")
    if not isinstance(error, dict):
        return error_of(error) if error is not None else None
    return error_of({**error, "type": error.get("status")} if "status" in error else error)


def _read(obj: Any, facts: Facts) -> None:
    if not isinstance(obj, dict):
        return
    if isinstance(obj.get("usageMetadata"), dict):
        facts.usage = usage_of(obj["usageMetadata"])
    facts.model = text_of(obj.get("modelVersion")) or facts.model
    if obj.get("error") is not None:
        facts.error = _error(obj)
    for candidate in obj.get("candidates") or []:
        if isinstance(candidate, dict):
            facts.end = text_of(candidate.get("finishReason")) or facts.end
            parts = (candidate.get("content") or {}).get("parts") if isinstance(candidate.get("content"), dict) else None
            facts.content = facts.content or any(
                isinstance(p, dict) and (text_of(p.get("text")) and not p.get("thought") or p.get("functionCall")) for p in parts or [])
    blocked = obj.get("promptFeedback")
    if isinstance(blocked, dict) and text_of(blocked.get("blockReason")):
        facts.end = f"blocked:{blocked['blockReason']}"


class GeminiTap:
    def __init__(self) -> None:
        self.facts = Facts()

    def event(self, event: Event) -> bool:
        _read(loads(event.data), self.facts)
        return True


class Gemini:
    name = "gemini"
    provider_api = "gemini"

    def send(self, body: dict[str, Any], model: str | None, routing: dict[str, Any] | None) -> Sent:
        return Sent(body=body)  # the model is the path's; Google routes to no other provider

    def reply(self, body: bytes) -> Facts:
        facts = Facts()
        obj = loads(body)
        for item in obj if isinstance(obj, list) else [obj]:  # a stream asked without alt=sse is one array
            _read(item, facts)
        return facts

    def tap(self, sent: Sent) -> GeminiTap:
        return GeminiTap()
