"""BFCL's functions as the tools of an MCP server (stdio, JSON-RPC 2.0 a line), one question per session.

The driver's setup writes the question's tools into a unit file (BFCL_UNIT,
in the trial's verifier folder, outside the workspace) and names the call
log (NULLIUS_MCP_LOG, beside it). Every tools/call is appended to the log as
one JSON line: `{"at", "turn", "tool", "arguments", "result"}`; the log is
what `score` reads, with BFCL's own checker.

- A single-turn question executes nothing (BFCL scores the calls, not their
  results): the result says the call was recorded.
- A multi-turn question runs BFCL's own backend classes (GorillaFileSystem,
  TwitterAPI, ...) through the upstream's `execute_multi_turn_func_call`,
  loaded with the question's initial config; their state lives in this
  process for the session, as it does in BFCL's own inference loop. The
  driver moves the unit file's `turn` on at each user turn; the tools of
  that turn (a multi_turn_miss_func question gains its withheld functions
  at its turn) are what tools/list answers, and a `notifications/tools/
  list_changed` is sent when they change.

A call of a tool this turn does not list is refused (isError), and so are
arguments that are not a JSON object; in a multi-turn question, so are
argument names that are not plain identifiers: only a listed name and plain
names ever reach BFCL's backends, whose calls the upstream executes as
Python source it builds from the name, the names and the values' repr.
"""

from __future__ import annotations

import datetime as _dt
import json
import keyword
import os
import sys
import threading

PROTOCOLS = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")
RECORDED = "The call is recorded."
CHECKER_MODEL = "claude-sonnet-4-5-20250929-FC"  # the same registry entry the driver's checker uses


class Session:
    def __init__(self, unit_path: str, log_path: str) -> None:
        self.unit_path, self.log_path = unit_path, log_path
        self.write_lock = threading.Lock()
        self.unit = self.read_unit()
        self.listed_turn = self.unit.get("turn", 0)

    def read_unit(self) -> dict:
        with open(self.unit_path, encoding="utf-8") as f:
            return json.load(f)

    def tools(self) -> tuple[int, list[dict]]:
        """The current turn and its tools (the unit file is re-read: the driver moves the turn on)."""
        self.unit = self.read_unit()
        turn = self.unit.get("turn", 0)
        return turn, self.unit["tools_by_turn"][min(turn, len(self.unit["tools_by_turn"]) - 1)]

    def call(self, name, arguments) -> tuple[str, bool]:
        turn, tools = self.tools()
        names = {t["name"] for t in tools}
        if not isinstance(name, str) or name not in names:
            return f"Unknown tool {name!r}: this turn's tools are {', '.join(sorted(names))}", True
        if not isinstance(arguments, dict):
            return "The arguments must be a JSON object.", True
        if self.unit.get("multi_turn"):
            bad = [k for k in arguments if not (k.isidentifier() and not keyword.iskeyword(k))]
            if bad:  # BFCL's executor writes each name into the Python source it runs
                return f"Argument names must be plain identifiers: {', '.join(map(repr, bad))} is not", True
            result = self.execute(name, arguments)
        else:
            result = RECORDED
        self.log({"turn": turn, "tool": name, "arguments": arguments, "result": result})
        return result, False

    def execute(self, name: str, arguments: dict) -> str:
        """The call run on this session's backend instances, by BFCL's own executor (its result text)."""
        from bfcl_eval.eval_checker.multi_turn_eval.multi_turn_utils import execute_multi_turn_func_call

        source = f"{name}({','.join(f'{k}={v!r}' for k, v in arguments.items())})"  # convert_to_function_call's form
        unit = self.unit
        results, _ = execute_multi_turn_func_call([source], unit["initial_config"], unit["involved_classes"],
                                                  CHECKER_MODEL.replace("-", "_").replace(".", "_"), unit["id"],
                                                  long_context=unit.get("long_context", False), is_evaL_run=False)
        return results[0]

    def log(self, record: dict) -> None:
        record = {"at": _dt.datetime.now(_dt.timezone.utc).isoformat(), **record}
        with self.write_lock, open(self.log_path, "a", encoding="utf-8") as f:
            f.write(json.dumps(record) + "\n")


def answer(session: Session, message: dict) -> dict | None:
    method, params, ident = message.get("method"), message.get("params") or {}, message.get("id")
    if ident is None:
        return None  # notifications (initialized, cancelled) want no reply
    if method == "initialize":
        asked = params.get("protocolVersion")
        result = {"protocolVersion": asked if asked in PROTOCOLS else PROTOCOLS[0],
                  "capabilities": {"tools": {"listChanged": True}},
                  "serverInfo": {"name": "bfcl", "version": "2026.3.23"}}
    elif method == "ping":
        result = {}
    elif method == "tools/list":
        turn, tools = session.tools()
        session.listed_turn = turn
        result = {"tools": tools}
    elif method == "tools/call":
        text, error = session.call(params.get("name"), params.get("arguments", {}))
        result = {"content": [{"type": "text", "text": text}], "isError": error}
    else:
        return {"jsonrpc": "2.0", "id": ident, "error": {"code": -32601, "message": f"method not found: {method}"}}
    return {"jsonrpc": "2.0", "id": ident, "result": result}


class Out:
    """stdout, one JSON-RPC message a line, shared by the replies and the list-changed watcher."""

    def __init__(self) -> None:
        self.lock = threading.Lock()

    def send(self, message: dict) -> None:
        with self.lock:
            sys.stdout.write(json.dumps(message) + "\n")
            sys.stdout.flush()


def watch_turns(session: Session, out: Out, stop: threading.Event) -> None:
    """Tells the client when the turn's tools change (a miss_func question's withheld functions arrive)."""
    seen = os.stat(session.unit_path).st_mtime_ns
    while not stop.wait(0.2):  # the unit file is this session's only signal: its change is looked for, not waited on
        try:
            now = os.stat(session.unit_path).st_mtime_ns
        except OSError:
            return
        if now == seen:
            continue
        seen = now
        turn, tools = session.tools()
        before = session.unit["tools_by_turn"][min(session.listed_turn, len(session.unit["tools_by_turn"]) - 1)]
        if tools != before:
            out.send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})


def main() -> int:
    unit_path, log_path = os.environ.get("BFCL_UNIT"), os.environ.get("NULLIUS_MCP_LOG")
    if not unit_path or not log_path:
        print("mcp_server.py: BFCL_UNIT and NULLIUS_MCP_LOG must be set (the unit's setup gives them)", file=sys.stderr)
        return 2
    session, out, stop = Session(unit_path, log_path), Out(), threading.Event()
    if session.unit.get("changes_tools"):
        threading.Thread(target=watch_turns, args=(session, out, stop), daemon=True).start()
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            message = json.loads(line)
        except ValueError:
            out.send({"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "parse error: the line is not JSON"}})
            continue
        if not isinstance(message, dict):
            out.send({"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": "a request is a JSON object"}})
            continue
        reply = answer(session, message)
        if reply is not None:
            out.send(reply)
    stop.set()
    return 0


if __name__ == "__main__":
    sys.exit(main())
