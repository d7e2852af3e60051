"""The unit's folders as the driver names them and as the node does: its agent's command, environment and ACP lines.

The agent works in the node's own copy of the workspace and HOME. What the
driver sends it names the driver's paths (the ACP session's `cwd`, a slot
filled into its command); what it says back names the node's. Each line is
rewritten on its way, the longest path first, so the driver's records read
as a local run's.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping


class PathMap:
    def __init__(self, pairs: Iterable[tuple[str, str]]):
        # the longest first: a home inside the workspace's folder is mapped as itself
        ordered = sorted(((d.rstrip("/"), n.rstrip("/")) for d, n in pairs), key=lambda p: len(p[0]), reverse=True)
        self._to_node = [(d.encode(), n.encode()) for d, n in ordered]
        self._to_driver = sorted(((n, d) for d, n in self._to_node), key=lambda p: len(p[0]), reverse=True)

    def pairs(self) -> list[tuple[str, str]]:
        return [(d.decode(), n.decode()) for d, n in self._to_node]

    def to_node(self, data: bytes) -> bytes:
        for driver, node in self._to_node:
            if driver in data:
                data = data.replace(driver, node)
        return data

    def to_driver(self, data: bytes) -> bytes:
        for node, driver in self._to_driver:
            if node in data:
                data = data.replace(node, driver)
        return data

    def text(self, value: str) -> str:
        return self.to_node(value.encode()).decode()

    def env(self, env: Mapping[str, str]) -> dict[str, str]:
        return {k: self.text(v) for k, v in env.items()}
