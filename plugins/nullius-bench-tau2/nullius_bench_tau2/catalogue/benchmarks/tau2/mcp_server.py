"""The domain's tools over MCP (stdio, JSON-RPC 2.0 a line): it executes nothing.

Every tools/list and tools/call goes to the driver's socket (TAU2_AT, with
the unit's TAU2_TICKET), where the call becomes the agent's next message to
tau2's loop; the loop executes it in tau2's environment and its answer comes
back as the call's result. The standard library alone, so an agent's session
starts it in a blink: tau2 itself takes seconds to import.
"""

from __future__ import annotations

import json
import os
import socket
import sys

PROTOCOLS = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")


class Driver:
    """The driver's socket, one connection held for the session."""

    def __init__(self, path: str, token: str) -> None:
        self.path, self.token = path, token
        self.stream = None

    def ask(self, request: dict) -> dict:
        if self.stream is None:
            conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            conn.connect(self.path)
            self.stream = conn.makefile("rwb")
        self.stream.write((json.dumps({"token": self.token, **request}) + "\n").encode())
        self.stream.flush()
        line = self.stream.readline()
        if not line:
            self.stream = None
            raise ConnectionError("the driver closed the connection")
        return json.loads(line)


def answer(driver: Driver, domain: str, message: dict) -> dict | None:
    """The reply to one JSON-RPC message; None for a notification."""
    method, params, ident = message.get("method"), message.get("params") or {}, message.get("id")
    if ident is None:
        return None  # notifications (initialized, cancelled) want no reply
    if method == "initialize":
        asked = params.get("protocolVersion")
        result = {"protocolVersion": asked if asked in PROTOCOLS else PROTOCOLS[0],
                  "capabilities": {"tools": {"listChanged": False}},
                  "serverInfo": {"name": f"tau2-{domain}", "version": "26.3"}}
    elif method == "ping":
        result = {}
    elif method == "tools/list":
        got = driver.ask({"op": "tools"})
        if "tools" not in got:
            return _error(ident, -32603, got.get("text", "the driver listed no tools"))
        result = {"tools": got["tools"]}
    elif method == "tools/call":
        got = driver.ask({"op": "call", "name": params.get("name"), "arguments": params.get("arguments") or {}})
        result = {"content": [{"type": "text", "text": got.get("text", "")}], "isError": bool(got.get("error"))}
    else:
        return _error(ident, -32601, f"method not found: {method}")
    return {"jsonrpc": "2.0", "id": ident, "result": result}


def _error(ident, code: int, text: str) -> dict:
    return {"jsonrpc": "2.0", "id": ident, "error": {"code": code, "message": text}}


def main() -> int:
    at, token, domain = os.environ.get("TAU2_AT"), os.environ.get("TAU2_TICKET"), os.environ.get("TAU2_DOMAIN", "")
    if not at or not token:
        print("mcp_server.py: TAU2_AT and TAU2_TICKET must be set (the unit's setup gives them)", file=sys.stderr)
        return 2
    driver = Driver(at, token)
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            message = json.loads(line)
            reply = answer(driver, domain, message) if isinstance(message, dict) else \
                _error(None, -32600, "a request is a JSON object")
        except ValueError:
            reply = _error(None, -32700, "parse error: the line is not JSON")
        except OSError as exc:
            reply = _error(message.get("id"), -32603, f"the driver cannot be reached: {exc}")
        if reply is not None:
            sys.stdout.write(json.dumps(reply) + "\n")
            sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
