"""The run's processes: each started with the run's marker, none outliving the run, its output kept capped.

`lifetime` starts and ends them (and `watcher`, a process of its own, ends
what is left when the run ends, even SIGKILLed); `proctable` reads the
machine's process table; `capped` keeps a process's output to its head and
tail; `group` is an agent as a process group of the run (`GroupProcess`); `MARKER` is the
variable that carries a launch's marker. A plugin imports what it needs from this package.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from nullius_core.processes.capped import CappedCopy, CappedLog
    from nullius_core.processes.group import GroupProcess
    from nullius_core.processes.lifetime import Lifetime, current, end_process, kill_process, start_process
    from nullius_core.processes.proctable import MARKER

__all__ = ["MARKER", "CappedCopy", "CappedLog", "GroupProcess", "Lifetime", "current", "end_process", "kill_process", "start_process"]
_HOME = {"CappedCopy": "capped", "CappedLog": "capped", "current": "lifetime", "end_process": "lifetime",
         "kill_process": "lifetime", "start_process": "lifetime", "Lifetime": "lifetime", "GroupProcess": "group",
         "MARKER": "proctable"}


def __getattr__(name: str) -> Any:
    """The exported names, imported when first asked: the run's watcher (`python -m nullius_core.processes.watcher`) imports
    this package and needs none of them, and a process of its own for every run is 15 MB lighter without them."""
    if name in _HOME:
        return getattr(importlib.import_module(f"nullius_core.processes.{_HOME[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
