"""A reply bigger than a call may hold: the caller gets all of it, the relay holds a bounded part, the record says so."""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import aiohttp
import openai
import pytest
from aiohttp import web
from relay_helpers import KEY, HandUpstream

from nullius_core.relay.forward import HOLD

MB = 2**20
EVENT = b"data: " + json.dumps({"id": "c", "object": "chat.completion.chunk", "model": "m",
                                "choices": [{"index": 0, "delta": {"content": "word " * 200}, "finish_reason": None}]}).encode() + b"\n\n"


def peak_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmHWM in /proc")


@pytest.fixture
def served(nullius_env, tmp_path):
    """`nullius relay serve` in a process of its own, in front of a hand-scripted upstream."""
    upstream = HandUpstream()
    proc = subprocess.Popen([sys.executable, "-m", "nullius_core", "relay", "serve", "--provider", "openai", "--base-url", upstream.base_url,
                             "--record", str(tmp_path / "rec")], env={**nullius_env, "OPENAI_API_KEY": KEY},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    info = json.loads(proc.stdout.readline())
    yield upstream, proc, info, tmp_path / "rec"
    proc.send_signal(signal.SIGTERM)
    proc.wait(30)
    upstream.close()


def small(info) -> None:
    reply = openai.OpenAI(base_url=info["base_url"], api_key=info["token"], max_retries=0).chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}])
    assert reply.choices[0].message.content == "small"


def test_a_reply_of_64_mb_reaches_the_caller_whole_and_the_relay_holds_a_bounded_part_of_it(served):
    upstream, proc, info, record = served
    count = 64 * MB // len(EVENT)
    whole = json.dumps({"id": "w", "object": "chat.completion", "model": "m",
                        "choices": [{"index": 0, "message": {"role": "assistant", "content": "word " * (64 * MB // 5)}, "finish_reason": "stop"}],
                        "usage": {"prompt_tokens": 1, "completion_tokens": 2, "total_tokens": 3}}).encode()
    small_reply = {"id": "s", "object": "chat.completion", "model": "m", "choices": [{"index": 0, "message": {"role": "assistant", "content": "small"}, "finish_reason": "stop"}]}

    async def answer(request, key):
        asked = json.loads(await request.read())["messages"][0]["content"]
        if asked == "stream":
            out = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
            await out.prepare(request)
            for _ in range(count // 64):
                await out.write(EVENT * 64)
            await out.write(b"data: [DONE]\n\n")
            await out.write_eof()
            return out
        if asked == "whole":
            return web.Response(body=whole, content_type="application/json")
        return web.json_response(small_reply)

    upstream.answer = answer
    small(info)
    before = peak_mb(proc.pid)

    async def big(what: str) -> bytes:
        async with aiohttp.ClientSession() as http:
            async with http.post(info["base_url"] + "/chat/completions", json={"model": "m", "stream": what == "stream", "messages": [{"role": "user", "content": what}]},
                                 headers={"Authorization": f"Bearer {info['token']}"}) as r:
                assert r.status == 200
                return await r.read()

    streamed = asyncio.run(big("stream"))
    assert streamed == EVENT * (count // 64 * 64) + b"data: [DONE]\n\n"
    assert asyncio.run(big("whole")) == whole
    small(info)  # recorded after the big ones, in the order the calls ended
    deadline = time.monotonic() + 120
    while len((record / "calls.jsonl").read_text().splitlines()) < 4:
        assert time.monotonic() < deadline, "the four calls were not all recorded in 120 s"
        time.sleep(0.02)
    grown = peak_mb(proc.pid) - before
    assert grown < 8 * HOLD / MB, f"the relay grew {grown:.0f} MB for replies of 64 MB; a call holds {HOLD // MB} MB"
    calls = [json.loads(line) for line in (record / "calls.jsonl").read_text().splitlines()]
    assert [c["reply_bytes"] for c in calls[1:3]] == [len(streamed), len(whole)]
    assert [c.get("reply_cut") for c in calls] == [None, HOLD, HOLD, None]
    assert "unread" not in calls[1] and calls[2]["unread"].startswith("a whole reply over")
    assert calls[1]["end"] is None or isinstance(calls[1]["end"], str)
    bodies = [json.loads(line) for line in (record / "bodies.jsonl").read_text().splitlines()]
    assert [len(b["response"]) for b in bodies[1:3]] == [HOLD, HOLD]
    assert bodies[3]["response"]["choices"][0]["message"]["content"] == "small"
