"""structlog, set up once: readable lines on stderr by default, JSON lines with --log-format json.

Modules take their logger from `get_logger(name)`, which imports structlog
on its first use: importing structlog brings in rich's pretty-printer (a
tenth of a second), which a process that never configures logging, such as
a run's watcher, need not pay. A command configures it at its start (main.py),
so every plugin's own structlog logger writes in the command's format.
"""

from __future__ import annotations

import logging
import sys
from typing import Any


def configure_logging(fmt: str = "console", verbosity: int = 0) -> None:
    import structlog

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


class _Logger:
    """structlog's logger of that name, made (and structlog imported) on first use."""

    __slots__ = ("_logger", "_name")

    def __init__(self, name: str) -> None:
        self._name = name
        self._logger: Any = None

    def __getattr__(self, attr: str) -> Any:
        if self._logger is None:
            import structlog

            self._logger = structlog.get_logger(self._name)
        return getattr(self._logger, attr)


def get_logger(name: str) -> Any:
    return _Logger(name)
