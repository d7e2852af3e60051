"""What goes back to the caller: the secrets it must never get, replaced in every reply, whole or streamed.

A provider may quote the key it was sent (a 401's "Incorrect API key
provided: sk-..."), in a header, a reason phrase or a body. Only the exact
secrets the relay holds are replaced (by `[removed]`), in each form they can
take in the bytes of a reply: as they are, and as JSON writes them inside a
string. Merely key-shaped strings pass: a model may write `sk-...`
placeholders, and the caller gets them.

A stream is covered three ways:

* an event is whole when it is cleaned (`sse.Splitter` reassembles it), so
  a secret cut between two reads of the socket is whole again;
* bytes passed on as they come (a body or an event too big to hold) keep
  back only their last bytes that could begin a secret, until the next
  bytes show whether they do;
* a secret spread over consecutive events' text (`"content":"sk-re"`, then
  `"content":"lay-..."`, under the same JSON name) is found by following
  each name's string values from event to event: an event whose value ends
  in what begins a secret is held until the next event shows whether the
  secret goes on. If it does, the secret's characters are cut out of every
  event it spans and `[removed]` is put where it began. At most `MAX_HELD`
  events or `MAX_HELD_BYTES` are held; past that they go on as they are.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable

import attrs
from multidict import CIMultiDict

from nullius_core import jsonfast

REMOVED = "[removed]"
_REMOVED = REMOVED.encode()
SHORTEST = 6  # a shorter secret would match too much that is not it
MAX_HELD = 64
MAX_HELD_BYTES = 2**20
# A JSON name and its string value, with where the value's bytes are.
_PAIR = re.compile(rb'"((?:[^"\\]|\\.)*)"\s*:\s*"((?:[^"\\]|\\.)*)"')


def forms_of(secret: str) -> list[bytes]:
    """The bytes `secret` may take in a reply: as it is, and escaped as JSON escapes it inside a string."""
    escaped = json.dumps(secret)[1:-1]
    found = {secret.encode(), escaped.encode(), escaped.replace("/", "\\/").encode(), jsonfast.dumps(secret)[1:-1]}
    return [f for f in found if len(f) >= SHORTEST]


def _ending_in_a_beginning(form: bytes) -> bytes:
    """A pattern for a JSON string value that ends in a proper prefix of `form` (never a name: no ':' follows)."""
    nested = b""
    for i in range(len(form) - 2, 0, -1):
        nested = b"(?:" + re.escape(form[i : i + 1]) + nested + b")?"
    return re.escape(form[:1]) + nested + rb'"(?!\s*:)'


def opening(data: bytes, forms: Iterable[bytes]) -> int:
    """How many of `data`'s last bytes are a proper prefix of a form: what must wait for the next bytes."""
    longest = 0
    for form in forms:
        first = form[:1]
        i = data.find(first, max(0, len(data) - len(form) + 1))
        while i >= 0:
            if form.startswith(data[i:]):
                longest = max(longest, len(data) - i)
                break
            i = data.find(first, i + 1)
    return longest


class Shield:
    """The secrets a caller must never get back, and how to take them out of what it gets."""

    def __init__(self, secrets: Iterable[str] = ()):
        self.forms: tuple[bytes, ...] = ()
        self._texts: tuple[str, ...] = ()
        self._opening: re.Pattern[bytes] | None = None
        for secret in secrets:
            self.add(secret)

    def add(self, secret: str | None) -> None:
        if not secret or len(secret) < SHORTEST:
            return
        forms = set(self.forms) | set(forms_of(secret))
        self.forms = tuple(sorted(forms, key=len, reverse=True))  # the longest first: a form inside another goes with it
        self._texts = tuple(f.decode() for f in self.forms)
        self._opening = re.compile(b"|".join(_ending_in_a_beginning(f) for f in self.forms))

    def bytes(self, data: bytes) -> bytes:
        for form in self.forms:
            if form in data:
                data = data.replace(form, _REMOVED)
        return data

    def text(self, value: str) -> str:
        for form in self._texts:
            if form in value:
                value = value.replace(form, REMOVED)
        return value

    def headers(self, items: Iterable[tuple[str, str]]) -> CIMultiDict[str]:
        """Headers with their values cleaned; a header whose very name holds a secret is dropped."""
        pairs = list(items)
        if not self._quoted(pairs):
            return CIMultiDict(pairs)  # the usual reply: nothing to take out
        out: CIMultiDict[str] = CIMultiDict()
        for name, value in pairs:
            if self.text(name) == name:
                out.add(name, self.text(value))
        return out

    def _quoted(self, pairs: list[tuple[str, str]]) -> bool:
        for name, value in pairs:
            for form in self._texts:
                if form in value or form in name:
                    return True
        return False

    def flow(self) -> Flow:
        return Flow(self)


@attrs.define
class _Held:
    raw: bytes
    cuts: list[tuple[int, int, bytes]] = attrs.field(factory=list)  # (start, end, put instead), applied when released

    def released(self) -> bytes:
        raw = self.raw
        for start, end, put in sorted(self.cuts, reverse=True):
            raw = raw[:start] + put + raw[end:]
        return raw


class Flow:
    """One stream's way back to the caller: feed it whole events or raw pieces, in order; send what it returns."""

    def __init__(self, shield: Shield):
        self._forms = shield.forms
        self._opening = shield._opening
        self._carry = b""  # the end of the last piece: it may begin a secret
        self._held: list[_Held] = []
        self._held_bytes = 0
        self._open: dict[bytes, list[tuple[int, int, int]]] = {}  # name -> (held event, start, end): the beginning so far

    def event(self, raw: bytes) -> bytes:
        if not self._forms:
            return raw
        if self._carry:
            raw, self._carry = self._carry + raw, b""
        for form in self._forms:
            if form in raw:
                raw = raw.replace(form, _REMOVED)
        if not self._held and (self._opening is None or self._opening.search(raw) is None):
            return raw
        index = len(self._held)
        self._held.append(_Held(raw))
        self._held_bytes += len(raw)
        named = set()
        for match in _PAIR.finditer(raw):
            named.add(match.group(1))
            self._follow(match.group(1), index, *match.span(2))
        for name in [n for n in self._open if n not in named]:
            del self._open[name]  # the text under that name did not go on: what began a secret was not one
        if not self._open or len(self._held) > MAX_HELD or self._held_bytes > MAX_HELD_BYTES:
            return self._release()
        return b""

    def piece(self, raw: bytes) -> bytes:
        if not self._forms:
            return raw
        out = self._release() if self._held else b""
        data = self._carry + raw if self._carry else raw
        for form in self._forms:
            if form in data:
                data = data.replace(form, _REMOVED)
        keep = opening(data, self._forms)
        self._carry = data[len(data) - keep :] if keep else b""
        if keep:
            data = data[: len(data) - keep]
        return out + data if out else data

    def end(self) -> bytes:
        out = self._release() + self._carry
        self._carry = b""
        return out

    def _follow(self, name: bytes, index: int, start: int, end: int) -> None:
        spans = self._open.get(name, []) + [(index, start, end)]
        joined = b"".join(self._held[i].raw[s:e] for i, s, e in spans)
        began = len(joined) - (end - start)  # the bytes before this value: a beginning, never a whole secret
        hit = min(((joined.find(f), -len(f)) for f in self._forms if 0 <= joined.find(f) < began), default=None)
        rest = 0
        if hit is not None:
            at, width = hit[0], -hit[1]
            self._cut(spans, at, at + width)
            rest = at + width
        keep = opening(joined[rest:], self._forms)
        if keep:
            self._open[name] = _tail(spans, len(joined), keep)
        else:
            self._open.pop(name, None)

    def _cut(self, spans: list[tuple[int, int, int]], start: int, end: int) -> None:
        """Take joined[start:end] out of the events it lies in; `[removed]` where it began."""
        offset, put = 0, _REMOVED
        for i, s, e in spans:
            lo, hi = max(start - offset, 0), min(end - offset, e - s)
            if lo < hi:
                self._held[i].cuts.append((s + lo, s + hi, put))
                put = b""
            offset += e - s

    def _release(self) -> bytes:
        out = b"".join(held.released() for held in self._held)
        self._held, self._held_bytes, self._open = [], 0, {}
        return out


def _tail(spans: list[tuple[int, int, int]], length: int, keep: int) -> list[tuple[int, int, int]]:
    """The spans holding the last `keep` of `length` joined bytes."""
    out = []
    skip = length - keep
    for i, s, e in spans:
        if skip >= e - s:
            skip -= e - s
            continue
        out.append((i, s + skip, e))
        skip = 0
    return out
