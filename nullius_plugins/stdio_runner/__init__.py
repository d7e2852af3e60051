"""The standard's runner: a driver (or capability) process speaking JSON lines over stdio.

One request line in, one reply line out. The process starts as every
process of a run does (`lifetime.start_process`: a session of its own, the
run's marker), so that ending it ends whatever it started; its stderr is read
all the time (never an unread pipe) and handed to the current unit's log,
capped (its head and tail, `nullius_core.processes.capped`).
"""

from __future__ import annotations

from typing import Any

from nullius_core import hookimpl
from nullius_core.plugins import RunnerRegistry, RunnerSpec


def _driver(launch: Any) -> Any:
    # driver.py brings in asyncio and the process lifetime (the job records): only a run needs them.
    from nullius_plugins.stdio_runner.driver import StdioDriver

    return StdioDriver(launch)


def __getattr__(name: str) -> Any:
    # `from nullius_plugins.stdio_runner import StdioDriver`, as before driver.py held it.
    if name in ("StdioDriver", "LINE_LIMIT"):
        from nullius_plugins.stdio_runner import driver

        return getattr(driver, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@hookimpl
def nullius_register_runners(registry: RunnerRegistry) -> None:
    for kind in ("driver", "capability"):
        registry.add(
            RunnerSpec(
                name="stdio",
                summary="A process speaking JSON lines over stdio: one request in, one reply out.",
                kind=kind,
                factory=_driver,
            )
        )
