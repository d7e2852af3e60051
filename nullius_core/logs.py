"""structlog, set up once: readable lines on stderr by default, JSON lines with --log-format json.

structlog is imported (and the command's format applied) only when a line
is first logged: importing it brings in rich, a tenth of a second that every
command and every run's watcher would pay though nearly none of them logs.
Modules take their logger from `get_logger(name)`.
"""

from __future__ import annotations

import logging
import sys
from typing import Any

_wanted: tuple[str, int] | None = None  # the format and verbosity the command asked for, not applied yet


def configure_logging(fmt: str = "console", verbosity: int = 0) -> None:
    """The command's logging: applied before the first line is logged (at once if structlog is in use already)."""
    global _wanted
    _wanted = (fmt, verbosity)
    if "structlog" in sys.modules:
        _apply()


def _apply() -> Any:
    global _wanted
    import structlog

    if _wanted is None:
        return structlog
    fmt, verbosity = _wanted
    _wanted = None
    level = logging.WARNING - 10 * min(verbosity, 2)
    renderer: structlog.typing.Processor
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
    return structlog


class _Logger:
    """structlog's logger of that name, made on first use."""

    __slots__ = ("_logger", "_name")

    def __init__(self, name: str) -> None:
        self._name = name
        self._logger: Any = None

    def __getattr__(self, attr: str) -> Any:
        if self._logger is None:
            self._logger = _apply().get_logger(self._name)
        return getattr(self._logger, attr)


def get_logger(name: str) -> Any:
    return _Logger(name)
