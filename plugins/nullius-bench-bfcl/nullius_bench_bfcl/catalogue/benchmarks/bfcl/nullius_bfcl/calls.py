"""The call log the MCP server wrote, read as the scorer's input: each record checked, none trusted blindly.

A record counts as a call when it is a JSON object naming a tool that its
turn listed, with arguments that are a JSON object (for a multi-turn
question, of plain identifiers: BFCL's executor builds Python source from
them). Anything else is noted
in the score's detail and left out; a log that is missing means no call.
"""

from __future__ import annotations

import json
import keyword
from pathlib import Path

READ_BYTES = 16 * 1024 * 1024  # the most of a log the scorer reads


def read_calls(path: Path, tools_by_turn: list[list[dict]], executed: bool) -> tuple[list[dict], list[str]]:
    """The log's calls and notes on what was left out; `executed`: the calls are run as Python (multi-turn)."""
    if not path.exists():
        return [], []
    with open(path, "rb") as f:
        raw = f.read(READ_BYTES + 1)
    notes = [f"the log is over {READ_BYTES} bytes: the rest is not read"] if len(raw) > READ_BYTES else []
    names = [{t["name"] for t in tools} for tools in tools_by_turn]
    calls = []
    for n, line in enumerate(raw[:READ_BYTES].decode("utf-8", "replace").splitlines(), 1):
        if not line.strip():
            continue
        problem, call = _one(line, names, executed)
        if problem:
            notes.append(f"line {n}: {problem}")
        else:
            calls.append(call)
    return calls, notes


def _one(line: str, names: list[set], executed: bool) -> tuple[str, dict]:
    try:
        record = json.loads(line)
    except ValueError:
        return "not JSON", {}
    if not isinstance(record, dict):
        return "not a JSON object", {}
    turn, tool, arguments = record.get("turn", 0), record.get("tool"), record.get("arguments")
    if not isinstance(turn, int) or isinstance(turn, bool) or not 0 <= turn < len(names):
        return f"turn {turn!r} is not one of the question's turns", {}
    if tool not in names[turn]:
        return f"tool {tool!r} is not among turn {turn}'s tools", {}
    if not isinstance(arguments, dict):
        return "arguments are not a JSON object", {}
    if executed and not all(k.isidentifier() and not keyword.iskeyword(k) for k in arguments):
        return "argument names are not all plain identifiers (BFCL's executor writes them into Python source)", {}
    return "", {"turn": turn, "tool": tool, "arguments": arguments}
