"""Files served on 127.0.0.1 by a real HTTP server in a thread of the test, and a `nullius` run read line by line.

A held file sends its first part, then waits until the test releases it (as
soon as the run has said what the test waits for), then sends the rest: a
slow download whose pace the test sets, without a sleep.
"""

from __future__ import annotations

import subprocess
import sys
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from nullius_core.testing import CliResult

# How long a held file waits for its release: only so that a failing test ends, never what decides it.
HOLD_SECONDS = 600


class FileServer:
    def __init__(self, base: str) -> None:
        self.base = base
        self.files: dict[str, bytes] = {}
        self.held: dict[str, int] = {}  # path -> the bytes sent before the release
        self.unsized: set[str] = set()  # paths served without a Content-Length (until the connection closes)
        self.types: dict[str, str] = {}  # path -> its Content-Type, for a client that reads it (an index's page)
        self.released = threading.Event()
        self.asked: list[str] = []
        self.when_asked: Callable[[str], Any] | None = None  # called as each request comes; what it returns is kept
        self.seen: dict[str, Any] = {}

    def url(self, path: str) -> str:
        return f"{self.base}{path}"

    def serve(self, path: str, body: bytes, held: int | None = None, sized: bool = True, content_type: str | None = None) -> str:
        """Serve `body` at `path` (held after `held` bytes until `released` is set); its URL."""
        self.files[path] = body
        if content_type is not None:
            self.types[path] = content_type
        if held is not None:
            self.held[path] = held
        if not sized:
            self.unsized.add(path)
        return self.url(path)


def _handler(server: FileServer) -> type[BaseHTTPRequestHandler]:
    class Files(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            server.asked.append(self.path)
            if server.when_asked is not None:
                server.seen[self.path] = server.when_asked(self.path)
            body = server.files.get(self.path)
            if body is None:
                self.send_error(404)
                return
            self.send_response(200)
            if self.path not in server.unsized:
                self.send_header("Content-Length", str(len(body)))
            if self.path in server.types:
                self.send_header("Content-Type", server.types[self.path])
            self.end_headers()
            first = server.held.get(self.path, len(body))
            self.wfile.write(body[:first])
            self.wfile.flush()
            if first < len(body):
                server.released.wait(HOLD_SECONDS)
                self.wfile.write(body[first:])
            self.close_connection = True

        def log_message(self, *args: Any) -> None:
            pass

    return Files


@contextmanager
def file_server() -> Iterator[FileServer]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), None)  # type: ignore[arg-type]
    server = FileServer(f"http://127.0.0.1:{httpd.server_address[1]}")
    httpd.RequestHandlerClass = _handler(server)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.released.set()  # a held request still waiting ends
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=30)


def run_releasing(args: list[str], env: Mapping[str, str], server: FileServer, when: str, timeout: float = 1800) -> CliResult:
    """Run `nullius ARGS`, releasing the server's held files as soon as a line of its stderr holds `when`."""
    return run_acting(args, env, when, server.released.set, timeout)


def run_acting(args: list[str], env: Mapping[str, str], when: str, act: Callable[[], Any], timeout: float = 1800) -> CliResult:
    """Run `nullius ARGS`, calling `act()` as soon as a line of its stderr holds `when` (what the run then waits for)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "nullius_core", *args], env=dict(env), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    lines = []
    try:
        assert proc.stderr is not None and proc.stdout is not None
        for line in proc.stderr:
            lines.append(line)
            if when in line:
                act()
        out = proc.stdout.read()
        proc.wait(timeout=timeout)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return CliResult(proc.returncode, out, "".join(lines))
