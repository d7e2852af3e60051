"""OpenAI Chat Completions: usage in the final chunk, asked for when the caller did not ask."""

from __future__ import annotations

from typing import Any

from nullius_core.contracts.model_api import Facts, Sent, Usage, error_of
from nullius_core.contracts.sse import Event
from nullius_plugins.model_apis.common import count, dig, loads, served_by, text_of, with_model


def usage_of(obj: Any) -> Usage:
    usage = obj if isinstance(obj, dict) else {}
    return Usage(
        input=count(usage.get("prompt_tokens")),
        cached_input=count(dig(usage, "prompt_tokens_details", "cached_tokens")),
        cache_write=count(dig(usage, "prompt_tokens_details", "cache_write_tokens")),
        output=count(usage.get("completion_tokens")),
        reasoning=count(dig(usage, "completion_tokens_details", "reasoning_tokens")),
    )


def _read(obj: Any, facts: Facts) -> None:
    if not isinstance(obj, dict):
        return
    if isinstance(obj.get("usage"), dict):
        facts.usage = usage_of(obj["usage"])
    facts.served_by = served_by(obj, facts.served_by)
    facts.model = text_of(obj.get("model")) or facts.model
    if obj.get("error") is not None:
        facts.error = error_of(obj["error"])
    for choice in obj.get("choices") or []:
        if isinstance(choice, dict):
            facts.end = text_of(choice.get("finish_reason")) or facts.end
            if choice.get("error") is not None and facts.error is None:
                facts.error = error_of(choice["error"])
            said = choice.get("message") if isinstance(choice.get("message"), dict) else choice.get("delta")
            if isinstance(said, dict) and (text_of(said.get("content")) or said.get("tool_calls")):
                facts.content = True


class ChatTap:
    def __init__(self, sent: Sent):
        self.facts = Facts()
        self._hide_usage = sent.asked_usage

    def event(self, event: Event) -> bool:
        if event.data is None or event.data == b"[DONE]":
            return True
        chunk = loads(event.data)
        _read(chunk, self.facts)
        # the usage chunk the relay asked for: the caller did not, so it never sees it
        return not (self._hide_usage and isinstance(chunk, dict) and chunk.get("choices") == [] and "usage" in chunk)


class ChatCompletions:
    name = "openai-chat"
    provider_api = "openai"
    routing_facts = True  # a pinned call asks who served it: the reply's last chunk (or body) says

    def send(self, body: dict[str, Any], model: str | None, routing: dict[str, Any] | None) -> Sent:
        out = with_model(body, model, routing)
        asked = False
        if out.get("stream") is True and not dig(out, "stream_options", "include_usage"):
            out["stream_options"] = {**(out.get("stream_options") or {}), "include_usage": True}
            asked = True
        return Sent(body=out, asked_usage=asked)

    def reply(self, body: bytes) -> Facts:
        facts = Facts()
        _read(loads(body), facts)
        return facts

    def tap(self, sent: Sent) -> ChatTap:
        return ChatTap(sent)
