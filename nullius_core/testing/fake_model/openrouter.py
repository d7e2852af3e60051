"""The fake model as OpenRouter: one model served by several providers, a pin honoured or refused, routing facts.

A script's `openrouter` block turns it on. Each model is served by its
endpoints (a provider's slug and the name its replies give), in
OpenRouter's own order; a model it does not name is served by `default`.
A request's `provider` object is read as OpenRouter reads it: `order` tries
those slugs first (a slug without its `/variant` takes any variant), then
the rest unless `allow_fallbacks` is false, and a pin that names no endpoint
of the model is a 404 (`No allowed providers are available for the selected
model.`). Every Chat Completions reply (each chunk of a stream) names its
provider in `provider`, as OpenRouter's do; a request that sends the
routing-facts header (`X-OpenRouter-Metadata: enabled`, or its earlier
`X-OpenRouter-Experimental-Metadata`) gets `openrouter_metadata` with the
endpoints available and the one selected: at the top of a whole reply, in a
stream's last chunk, in a Responses object and its terminal event's
`response`. `ignore_pins` serves the first endpoint whatever the pin says:
a provider that did not hold one. An error under a 200 is the script's
`InBandError`, as for any provider.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any

import attrs

FACTS_HEADERS = ("x-openrouter-metadata", "x-openrouter-experimental-metadata")
NO_ENDPOINT = "No allowed providers are available for the selected model."


@attrs.frozen(kw_only=True)
class Endpoint:
    slug: str  # `anthropic`, `deepinfra/fp8`
    name: str  # what a reply says served it: `Anthropic`, `DeepInfra`, `Google`


def _default() -> list[Endpoint]:
    return [Endpoint(slug="fake", name="Fake")]


@attrs.frozen(kw_only=True)
class OpenRouter:
    models: dict[str, list[Endpoint]] = attrs.field(factory=dict)
    default: list[Endpoint] = attrs.field(factory=_default)
    ignore_pins: bool = False

    @classmethod
    def _invariants(cls, o: OpenRouter) -> Iterator[tuple[tuple[str, ...], str]]:
        if not o.default:
            yield ("default",), "must name at least one endpoint"
        for model, endpoints in o.models.items():
            if not endpoints:
                yield ("models", model), "must name at least one endpoint"

    def endpoints(self, model: str) -> list[Endpoint]:
        return self.models.get(model) or self.default

    def route(self, model: str, routing: Any) -> Endpoint | None:
        """The endpoint that serves a request, or None: its pin names no endpoint of the model and forbids fallbacks."""
        endpoints = self.endpoints(model)
        if self.ignore_pins or not isinstance(routing, dict) or not isinstance(routing.get("order"), list):
            return endpoints[0]
        for slug in routing["order"]:
            for endpoint in endpoints:
                if isinstance(slug, str) and slug in (endpoint.slug, endpoint.slug.split("/", 1)[0]):
                    return endpoint
        return endpoints[0] if routing.get("allow_fallbacks", True) is not False else None


def asks_facts(headers: Mapping[str, str]) -> bool:
    return any(str(headers.get(name, "")).lower() == "enabled" for name in FACTS_HEADERS)


def no_endpoint_body() -> dict[str, Any]:
    return {"error": {"message": NO_ENDPOINT, "code": 404}}


@attrs.frozen
class Served:
    """Who serves one reply, and whether its routing facts are asked."""

    endpoint: Endpoint
    endpoints: list[Endpoint]
    model: str
    facts: bool

    def metadata(self) -> dict[str, Any]:
        available = [{"model": self.model, "provider": e.name, "selected": e is self.endpoint} for e in self.endpoints]
        return {"attempt": 1, "endpoints": {"available": available, "total": len(available)}, "is_byok": False, "region": None,
                "requested": self.model, "strategy": "direct", "summary": f"available={len(available)}, selected={self.endpoint.name}"}

    def body(self, api: str, body: dict[str, Any]) -> dict[str, Any]:
        """A whole reply, dressed as OpenRouter's."""
        out = dict(body)
        if api == "chat":
            out["provider"] = self.endpoint.name
        if self.facts and api in ("chat", "responses"):
            out["openrouter_metadata"] = self.metadata()
        return out

    def events(self, api: str, events: list[bytes]) -> list[bytes]:
        """A stream, dressed as OpenRouter's: each chat chunk names its provider, the last one (or the terminal event) the facts."""
        if api == "chat":
            return self._chat_events(events)
        if api == "responses" and self.facts:
            return [self._terminal(e) for e in events]
        return events

    def _chat_events(self, events: list[bytes]) -> list[bytes]:
        chunks = [i for i, e in enumerate(events) if e.startswith(b"data: {")]
        out = list(events)
        for i in chunks:
            chunk = json.loads(events[i][len(b"data: "):])
            chunk["provider"] = self.endpoint.name
            if self.facts and i == chunks[-1]:
                chunk["openrouter_metadata"] = self.metadata()
            out[i] = b"data: " + json.dumps(chunk, separators=(",", ":")).encode() + b"\n\n"
        return out

    def _terminal(self, event: bytes) -> bytes:
        if not event.startswith(b"event: response.completed\n"):
            return event
        head, _, data = event.partition(b"\ndata: ")
        value = json.loads(data)
        if isinstance(value.get("response"), dict):
            value["response"]["openrouter_metadata"] = self.metadata()
        return head + b"\ndata: " + json.dumps(value, separators=(",", ":")).encode() + b"\n\n"
