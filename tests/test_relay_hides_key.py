"""The relay never hands its key back: an upstream that quotes the key reaches the caller without it.

The fake model echoes the key it was sent (a callable script reads its
Authorization header); `HandUpstream` quotes it where the fake cannot: in a
reason phrase, and split between two writes the test orders by hand.
"""

from __future__ import annotations

import asyncio
import json

import aiohttp
import anthropic
import openai
import pytest
from aiohttp import web
from relay_helpers import KEY, HandUpstream, RelayThread

from nullius_core.relay.shield import REMOVED

MSGS = [{"role": "user", "content": "what is your key?"}]


@pytest.fixture
def relay(fake_model, nullius_env, tmp_path):
    r = RelayThread(fake_model.openai_base_url, tmp_path / "relay", nullius_env)
    yield r
    r.close()


@pytest.fixture
def hand(nullius_env, tmp_path):
    upstream = HandUpstream()
    r = RelayThread(upstream.base_url, tmp_path / "relay", nullius_env)
    yield upstream, r
    r.close()
    upstream.close()


def quoting(text, **reply):
    """A script whose reply quotes the key the relay sent: `text` with {key} in it."""

    def respond(request):
        return {"text": text.format(key=request.headers["authorization"].removeprefix("Bearer ")), **reply}

    return respond


def test_a_401_that_quotes_the_key_reaches_the_caller_without_it(hand):
    upstream, relay = hand

    async def answer(request, key):
        body = {"error": {"message": f"Incorrect API key provided: {key}. You can find your API key at https://example.com.",
                          "type": "invalid_request_error", "code": "invalid_api_key"}}
        return web.json_response(body, status=401, reason=f"Key {key} refused", headers={"X-Echo": f"you sent {key}", "WWW-Authenticate": f'Bearer error="{key}"'})

    upstream.answer = answer

    async def call():
        async with aiohttp.ClientSession() as http:
            async with http.post(relay.url() + "/chat/completions", json={"model": "m", "messages": MSGS},
                                 headers={"Authorization": f"Bearer {relay.token()}"}) as r:
                return r.status, r.reason, dict(r.headers), await r.read()

    status, reason, headers, body = asyncio.run(call())
    assert upstream.keys == [KEY]  # the upstream had the key, and quoted it
    assert status == 401
    everything = reason + json.dumps(headers) + body.decode()
    assert KEY not in everything
    assert json.loads(body)["error"] == {"message": f"Incorrect API key provided: {REMOVED}. You can find your API key at https://example.com.",
                                         "type": "invalid_request_error", "code": "invalid_api_key"}
    assert headers["X-Echo"] == f"you sent {REMOVED}" and reason == f"Key {REMOVED} refused"
    assert KEY not in relay.record_text()
    assert relay.records()[-1]["error"]["code"] == "invalid_api_key"


def test_a_whole_reply_whose_text_holds_the_key_reaches_the_caller_without_it(relay, fake_model):
    fake_model.use(quoting("my key is {key}, keep it safe"))
    reply = openai.OpenAI(base_url=relay.url(), api_key=relay.token(), max_retries=0).chat.completions.with_raw_response.create(model="m", messages=MSGS)
    assert reply.parse().choices[0].message.content == f"my key is {REMOVED}, keep it safe"
    assert KEY not in reply.http_response.text
    assert KEY not in relay.record_text()


def test_a_header_that_quotes_the_key_reaches_the_caller_without_it(relay, fake_model):
    def respond(request):
        return {"text": "fine", "fault": {"headers": {"x-echo": request.headers["authorization"]}}}

    fake_model.use(respond)
    reply = openai.OpenAI(base_url=relay.url(), api_key=relay.token(), max_retries=0).chat.completions.with_raw_response.create(model="m", messages=MSGS)
    assert reply.headers["x-echo"] == f"Bearer {REMOVED}"
    assert KEY not in json.dumps(dict(reply.headers))


@pytest.mark.parametrize("chunk", [1, 4, 7, 50])
def test_a_key_spread_over_a_streams_text_deltas_reaches_the_caller_without_it(relay, fake_model, chunk):
    """Chat Completions, Responses and Messages, each with the key cut into deltas of `chunk` characters."""
    fake_model.use(quoting("here it is: {key} and more", chunk=chunk))
    client = openai.OpenAI(base_url=relay.url(), api_key=relay.token(), max_retries=0)
    expected = f"here it is: {REMOVED} and more"
    chat = "".join(c.choices[0].delta.content or "" for c in client.chat.completions.create(model="m", messages=MSGS, stream=True) if c.choices)
    assert chat == expected
    deltas, final = [], None
    for event in client.responses.create(model="m", input="key?", stream=True):
        if event.type == "response.output_text.delta":
            deltas.append(event.delta)
        elif event.type == "response.completed":
            final = event.response.output_text
    assert "".join(deltas) == expected and final == expected
    ant = anthropic.Anthropic(base_url=relay.url()[: -len("/v1")], api_key=relay.token(), max_retries=0)
    with ant.messages.stream(model="m", max_tokens=50, messages=MSGS) as stream:
        assert "".join(stream.text_stream) == expected
    assert KEY not in relay.record_text()
    assert len(relay.records()) == 3 and all(r["status"] == 200 for r in relay.records())


def test_a_prefix_of_the_key_that_is_not_the_key_passes_as_it_came(relay, fake_model):
    """A delta ending in what begins the key is held until the next one shows it is not the key: nothing is lost."""
    half = KEY[: len(KEY) // 2]
    fake_model.use({"default": {"text": f"s, sk, {half} is not it, {KEY[:-1]}", "chunk": 3}})
    client = openai.OpenAI(base_url=relay.url(), api_key=relay.token(), max_retries=0)
    text = "".join(c.choices[0].delta.content or "" for c in client.chat.completions.create(model="m", messages=MSGS, stream=True) if c.choices)
    assert text == f"s, sk, {half} is not it, {KEY[:-1]}"


@pytest.mark.parametrize("content_type", ["application/json", "text/event-stream"])
def test_a_reply_past_what_the_relay_holds_passes_on_as_it_comes_the_key_split_between_writes_removed(hand, content_type):
    """Over 16 MiB (a whole body, or one SSE event): passed on as it comes; a key cut between two writes is still caught."""
    upstream, relay = hand
    gate = upstream.gate()
    filler = b"x" * (17 * 2**20)
    head = (b'data: {"t":"' if content_type == "text/event-stream" else b'{"t":"') + filler
    tail = b'"}\n\n' if content_type == "text/event-stream" else b'"}'

    async def answer(request, key):
        out = web.StreamResponse(headers={"Content-Type": content_type})
        await out.prepare(request)
        await out.write(head + key.encode()[:9])
        await gate.wait()  # the caller has had everything before the key
        await out.write(key.encode()[9:] + tail)
        await out.write_eof()
        return out

    upstream.answer = answer

    async def read(http):
        async with http.post(relay.url() + "/chat/completions", json={"model": "m", "messages": MSGS, "stream": True},
                             headers={"Authorization": f"Bearer {relay.token()}"}) as r:
            got = bytearray()
            while len(got) < len(head):
                got += await r.content.readany()
            before_gate = len(got)
            gate.open()
            got += await r.content.read()
            return r.status, before_gate, bytes(got)

    async def call():
        async with aiohttp.ClientSession() as http:
            try:
                return await asyncio.wait_for(read(http), 60)
            except asyncio.TimeoutError:
                return None
            finally:
                gate.open()  # whatever happened, the upstream ends its reply

    result = asyncio.run(call())
    assert result is not None, "the relay held the reply back instead of passing on what had come"
    status, before_gate, got = result
    assert status == 200
    assert before_gate == len(head)  # all but the key's first characters, before the rest was written
    assert got == head + REMOVED.encode() + tail
    [record] = relay.records()
    assert record["reply_bytes"] == len(head) + len(KEY) + len(tail)
    assert record["reply_cut"] == 16 * 2**20
    [body] = [json.loads(line) for line in (relay.folder / "u0000" / "bodies.jsonl").read_text().splitlines()]
    assert isinstance(body["response"], str) and len(body["response"]) == 16 * 2**20
    assert KEY not in relay.record_text()
