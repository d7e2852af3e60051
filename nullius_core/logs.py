"""structlog, set up once: readable lines on stderr by default, JSON lines with --log-format json.

structlog is imported when the first line is logged, never before: importing
it brings in rich (structlog.dev's pretty-printer, a tenth of a second or
more), which most commands never need since they log nothing. A command
says how lines look at its start (`configure_logging()`, main.py); the
settings are applied when structlog is first imported through this module
(`get_logger()`'s loggers), or at once if it is imported already. A session
applies them after loading its plugins (`settle()`), so a plugin that
imported structlog itself writes in the command's format too.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from typing import Any

# (format, verbosity) said by configure_logging() and not yet applied to structlog.
_pending: tuple[str, int] | None = None


def configure_logging(fmt: str = "console", verbosity: int = 0) -> None:
    """Log lines in `fmt` at the level `verbosity` says, once structlog is imported (now, if it is)."""
    global _pending
    _pending = (fmt, verbosity)
    if "structlog" in sys.modules:
        settle()


def settle() -> None:
    """Apply the pending settings if structlog is imported already (a plugin imported it)."""
    if _pending is not None and "structlog" in sys.modules:
        _structlog()


def _structlog() -> Any:
    """structlog, imported, with the pending settings applied first."""
    global _pending
    import structlog

    if _pending is not None:
        fmt, verbosity = _pending
        _pending = None
        _apply(structlog, fmt, verbosity)
    return structlog


def _apply(structlog: Any, fmt: str, verbosity: int) -> None:
    level = 30 - 10 * min(verbosity, 2)  # logging.WARNING, INFO, DEBUG: the numbers, without importing logging
    if fmt == "json":
        renderer = structlog.processors.JSONRenderer()
    else:
        renderer = structlog.dev.ConsoleRenderer(colors=sys.stderr.isatty())
    structlog.configure(
        processors=[
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(level),
        logger_factory=structlog.PrintLoggerFactory(file=sys.stderr),
        cache_logger_on_first_use=False,
    )


@contextlib.contextmanager
def kept() -> Iterator[None]:
    """Logging as it was before the block, after it (a command run in a test's process configures it for itself)."""
    global _pending
    saved_pending = _pending
    saved = sys.modules["structlog"].get_config() if "structlog" in sys.modules else None
    try:
        yield
    finally:
        _pending = saved_pending
        if saved is not None:
            sys.modules["structlog"].configure(**saved)
        elif "structlog" in sys.modules:
            sys.modules["structlog"].reset_defaults()


class _Logger:
    """structlog's logger of that name, made (and structlog imported and configured) on first use."""

    __slots__ = ("_logger", "_name")

    def __init__(self, name: str) -> None:
        self._name = name
        self._logger: Any = None

    def __getattr__(self, attr: str) -> Any:
        if self._logger is None:
            self._logger = _structlog().get_logger(self._name)
        return getattr(self._logger, attr)


def get_logger(name: str) -> Any:
    return _Logger(name)
