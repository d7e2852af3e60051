"""An agent as a local process group: the core's `GroupProcess` (nullius_core.processes.group), as the local backend starts it."""

from nullius_core.processes import GroupProcess

LocalProcess = GroupProcess

__all__ = ["LocalProcess"]
