"""OpenAI Responses: usage in the terminal event (`response.completed`, `.incomplete`, `.failed`)."""

from __future__ import annotations

from typing import Any

from nullius_core.contracts.model_api import Facts, Sent, Usage, error_of
from nullius_core.contracts.sse import Event
from nullius_plugins.model_apis.common import count, dig, loads, selected_provider, served_by, text_of, with_model

TERMINAL = {b"response.completed", b"response.incomplete", b"response.failed"}


def usage_of(obj: Any) -> Usage:
    usage = obj if isinstance(obj, dict) else {}
    return Usage(
        input=count(usage.get("input_tokens")),
        cached_input=count(dig(usage, "input_tokens_details", "cached_tokens")),
        output=count(usage.get("output_tokens")),
        reasoning=count(dig(usage, "output_tokens_details", "reasoning_tokens")),
    )


def _read_response(obj: Any, facts: Facts) -> None:
    if not isinstance(obj, dict):
        return
    if isinstance(obj.get("usage"), dict):
        facts.usage = usage_of(obj["usage"])
    status = text_of(obj.get("status"))
    reason = text_of(dig(obj, "incomplete_details", "reason"))
    facts.end = f"{status}:{reason}" if status and reason else status or facts.end
    facts.model = text_of(obj.get("model")) or facts.model
    facts.served_by = served_by(obj, facts.served_by)
    if obj.get("error") is not None:
        facts.error = error_of(obj["error"])
    facts.content = facts.content or any(_said(item) for item in obj.get("output") or [])


def _said(item: Any) -> bool:
    """An output item that is text or a tool call (reasoning alone is neither)."""
    if not isinstance(item, dict) or item.get("type") == "reasoning":
        return False
    if item.get("type") == "message":
        return any(isinstance(part, dict) and text_of(part.get("text")) for part in item.get("content") or [])
    return True


class ResponsesTap:
    def __init__(self) -> None:
        self.facts = Facts()

    def event(self, event: Event) -> bool:
        name = event.name
        if name in TERMINAL:
            data = loads(event.data)
            _read_response(dig(data, "response"), self.facts)
            self._routing_facts(data)
        elif name == b"error":
            data = loads(event.data)
            self.facts.error = error_of(data.get("error", data) if isinstance(data, dict) else None)
        elif name is None and event.data and b'"response.' in event.data:
            # a stream without event names: the type is in the data
            data = loads(event.data)
            if isinstance(data, dict) and str(data.get("type", "")).encode() in TERMINAL:
                _read_response(data.get("response"), self.facts)
                self._routing_facts(data)
        return True

    def _routing_facts(self, data: Any) -> None:
        """OpenRouter may put its routing facts beside the terminal event's response rather than in it."""
        if isinstance(data, dict):
            self.facts.served_by = selected_provider(data.get("openrouter_metadata")) or self.facts.served_by


class Responses:
    name = "openai-responses"
    provider_api = "openai"
    routing_facts = True  # a pinned call asks who served it: the terminal event's response says

    def send(self, body: dict[str, Any], model: str | None, routing: dict[str, Any] | None) -> Sent:
        return Sent(body=with_model(body, model, routing))

    def reply(self, body: bytes) -> Facts:
        facts = Facts()
        _read_response(loads(body), facts)
        return facts

    def tap(self, sent: Sent) -> ResponsesTap:
        return ResponsesTap()
