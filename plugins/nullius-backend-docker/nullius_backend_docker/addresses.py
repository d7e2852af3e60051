"""Which addresses mean this machine, and a licence server's host:port."""

from __future__ import annotations

LOOPBACK = {"127.0.0.1", "localhost", "::1", "[::1]"}
MACHINE = LOOPBACK | {"host.docker.internal"}


def licence_server(name: str, value: str) -> tuple[str, int]:
    """A licence server's host and port, from its `host:port`; a ValueError names what is wrong."""
    host, sep, port = value.strip().rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"the licence server {name} is not host:port: {value!r}")
    return host.strip("[]"), int(port)
