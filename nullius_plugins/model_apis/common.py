"""What the adapters share: reading JSON safely and whole numbers."""

from __future__ import annotations

from typing import Any

from nullius_core import jsonfast


def loads(data: bytes | None) -> Any:
    if not data:
        return None
    try:
        return jsonfast.loads(data)
    except (ValueError, UnicodeDecodeError):
        return None


def count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def dig(obj: Any, *keys: str) -> Any:
    for key in keys:
        if not isinstance(obj, dict):
            return None
        obj = obj.get(key)
    return obj


def text_of(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def with_model(body: dict[str, Any], model: str | None, routing: dict[str, Any] | None) -> dict[str, Any]:
    out = dict(body)
    if model is not None:
        out["model"] = model
    if routing is not None:
        out["provider"] = routing
    return out


def selected_provider(metadata: Any) -> str | None:
    """The provider of the endpoint OpenRouter's routing facts (`openrouter_metadata`) mark as selected, if any."""
    endpoints = dig(metadata, "endpoints", "available")
    for endpoint in endpoints if isinstance(endpoints, list) else []:
        if isinstance(endpoint, dict) and endpoint.get("selected") is True:
            return text_of(endpoint.get("provider"))
    return None


def served_by(obj: dict[str, Any], before: str | None) -> str | None:
    """Who served a reply: the endpoint its routing facts mark selected, else its own `provider` field, else what was read before."""
    return selected_provider(obj.get("openrouter_metadata")) or text_of(obj.get("provider")) or before
