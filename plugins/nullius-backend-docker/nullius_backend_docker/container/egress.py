"""The check's egress proxy: runs in its own container, standard library only.

A benchmark's check command (and nothing else) gets HTTP_PROXY/HTTPS_PROXY
pointing here; the unit's network has no other way out. It connects only to
global addresses, so a check cannot reach this machine, the docker bridge
(172.17.0.1 and the other private ranges), cloud metadata at
169.254.169.254, or the run's relay, which holds the model key. Every
resolved address of a name is checked and the connection goes to the checked
address itself, never the name again: a name cannot resolve to something
global for the check and something private for the connection.

    python3 egress.py PORT LOGFILE [BIND]     (PORT 0: any free port)
    python3 egress.py unix:PATH LOGFILE       (a Unix socket: the unit's door forwards the check to it)

With EGRESS_ALLOW (comma-separated: a host name, `*.suffix`, an address or
a range), only those are reached, global addresses still: a task's allowlist.

The first line on stdout is `listening PORT` (`listening PATH`). Each request is one JSON line
appended to LOGFILE: time, method, host, port, address, allowed, why.
`allowed` is true only when a connection was made; no header value or body
is ever logged. CONNECT host:port makes a tunnel (HTTPS); an absolute-form
request (GET http://host/path) is sent on in origin form, one per connection.
"""

from __future__ import annotations  # `str | None` on the container's older pythons

import asyncio
import datetime
import ipaddress
import json
import os
import re
import socket
import sys
from urllib.parse import urlsplit

HEAD_SECONDS = 30  # a client that has not asked by then is dropped, so idle sockets cannot pile up
RESOLVE_SECONDS = 10
CONNECT_SECONDS = 10
MAX_HEADERS = 100
HOP_BY_HOP = {b"proxy-connection", b"proxy-authorization", b"connection", b"keep-alive", b"host"}
METHOD = re.compile(r"^[A-Z][A-Z-]{0,19}$")
REASONS = {400: "Bad Request", 403: "Forbidden", 502: "Bad Gateway"}


def _nets(*cidrs):
    return [ipaddress.ip_network(c) for c in cidrs]


# Named first so the reason is the useful one; `is_global` below catches the rest.
RANGES = [
    ("loopback", _nets("127.0.0.0/8", "::1/128")),
    ("private", _nets("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "fc00::/7")),
    ("link-local", _nets("169.254.0.0/16", "fe80::/10")),
    ("shared address space (100.64.0.0/10)", _nets("100.64.0.0/10")),
    ("this network", _nets("0.0.0.0/8")),
    ("documentation", _nets("192.0.2.0/24", "198.51.100.0/24", "203.0.113.0/24", "2001:db8::/32", "3fff::/20")),
]
NAT64 = ipaddress.ip_network("64:ff9b::/96")


def refusal(address: str) -> str | None:
    """Why the proxy will not connect to this IP address, or None when it is global."""
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0])  # a zone (fe80::1%eth0) is not part of the address
    except ValueError:
        return "not an IP address"
    if ip.version == 6:
        # An IPv4 address carried inside IPv6 (mapped, 6to4, NAT64) reaches that IPv4 address: judge it too.
        inner = ip.ipv4_mapped or ip.sixtofour or (ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF) if ip in NAT64 else None)
        why = refusal(str(inner)) if inner is not None else None
        if why:
            return f"{why} ({inner} inside an IPv6 address)"
    if ip.is_unspecified:
        return "unspecified"
    for why, networks in RANGES:
        if any(ip in net for net in networks):
            return why
    if ip.is_multicast:
        return "multicast"
    if ip.is_reserved:
        return "reserved"
    if not ip.is_global:
        return "not global"
    return None


class Failure(Exception):
    def __init__(self, status: int, why: str, message: str | None = None):
        super().__init__(why)
        self.status, self.why, self.message = status, why, message or why


def record(log, entry: dict, allowed: bool, why: str | None) -> None:
    now = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    log.write(json.dumps({"time": now, **entry, "allowed": allowed, "why": why}) + "\n")
    log.flush()


async def read_head(reader):
    """The request line and header lines, or None when the client left without asking."""
    try:
        return await _read_head(reader)
    except ValueError:  # a line past the reader's limit (64 KiB)
        raise Failure(400, "request line or header too long") from None


async def _read_head(reader):
    line = await reader.readline()
    if not line:
        return None
    headers = []
    while True:
        header = await reader.readline()
        if not header.endswith(b"\n"):
            raise Failure(400, "incomplete request")
        if header in (b"\r\n", b"\n"):
            return line, headers
        if b":" not in header or len(headers) >= MAX_HEADERS:
            raise Failure(400, "malformed headers")
        headers.append(header)


def parse(line: bytes, entry: dict):
    """Host, port and (for absolute form) the origin-form target and authority; fills the log entry as it goes."""
    parts = line.decode("latin-1").rstrip("\r\n").split(" ")
    if len(parts) != 3 or not METHOD.match(parts[0]) or not parts[2].startswith("HTTP/"):
        raise Failure(400, "malformed request line")
    method, target, _ = parts
    entry["method"] = method
    if method == "CONNECT":
        host, sep, port = target.rpartition(":")
        host = host[1:-1] if host.startswith("[") and host.endswith("]") else host
        path = authority = None
    else:
        try:
            url = urlsplit(target)
            host, sep, port = url.hostname, ":", str(url.port or 80)
        except ValueError:
            raise Failure(400, "malformed URL") from None
        if url.scheme.lower() != "http" or not host:
            raise Failure(400, "not an absolute http:// URL (use CONNECT for https)")
        path = (url.path or "/") + (f"?{url.query}" if url.query else "")
        authority = url.netloc.rpartition("@")[2]
    entry["host"] = host[:255]
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise Failure(400, "malformed host:port")
    entry["port"] = int(port)
    return host, int(port), path, authority


def _allowed_entry(entry: str, host: str, address: str | None) -> bool:
    if "/" in entry or entry.replace(".", "").isdigit() or ":" in entry:  # an address or a range: the resolved address's
        if address is None:
            return False
        try:
            return ipaddress.ip_address(address) in ipaddress.ip_network(entry, strict=False)
        except ValueError:
            return False
    if entry.startswith("*."):
        return host.endswith(entry[1:])
    return host == entry


def allowed(host: str, address: str | None = None) -> bool:
    """The task's allowed hosts (EGRESS_ALLOW, comma-separated; unset: every global address): a name, *.suffix, an address, a range."""
    names = os.environ.get("EGRESS_ALLOW")
    if names is None:
        return True
    host = host.lower().rstrip(".")
    return any(_allowed_entry(entry, host, address) for entry in names.split(",") if entry)


async def open_upstream(host: str, port: int, entry: dict):
    loop = asyncio.get_running_loop()
    try:
        infos = await asyncio.wait_for(loop.getaddrinfo(host, port, type=socket.SOCK_STREAM), RESOLVE_SECONDS)
    except (OSError, asyncio.TimeoutError, UnicodeError, ValueError):
        raise Failure(502, "cannot resolve", f"cannot resolve {host}") from None
    addresses = list(dict.fromkeys(info[4][0] for info in infos))
    if not addresses:
        raise Failure(502, "cannot resolve", f"cannot resolve {host}")
    for address in addresses:  # every one: a name with one private address is refused outright
        why = refusal(address) or (None if allowed(host, address) else "not among the task's allowed hosts")
        if why:
            entry["address"] = address
            raise Failure(403, why, f"refused: {host} is {address}, {why}; the check may reach global addresses only")
    error = None
    for address in addresses:
        entry["address"] = address
        try:  # the checked address itself, not the name: no second lookup to rebind
            return await asyncio.wait_for(asyncio.open_connection(address, port), CONNECT_SECONDS)
        except (OSError, asyncio.TimeoutError) as exc:
            error = getattr(exc, "strerror", None) or type(exc).__name__
    raise Failure(502, f"cannot connect ({error})", f"cannot connect to {host}:{port} ({error})")


def _literal(host: str) -> list[str]:
    """The host itself when it is an address (a range entry may allow it before any lookup)."""
    try:
        return [str(ipaddress.ip_address(host))]
    except ValueError:
        return []


async def pipe(reader, writer) -> None:
    try:
        while True:
            data = await reader.read(65536)
            if not data:
                return
            writer.write(data)
            await writer.drain()
    except (ConnectionError, OSError):
        pass


async def close(writer) -> None:
    writer.close()
    try:
        await writer.wait_closed()
    except Exception:
        pass


async def handle(log, reader, writer) -> None:
    entry = {"method": None, "host": None, "port": None, "address": None}
    up_writer = None
    try:
        try:
            head = await asyncio.wait_for(read_head(reader), HEAD_SECONDS)
            if head is None:
                return
            host, port, path, authority = parse(head[0], entry)
            if not allowed(host) and not any(allowed(host, a) for a in _literal(host)):
                raise Failure(403, "not among the task's allowed hosts", f"refused: {host} is not among the task's allowed hosts")
            up_reader, up_writer = await open_upstream(host, port, entry)
        except Failure as failure:
            record(log, entry, False, failure.why)  # before answering: the log is never behind what the client saw
            body = (failure.message + "\n").encode()
            writer.write(f"HTTP/1.1 {failure.status} {REASONS[failure.status]}\r\nContent-Type: text/plain; charset=utf-8\r\n"
                         f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode() + body)
            await writer.drain()
            return
        except asyncio.TimeoutError:  # no request in time: nothing asked, nothing to log
            return
        record(log, entry, True, None)
        if path is None:
            writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
        else:
            method, version = head[0].split(b" ")[0], head[0].split(b" ")[2].rstrip(b"\r\n")
            kept = [h for h in head[1] if h.split(b":", 1)[0].strip().lower() not in HOP_BY_HOP]
            up_writer.write(b"%s %s %s\r\n" % (method, path.encode("latin-1"), version) + b"".join(kept)
                            + b"Host: %s\r\nConnection: close\r\n\r\n" % authority.encode("latin-1"))
        # one exchange per connection: when either side is done, so is the other
        ways = [asyncio.ensure_future(pipe(reader, up_writer)), asyncio.ensure_future(pipe(up_reader, writer))]
        _, pending = await asyncio.wait(ways, return_when=asyncio.FIRST_COMPLETED)
        for task in pending:
            task.cancel()
    except (ConnectionError, OSError):
        pass  # the client went away
    finally:
        if up_writer is not None:
            await close(up_writer)
        await close(writer)


async def start(port: int, log, bind: str = "0.0.0.0"):
    """The listening server; `log` is an open text file the JSON lines go to."""
    return await asyncio.start_server(lambda r, w: handle(log, r, w), bind, port)


async def main(where: str, log_path: str, bind: str) -> None:
    with open(log_path, "a", encoding="utf-8") as log:
        if where.startswith("unix:"):
            server = await asyncio.start_unix_server(lambda r, w: handle(log, r, w), where[5:])
            print(f"listening {where[5:]}", flush=True)
        else:
            server = await start(int(where), log, bind)
            print(f"listening {server.sockets[0].getsockname()[1]}", flush=True)
        async with server:
            await server.serve_forever()


if __name__ == "__main__":
    if len(sys.argv) not in (3, 4) or not (sys.argv[1].isdigit() or sys.argv[1].startswith("unix:")):
        sys.exit("usage: python3 egress.py PORT|unix:PATH LOGFILE [BIND]")
    asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3] if len(sys.argv) == 4 else "0.0.0.0"))
