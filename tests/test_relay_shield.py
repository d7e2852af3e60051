"""What goes back to a caller, property-tested: the relay's secrets never, everything else exactly as it came."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from nullius_core.contracts.sse import Piece, Splitter
from nullius_core.relay.shield import REMOVED, Shield

KEY = "sk-relay-holds-this-key-0123456789"
OTHER = "an/other+secret-with\"quote"  # a secret that JSON escapes
shield = Shield([KEY, OTHER])

# texts made of pieces of the secrets and their look-alikes, so that beginnings that are not secrets abound
word = st.sampled_from([KEY, OTHER, KEY[:5], KEY[:-1], KEY[3:], OTHER[:4], "s", "sk", " ", "x", "é", "\n", '"', "\\"])
text = st.lists(word, max_size=12).map("".join)


def chat_events(deltas: list[str]) -> list[bytes]:
    def event(delta: dict) -> bytes:
        chunk = {"id": "c1", "object": "chat.completion.chunk", "model": "m", "choices": [{"index": 0, "delta": delta, "finish_reason": None}]}
        return b"data: " + json.dumps(chunk).encode() + b"\n\n"

    return [event({"role": "assistant", "content": ""})] + [event({"content": d}) for d in deltas] + [b"data: [DONE]\n\n"]


def text_of(stream: bytes) -> str:
    out = []
    for event in stream.split(b"\n\n"):
        if event.startswith(b"data: {"):
            out.append(json.loads(event[6:])["choices"][0]["delta"].get("content", ""))
    return "".join(out)


def cleaned(value: str) -> str:
    return value.replace(KEY, REMOVED).replace(OTHER, REMOVED)


@settings(max_examples=400, deadline=None)
@given(text, st.lists(st.integers(0, 200), max_size=10))
def test_text_deltas_reach_the_caller_whole_but_for_the_secrets_however_they_are_cut(value, cuts):
    points = sorted({c % (len(value) + 1) for c in cuts})
    deltas = [value[a:b] for a, b in zip([0, *points], [*points, len(value)])]
    flow = shield.flow()
    out = b"".join(flow.event(raw) for raw in chat_events(deltas)) + flow.end()
    assert text_of(out) == cleaned(value)
    assert KEY.encode() not in out and json.dumps(OTHER)[1:-1].encode() not in out


@settings(max_examples=400, deadline=None)
@given(text, st.lists(st.integers(0, 400), max_size=10))
def test_bytes_passed_as_they_come_reach_the_caller_whole_but_for_the_secrets(value, cuts):
    data = value.encode()
    points = sorted({c % (len(data) + 1) for c in cuts})
    flow = shield.flow()
    out = b"".join(flow.piece(data[a:b]) for a, b in zip([0, *points], [*points, len(data)])) + flow.end()
    assert out == cleaned(value).encode()


@settings(max_examples=300, deadline=None)
@given(st.lists(st.binary(max_size=12).map(lambda b: b.replace(b"\r", b"")), max_size=12), st.integers(1, 40), st.lists(st.integers(0, 300), max_size=8))
def test_the_splitter_passes_every_byte_once_in_order_and_events_under_its_limit_whole(bodies, limit, cuts):
    data = b"".join(b"data: " + body.replace(b"\n", b" ") + b"\n\n" for body in bodies)
    points = sorted({c % (len(data) + 1) for c in cuts})
    splitter = Splitter(limit=limit)
    items = [item for a, b in zip([0, *points], [*points, len(data)]) for item in splitter.feed(data[a:b])]
    assert b"".join(item.raw for item in items) + splitter.rest() == data
    whole = [item.raw for item in items if not isinstance(item, Piece)]
    expected = [b"data: " + body.replace(b"\n", b" ") + b"\n\n" for body in bodies]
    assert all(raw in expected for raw in whole)
    assert [raw for raw in expected if len(raw) <= limit] == [raw for raw in whole if len(raw) <= limit]
