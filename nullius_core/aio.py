"""Running a coroutine on the fastest event loop this machine has (uvloop where installed)."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


def run(coro: Coroutine[Any, Any, T]) -> T:
    try:
        import uvloop
    except ImportError:  # not on this platform: asyncio's own loop does the same work, slower
        return asyncio.run(coro)
    return uvloop.run(coro)
