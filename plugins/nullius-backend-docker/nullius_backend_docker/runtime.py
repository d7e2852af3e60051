"""An agent's runtime in a task's own image: the base image's Node, read-only under /opt/nullius.

A task's image may have no Node, or another one; an agent from npm is
started by the base's Node, named in its start command, while PATH keeps
the image's own `node` and `python3` first for the task's work. A Python
agent's environment brings its own interpreter (mounted at its path here,
as its `pyvenv.cfg` names it). Either is tried once in the image before the
agent (box.py): one that cannot start there is the unit's setup error.
"""

from __future__ import annotations

from pathlib import Path

NODE_DIR = "/opt/nullius/node"
NODE = f"{NODE_DIR}/bin/node"


def _shebang(path: Path) -> str:
    try:
        with open(path, "rb") as f:
            first = f.readline(256)
    except OSError:
        return ""
    return first.decode(errors="replace") if first.startswith(b"#!") else ""


def wants_node(argv: list[str]) -> bool:
    """The agent is started by Node: `node ...`, or a script whose first line calls node."""
    if not argv:
        return False
    first = Path(argv[0])
    return first.name in ("node", "nodejs") or "node" in _shebang(first)


def with_node(argv: list[str]) -> list[str]:
    """The start command naming the base's Node (a script's link followed to the file it points at)."""
    first = Path(argv[0])
    if first.name in ("node", "nodejs"):
        return [NODE, *argv[1:]]
    return [NODE, str(first.resolve()), *argv[1:]]
