"""The relay out of file descriptors: its soft limit raised at start, and a call it still cannot serve answered and recorded."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import openai
from relay_helpers import KEY

# `nullius relay serve` with RLIMIT_NOFILE set before it starts, as a shell's ulimit would
UNDER_LIMITS = (
    "import os, resource, sys; resource.setrlimit(resource.RLIMIT_NOFILE, (int(sys.argv[1]), int(sys.argv[2])));"
    " os.execv(sys.executable, [sys.executable, '-m', 'nullius_core', *sys.argv[3:]])"
)


def serve_under(soft: int, hard: int, env: dict, base_url: str, record: Path) -> tuple[subprocess.Popen, dict]:
    proc = subprocess.Popen(
        [sys.executable, "-c", UNDER_LIMITS, str(soft), str(hard), "relay", "serve", "--provider", "openai",
         "--base-url", base_url, "--record", str(record)],
        env={**env, "OPENAI_API_KEY": KEY}, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    return proc, json.loads(proc.stdout.readline())


def open_files(pid: int) -> tuple[int, int]:
    for line in Path(f"/proc/{pid}/limits").read_text().splitlines():
        if line.startswith("Max open files"):
            soft, hard = line.split()[3:5]
            return int(soft), int(hard)
    raise AssertionError("no open-file limit in /proc")


def descriptors(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def wait_for(condition, what: str, seconds: float = 60):  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, f"waited {seconds} s for {what}"
        time.sleep(0.01)


def post(sock: socket.socket, path: str, token: str) -> tuple[int, bytes]:
    """One HTTP/1.1 call on a socket the relay accepted already, kept alive (its descriptor stays taken); the status and body."""
    body = json.dumps({"model": "m", "messages": [{"role": "user", "content": "x"}]}).encode()
    sock.sendall(f"POST {path} HTTP/1.1\r\nHost: relay\r\nAuthorization: Bearer {token}\r\nContent-Type: application/json\r\n"
                 f"Content-Length: {len(body)}\r\n\r\n".encode() + body)
    sock.settimeout(60)
    reply = b""
    while b"\r\n\r\n" not in reply:
        reply += sock.recv(65536)
    head, _, rest = reply.partition(b"\r\n\r\n")
    length = next(int(line.split(b":")[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length:"))
    while len(rest) < length:
        rest += sock.recv(65536)
    return int(head.split()[1]), rest


def test_the_relay_raises_its_soft_open_file_limit_to_the_hard_one(nullius_env, fake_model, tmp_path):
    proc, _ = serve_under(64, 4096, nullius_env, fake_model.openai_base_url, tmp_path / "rec")
    try:
        assert open_files(proc.pid) == (4096, 4096)
    finally:
        proc.terminate()
        proc.wait(30)


def test_a_call_the_relay_has_no_descriptor_for_gets_the_json_error_and_is_recorded(nullius_env, fake_model, tmp_path):
    limit = 64  # the hard limit too: nothing to raise it to
    proc, info = serve_under(limit, limit, nullius_env, fake_model.openai_base_url, tmp_path / "rec")
    held: list[socket.socket] = []
    callers: list[socket.socket] = []
    try:
        host, port = info["base_url"].split("/")[2].split(":")
        path = "/" + info["base_url"].split("/", 3)[3] + "/chat/completions"
        base = descriptors(proc.pid)
        callers = [socket.create_connection((host, int(port))) for _ in range(3)]
        wait_for(lambda: descriptors(proc.pid) >= base + 3, "the callers' connections to be accepted")
        # every descriptor left taken by connections that never send a byte
        while descriptors(proc.pid) < limit:
            held.append(socket.create_connection((host, int(port))))
            wait_for(lambda: descriptors(proc.pid) >= min(limit, base + 3 + len(held)), "a held connection to be accepted")
        replies = [post(sock, path, info["token"]) for sock in callers]
        for status, body in replies:  # no descriptor for the provider's connection: the documented error, as JSON
            assert status == 503, (status, body)
            error = json.loads(body)["error"]
            assert error["type"] == "overloaded" and "out of file descriptors" in error["message"]
        calls = tmp_path / "rec" / "calls.jsonl"
        wait_for(lambda: calls.exists() and len(calls.read_text().splitlines()) == 3, "the three refusals to be recorded")
        records = [json.loads(line) for line in calls.read_text().splitlines()]
        assert [r["status"] for r in records] == [503, 503, 503]
        assert all("Too many open files" in r["cause"] for r in records)
        for sock in held:  # descriptors again: the relay serves
            sock.close()
        held.clear()
        wait_for(lambda: descriptors(proc.pid) < limit - 5, "the held connections to be closed")
        client = openai.OpenAI(base_url=info["base_url"], api_key=info["token"], max_retries=0)
        assert client.chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}]).choices[0].message.content
    finally:
        for sock in held + callers:
            sock.close()
        proc.terminate()
        proc.wait(30)
