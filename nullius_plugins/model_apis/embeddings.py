"""OpenAI Embeddings (`/embeddings`): a whole reply, its usage the prompt's tokens; a benchmark's own relay sends it (`needs.embeddings`)."""

from __future__ import annotations

from typing import Any

from nullius_core.contracts.model_api import Facts, Sent, Usage, error_of
from nullius_core.contracts.sse import Event
from nullius_plugins.model_apis.common import count, dig, loads, text_of, with_model


class EmbeddingsTap:
    """Embeddings are never streamed; an event is passed on as it comes."""

    def __init__(self) -> None:
        self.facts = Facts()

    def event(self, event: Event) -> bool:
        return True


class Embeddings:
    name = "openai-embeddings"
    provider_api = "openai"

    def send(self, body: dict[str, Any], model: str | None, routing: dict[str, Any] | None) -> Sent:
        return Sent(body=with_model(body, model, routing))

    def reply(self, body: bytes) -> Facts:
        facts = Facts()
        obj = loads(body)
        if isinstance(obj, dict):
            facts.usage = Usage(input=count(dig(obj, "usage", "prompt_tokens")), output=0 if dig(obj, "usage") else None)
            facts.model = text_of(obj.get("model"))
            facts.content = bool(obj.get("data"))
            facts.end = "embedded" if obj.get("data") else None
            if obj.get("error") is not None:
                facts.error = error_of(obj["error"])
        return facts

    def tap(self, sent: Sent) -> EmbeddingsTap:
        return EmbeddingsTap()
