"""The replay relay in front of a recorded route: a stream played back as a stream, read by read, the OpenAI SDK its caller.

A route is recorded through the real relay in front of the fake model, its
record sealed as a unit's end seals it; then the fake model is stopped, and
a replay relay (no key, a dead upstream) answers the same request from the
record.
"""

from __future__ import annotations

import asyncio
import json
import threading

import openai
import pytest

from nullius_core.relay.normal import differences, digest, normalized, places_of
from nullius_core.relay.replay import ReplayRelay
from nullius_core.relay.seal import SEALED, seal
from nullius_core.relay.server import Relay, Upstream
from nullius_core.relay.upstreams import apis
from nullius_core.testing import make_session
from nullius_core.testing.fake_model import running_fake_model

KEY = "sk-relay-holds-this-key-0123456789"
ASK = [{"role": "user", "content": "Count to five."}]


class Loop:
    def __init__(self):
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()

    def call(self, coro, timeout: float = 60):
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def close(self):
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)


def relay_of(kind, env, base_url: str, key: str | None, **options):
    session = make_session(env)
    upstream = Upstream(provider=session.providers.get("openai-compatible"), base_url=base_url, key=key)
    return kind(upstream, apis(session, upstream), **options)


def stream(url: str, token: str) -> list[str]:
    client = openai.OpenAI(base_url=url, api_key=token, max_retries=0)
    return [c.choices[0].delta.content or "" for c in client.chat.completions.create(model="m", messages=ASK, stream=True) if c.choices]


@pytest.fixture
def loop():
    running = Loop()
    yield running
    running.close()


def test_a_streamed_call_is_played_back_as_a_stream_read_by_read(nullius_env, tmp_path, loop):
    source = tmp_path / "source" / "u0000" / ".work" / "relay"
    with running_fake_model() as fake:
        fake.use({"default": {"text": "one two three four five"}})
        relay = relay_of(Relay, nullius_env, fake.openai_base_url, KEY)
        loop.call(relay.start())
        route = relay.add_route("u0000", source)
        first = stream(relay.url("u0000"), route.token)
        loop.call(relay.retire("u0000"))
        loop.call(relay.stop())
        dead = fake.openai_base_url  # nothing answers here once the fake model is gone
    seal(source)
    body = json.loads((source / "bodies.jsonl").read_text())
    assert isinstance(body["response"], str) and body["chunks"] and sum(body["chunks"]) == len(body["response"].encode())
    [sealed] = [json.loads(line) for line in (source / SEALED).read_text().splitlines()]
    assert sealed["index"] == 0 and sealed["stream"] is True and len(sealed["digest"]) == 64

    again = tmp_path / "again" / "u0000" / ".work" / "relay"
    replay = relay_of(ReplayRelay, nullius_env, dead, None, source=tmp_path / "source", live=False)
    loop.call(replay.start())
    route = replay.add_route("u0000", again)
    pieces = stream(replay.url("u0000"), route.token)
    loop.call(replay.retire("u0000"))
    loop.call(replay.stop())
    assert pieces == first and "".join(pieces) == "one two three four five" and len(pieces) > 1
    [call] = [json.loads(line) for line in (again / "calls.jsonl").read_text().splitlines()]
    assert call["stream"] is True and call["status"] == 200 and call["replayed"] == body["id"] and call["end"] == "stop"
    replayed = json.loads((again / "bodies.jsonl").read_text())
    assert replayed["chunks"] == body["chunks"]  # the reads came back as they were recorded
    assert replayed["response"] == body["response"]  # the usage the relay asked for, hidden from the caller again, kept


def test_normalizing_drops_the_job_folder_times_and_ids_and_the_diff_names_fields(tmp_path):
    one = tmp_path / "a" / "u0000" / ".work" / "relay"
    two = tmp_path / "b" / "u0000" / ".work" / "relay"
    request = {"model": "m", "user": "run-1", "messages": [
        {"role": "system", "content": f"Your workspace is {one.parents[2]}/u0000/.work/workspace. Now 2026-12-03T19:34:08.255Z."},
        {"role": "user", "content": "hi", "session": "3f2b8c1e-9a4d-4e2b-8f1a-0c9d8e7f6a5b"}]}
    other = json.loads(json.dumps(request).replace(str(one.parents[2]), str(two.parents[2])).replace("19:34:08.255", "20:01:00"))
    other["user"] = "run-2"
    other["messages"][1]["session"] = "00000000-1111-2222-3333-444444444444"
    assert digest(normalized(request, places_of(one))) == digest(normalized(other, places_of(two)))
    other["messages"][1]["content"] = "hello"
    other["temperature"] = 0
    found, count = differences(normalized(request, places_of(one)), normalized(other, places_of(two)))
    assert count == 2 and [(d.path, d.old, d.new) for d in found] == [("messages[1].content", "hi", "hello"), ("temperature", "(absent)", "0")]
    long_old, long_new = "x" * 1000 + "A" + "y" * 1000, "x" * 1000 + "B" + "y" * 1000
    [shown], _ = differences({"p": long_old}, {"p": long_new})
    assert len(shown.old) < 200 and "A" in shown.old and "B" in shown.new and shown.old.startswith("…")
