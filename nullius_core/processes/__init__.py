"""The run's processes: each started with the run's marker, none outliving the run, its output kept capped.

`lifetime` starts and ends them (and `watcher`, a process of its own, ends
what is left when the run ends, even SIGKILLed); `proctable` reads the
machine's process table; `capped` keeps a process's output to its head and
tail; `group` is an agent as a process group of the run (`GroupProcess`); `MARKER` is the
variable that carries a launch's marker. A plugin imports what it needs from this package.
"""

from nullius_core.processes.capped import CappedCopy, CappedLog
from nullius_core.processes.lifetime import Lifetime, current, end_process, kill_process, start_process
from nullius_core.processes.proctable import MARKER
from nullius_core.processes.group import GroupProcess  # noqa: E402 - after lifetime, which it uses

__all__ = ["MARKER", "CappedCopy", "CappedLog", "GroupProcess", "Lifetime", "current", "end_process", "kill_process", "start_process"]
