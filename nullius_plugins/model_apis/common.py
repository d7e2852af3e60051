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
