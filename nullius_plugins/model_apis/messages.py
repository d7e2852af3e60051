"""Anthropic Messages: input and cache counts in `message_start`, cumulative output in `message_delta`."""

from __future__ import annotations

from typing import Any

from nullius_core.contracts.model_api import Facts, Sent, Usage, error_of
from nullius_core.contracts.sse import Event
from nullius_plugins.model_apis.common import count, loads, text_of, with_model


def _merge(usage: Usage, obj: Any) -> Usage:
    """Take the last value seen of each count; input is the total, cache reads and writes included."""
    if not isinstance(obj, dict):
        return usage
    plain = count(obj.get("input_tokens"))
    read = count(obj.get("cache_read_input_tokens"))
    write = count(obj.get("cache_creation_input_tokens"))
    cached = read if read is not None else usage.cached_input
    written = write if write is not None else usage.cache_write
    base = plain if plain is not None else (None if usage.input is None else usage.input - (usage.cached_input or 0) - (usage.cache_write or 0))
    total = None if base is None else base + (cached or 0) + (written or 0)
    output = count(obj.get("output_tokens"))
    return Usage(
        input=total,
        cached_input=cached,
        cache_write=written,
        output=output if output is not None else usage.output,
        reasoning=usage.reasoning,
    )


class MessagesTap:
    def __init__(self) -> None:
        self.facts = Facts()

    def event(self, event: Event) -> bool:
        name = event.name
        if name == b"message_start":
            message = (loads(event.data) or {}).get("message")
            if isinstance(message, dict):
                self.facts.usage = _merge(self.facts.usage, message.get("usage"))
                self.facts.model = text_of(message.get("model")) or self.facts.model
        elif name == b"message_delta":
            data = loads(event.data) or {}
            self.facts.usage = _merge(self.facts.usage, data.get("usage"))
            delta = data.get("delta") if isinstance(data, dict) else None
            if isinstance(delta, dict):
                self.facts.end = text_of(delta.get("stop_reason")) or self.facts.end
        elif name == b"content_block_start":
            block = (loads(event.data) or {}).get("content_block")
            self.facts.content = self.facts.content or _said(block)
        elif name == b"content_block_delta" and not self.facts.content:
            delta = (loads(event.data) or {}).get("delta")
            self.facts.content = isinstance(delta, dict) and bool(text_of(delta.get("text")) or text_of(delta.get("partial_json")))
        elif name == b"error":
            data = loads(event.data)
            self.facts.error = error_of(data.get("error") if isinstance(data, dict) else None)
        return True


def _said(block: Any) -> bool:
    """A content block that is text or a tool call (thinking alone is neither)."""
    if not isinstance(block, dict):
        return False
    if block.get("type") == "text":
        return bool(text_of(block.get("text")))
    return block.get("type") in ("tool_use", "server_tool_use")


class Messages:
    name = "anthropic-messages"
    provider_api = "anthropic"

    def send(self, body: dict[str, Any], model: str | None, routing: dict[str, Any] | None) -> Sent:
        return Sent(body=with_model(body, model, routing))

    def reply(self, body: bytes) -> Facts:
        facts = Facts()
        obj = loads(body)
        if isinstance(obj, dict):
            if obj.get("type") == "error":
                facts.error = error_of(obj.get("error"))
            facts.usage = _merge(Usage(), obj.get("usage"))
            facts.end = text_of(obj.get("stop_reason"))
            facts.model = text_of(obj.get("model"))
            facts.content = any(_said(block) for block in obj.get("content") or [])
        return facts

    def tap(self, sent: Sent) -> MessagesTap:
        return MessagesTap()
