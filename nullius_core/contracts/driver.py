"""What the run engine needs of a driver, whichever runner speaks to it.

The standard's runner (a bundled plugin) speaks JSON lines over stdio; a
plugin may register another (`nullius_register_runners`). The engine only
calls `call(op, request, timeout)` and reads `DriverError`s.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Literal, Protocol

import attrs

Failure = Literal["error", "timeout", "crashed", "garbage"]

# Seconds each op may take when the benchmark sets no limit of its own.
OP_SECONDS = {"units": 600.0, "setup": 120.0, "oracle": 120.0, "score": 60.0, "turn": 600.0, "answer": 3600.0, "produce": 600.0}


class DriverError(Exception):
    """An op that did not give a reply: its error, a timeout, a dead driver or a reply that is not JSON."""

    def __init__(self, op: str, failure: Failure, message: str, kind: str | None = None):
        self.op = op
        self.failure = failure
        self.message = message
        self.kind = kind  # the reply's own `exception_type`, when it named one (the engine keeps it if its table has it)
        super().__init__(f"driver op {op!r} {_verb(failure)}: {message}")


def _verb(failure: Failure) -> str:
    return {
        "error": "failed",
        "timeout": "timed out",
        "crashed": "lost its driver",
        "garbage": "got a reply that is not a JSON object",
    }[failure]


@attrs.frozen(kw_only=True)
class DriverLaunch:
    """How to start one driver process."""

    argv: list[str]
    env: Mapping[str, str]
    cwd: Path
    label: str = "driver"


class Driver(Protocol):
    """One running driver; serves one unit at a time."""

    async def call(self, op: str, request: Mapping[str, Any], timeout: float) -> dict[str, Any]: ...

    def log_to(self, sink: Callable[[bytes], None] | None) -> None:
        """Where the driver's stderr goes from now on (the current unit's log)."""

    async def close(self) -> None: ...

    @property
    def alive(self) -> bool: ...
