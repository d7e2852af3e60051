"""The oracle's way to its calls: the benchmark's own MCP server, started and spoken to as an agent's session does."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Callable

SERVER = Path(__file__).resolve().parents[1] / "mcp_server.py"
CALL_SECONDS = 60


class Session:
    def __init__(self, unit_file: Path, log_file: Path) -> None:
        env = {**os.environ, "BFCL_UNIT": str(unit_file), "NULLIUS_MCP_LOG": str(log_file)}
        self.proc = subprocess.Popen([sys.executable, str(SERVER)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     env=env, text=True, bufsize=1)
        self.next_id = 0

    def request(self, method: str, params: dict) -> dict:
        self.next_id += 1
        self.proc.stdin.write(json.dumps({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params}) + "\n")
        self.proc.stdin.flush()
        while True:  # notifications (tools/list_changed) come between replies
            line = self.proc.stdout.readline()
            if not line:
                raise RuntimeError(f"the MCP server ended before answering {method}")
            message = json.loads(line)
            if message.get("id") == self.next_id:
                if "error" in message:
                    raise RuntimeError(f"the MCP server refused {method}: {message['error'].get('message')}")
                return message["result"]

    def close(self) -> None:
        self.proc.stdin.close()
        try:
            self.proc.wait(timeout=CALL_SECONDS)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def play(unit_file: Path, log_file: Path, turns: list[list[dict]], set_turn: Callable[[int], None]) -> list[dict]:
    """Each turn's calls, in order, through tools/call; the turn moved on first, as the driver's `turn` op moves it."""
    session = Session(unit_file, log_file)
    made = []
    try:
        session.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                       "clientInfo": {"name": "nullius-bfcl-oracle", "version": "1"}})
        for turn, calls in enumerate(turns):
            if turn:
                set_turn(turn)
            session.request("tools/list", {})  # as a client does at a turn's start: the list may have changed
            for call in calls:
                result = session.request("tools/call", {"name": call["tool"], "arguments": call["arguments"]})
                made.append({"turn": turn, **call, "refused": bool(result.get("isError"))})
    finally:
        session.close()
    return made
