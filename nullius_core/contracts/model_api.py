"""What the relay needs of a model API adapter (a plugin's, through `nullius_register_model_apis`).

An adapter knows one API shape: how to send a request as the run's model (and
ask for usage without changing what the caller receives), and how to read
the facts of a reply (usage, who served it, how it ended, an error under a
200) from a whole body or event by event from a stream.
"""

from __future__ import annotations

from typing import Any, Protocol

import attrs

from nullius_core.contracts.sse import Event


@attrs.define
class Usage:
    """Tokens as the provider reports them. Input includes cached input, as Harbor counts it."""

    input: int | None = None
    cached_input: int | None = None
    cache_write: int | None = None
    output: int | None = None
    reasoning: int | None = None

    def as_dict(self) -> dict[str, int]:
        return {k: v for k, v in attrs.asdict(self).items() if v is not None}


@attrs.define
class Facts:
    """What a reply says of itself."""

    usage: Usage = attrs.field(factory=Usage)
    served_by: str | None = None
    end: str | None = None
    error: dict[str, Any] | None = None
    model: str | None = None
    content: bool = False  # the reply carried text or a tool call (a reply cut by its output limit may carry neither)


@attrs.frozen
class Sent:
    """A request as the relay sends it, and what the relay changed in it."""

    body: dict[str, Any]
    asked_usage: bool = False  # the relay asked for usage the caller did not: hide it from the caller


class Tap(Protocol):
    """Reads a streamed reply event by event; says which events the caller gets."""

    facts: Facts

    def event(self, event: Event) -> bool:
        """Read one event; False when the caller must not get it (usage it did not ask for)."""


class ModelApi(Protocol):
    name: str
    provider_api: str  # "openai", "anthropic" or "gemini": which providers speak it
    # optional: True where a reply can say who served it when asked (a provider's `routing_facts` headers)
    # routing_facts: bool

    def send(self, body: dict[str, Any], model: str | None, routing: dict[str, Any] | None) -> Sent: ...

    def reply(self, body: bytes) -> Facts: ...

    def tap(self, sent: Sent) -> Tap: ...


def error_of(obj: Any) -> dict[str, Any] | None:
    """An error object's code, type and message alone: the rest may quote the request."""
    if not isinstance(obj, dict):
        return None
    kept = {k: obj[k] for k in ("code", "type", "message") if k in obj and isinstance(obj[k], (str, int))}
    return kept or {"message": "an error without code, type or message"}
