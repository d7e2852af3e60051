"""The check's egress proxy (container/egress.py), without docker: its address rules, and the proxy as a real process.

Nothing here reaches a global address (none answers on these machines), so
what is let through is tested in-process with the rules loosened to allow
loopback: the forwarding itself is the same code.
"""

from __future__ import annotations

import asyncio
import http.server
import importlib.util
import json
import select
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

EGRESS = Path(__file__).resolve().parents[1] / "nullius_backend_docker" / "container" / "egress.py"


def load_egress():
    spec = importlib.util.spec_from_file_location("nullius_container_egress", EGRESS)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


egress = load_egress()

REFUSED = [
    "127.0.0.1", "10.1.2.3", "172.17.0.1", "192.168.1.1", "169.254.169.254", "100.64.0.1", "0.0.0.0",
    "224.0.0.1", "::1", "fe80::1", "fe80::1%eth0", "fd00::1", "::ffff:127.0.0.1", "::ffff:169.254.169.254",
    "192.0.2.1", "2001:db8::1", "255.255.255.255", "::", "64:ff9b::a9fe:a9fe", "2002:7f00:1::1", "not-an-address",
]
ALLOWED = ["1.1.1.1", "8.8.8.8", "2606:4700:4700::1111"]


@pytest.mark.parametrize("address", REFUSED)
def test_non_global_addresses_are_refused_with_a_reason(address):
    why = egress.refusal(address)
    assert isinstance(why, str) and why


@pytest.mark.parametrize("address", ALLOWED)
def test_global_addresses_are_allowed(address):
    assert egress.refusal(address) is None


def test_the_reasons_name_the_range():
    assert egress.refusal("127.0.0.1") == "loopback"
    assert egress.refusal("172.17.0.1") == "private"
    assert egress.refusal("169.254.169.254") == "link-local"
    assert egress.refusal("100.64.0.1") == "shared address space (100.64.0.0/10)"
    assert egress.refusal("::ffff:10.0.0.1").startswith("private")


# --- the proxy as a process ---------------------------------------------------------------------


class Origin(http.server.ThreadingHTTPServer):
    """A local HTTP server that counts every connection made to it, request or not."""

    daemon_threads = True

    def __init__(self):
        super().__init__(("127.0.0.1", 0), OriginHandler)
        self.connections = 0
        self.requests: list[tuple[str, list[tuple[str, str]]]] = []

    def verify_request(self, request, client_address):
        self.connections += 1
        return True


class OriginHandler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.server.requests.append((self.path, list(self.headers.items())))
        body = b"origin says hi\n"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def origin():
    server = Origin()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def proxy(tmp_path):
    """The proxy started as the box starts it (on port 0, bound to loopback here): its port and its log."""
    log = tmp_path / "egress.log"
    proc = subprocess.Popen([sys.executable, str(EGRESS), "0", str(log), "127.0.0.1"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        ready, _, _ = select.select([proc.stdout], [], [], 10)
        line = proc.stdout.readline().decode() if ready else ""
        assert line.startswith("listening "), f"the proxy did not start: {line!r} {proc.poll()}"
        yield int(line.split()[1]), log
    finally:
        proc.terminate()
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        proc.stdout.close()
        proc.stderr.close()


def ask(port: int, raw: bytes, timeout: float = 5) -> bytes:
    """All the proxy says to one request, until it closes."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        sock.sendall(raw)
        reply = b""
        while chunk := sock.recv(65536):
            reply += chunk
        return reply


def status(reply: bytes) -> int:
    return int(reply.split(b"\r\n", 1)[0].split(b" ")[1])


def test_refused_requests_are_answered_and_logged_without_headers(proxy, origin):
    port, log = proxy
    o = origin.server_address[1]
    secret = b"X-Secret: s3cr3t-value\r\nProxy-Authorization: Basic cHJveHk6cGFzcw==\r\n"
    asked = [
        (b"CONNECT 127.0.0.1:%d HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n%s\r\n" % (o, o, secret), 403),
        (b"GET http://127.0.0.1:%d/ HTTP/1.1\r\nHost: 127.0.0.1\r\n%s\r\n" % (o, secret), 403),
        (b"GET http://localhost:%d/ HTTP/1.1\r\n%s\r\n" % (o, secret), 403),
        (b"CONNECT [::1]:%d HTTP/1.1\r\n\r\n" % o, 403),
        (b"POST http://169.254.169.254/latest/meta-data/ HTTP/1.1\r\nContent-Length: 0\r\n\r\n", 403),
        (b"garbage\r\n\r\n", 400),
        (b"GET http://no-such-host.invalid/ HTTP/1.1\r\n%s\r\n" % secret, 502),
    ]
    replies = [ask(port, raw) for raw, _ in asked]
    assert [status(r) for r in replies] == [want for _, want in asked], replies
    assert b"loopback" in replies[0] and replies[0].endswith(b"\n") and replies[0].count(b"\r\n\r\n") == 1
    assert b"link-local" in replies[4]
    assert origin.connections == 0 and origin.requests == []  # refused before any connection

    text = log.read_text()
    assert "s3cr3t-value" not in text and "cHJveHk6cGFzcw" not in text and "X-Secret" not in text
    entries = [json.loads(line) for line in text.splitlines()]
    assert entries[2]["address"] in ("127.0.0.1", "::1")  # whichever of localhost's addresses came first
    entries[2]["address"] = "127.0.0.1"
    assert [(e["method"], e["host"], e["port"], e["address"], e["allowed"]) for e in entries] == [
        ("CONNECT", "127.0.0.1", o, "127.0.0.1", False),
        ("GET", "127.0.0.1", o, "127.0.0.1", False),
        ("GET", "localhost", o, "127.0.0.1", False),
        ("CONNECT", "::1", o, "::1", False),
        ("POST", "169.254.169.254", 80, "169.254.169.254", False),
        (None, None, None, None, False),
        ("GET", "no-such-host.invalid", 80, None, False),
    ]
    assert [e["why"] for e in entries[:5]] == ["loopback"] * 4 + ["link-local"]
    assert all(e["why"] for e in entries)
    assert all(e["time"].endswith("Z") and e["time"][:4].isdigit() for e in entries)


def test_a_silent_client_does_not_hold_up_others(proxy):
    port, log = proxy
    silent = socket.create_connection(("127.0.0.1", port))
    halfway = socket.create_connection(("127.0.0.1", port))
    try:
        halfway.sendall(b"GET http://1.1.1.1/ HT")
        started = time.monotonic()
        reply = ask(port, b"GET http://10.0.0.1/ HTTP/1.1\r\n\r\n", timeout=3)
        assert status(reply) == 403 and time.monotonic() - started < 2
        assert [json.loads(line)["host"] for line in log.read_text().splitlines()] == ["10.0.0.1"]
    finally:
        silent.close()
        halfway.close()


# --- in-process: the head's time limit, and what is let through ----------------------------------


async def converse(port: int, raw: bytes, then: bytes = b"", timeout: float = 3) -> bytes:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(raw)
    if then:  # after the proxy's first answer (a tunnel's 200)
        first = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), timeout)
        writer.write(then)
    else:
        first = b""
    rest = await asyncio.wait_for(reader.read(), timeout)
    writer.close()
    return first + rest


def test_a_client_that_never_asks_is_dropped(tmp_path, monkeypatch):
    assert egress.HEAD_SECONDS == 30
    monkeypatch.setattr(egress, "HEAD_SECONDS", 0.3)

    async def scenario():
        with open(tmp_path / "egress.log", "a") as log:
            server = await egress.start(0, log, "127.0.0.1")
            async with server:
                reader, writer = await asyncio.open_connection("127.0.0.1", server.sockets[0].getsockname()[1])
                writer.write(b"GET http://1.1.1.1/")  # a request line never finished
                started = time.monotonic()
                assert await asyncio.wait_for(reader.read(), 3) == b""
                writer.close()
                return time.monotonic() - started

    assert asyncio.run(scenario()) < 2
    assert (tmp_path / "egress.log").read_text() == ""  # nothing was asked


def test_what_is_let_through_is_forwarded_in_origin_form(tmp_path, monkeypatch, origin):
    monkeypatch.setattr(egress, "refusal", lambda address: None)  # loopback stands in for a global address
    o = origin.server_address[1]

    async def scenario():
        with open(tmp_path / "egress.log", "a") as log:
            server = await egress.start(0, log, "127.0.0.1")
            async with server:
                port = server.sockets[0].getsockname()[1]
                plain = await converse(port, b"GET http://127.0.0.1:%d/path?q=1#frag HTTP/1.1\r\nHost: elsewhere\r\n"
                                       b"Proxy-Connection: keep-alive\r\nProxy-Authorization: Basic cHJveHk6cGFzcw==\r\n"
                                       b"X-Secret: s3cr3t-value\r\n\r\n" % o)
                tunnel = await converse(port, b"CONNECT localhost:%d HTTP/1.1\r\n\r\n" % o,
                                        then=b"GET /through HTTP/1.0\r\n\r\n")
                return plain, tunnel

    plain, tunnel = asyncio.run(scenario())
    assert plain.startswith(b"HTTP/1.0 200") and plain.endswith(b"origin says hi\n")
    assert tunnel.startswith(b"HTTP/1.1 200 Connection established\r\n\r\nHTTP/1.0 200")
    assert tunnel.endswith(b"origin says hi\n")

    (path, headers), (through, _) = origin.requests
    assert (path, through) == ("/path?q=1", "/through")
    names = {k.lower(): v for k, v in headers}
    assert names["host"] == f"127.0.0.1:{o}" and names["connection"] == "close"
    assert names["x-secret"] == "s3cr3t-value"  # the request's own headers go on
    assert "proxy-connection" not in names and "proxy-authorization" not in names

    entries = [json.loads(line) for line in (tmp_path / "egress.log").read_text().splitlines()]
    assert [(e["method"], e["host"], e["port"], e["address"], e["allowed"], e["why"]) for e in entries] == [
        ("GET", "127.0.0.1", o, "127.0.0.1", True, None),
        ("CONNECT", "localhost", o, "127.0.0.1", True, None),
    ]
    assert "s3cr3t-value" not in (tmp_path / "egress.log").read_text()


def fake_names(monkeypatch, names: dict[str, list[str]]) -> list[str]:
    """socket.getaddrinfo answering NAMES from the table (in order); the names it was asked, in a list."""
    real, asked = socket.getaddrinfo, []

    def getaddrinfo(host, port, *args, **kwargs):
        if host in names:
            asked.append(host)
            return [info for a in names[host] for info in real(a, port, *args, **kwargs)]
        return real(host, port, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    return asked


def test_every_address_of_a_name_is_checked(tmp_path, monkeypatch):
    fake_names(monkeypatch, {"mixed.example": ["1.1.1.1", "10.0.0.1"]})

    async def scenario():
        with open(tmp_path / "egress.log", "a") as log:
            server = await egress.start(0, log, "127.0.0.1")
            async with server:
                return await converse(server.sockets[0].getsockname()[1], b"GET http://mixed.example/ HTTP/1.1\r\n\r\n")

    reply = asyncio.run(scenario())
    assert status(reply) == 403 and b"10.0.0.1" in reply
    entry = json.loads((tmp_path / "egress.log").read_text())
    assert (entry["address"], entry["allowed"], entry["why"]) == ("10.0.0.1", False, "private")


def test_the_connection_goes_to_the_checked_address_not_the_name_again(tmp_path, monkeypatch, origin):
    monkeypatch.setattr(egress, "refusal", lambda address: None)  # loopback stands in for a global address
    asked = fake_names(monkeypatch, {"rebind.example": ["127.0.0.1"]})
    o = origin.server_address[1]

    async def scenario():
        with open(tmp_path / "egress.log", "a") as log:
            server = await egress.start(0, log, "127.0.0.1")
            async with server:
                return await converse(server.sockets[0].getsockname()[1],
                                      b"GET http://rebind.example:%d/ HTTP/1.1\r\n\r\n" % o)

    assert status(asyncio.run(scenario())) == 200
    assert asked == ["rebind.example"]  # one lookup: a second one could answer something else
    assert origin.requests[0][0] == "/"
