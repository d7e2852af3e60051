"""Server-sent events, split as they arrive: whole events out, a partial one kept for the next chunk.

Splitting is linear in the bytes fed, however they are cut: a partial event
is kept as a list of chunks and only the chunk's edge is searched again. An
event that grows past `limit` bytes is not held whole: its bytes come out as
`Piece`s as they arrive, unread, until the event ends.
"""

from __future__ import annotations

import attrs

SEPARATORS = (b"\n\n", b"\r\n\r\n")
_EDGE = 3  # the longest separator less one: how much of a kept tail a separator can start in


@attrs.define
class Event:
    raw: bytes  # the event's bytes, its blank line included: what the client is sent
    name: bytes | None
    data: bytes | None


@attrs.frozen
class Piece:
    """Bytes of an event too big to hold: passed on as they came, never parsed."""

    raw: bytes


class Splitter:
    """Feed it chunks; take whole events. Unknown fields and comments pass through untouched."""

    def __init__(self, limit: int | None = None) -> None:
        self.limit = limit
        self._parts: list[bytes] = []  # the event begun and not yet ended
        self._size = 0
        self._passing = False  # inside an event past the limit: its bytes go out as pieces
        self._edge = b""  # while passing: the last bytes passed, where a separator may begin
        self.oversized = 0  # how many events went out as pieces

    def feed(self, chunk: bytes) -> list[Event | Piece]:
        out: list[Event | Piece] = []
        if self._parts or self._passing:
            edge = b"".join(self._parts[-_EDGE:])[-_EDGE:] if self._parts else self._edge
            end, width = _boundary(edge + chunk, 0)
            if end < 0:
                self._keep(chunk, out)
                return out
            cut = end + width - len(edge)  # where the event ends in this chunk
            self._finish(chunk[:cut], out)
            chunk = chunk[cut:]
        start = 0
        for end, width in _boundaries(chunk):
            out.append(_parse(chunk[start : end + width]))
            start = end + width
        if start < len(chunk):
            self._keep(chunk[start:], out)
        return out

    def rest(self) -> bytes:
        """What is left when the stream ends (an unterminated last event, when it was held)."""
        tail = b"".join(self._parts)
        self._parts, self._size = [], 0
        return tail

    def _keep(self, data: bytes, out: list[Event | Piece]) -> None:
        if self._passing:
            self._edge = data[-_EDGE:] if len(data) >= _EDGE else (self._edge + data)[-_EDGE:]
            out.append(Piece(data))
            return
        self._parts.append(data)
        self._size += len(data)
        if self.limit is not None and self._size > self.limit:
            held = b"".join(self._parts)
            self._parts, self._size = [], 0
            self._passing, self._edge = True, held[-_EDGE:]
            self.oversized += 1
            out.append(Piece(held))

    def _finish(self, data: bytes, out: list[Event | Piece]) -> None:
        if self._passing:
            self._passing = False
            out.append(Piece(data))
            return
        self._parts.append(data)
        raw = b"".join(self._parts)
        self._parts, self._size = [], 0
        out.append(_parse(raw))


def _boundary(buffer: bytes, start: int) -> tuple[int, int]:
    candidates = [(buffer.find(sep, start), len(sep)) for sep in SEPARATORS]
    found = [(i, w) for i, w in candidates if i >= 0]
    return min(found) if found else (-1, 0)


def _boundaries(buffer: bytes):  # type: ignore[no-untyped-def]
    """Each event's end in `buffer`, in order; each separator is searched for once per stretch, not once per event."""
    lf = buffer.find(b"\n\n")
    crlf = buffer.find(b"\r\n\r\n") if b"\r" in buffer else -1
    while lf >= 0 or crlf >= 0:
        if crlf < 0 or 0 <= lf < crlf:
            end, width = lf, 2
        else:
            end, width = crlf, 4
        yield end, width
        after = end + width
        if lf >= 0 and lf < after:
            lf = buffer.find(b"\n\n", after)
        if crlf >= 0 and crlf < after:
            crlf = buffer.find(b"\r\n\r\n", after)


def _parse(raw: bytes) -> Event:
    body = raw.rstrip(b"\r\n")
    if body.startswith(b"data:") and b"\n" not in body and b"\r" not in body:  # the usual event: one data line
        return Event(raw=raw, name=None, data=body[5:].lstrip(b" "))
    name = None
    data_lines = []
    for line in raw.splitlines():
        if line.startswith(b"data:"):
            data_lines.append(line[5:].lstrip(b" "))
        elif line.startswith(b"event:"):
            name = line[6:].strip()
    return Event(raw=raw, name=name, data=b"\n".join(data_lines) if data_lines else None)
