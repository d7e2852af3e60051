"""Server-sent events, split as they arrive: whole events out, a partial one kept for the next chunk."""

from __future__ import annotations

import attrs


@attrs.define
class Event:
    raw: bytes  # the event's bytes, its blank line included: what the client is sent
    name: bytes | None
    data: bytes | None


class Splitter:
    """Feed it chunks; take whole events. Unknown fields and comments pass through untouched."""

    def __init__(self) -> None:
        self._tail = b""

    def feed(self, chunk: bytes) -> list[Event]:
        buffer = self._tail + chunk if self._tail else chunk
        events = []
        start = 0
        while True:
            end, width = _boundary(buffer, start)
            if end < 0:
                break
            raw = buffer[start : end + width]
            events.append(_parse(raw))
            start = end + width
        self._tail = buffer[start:]
        return events

    def rest(self) -> bytes:
        """What is left when the stream ends (an unterminated last event)."""
        tail, self._tail = self._tail, b""
        return tail


def _boundary(buffer: bytes, start: int) -> tuple[int, int]:
    candidates = [(buffer.find(sep, start), len(sep)) for sep in (b"\n\n", b"\r\n\r\n")]
    found = [(i, w) for i, w in candidates if i >= 0]
    return min(found) if found else (-1, 0)


def _parse(raw: bytes) -> Event:
    name = None
    data_lines = []
    for line in raw.splitlines():
        if line.startswith(b"data:"):
            data_lines.append(line[5:].lstrip(b" "))
        elif line.startswith(b"event:"):
            name = line[6:].strip()
    return Event(raw=raw, name=name, data=b"\n".join(data_lines) if data_lines else None)
