"""A unit whose agent's place is gone while it ran: a backend's node lost (the ray backend's killed node)."""

from __future__ import annotations


class UnitLost(Exception):
    """Raised by a backend's room: the trial is recorded as `NodeLostError` (failures.py) and `--resume` runs it again."""

    kind = "NodeLostError"

