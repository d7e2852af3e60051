"""The socket the benchmark's MCP server passes every request to: the domain's tools, and the agent's calls.

The MCP server (mcp_server.py beside driver.py) executes nothing and knows
nothing of tau2: it lists what this socket lists and hands each tools/call
here, where it becomes the agent's next message to tau2's loop. One socket
per driver, in a 0700 folder of its own; each unit's setup makes a new
token, so a server left over from an earlier unit reaches nothing.

One JSON object per line each way:
  {"token", "op": "tools"}                        -> {"tools": [{name, description, inputSchema}]}
  {"token", "op": "call", "name", "arguments"}    -> {"text": "...", "error": bool}
  anything else                                   -> {"text": "<what was wrong>", "error": true}
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import socket
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any, Callable, Optional

Handler = Callable[[str, dict], tuple[str, bool]]


class ToolSocket:
    def __init__(self) -> None:
        self.folder = Path(tempfile.mkdtemp(prefix="nullius-tau2-"))
        os.chmod(self.folder, 0o700)
        self.path = str(self.folder / "tools.sock")
        self._server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._server.bind(self.path)
        self._server.listen(16)
        self._lock = threading.Lock()
        self._token = ""
        self._tools: list[dict] = []
        self._handler: Optional[Handler] = None
        threading.Thread(target=self._accept, name="tau2-tools", daemon=True).start()

    def open_unit(self, tools: list[dict], handler: Handler) -> str:
        """A unit's tools and the handler of its calls; its token, which the MCP server must present."""
        with self._lock:
            self._token = secrets.token_hex(16)
            self._tools, self._handler = tools, handler
            return self._token

    def close_unit(self) -> None:
        with self._lock:
            self._token, self._tools, self._handler = "", [], None

    def remove(self) -> None:
        """The socket and its folder, at the driver's end (a killed driver's stay: a few bytes in the temp folder)."""
        self._server.close()
        shutil.rmtree(self.folder, ignore_errors=True)

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self._server.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), name="tau2-tools-conn", daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        with conn, conn.makefile("rwb") as stream:
            for line in stream:
                stream.write((json.dumps(self._answer(line)) + "\n").encode())
                stream.flush()

    def _answer(self, line: bytes) -> dict:
        try:
            request = json.loads(line)
        except ValueError:
            return {"text": "the request is not JSON", "error": True}
        if not isinstance(request, dict):
            return {"text": "the request is not a JSON object", "error": True}
        with self._lock:
            token, tools, handler = self._token, self._tools, self._handler
        if not token or not secrets.compare_digest(str(request.get("token", "")), token):
            return {"text": "this MCP server is not the current unit's: its conversation is over", "error": True}
        if request.get("op") == "tools":
            return {"tools": tools}
        if request.get("op") == "call":
            name, arguments = request.get("name"), request.get("arguments", {})
            if not isinstance(name, str) or not isinstance(arguments, dict):
                return {"text": "a call needs a tool name (a string) and arguments (an object)", "error": True}
            try:
                text, error = handler(name, arguments)
            except Exception as exc:  # a call's failure is its result, and the driver goes on
                print(f"[tau2] tool call {name} failed: {type(exc).__name__}: {exc}", file=sys.stderr)
                return {"text": f"{exc}", "error": True}
            return {"text": text, "error": error}
        return {"text": f"unknown op {request.get('op')!r}: expected tools or call", "error": True}


def mcp_tools(environment: Any) -> list[dict]:
    """The domain's agent tools as MCP lists them, from tau2's own schemas (Tool.openai_schema)."""
    out = []
    for tool in environment.get_tools():
        function = tool.openai_schema["function"]
        out.append({"name": function["name"], "description": function.get("description", ""),
                    "inputSchema": function.get("parameters", {"type": "object", "properties": {}})})
    return out
