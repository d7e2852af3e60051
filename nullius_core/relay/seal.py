"""What replay needs of a route's record, written once the route is done: `replay.jsonl`, one line per forwarded call.

Each line: the call's `id` (its lines in `calls.jsonl` and `bodies.jsonl`),
its `index` on the route (in the order calls started), the `digest` of its
normalized request (`normal.py`), whether it streamed, and the `tool_calls`
its reply asked for (their ids). It is made from `bodies.jsonl`, off the
calls' own path: a call pays nothing for it. A stream's reads, by their
sizes, are in its `bodies.jsonl` line (`chunks`), kept as the reply came.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from nullius_core import jsonfast
from nullius_core.fsutil import read_json_lines
from nullius_core.logs import get_logger
from nullius_core.relay.normal import digest, normalized, places_of

log = get_logger("nullius.relay")

SEALED = "replay.jsonl"


def seal(folder: Path) -> None:
    """The route's `replay.jsonl`, from its calls and bodies; a record that cannot be read is said, never fatal to the unit."""
    try:
        lines = sealed_lines(folder)
        text = "".join(jsonfast.dumps_text(line) + "\n" for line in lines)
        fd = os.open(folder / SEALED, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
    except (OSError, ValueError) as exc:
        log.error("replay record not written", folder=str(folder), error=f"{type(exc).__name__}: {exc}")


def sealed_lines(folder: Path) -> list[dict[str, Any]]:
    calls = [c for c in read_json_lines(folder / "calls.jsonl") if not c.get("refused")]
    bodies = {b.get("id"): b for b in read_json_lines(folder / "bodies.jsonl")}
    places = places_of(folder)
    out = []
    for index, call in enumerate(sorted(calls, key=lambda c: c.get("started") or "")):
        body = bodies.get(call.get("id")) or {}
        out.append({"id": call.get("id"), "index": index, "digest": digest(normalized(body.get("request"), places)),
                    "stream": bool(call.get("stream")), "tool_calls": tool_call_ids(body.get("response"))})
    return out


def tool_call_ids(response: Any) -> list[str]:
    """The ids of the tool calls a reply asked for, in order: Chat's `tool_calls`, Responses' `function_call`, Messages' `tool_use`."""
    if isinstance(response, str):  # a stream: each event's data
        found: list[str] = []
        for line in response.splitlines():
            if line.startswith("data:"):
                try:
                    _ids(jsonfast.loads(line[5:].strip()), found)
                except ValueError:
                    continue
        return list(dict.fromkeys(found))
    found = []
    _ids(response, found)
    return list(dict.fromkeys(found))


def _ids(value: Any, found: list[str]) -> None:
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, list):
            stack.extend(reversed(item))
        elif isinstance(item, dict):
            kind = item.get("type")
            if kind in ("function_call", "tool_use", "custom_tool_call") and isinstance(item.get("call_id") or item.get("id"), str):
                found.append(item.get("call_id") or item["id"])
            elif kind == "function" and isinstance(item.get("id"), str):  # Chat's tool_calls[i]
                found.append(item["id"])
            stack.extend(reversed([v for v in item.values() if isinstance(v, (dict, list))]))
